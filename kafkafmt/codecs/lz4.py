"""lz4 (codec id 3).

Wire format: the LZ4 frame format (v1.5.1 and later): magic ``04 22 4d 18``, frame descriptor (FLG byte,
BD byte, optional 8-byte little-endian content size, optional 4-byte dictionary id), a header checksum
byte HC = (xxh32(descriptor, seed 0) >> 8) & 0xff, then blocks (little-endian uint32 size, high bit set
= stored uncompressed, optional 4-byte block checksum) ended by a zero size, then an optional 4-byte
content checksum.

Kafka specifics:

* Kafka's Java producer (``Lz4BlockOutputStream``) writes FLG 0x60 (version 01, independent blocks, no
  checksums, no content size), BD 0x40 (64 KiB blocks); kafka-python also writes the content size.
* KAFKA-3160: message format 0 (magic 0) frames carry a wrong HC, computed over the magic number *and*
  the descriptor. Java ignores HC for magic 0; so does this codec (the byte is replaced by the correct
  one, copying only the 7-19 header bytes, never the payload). For magic 1 and 2 a frame whose HC is
  wrong is accepted only if it holds exactly that KAFKA-3160 value. ``compress(magic=0)`` writes the
  wrong HC, as old Kafka did.
* Concatenated frames are decoded; trailing bytes that do not start a frame are ignored (as Java does).

Before decompressing, the frame header is parsed and its block headers walked -- in C, by the one lz4
frame parser of kafkafmt (``_native/kfmt_codecs.h``, shared with the record kernel's own lz4
decompression) -- to find where the frame ends and an upper bound of its output (compressed block: the
BD block size; stored block: its size; capped by the content size when present); python-lz4 is given
``max_length`` = min(bound, cap + 1), so it never allocates more than the cap.
"""
from __future__ import annotations

import struct

import lz4.frame as _lz4f

from kafkafmt._native import frames as _frames

from kafkafmt.codecs.base import Codec, corrupt, over_limit

__all__ = ["Lz4Codec", "xxh32", "header_checksum", "FRAME_MAGIC"]

FRAME_MAGIC = b"\x04\x22\x4d\x18"
_read_u32 = struct.Struct("<I").unpack_from
_new_context = _lz4f.create_decompression_context
_decompress_chunk = _lz4f.decompress_chunk
_ERRORS = (RuntimeError, OverflowError)

# ---------------------------------------------------------------------------------------------------
# xxh32: only ever run on frame descriptors (2-15 bytes), so plain Python is fast enough.
_P1, _P2, _P3, _P4, _P5 = 0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F, 0x165667B1
_M32 = 0xFFFFFFFF
_read_4u32 = struct.Struct("<4I").unpack_from


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * _P2) & _M32, 13) * _P1) & _M32


def xxh32(data, seed: int = 0) -> int:
    """The 32-bit xxHash of ``data`` (pure Python; meant for short inputs)."""
    b = bytes(data)
    n = len(b)
    i = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M32
        v2 = (seed + _P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _P1) & _M32
        while i + 16 <= n:
            a, c, d, e = _read_4u32(b, i)
            v1, v2, v3, v4 = _round(v1, a), _round(v2, c), _round(v3, d), _round(v4, e)
            i += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        h = (h + _read_u32(b, i)[0] * _P3) & _M32
        h = (_rotl(h, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (h + b[i] * _P5) & _M32
        h = (_rotl(h, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


_HC_CACHE: dict = {}   # 2-byte descriptors (FLG, BD) -> (correct HC, KAFKA-3160 HC)


def header_checksum(descriptor, broken: bool = False) -> int:
    """HC byte for a frame descriptor; ``broken=True``: the KAFKA-3160 value (over magic + descriptor)."""
    return (xxh32((FRAME_MAGIC + bytes(descriptor)) if broken else descriptor) >> 8) & 0xFF


def _checksums(descriptor: bytes):
    pair = _HC_CACHE.get(descriptor)
    if pair is None:
        pair = (header_checksum(descriptor), header_checksum(descriptor, broken=True))
        if len(descriptor) == 2:            # FLG + BD only: a handful of values, worth caching
            _HC_CACHE[descriptor] = pair
    return pair


# ---------------------------------------------------------------------------------------------------
class Lz4Codec(Codec):
    """lz4: LZ4 frames, Kafka flavour (KAFKA-3160 header checksum for magic 0).

    Examples
    --------
    A magic-0 frame carries KAFKA-3160's header checksum (over the magic number too), as old Kafka
    wrote it, and reads back:

    >>> from kafkafmt.codecs import Lz4Codec
    >>> from kafkafmt.codecs.lz4 import header_checksum
    >>> codec = Lz4Codec()
    >>> frame = codec.compress(b"kafka", magic=0)
    >>> frame[6] == header_checksum(frame[4:6], broken=True)
    True
    >>> bytes(codec.decompress(frame, magic=0))
    b'kafka'
    """

    __slots__ = ()
    id = 3
    name = "lz4"

    def _decompress(self, mv, cap, magic):
        n = len(mv)
        out, pos = _frame(mv, 0, cap, magic)
        if pos + 4 > n or mv[pos:pos + 4] != FRAME_MAGIC:
            return out
        parts = [out]
        total = len(out)
        while pos + 4 <= n and mv[pos:pos + 4] == FRAME_MAGIC:
            out, pos = _frame(mv, pos, cap - total, magic)
            total += len(out)
            parts.append(out)
        return b"".join(parts)

    def compress(self, data, level=None, magic=2) -> bytes:
        # Kafka's default lz4 level (9) selects lz4-java's fast compressor, other levels its HC one.
        frame = _lz4f.compress(
            data,
            compression_level=0 if level is None or level == 9 else int(level),
            block_size=_lz4f.BLOCKSIZE_MAX64KB,
            block_linked=False,
            block_checksum=False,
            content_checksum=False,
            store_size=False,
            return_bytearray=magic == 0,
        )
        if magic == 0:
            frame[6] = header_checksum(frame[4:6], broken=True)
            return bytes(frame)
        return frame


def _frame(mv: memoryview, pos: int, cap: int, magic: int):
    """Decompress the frame at ``pos``: (output, position after the frame)."""
    end, hc_pos, size, bound = _walk(mv, pos)
    if size > cap:
        raise over_limit("lz4", cap, size)
    body = hc_pos + 1
    limit = bound if bound <= cap else cap + 1

    header = _repaired_header(mv, pos, hc_pos, True) if magic == 0 else None
    try:
        out, eof = _run(mv, pos, body, end, header, limit, limit > cap)
    except _ERRORS as exc:
        if header is not None or magic == 0:
            raise corrupt("lz4", exc) from exc
        header = _repaired_header(mv, pos, hc_pos, False)
        if header is None:
            raise corrupt("lz4", exc) from exc
        try:
            out, eof = _run(mv, pos, body, end, header, limit, limit > cap)
        except _ERRORS as exc2:
            raise corrupt("lz4", exc2) from exc2
    if out is None or len(out) > cap:
        raise over_limit("lz4", cap)
    if not eof:
        raise corrupt("lz4", "frame does not decode to its end mark")
    return out, end


_STEP = 4 << 20          # output per python-lz4 call: it allocates max_length, then copies the result


def _run(mv, pos, body, end, header, limit, capped):
    """The python-lz4 calls only (so that their exceptions are told apart from ours).

    Output is taken in steps of at most _STEP bytes: python-lz4 allocates max_length bytes and
    copies what it wrote into a new bytes object, so one call with max_length = the cap would
    peak at twice the cap on a bomb. `capped`: limit is cap + 1, reaching it means over the cap
    (returned as None, the parts not joined)."""
    ctx = _new_context()
    if header is None:
        data = mv[pos:end]
    else:
        _decompress_chunk(ctx, header, 0)
        data = mv[body:end]
    parts, total, eof = [], 0, False
    while not eof:
        step = min(_STEP, limit - total)
        out, used, eof = _decompress_chunk(ctx, data, step)
        parts.append(out)
        total += len(out)
        data = data[used:]
        if total >= limit or (not used and not out):
            break                   # at the limit, or no progress: not at eof
    if capped and total >= limit:
        return None, eof            # past the cap: not joined (a join would double the peak)
    return (parts[0] if len(parts) == 1 else b"".join(parts)), eof


def _repaired_header(mv, pos, hc_pos, any_value):
    """Frame header bytes with the correct HC, or None if the stored HC is already correct.

    ``any_value``: replace any wrong HC (magic 0, as Java ignores it); else only the KAFKA-3160 value.
    """
    correct, broken = _checksums(bytes(mv[pos + 4:hc_pos]))
    stored = mv[hc_pos]
    if stored == correct or not (any_value or stored == broken):
        return None
    return bytes(mv[pos:hc_pos]) + bytes((correct,))


def _walk(mv: memoryview, pos: int):
    """Parse the frame at ``pos`` and walk its blocks, in C with the parser the record kernel's
    own lz4 decompression uses: (end, header checksum position, content size or -1, output bound)."""
    end, hc_pos, size, bound = _frames.lz4_frame(mv, pos)
    if end < 0:
        raise corrupt("lz4", _frames.FRAME_ERRORS.get(end, "malformed frame"))
    return end, hc_pos, size, bound
