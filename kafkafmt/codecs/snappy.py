"""snappy (codec id 2).

Two wire formats exist in Kafka data:

* snappy-java's stream ("xerial" framing), written by Kafka's Java clients (``SnappyOutputStream``):
  8 magic bytes ``82 'SNAPPY' 00``, two int32 (version 1, minimum compatible version 1; some producers,
  e.g. Redpanda, write them little-endian, so only the magic bytes are checked), then blocks of
  big-endian int32 length + one raw snappy block each (32 KiB of input per block). A second header in
  place of a block length (concatenated streams) is skipped, as snappy-java does.
* raw snappy (one block, no framing), written by librdkafka and some other clients.

A raw snappy block starts with its uncompressed length as a varint: the total output size is read from
those prefixes and checked against the cap before anything is allocated, then every block is
decompressed straight into one preallocated ``bytearray`` (``cramjam.snappy.decompress_raw_into``),
so there is no intermediate copy.
"""
from __future__ import annotations

import struct

import cramjam

from kafkafmt.codecs.base import Codec, corrupt, over_limit

__all__ = ["SnappyCodec", "XERIAL_MAGIC"]

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)    # version 1, compatible version 1 (big-endian)
_HEADER_SIZE = len(_HEADER)
_BLOCK_INPUT = 32 * 1024                            # snappy-java's default block size
_int32_be = struct.Struct(">i")
_read_i32 = _int32_be.unpack_from

_raw_len = cramjam.snappy.decompress_raw_len
_raw_into = cramjam.snappy.decompress_raw_into
_compress_raw = cramjam.snappy.compress_raw
_ERRORS = (cramjam.DecompressionError, ValueError, OverflowError)


class SnappyCodec(Codec):
    """snappy: xerial-framed (Kafka Java) or raw (librdkafka) snappy; cramjam underneath.

    Examples
    --------
    Kafka's Java clients write the xerial framing; librdkafka's raw snappy reads too:

    >>> import cramjam
    >>> from kafkafmt.codecs import SnappyCodec
    >>> from kafkafmt.codecs.snappy import XERIAL_MAGIC
    >>> codec = SnappyCodec()
    >>> codec.compress(b"kafka").startswith(XERIAL_MAGIC)
    True
    >>> bytes(codec.decompress(cramjam.snappy.compress_raw(b"kafka")))
    b'kafka'
    """

    __slots__ = ()
    id = 2
    name = "snappy"

    def _decompress(self, mv, cap, magic):
        if len(mv) >= _HEADER_SIZE and mv[:8] == XERIAL_MAGIC:
            return _xerial(mv, cap)
        if not len(mv):
            raise corrupt("snappy", "empty input")
        size = _block_size(mv)
        if size > cap:
            raise over_limit("snappy", cap, size)
        out = bytearray(size)
        _into(mv, out, size)
        return out

    def compress(self, data, level=None, magic=2) -> bytes:
        mv = memoryview(data)
        parts = [_HEADER]
        pack = _int32_be.pack
        for start in range(0, len(mv), _BLOCK_INPUT):
            block = _compress_raw(mv[start:start + _BLOCK_INPUT])
            parts.append(pack(len(block)))
            parts.append(block)
        return b"".join(parts)


# No snappy element expands more than a 3-byte copy of 64 bytes: a block of n bytes decompresses to
# less than 22 * n bytes, whatever its header claims.
_MAX_EXPANSION = 22


def _block_size(block) -> int:
    """The uncompressed size a raw snappy block declares (its varint prefix), checked against
    what a block of that length can hold (so a 5-byte header cannot make us allocate 500 MB)."""
    try:
        size = _raw_len(block)
    except _ERRORS as exc:
        raise corrupt("snappy", exc) from exc
    if size > _MAX_EXPANSION * len(block):
        raise corrupt("snappy", f"a {len(block)}-byte block cannot hold the {size} bytes its header claims")
    return size


def _into(block, out, size: int) -> None:
    try:
        written = _raw_into(block, out)
    except _ERRORS as exc:
        raise corrupt("snappy", exc) from exc
    if written != size:
        raise corrupt("snappy", f"block decompressed to {written} bytes, its header says {size}")


def _xerial(mv: memoryview, cap: int) -> bytearray:
    n = len(mv)
    pos = _HEADER_SIZE
    blocks = []
    total = 0
    while pos < n:
        if pos + 4 > n:
            raise corrupt("snappy", "truncated block length")
        length = _read_i32(mv, pos)[0]
        if length < 0:
            if mv[pos:pos + 8] == XERIAL_MAGIC and pos + _HEADER_SIZE <= n:
                pos += _HEADER_SIZE        # concatenated stream: skip its header
                continue
            raise corrupt("snappy", f"negative block length {length}")
        pos += 4
        end = pos + length
        if end > n:
            raise corrupt("snappy", f"block of {length} bytes truncated at {n - pos}")
        if length:
            block = mv[pos:end]
            size = _block_size(block)
            total += size
            if total > cap:
                raise over_limit("snappy", cap)
            blocks.append((block, size))
        pos = end
    out = bytearray(total)
    view = memoryview(out)
    start = 0
    for block, size in blocks:
        _into(block, view[start:start + size], size)
        start += size
    view.release()
    return out
