"""gzip (codec id 1).

Wire format: a gzip stream (RFC 1952) as written by Java's ``GZIPOutputStream``: 10-byte header
(``1f 8b 08`` ...), raw deflate data, then CRC-32 and ISIZE trailer. Like Java's ``GZIPInputStream``,
concatenated gzip members are decoded one after the other and trailing bytes that do not start a gzip
member are ignored. The zlib container (RFC 1950) is also accepted (window-bits auto-detection).

Decompression uses ``isal.isal_zlib`` when importable (about 2x faster than zlib here) else the stdlib
``zlib``; the output is capped by the decompressor's ``max_length``, so a bomb never allocates more than
the cap. Compression uses stdlib ``zlib`` (Kafka's levels 1-9, default 6, map onto it directly).
"""
from __future__ import annotations

import zlib

from kafkafmt.codecs.base import Codec, corrupt, over_limit

try:
    from isal import isal_zlib as _inflate_lib
    _isal_zlib = _inflate_lib
except ImportError:  # pragma: no cover - isal is not available on every platform
    _isal_zlib = None
    _inflate_lib = zlib

__all__ = ["GzipCodec"]

_decompressobj = _inflate_lib.decompressobj
_ERRORS = (_inflate_lib.error, zlib.error)
_AUTO_WBITS = 32 + 15          # gzip or zlib header, detected from the first bytes
_GZIP_WBITS = 16 + 15
_GZIP_MEMBER = b"\x1f\x8b\x08"  # magic + deflate method: the start of another gzip member


class GzipCodec(Codec):
    """gzip: isal/zlib inflate with a hard output cap; concatenated members supported.

    Examples
    --------
    Concatenated gzip members decode one after the other, as with Java's ``GZIPInputStream``:

    >>> from kafkafmt.codecs import GzipCodec
    >>> codec = GzipCodec()
    >>> two_members = codec.compress(b"kafka ") + codec.compress(b"log")
    >>> codec.decompress(two_members) == b"kafka log"
    True
    """

    __slots__ = ()
    id = 1
    name = "gzip"

    def _decompress(self, mv, cap, magic):
        dobj = _decompressobj(_AUTO_WBITS)
        try:
            out = dobj.decompress(mv, cap + 1)
        except _ERRORS as exc:
            raise corrupt("gzip", exc) from exc
        if len(out) > cap:
            raise over_limit("gzip", cap)
        if not dobj.eof:
            raise corrupt("gzip", "truncated stream")
        rest = dobj.unused_data
        if rest[:3] == _GZIP_MEMBER:
            return _more_members(out, rest, cap)
        return out

    def compress(self, data, level=None, magic=2) -> bytes:
        """gzip stream. The default level uses isal's level 2 (ISA-L, ~10x faster than zlib at
        Java's default level 6, with a similar ratio); an explicit level 0-9 uses zlib's."""
        if (level is None or level == -1) and _isal_zlib is not None:
            cobj = _isal_zlib.compressobj(2, _isal_zlib.DEFLATED, _GZIP_WBITS)
        else:
            cobj = zlib.compressobj(6 if level is None or level == -1 else level, zlib.DEFLATED, _GZIP_WBITS)
        return cobj.compress(data) + cobj.flush()


def _more_members(first: bytes, rest: bytes, cap: int) -> bytes:
    """Decode the gzip members that follow the first one (rare: concatenated streams).

    Each member is fed in growing windows of the remaining bytes: handing a decompressor all of
    them would copy all of them again into its ``unused_data`` at every member end (quadratic in
    the number of members)."""
    parts = [first]
    total = len(first)
    mv = memoryview(rest)
    pos, n = 0, len(mv)
    while mv[pos:pos + 3] == _GZIP_MEMBER:
        dobj = _decompressobj(_GZIP_WBITS)
        window = 256
        while True:
            end = min(pos + window, n)
            try:
                out = dobj.decompress(mv[pos:end], cap - total + 1)
            except _ERRORS as exc:
                raise corrupt("gzip", exc) from exc
            total += len(out)
            if total > cap:
                raise over_limit("gzip", cap)
            parts.append(out)
            if dobj.eof:
                pos = end - len(dobj.unused_data)
                break
            pos = end           # below the output limit, the whole window was consumed
            if pos >= n:
                raise corrupt("gzip", "truncated stream")
            window = min(2 * window, 1 << 20)
    return b"".join(parts)
