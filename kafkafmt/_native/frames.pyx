# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Walks over compressed frames' block headers, in C (the codecs call these once per batch).

* zstd frame (RFC 8878): magic 0xFD2FB528, frame header descriptor, optional window byte,
  dictionary id and content size, then blocks with 3-byte little-endian headers (last-block bit,
  type: raw / RLE / compressed / reserved, size), then an optional 4-byte checksum. Skippable frames
  (magic 0x184D2A5x) carry a 4-byte length.
* lz4 frame: parsed by kfmt_codecs.h's kfmt_lz4_header / kfmt_lz4_block -- the parser the record
  kernel's own lz4 decompression uses, so both paths accept and reject the same frames.

Both return where the frame ends and an upper bound of its decompressed size, never reading past
the buffer; a malformed or truncated frame is reported with a negative code, whose message is
FRAME_ERRORS[code] (the one table the codecs use).
"""
from libc.stdint cimport uint8_t, uint32_t, int64_t
from libc.stdlib cimport free

cdef enum:
    ZSTD_BLOCK_MAX = 128 * 1024

cdef inline uint32_t le32(const uint8_t *p) noexcept nogil:
    return p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)

cdef extern from "kfmt_codecs.h" nogil:
    ctypedef struct kfmt_lz4_frame:
        int flg
        int64_t block_max
        int64_t content_size
        int64_t hc_pos
        int64_t body
    int kfmt_lz4_header(const uint8_t *src, int64_t n, int64_t pos, kfmt_lz4_frame *f)
    int64_t kfmt_lz4_walk(const uint8_t *src, int64_t n, const kfmt_lz4_frame *f, int64_t *bound)
    int KFMT_LZ4_TRUNCATED_HEADER, KFMT_LZ4_BAD_MAGIC, KFMT_LZ4_BAD_VERSION, KFMT_LZ4_BAD_BLOCK_SIZE
    int KFMT_LZ4_NO_END_MARK, KFMT_LZ4_BLOCK_TOO_BIG, KFMT_LZ4_TRUNCATED
    int64_t kfmt_snappy_decompress(const uint8_t *src, int64_t n, uint8_t **buf, int64_t *cap, int64_t limit)
    int64_t KFMT_DECOMP_CORRUPT, KFMT_DECOMP_LIMIT, KFMT_DECOMP_NOMEM

# zstd walk errors (negative end positions)
TRUNCATED_HEADER = -1
NOT_ZSTD = -2
RESERVED_BIT = -3
TRUNCATED_BLOCK = -4
RESERVED_BLOCK = -5
TRUNCATED_FRAME = -6
SKIPPABLE = -2          # content size value for a skippable frame

#: every negative code of zstd_frame and lz4_frame -> its message
FRAME_ERRORS = {
    TRUNCATED_HEADER: "truncated frame header",
    NOT_ZSTD: "not a zstd frame",
    RESERVED_BIT: "reserved bit set in frame header",
    TRUNCATED_BLOCK: "truncated frame (missing block)",
    RESERVED_BLOCK: "reserved block type",
    TRUNCATED_FRAME: "truncated frame",
    KFMT_LZ4_TRUNCATED_HEADER: "truncated frame header",
    KFMT_LZ4_BAD_MAGIC: "not an LZ4 frame (bad magic)",
    KFMT_LZ4_BAD_VERSION: "unsupported frame version or reserved bits set",
    KFMT_LZ4_BAD_BLOCK_SIZE: "invalid block maximum size",
    KFMT_LZ4_NO_END_MARK: "truncated frame (no end mark)",
    KFMT_LZ4_BLOCK_TOO_BIG: "a block exceeds the frame's maximum block size",
    KFMT_LZ4_TRUNCATED: "truncated frame",
}


def zstd_frame(const uint8_t[::1] mv, Py_ssize_t pos):
    """(end, content size or -1 or SKIPPABLE (-2), output bound); end < 0 is an error code."""
    cdef Py_ssize_t n = mv.shape[0], p
    cdef const uint8_t *b = &mv[0] if n else NULL
    cdef uint32_t magic, header, block_type, block_size
    cdef int fhd, single, fcs_size, did, k
    cdef int64_t size = -1, bound = 0
    if pos + 8 > n:
        return (TRUNCATED_HEADER, 0, 0)
    magic = le32(b + pos)
    if magic != 0xFD2FB528u:
        if (magic & 0xFFFFFFF0u) == 0x184D2A50u:
            p = pos + 8 + <Py_ssize_t>le32(b + pos + 4)
            return (p if p <= n else TRUNCATED_FRAME, SKIPPABLE, 0)
        return (NOT_ZSTD, 0, 0)
    fhd = b[pos + 4]
    if fhd & 0x08:
        return (RESERVED_BIT, 0, 0)
    single = fhd & 0x20
    fcs_size = (0, 2, 4, 8)[fhd >> 6]
    if fcs_size == 0 and single:
        fcs_size = 1
    did = (0, 1, 2, 4)[fhd & 3]
    p = pos + 5 + (0 if single else 1) + did
    if fcs_size:
        if p + fcs_size > n:
            return (TRUNCATED_HEADER, 0, 0)
        size = 0
        for k in range(fcs_size):
            size |= (<int64_t>b[p + k]) << (8 * k)
        if fcs_size == 2:
            size += 256
        p += fcs_size
    while True:
        if p + 3 > n:
            return (TRUNCATED_BLOCK, 0, 0)
        header = b[p] | (<uint32_t>b[p + 1] << 8) | (<uint32_t>b[p + 2] << 16)
        p += 3
        block_type = (header >> 1) & 3
        block_size = header >> 3
        if block_type == 2:
            bound += ZSTD_BLOCK_MAX
            p += block_size
        elif block_type == 0:
            bound += block_size
            p += block_size
        elif block_type == 1:
            bound += block_size
            p += 1
        else:
            return (RESERVED_BLOCK, 0, 0)
        if header & 1:
            break
    if fhd & 0x04:
        p += 4
    if p > n:
        return (TRUNCATED_FRAME, 0, 0)
    return (p, size, bound)


def lz4_frame(const uint8_t[::1] mv, Py_ssize_t pos):
    """The lz4 frame at pos: (end, hc_pos, content size or -1, output bound), the bound capped by
    the content size when there is one; end < 0 is an error code (FRAME_ERRORS)."""
    cdef Py_ssize_t n = mv.shape[0]
    cdef const uint8_t *b = &mv[0] if n else <const uint8_t *>""
    cdef kfmt_lz4_frame f
    cdef int64_t end, bound = 0
    cdef int rc
    if pos < 0 or pos > n:
        raise ValueError(f"pos={pos} is outside the data (0..{n})")
    with nogil:
        rc = kfmt_lz4_header(b, n, pos, &f)
        end = rc if rc else kfmt_lz4_walk(b, n, &f, &bound)
    if end < 0:
        return (end, 0, 0, 0)
    return (end, f.hc_pos, f.content_size, bound)


#: kfmt_codecs.h's decompression codes
DECOMP_CORRUPT, DECOMP_LIMIT, DECOMP_NOMEM = KFMT_DECOMP_CORRUPT, KFMT_DECOMP_LIMIT, KFMT_DECOMP_NOMEM


def snappy_decompress(const uint8_t[::1] src, int64_t limit):
    """The record kernel's snappy decoder (kfmt_codecs.h) on one payload, raw or snappy-java framed:
    (the bytes, 0), or (None, DECOMP_CORRUPT / DECOMP_LIMIT / DECOMP_NOMEM). For tests and tools: the
    kernel calls the same function inline."""
    cdef Py_ssize_t n = src.shape[0]
    cdef const uint8_t *p = &src[0] if n else <const uint8_t *>b""
    cdef uint8_t *buf = NULL
    cdef int64_t cap = 0, got
    with nogil:
        got = kfmt_snappy_decompress(p, n, &buf, &cap, limit)
    try:
        if got < 0:
            return None, got
        return ((<char *>buf)[:got] if got else b""), 0
    finally:
        free(buf)
