"""Codec registry: Kafka's compression codecs by id (the low 3 bits of ``attributes``) and by name.

=== ======== ==========================================================================
id  name     wire format (see each module)
=== ======== ==========================================================================
0   none     the payload as is
1   gzip     gzip stream (RFC 1952)                                   -> ``gzip.py``
2   snappy   snappy-java ("xerial") framed stream, or raw snappy       -> ``snappy.py``
3   lz4      LZ4 frame; magic 0 with KAFKA-3160's wrong header checksum -> ``lz4.py``
4   zstd     Zstandard frame, with or without content size             -> ``zstd.py``
=== ======== ==========================================================================

Ids 5-7 are not defined by Kafka: ``get_codec`` raises ``UnsupportedCodecError`` for them.

    codec = get_codec(3)            # or get_codec("lz4")
    data = codec.decompress(payload, max_size=None, magic=2)
"""
from __future__ import annotations

from kafkafmt.codecs.base import DEFAULT_MAX_DECOMPRESSED, Codec, over_limit, resolve_cap
from kafkafmt.codecs.gzip import GzipCodec
from kafkafmt.codecs.lz4 import Lz4Codec
from kafkafmt.codecs.snappy import SnappyCodec
from kafkafmt.codecs.zstd import ZstdCodec
from kafkafmt.errors import UnsupportedCodecError

__all__ = [
    "NONE", "GZIP", "SNAPPY", "LZ4", "ZSTD", "CODECS", "CODEC_NAMES", "DEFAULT_MAX_DECOMPRESSED",
    "get_codec", "Codec", "NoneCodec", "GzipCodec", "SnappyCodec", "Lz4Codec", "ZstdCodec",
]

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4


class NoneCodec(Codec):
    """No compression: ``decompress`` returns the data unchanged (checked against the cap).

    Examples
    --------
    >>> from kafkafmt.codecs import NoneCodec
    >>> NoneCodec().compress(b"payload")
    b'payload'
    >>> NoneCodec().decompress(b"payload", max_size=4)
    Traceback (most recent call last):
    ...
    kafkafmt.errors.DecompressionLimitError: ...
    """

    __slots__ = ()
    id = NONE
    name = "none"

    def decompress(self, data, max_size=None, magic=2):
        cap = resolve_cap(max_size)
        size = memoryview(data).nbytes
        if size > cap:
            raise over_limit(self.name, cap, size)
        return data

    def compress(self, data, level=None, magic=2) -> bytes:
        return bytes(data)


CODECS = {codec.id: codec for codec in (NoneCodec(), GzipCodec(), SnappyCodec(), Lz4Codec(), ZstdCodec())}
CODEC_NAMES = {codec_id: codec.name for codec_id, codec in CODECS.items()}
_BY_NAME = {codec.name: codec for codec in CODECS.values()}


def get_codec(id_or_name) -> Codec:
    """The codec for a Kafka codec id (0-4) or name ('none', 'gzip', 'snappy', 'lz4', 'zstd').

    Parameters
    ----------
    id_or_name : int or str
        The codec id (the low 3 bits of a batch's ``attributes``) or its name (any case).

    Returns
    -------
    Codec

    Raises
    ------
    UnsupportedCodecError
        Any other id (5-7 are not defined by Kafka) or name.

    Examples
    --------
    The codec of the first batch of a sample segment:

    >>> import kafkafmt
    >>> from kafkafmt.codecs import get_codec
    >>> from kafkafmt.sample import sample_dir
    >>> with open(f"{sample_dir()}/orders-0/00000000000000000000.log", "rb") as f:
    ...     batches, _ = kafkafmt.scan_batches(f.read())
    >>> get_codec(int(batches["codec"][0]))
    <Lz4Codec id=3 name='lz4'>
    >>> get_codec("ZSTD")
    <ZstdCodec id=4 name='zstd'>
    >>> get_codec(6)
    Traceback (most recent call last):
    ...
    kafkafmt.errors.UnsupportedCodecError: unknown compression codec 6
    """
    if isinstance(id_or_name, str):
        codec = _BY_NAME.get(id_or_name.strip().lower())
    elif isinstance(id_or_name, bool):
        codec = None
    else:
        try:
            codec = CODECS.get(id_or_name.__index__())
        except (AttributeError, TypeError):
            codec = None
    if codec is None:
        raise UnsupportedCodecError(f"unknown compression codec {id_or_name!r}")
    return codec
