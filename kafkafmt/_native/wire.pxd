# cython: language_level=3
"""Wire primitives for the no-GIL decoders: big-endian integers and the unsigned varint of Kafka's
flexible messages (the internal topics' decoders: schema, remotelog), and Protobuf's base-128 varint
(the Protobuf kernel, and the message indexes of the Schema Registry's Protobuf framing)."""
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int16_t, int32_t, int64_t

cdef enum:
    WIRE_TRUNCATED = 1        # a varint runs past the end
    WIRE_VARINT = 2           # a varint longer than 10 bytes


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


cdef inline int read_varint64(const uint8_t **pp, const uint8_t *end, uint64_t *out) noexcept nogil:
    """A base-128 varint of at most 10 bytes at ``pp[0]``, before ``end`` (bits past 64 are dropped, as the
    Protobuf runtime drops them): 0 and ``pp`` moved past it, WIRE_TRUNCATED or WIRE_VARINT."""
    cdef const uint8_t *p = pp[0]
    cdef uint64_t u = 0, b
    cdef int shift = 0
    if p < end and p[0] < 0x80:
        out[0] = p[0]
        pp[0] = p + 1
        return 0
    while True:
        if p >= end:
            return WIRE_TRUNCATED
        if shift >= 70:
            return WIRE_VARINT
        b = p[0]
        p += 1
        if shift < 64:
            u |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    pp[0] = p
    out[0] = u
    return 0
