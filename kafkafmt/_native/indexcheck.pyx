# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""A segment's ``.index`` / ``.timeindex`` file told sound in one pass over its bytes and its batch table.

Most index files are sound, and a cluster has thousands of them: the checks (`kafkafmt.log.sidefiles`) ask
here first. Each function answers the question of `read_index_file` + `check_index` / `check_timeindex` at
once -- "does Kafka's sanity check pass, and is every entry where the batches say it must be?" -- and gives
the entries only when the answer is yes; None whenever anything is not plainly so (the Python checks then say
what is wrong, in words). So None is always safe; the entries are given only when those checks would find
nothing. Every read is inside the buffer: its length is checked first.

The layouts (Kafka's OffsetIndex and TimeIndex, big-endian): an ``.index`` entry is ``int32 relative offset,
int32 position`` (8 bytes), a ``.timeindex`` entry ``int64 timestamp, int32 relative offset`` (12 bytes); an
all-zero entry starts the zero-filled tail of a preallocated file.
"""
import numpy as np
from libc.stdint cimport uint8_t, int32_t, int64_t
from libc.string cimport memcpy

from kafkafmt._native.kfmt cimport kfmt_be32, kfmt_be64

cdef enum:
    INDEX_ENTRY = 8          # int32 relative offset, int32 position
    TIMEINDEX_ENTRY = 12     # int64 timestamp, int32 relative offset

cdef int64_t INT32_MAX_ = 2147483647


cdef inline int32_t _i32(const uint8_t *p) noexcept nogil:
    return <int32_t>kfmt_be32(p)


cdef inline int64_t _i64(const uint8_t *p) noexcept nogil:
    return <int64_t>kfmt_be64(p)


cdef Py_ssize_t _used(const uint8_t *p, Py_ssize_t n, Py_ssize_t width) noexcept nogil:
    """How many of the n entries come before the first all-zero one (a preallocated file's tail)."""
    cdef Py_ssize_t i, b
    for i in range(n):
        for b in range(width):
            if p[i * width + b]:
                break
        else:
            return i
    return n


cdef _entries(Py_ssize_t used, dtype, Py_ssize_t width):
    """The array the entries are written into (its dtype checked: ``width`` bytes an entry)."""
    out = np.empty(used, dtype)
    if out.dtype.itemsize != width:
        raise ValueError(f"index entries of {width} bytes expected, not {dtype}")
    return out


cdef bint _strictly_increasing(const int64_t[::1] x) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(1, x.shape[0]):
        if x[i] <= x[i - 1]:
            return False
    return True


def sound_offset_index(const uint8_t[::1] data, int64_t base, const int64_t[::1] bpos,
                       const int64_t[::1] blast, dtype):
    """The entries (``dtype``: offset int64, position int32) of an ``.index`` file's bytes ``data`` when Kafka's
    OffsetIndex sanity check passes and every entry points at the start of a batch whose last offset is the
    entry's offset, offsets and positions strictly increasing, offsets within [base, base + 2^31-1]; else
    None. ``bpos`` / ``blast``: the segment's batches' positions and last offsets."""
    cdef Py_ssize_t size = data.shape[0], n, used, i, j = 0, nb = bpos.shape[0]
    cdef const uint8_t *p = &data[0] if size else NULL
    cdef int64_t off, prev_off = 0
    cdef int32_t pos, prev_pos = 0
    if size % INDEX_ENTRY:
        return None
    n = size // INDEX_ENTRY
    used = _used(p, n, INDEX_ENTRY)
    if n and _i32(p + (n - 1) * INDEX_ENTRY) < 0:      # the sanity check: the last offset below the base
        return None
    if used and (not nb or not _strictly_increasing(bpos)):
        return None
    out = _entries(used, dtype, 12)      # (filled as the entries are checked: dropped when one fails)
    cdef uint8_t[::1] raw = out.view(np.uint8).reshape(-1)
    for i in range(used):
        off = base + _i32(p + i * INDEX_ENTRY)
        pos = _i32(p + i * INDEX_ENTRY + 4)
        if i and (off <= prev_off or pos <= prev_pos):
            return None
        if off < base or off - base > INT32_MAX_:
            return None
        while j < nb and bpos[j] < pos:      # (the first batch at or past it: numpy's searchsorted)
            j += 1
        if j == nb or bpos[j] != pos or blast[j] != off:
            return None
        memcpy(&raw[i * 12], &off, 8)
        memcpy(&raw[i * 12 + 8], &pos, 4)
        prev_off, prev_pos = off, pos
    return out


def sound_time_index(const uint8_t[::1] data, int64_t base, const int64_t[::1] bbase,
                     const int64_t[::1] blast, const int64_t[::1] bts, dtype):
    """The entries (``dtype``: timestamp int64, offset int64) of a ``.timeindex`` file's bytes ``data`` when
    Kafka's TimeIndex sanity check passes and every entry is where `check_timeindex` wants it: timestamps
    strictly increasing, offsets not decreasing and within [base, base + 2^31-1], each offset inside a batch
    whose max timestamp is the entry's and not below any earlier batch's; else None. ``bbase`` / ``blast`` /
    ``bts``: the segment's batches' base and last offsets and max timestamps (last offsets strictly
    increasing, or None)."""
    cdef Py_ssize_t size = data.shape[0], n, used, i, j = 0, k = 0, nb = blast.shape[0]
    cdef const uint8_t *p = &data[0] if size else NULL
    cdef int64_t ts, off, prev_ts = 0, prev_off = 0, before = -1
    if size % TIMEINDEX_ENTRY:
        return None
    n = size // TIMEINDEX_ENTRY
    used = _used(p, n, TIMEINDEX_ENTRY)
    if n:
        # the sanity check: the last timestamp (of every entry, a zero tail's too) not below the first, the
        # last offset not below the base
        if _i64(p + (n - 1) * TIMEINDEX_ENTRY) < _i64(p) or _i32(p + (n - 1) * TIMEINDEX_ENTRY + 8) < 0:
            return None
    if used and (not nb or not _strictly_increasing(blast)):
        return None
    out = _entries(used, dtype, 16)      # (filled as the entries are checked: dropped when one fails)
    cdef uint8_t[::1] raw = out.view(np.uint8).reshape(-1)
    for i in range(used):
        ts = _i64(p + i * TIMEINDEX_ENTRY)
        off = base + _i32(p + i * TIMEINDEX_ENTRY + 8)
        if i and (ts <= prev_ts or off < prev_off):
            return None
        if off < base or off - base > INT32_MAX_:
            return None
        while j < nb and blast[j] < off:     # the batch holding it (numpy's searchsorted, side left)
            j += 1
        if j == nb or bbase[j] > off or bts[j] != ts:
            return None
        while k < j:                         # the largest max timestamp of the batches before it
            before = bts[k] if k == 0 or bts[k] > before else before
            k += 1
        if (before if j else -1) > ts:       # (before the first batch: no timestamp, -1)
            return None
        memcpy(&raw[i * 16], &ts, 8)
        memcpy(&raw[i * 16 + 8], &off, 8)
        prev_ts, prev_off = ts, off
    return out
