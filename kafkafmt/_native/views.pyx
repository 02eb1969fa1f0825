# cython: language_level=3, boundscheck=False, wraparound=False
"""Arrow binary_view columns of v2 record keys and values, pointing into the bytes they were read
from (binary="view"): the input buffer for uncompressed batches, a retained decompressed buffer
for compressed ones.

A view is 16 bytes (Arrow's BinaryView layout, little-endian): int32 length, then for values of
at most 12 bytes the bytes themselves (zero padded), else a 4-byte prefix, int32 buffer index and
int32 offset into that buffer. The records were already validated by the decode kernel; the walk
here only finds where each key and value lies (its bounds are still checked: a mismatch is
reported, never read past)."""
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

from kafkafmt._native.kfmt cimport payload_pointers

import numpy as np


cdef inline int varint(const uint8_t **pp, const uint8_t *end, int64_t *out) noexcept nogil:
    """A zigzag varint (up to 10 bytes); 0 on success, 1 when it runs past end or is too long."""
    cdef const uint8_t *p = pp[0]
    cdef uint64_t v = 0
    cdef int shift = 0
    cdef uint8_t b
    while True:
        if p >= end or shift > 63:
            return 1
        b = p[0]
        p += 1
        v |= (<uint64_t>(b & 0x7F)) << shift
        if not (b & 0x80):
            break
        shift += 7
    pp[0] = p
    out[0] = <int64_t>(v >> 1) ^ -(<int64_t>(v & 1))
    return 0


cdef inline void put_view(uint8_t *view, const uint8_t *data, int64_t length, int32_t buf_index,
                          int64_t offset) noexcept nogil:
    cdef int32_t n = <int32_t>length
    cdef int32_t off = <int32_t>offset
    memset(view, 0, 16)
    memcpy(view, &n, 4)
    if length <= 12:
        if length > 0:
            memcpy(view + 4, data, length)
    else:
        memcpy(view + 4, data, 4)
        memcpy(view + 8, &buf_index, 4)
        memcpy(view + 12, &off, 4)


cdef inline void set_bit(uint8_t *bitmap, int64_t i, bint valid) noexcept nogil:
    if valid:
        bitmap[i >> 3] |= <uint8_t>(1 << (i & 7))
    else:
        bitmap[i >> 3] &= <uint8_t>~(1 << (i & 7))


def v2_views(const uint8_t[::1] buf, dict batches, Py_ssize_t lo, Py_ssize_t hi, list payloads,
             const int32_t[::1] buf_index, bint include_control, key_views, value_views,
             uint8_t[::1] key_valid, uint8_t[::1] value_valid, int64_t first):
    """Write the views of the records of v2 batches [lo, hi) from row `first` on.

    payloads[b - lo]: the decompressed records of batch b (any buffer) or None (uncompressed: its
    records lie in buf at payload_start); buf_index[b]: the Arrow data-buffer index the batch's
    views name (buf itself or its payload). key_views / value_views: uint8 arrays of shape
    (rows, 16), or None (not wanted). Validity bitmaps get a bit per row (1 = not null).
    Returns (rows written, key nulls, value nulls); rows is -1 - batch when a batch's records do
    not parse as the kernel parsed them."""
    cdef const int8_t[::1] magic = batches["magic"]
    cdef const uint8_t[::1] is_control = batches["is_control"].view(np.uint8)
    cdef const int32_t[::1] count = batches["record_count"]
    cdef const int64_t[::1] pstart = batches["payload_start"]
    cdef const int64_t[::1] plen = batches["payload_len"]
    cdef const int8_t[::1] codec = batches["codec"]
    cdef uint8_t[:, ::1] kv
    cdef uint8_t[:, ::1] vv
    cdef bint want_k = key_views is not None, want_v = value_views is not None
    if want_k:
        kv = key_views
    if want_v:
        vv = value_views
    cdef Py_ssize_t nb = hi - lo, b, k
    cdef list keep = []
    cdef const uint8_t **ptrs = NULL
    cdef int64_t *lens = NULL
    cdef const uint8_t *base = &buf[0] if buf.shape[0] > 0 else NULL
    cdef const uint8_t *src
    cdef const uint8_t *p
    cdef const uint8_t *end
    cdef const uint8_t *rend
    cdef const uint8_t *origin
    cdef int64_t row = first, length, klen, vlen, knulls = 0, vnulls = 0, tmp
    cdef int32_t r, bi
    cdef int bad = 0
    if nb <= 0:
        return (0, 0, 0)
    payload_pointers(payloads, nb, &ptrs, &lens, keep)
    try:
        with nogil:
            for b in range(lo, hi):
                k = b - lo
                if magic[b] != 2:
                    bad = 1
                    break
                if is_control[b] and not include_control:
                    continue
                if count[b] <= 0:
                    continue
                if ptrs[k] != NULL:
                    src = ptrs[k]
                    end = src + lens[k]
                    origin = src
                elif codec[b] != 0:
                    bad = 1     # compressed, yet no payload given
                    break
                else:
                    src = base + pstart[b]
                    end = src + plen[b]
                    origin = base
                bi = buf_index[b]
                p = src
                for r in range(count[b]):
                    if varint(&p, end, &length) or length < 0 or length > end - p:
                        bad = 1
                        break
                    rend = p + length
                    p += 1                                              # attributes
                    if varint(&p, rend, &tmp) or varint(&p, rend, &tmp) or varint(&p, rend, &klen):
                        bad = 1
                        break
                    if klen > rend - p:
                        bad = 1
                        break
                    if want_k:
                        if klen < 0:
                            memset(&kv[row, 0], 0, 16)
                            set_bit(&key_valid[0], row, False)
                            knulls += 1
                        else:
                            put_view(&kv[row, 0], p, klen, bi, p - origin)
                            set_bit(&key_valid[0], row, True)
                    if klen > 0:
                        p += klen
                    if varint(&p, rend, &vlen) or vlen > rend - p:
                        bad = 1
                        break
                    if want_v:
                        if vlen < 0:
                            memset(&vv[row, 0], 0, 16)
                            set_bit(&value_valid[0], row, False)
                            vnulls += 1
                        else:
                            put_view(&vv[row, 0], p, vlen, bi, p - origin)
                            set_bit(&value_valid[0], row, True)
                    row += 1
                    p = rend
                if bad:
                    break
    finally:
        free(ptrs)
        free(lens)
    if bad:
        return (-1 - b, 0, 0)
    return (row - first, knulls, vnulls)
