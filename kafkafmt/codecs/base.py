"""The uniform codec interface, the default decompression cap and the error helpers.

Every codec is a small stateless object identified by Kafka's codec id (the low 3 bits of a batch's
``attributes``: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd) and name:

* ``decompress(data, max_size=None, magic=2)`` takes the compressed payload of one batch (any bytes-like,
  usually a memoryview into an mmap) and returns the decompressed bytes as a bytes-like object
  (``bytes`` or ``bytearray``). ``max_size`` caps the output: ``None`` means ``DEFAULT_MAX_DECOMPRESSED``,
  a non-negative int is the cap in bytes. Going over raises ``DecompressionLimitError`` *before* the
  oversized output is allocated; any other failure on bad input raises ``CompressionError`` chained
  (``from``) to the library's exception. No library exception type escapes.
* ``compress(data, level=None, magic=2)`` returns what Kafka's Java clients write for that codec and
  message format version (``magic`` only matters for lz4: magic-0 frames carry KAFKA-3160's wrong
  header checksum).

Codecs are called once per batch, never per record.
"""
from __future__ import annotations

from kafkafmt.errors import CompressionError, DecompressionLimitError

__all__ = ["Codec", "DEFAULT_MAX_DECOMPRESSED", "resolve_cap", "corrupt", "over_limit"]

#: Decompressed-size cap used when ``max_size`` is None (far above any real Kafka batch).
DEFAULT_MAX_DECOMPRESSED = 512 * 1024 * 1024


class Codec:
    """Base class: a codec id, a name, ``decompress`` and ``compress``.

    Examples
    --------
    >>> from kafkafmt.codecs import CODECS, Codec
    >>> all(isinstance(codec, Codec) for codec in CODECS.values())
    True
    >>> {codec.id: codec.name for codec in CODECS.values()}
    {0: 'none', 1: 'gzip', 2: 'snappy', 3: 'lz4', 4: 'zstd'}

    How many batches of the sample's ``orders-0`` use each codec; every codec round trips what it
    compresses, and refuses output over ``max_size``:

    >>> import kafkafmt
    >>> from kafkafmt.errors import DecompressionLimitError
    >>> from kafkafmt.sample import sample_dir
    >>> recs = kafkafmt.read_log_dir(f"{sample_dir()}/orders-0")
    >>> {codec.name: int((recs.batches["codec"] == codec.id).sum()) for codec in CODECS.values()}
    {'none': 19, 'gzip': 19, 'snappy': 19, 'lz4': 38, 'zstd': 19}
    >>> data = b"kafka " * 1000
    >>> {codec.name: len(codec.compress(data)) < 6000 for codec in CODECS.values() if codec.id}
    {'gzip': True, 'snappy': True, 'lz4': True, 'zstd': True}
    >>> all(bytes(codec.decompress(codec.compress(data))) == data for codec in CODECS.values())
    True
    >>> for codec in CODECS.values():
    ...     try:
    ...         codec.decompress(codec.compress(data), max_size=100)
    ...     except DecompressionLimitError as exc:
    ...         print(exc)
    none: payload decompresses to 6000 bytes, more than the limit of 100 bytes
    gzip: payload decompresses to more than the limit of 100 bytes
    snappy: payload decompresses to more than the limit of 100 bytes
    lz4: payload decompresses to more than the limit of 100 bytes
    zstd: payload decompresses to 6000 bytes, more than the limit of 100 bytes
    """

    __slots__ = ()
    id: int = -1
    name: str = "?"

    def decompress(self, data, max_size=None, magic=2):
        """Decompress one batch payload; see the module docstring for the contract."""
        cap = resolve_cap(max_size)
        return self._decompress(memoryview(data), cap, magic)

    def _decompress(self, mv, cap, magic):
        """The codec's own part of `decompress`: ``mv`` a memoryview of the payload, ``cap`` the
        output limit in bytes (going over raises ``over_limit``)."""
        raise NotImplementedError

    def compress(self, data, level=None, magic=2) -> bytes:
        """Compress one batch payload the way Kafka's Java clients do for this ``magic``."""
        raise NotImplementedError

    def __repr__(self):
        return f"<{type(self).__name__} id={self.id} name={self.name!r}>"


def resolve_cap(max_size) -> int:
    """The decompressed-size cap in bytes for a ``max_size`` argument."""
    if max_size is None:
        return DEFAULT_MAX_DECOMPRESSED
    cap = int(max_size)
    if cap < 0:
        raise ValueError(f"max_size must be None or >= 0, not {max_size!r}")
    return cap


def corrupt(codec: str, reason) -> CompressionError:
    """A ``CompressionError`` for ``codec`` (raise it ``from`` the library exception, if any)."""
    return CompressionError(f"{codec}: cannot decompress: {reason}")


def over_limit(codec: str, cap: int, size=None) -> DecompressionLimitError:
    """A ``DecompressionLimitError``; ``size`` is the (declared or known) output size, if known."""
    what = "decompresses to more than" if size is None else f"decompresses to {size} bytes, more than"
    return DecompressionLimitError(f"{codec}: payload {what} the limit of {cap} bytes")
