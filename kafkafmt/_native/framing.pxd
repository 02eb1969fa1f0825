# cython: language_level=3
"""The values of a binary column as the typed-value kernels read them (`Source`: contiguous or Arrow
binary_view, every offset and view checked once), and where each value starts: the Schema
Registry's framing (framing.pyx)."""
from libc.stdint cimport uint8_t, int32_t, int64_t
from libc.string cimport memcpy


cdef struct Rows:
    int64_t n
    const int64_t *offsets      # contiguous: n + 1 offsets into base
    const uint8_t *base
    const uint8_t *views        # binary_view: n 16-byte views (NULL: contiguous)
    const uint8_t **bufs        # the data buffers long views point into
    const int64_t *bufsizes


cdef struct Starts:
    # a contiguous column whose values start past a prefix: row i is base[starts[i]:offsets[i + 1]]
    const uint8_t *base
    const int64_t *starts
    const int64_t *offsets


cdef int64_t check_starts(const int64_t[::1] offsets, const uint8_t[::1] data, const int64_t[::1] starts,
                          const int32_t[::1] roots, int64_t start, Starts *out) except -1


cdef inline const uint8_t *starts_span(const Starts *s, int64_t i, const uint8_t **end) noexcept nogil:
    """Where row i's value starts (its end in ``end``), checked once by check_starts."""
    end[0] = s.base + s.offsets[i + 1]
    return s.base + s.starts[i]


cdef class Source:
    cdef Rows rows
    cdef object _keep
    cdef const uint8_t **_bufs
    cdef int64_t *_sizes


cdef inline void row_span(const Rows *r, int64_t i, const uint8_t **p, const uint8_t **end) noexcept nogil:
    """Where row i's value lies (checked once, by Source)."""
    cdef const uint8_t *v
    cdef int32_t n, b, off
    if r.views == NULL:
        p[0] = r.base + r.offsets[i]
        end[0] = r.base + r.offsets[i + 1]
        return
    v = r.views + 16 * i
    memcpy(&n, v, 4)
    if n <= 12:
        p[0] = v + 4
    else:
        memcpy(&b, v + 8, 4)
        memcpy(&off, v + 12, 4)
        p[0] = r.bufs[b] + off
    end[0] = p[0] + n
