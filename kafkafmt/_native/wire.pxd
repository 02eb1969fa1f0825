# cython: language_level=3
"""Kafka's wire primitives for the no-GIL decoders of internal topics (schema, remotelog): big-endian
integers and the unsigned varint of flexible messages' lengths and tagged fields."""
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int16_t, int32_t, int64_t


cdef inline int16_t be16(const uint8_t *p) noexcept nogil:
    return <int16_t>((<uint32_t>p[0] << 8) | p[1])


cdef inline int32_t be32(const uint8_t *p) noexcept nogil:
    return <int32_t>((<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3])


cdef inline int64_t be64(const uint8_t *p) noexcept nogil:
    return <int64_t>((<uint64_t><uint32_t>be32(p) << 32) | <uint32_t>be32(p + 4))


cdef inline int read_uvarint(const uint8_t **pp, const uint8_t *end, uint32_t *out) noexcept nogil:
    """An unsigned varint of at most 5 bytes at ``pp[0]``, before ``end``: 0 and ``pp`` moved past it, or -1."""
    cdef const uint8_t *p = pp[0]
    cdef uint32_t v = 0
    cdef int shift = 0
    cdef uint8_t b
    while True:
        if p >= end or shift > 28:
            return -1
        b = p[0]
        p += 1
        v |= <uint32_t>(b & 0x7F) << shift
        if not (b & 0x80):
            break
        shift += 7
    pp[0] = p
    out[0] = v
    return 0
