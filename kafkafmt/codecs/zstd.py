"""zstd (codec id 4).

Wire format: one Zstandard frame (RFC 8878) per batch: magic ``28 b5 2f fd``, frame header descriptor,
optional window descriptor, dictionary id and frame content size (FCS), then blocks with 3-byte headers
(last-block bit, type raw/RLE/compressed, size) and an optional 4-byte checksum. Kafka's Java producer
(zstd-jni streaming) and librdkafka write frames *without* the content size; kafka-python writes it.
Concatenated frames and skippable frames are decoded/skipped; other trailing bytes are an error.

Before decompressing, the frame's block headers are walked (a few per batch) to find where the frame
ends and an upper bound of its output (raw/RLE blocks: their size; compressed blocks: 128 KiB). The
content size, when present, is checked against the cap first; without it the one-shot API gets
``max_output_size`` = that bound, so nothing larger than the cap is ever allocated. One
``ZstdDecompressor`` is reused per thread (contexts are not thread-safe; a new context costs ~5 us of
setup, which dominates small batches). Compression: a frame with content size, level 3 by default.
"""
from __future__ import annotations

import struct
import threading

import zstandard

from kafkafmt._native import frames as _frames

from kafkafmt.codecs.base import Codec, corrupt, over_limit

__all__ = ["ZstdCodec"]

_FRAME_MAGIC = 0xFD2FB528
_SKIPPABLE_MASK, _SKIPPABLE_MAGIC = 0xFFFFFFF0, 0x184D2A50
_BLOCK_MAX = 128 * 1024          # no block decompresses to more (Block_Maximum_Size)
_DID_SIZE = (0, 1, 2, 4)
_FCS_SIZE = (0, 2, 4, 8)         # by Frame_Content_Size_flag (flag 0: 1 byte if Single_Segment, else 0)
_SKIPPABLE = _frames.SKIPPABLE
_STREAM_CHUNK = 1 << 20
_read_u32 = struct.Struct("<I").unpack_from
_ERRORS = (zstandard.ZstdError, ValueError, OverflowError)

_local = threading.local()


def _dctx() -> zstandard.ZstdDecompressor:
    try:
        return _local.dctx
    except AttributeError:
        dctx = _local.dctx = zstandard.ZstdDecompressor()
        return dctx


class ZstdCodec(Codec):
    """zstd: one reused decompression context per thread; capped for frames with or without size.

    Examples
    --------
    A frame without its content size (as Kafka's Java producer writes it) is capped all the same:

    >>> import zstandard
    >>> from kafkafmt.codecs import ZstdCodec
    >>> frame = zstandard.ZstdCompressor(write_content_size=False).compress(b"kafka " * 1000)
    >>> len(ZstdCodec().decompress(frame))
    6000
    >>> ZstdCodec().decompress(frame, max_size=100)
    Traceback (most recent call last):
    ...
    kafkafmt.errors.DecompressionLimitError: zstd: payload decompresses to more than the limit of 100 bytes
    """

    __slots__ = ()
    id = 4
    name = "zstd"

    def _decompress(self, mv, cap, magic):
        n = len(mv)
        if not n:
            raise corrupt("zstd", "empty input")
        end, size, bound = _frame(mv, 0)
        if end == n and size != _SKIPPABLE:
            return _one(mv, size, bound, cap)
        parts = []
        total = 0
        pos = 0
        while True:
            if size != _SKIPPABLE:
                out = _one(mv[pos:end], size, bound, cap - total)
                total += len(out)
                parts.append(out)
            pos = end
            if pos >= n:
                break
            end, size, bound = _frame(mv, pos)
        return b"".join(parts)

    def compress(self, data, level=None, magic=2) -> bytes:
        level = 3 if level is None else int(level)
        try:
            cctxs = _local.cctxs
        except AttributeError:
            cctxs = _local.cctxs = {}
        cctx = cctxs.get(level)
        if cctx is None:
            cctx = cctxs[level] = zstandard.ZstdCompressor(level=level, write_content_size=True)
        return cctx.compress(data)


def _one(frame: memoryview, size: int, bound: int, cap: int) -> bytes:
    """Decompress one frame (``frame`` holds exactly that frame)."""
    if size >= 0:
        if size > cap:
            raise over_limit("zstd", cap, size)
        try:
            return _dctx().decompress(frame)
        except _ERRORS as exc:
            raise corrupt("zstd", exc) from exc
    if bound > cap:
        return _stream(frame, cap)
    try:
        # bound == 0 (only empty blocks): 0 would mean "no limit" to zstandard, 1 is the same here
        return _dctx().decompress(frame, max_output_size=bound or 1)
    except _ERRORS as exc:
        raise corrupt("zstd", exc) from exc


def _stream(frame: memoryview, cap: int) -> bytes:
    """Streaming decompression stopping past ``cap``: for frames whose bound exceeds the cap.

    The streaming readers return short output on a truncated frame instead of failing; ``_frame``
    has already checked that every block is present.
    """
    parts = []
    total = 0
    chunks = _dctx().read_to_iter(frame, write_size=_STREAM_CHUNK)
    while True:
        try:
            chunk = next(chunks, None)
        except _ERRORS as exc:
            raise corrupt("zstd", exc) from exc
        if chunk is None:
            return b"".join(parts)
        total += len(chunk)
        if total > cap:
            raise over_limit("zstd", cap)
        parts.append(chunk)


def _frame(mv: memoryview, pos: int):
    """Walk the frame at ``pos`` (in C): (end position, content size or -1 or _SKIPPABLE, output bound)."""
    end, size, bound = _frames.zstd_frame(mv, pos)
    if end < 0:
        raise corrupt("zstd", _frames.FRAME_ERRORS.get(end, "malformed frame"))
    return end, size, bound

