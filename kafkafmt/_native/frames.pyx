# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Walks over compressed frames' block headers, in C (the codecs call these once per batch).

* zstd frame (RFC 8878): magic 0xFD2FB528, frame header descriptor, optional window byte,
  dictionary id and content size, then blocks with 3-byte little-endian headers (last-block bit,
  type: raw / RLE / compressed / reserved, size), then an optional 4-byte checksum. Skippable frames
  (magic 0x184D2A5x) carry a 4-byte length.
* lz4 frame blocks: 4-byte little-endian size (high bit: stored uncompressed), an optional block
  checksum, ending with a zero size; then an optional content checksum.

Both return where the frame ends and an upper bound of its decompressed size, never reading past
the buffer; a malformed or truncated frame is reported with a negative code.
"""
from libc.stdint cimport uint8_t, uint32_t, int64_t

cdef enum:
    ZSTD_BLOCK_MAX = 128 * 1024

cdef inline uint32_t le32(const uint8_t *p) noexcept nogil:
    return p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)

# error codes (negative end positions)
TRUNCATED_HEADER = -1
NOT_ZSTD = -2
RESERVED_BIT = -3
TRUNCATED_BLOCK = -4
RESERVED_BLOCK = -5
TRUNCATED_FRAME = -6
BLOCK_TOO_BIG = -7
NO_END_MARK = -8
SKIPPABLE = -2          # content size value for a skippable frame


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


def lz4_blocks(const uint8_t[::1] mv, Py_ssize_t pos, int flg, int64_t block_max):
    """(end, output bound) of the blocks starting at pos; end < 0 is an error code."""
    cdef Py_ssize_t n = mv.shape[0], p = pos
    cdef const uint8_t *b = &mv[0] if n else NULL
    cdef int checksum = 4 if flg & 0x10 else 0
    cdef uint32_t size
    cdef int64_t bound = 0
    while True:
        if p + 4 > n:
            return (NO_END_MARK, 0)
        size = le32(b + p)
        p += 4
        if not size:
            break
        if size & 0x80000000u:
            size &= 0x7FFFFFFFu
            bound += size
        else:
            bound += block_max
        if size > block_max:
            return (BLOCK_TOO_BIG, 0)
        p += size + checksum
    if flg & 0x04:
        p += 4
    if p > n:
        return (TRUNCATED_FRAME, 0)
    return (p, bound)
