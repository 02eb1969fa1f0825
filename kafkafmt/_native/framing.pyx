# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The values of a binary column as the typed-value kernels read them, and the Schema Registry's framing
of them, found in one pass per column before any value is decoded:

* `Source`: a binary column contiguous (n + 1 int64 offsets into one buffer) or Arrow binary_view (values
  read where they lie, e.g. a segment's memory map), every offset and view checked once;
* `frame_rows` / `frame`: Confluent's wire format (0x00, big-endian int32 schema id, the payload) of
  Avro and JSON Schema values -- each row's schema id and the distinct ids;
* `frame_protobuf`: the same with the Protobuf message-index array after the id;
* `gather`: a binary_view column made contiguous.

A value that is not framed is not an error here: its row gets a framing code (FRAME_ERRORS), which the
Python side names.
"""
import numpy as np
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int32_t, int64_t, INT32_MAX
from libc.string cimport memcpy
from libc.stdlib cimport malloc, realloc, free

from kafkafmt._native.arrowcols cimport offsets_ok
from kafkafmt._native.wire cimport read_varint64

# ---- framing errors, found before decoding (codes >= 64 belong to the Python side: arrowcols' AC_FRAMING)
cdef enum:
    F_NO_MAGIC = 64       # empty, or the first byte is not 0x00 (nor 0x01)
    F_SHORT = 65          # 0x00 but fewer than 5 bytes
    F_GUID = 66           # 0x01: a 16-byte schema GUID (Confluent's V1 framing)
    F_INDEX = 71          # Protobuf: the message-index array is truncated or invalid

FRAME_ERRORS = {"NO_MAGIC": F_NO_MAGIC, "SHORT": F_SHORT, "GUID": F_GUID, "INDEX": F_INDEX}


cdef inline int header(const uint8_t *v, int64_t length, int32_t *sid) noexcept nogil:
    """The framing of one value: 0 and its schema id, or its F_* code."""
    if length < 1 or (v[0] != 0 and v[0] != 1):
        return F_NO_MAGIC
    if v[0] == 1:
        return F_GUID
    if length < 5:
        return F_SHORT
    sid[0] = <int32_t>((<uint32_t>v[1] << 24) | (<uint32_t>v[2] << 16) | (<uint32_t>v[3] << 8) | v[4])
    return 0


cdef inline bint is_null(const uint8_t *bits, int64_t bit_offset, int64_t i) noexcept nogil:
    return bits != NULL and not (bits[(bit_offset + i) >> 3] >> ((bit_offset + i) & 7)) & 1


cdef const uint8_t *validity_bits(const uint8_t[::1] validity, int64_t bit_offset, int64_t n) except? NULL:
    """The validity bits of n rows from bit_offset (NULL: none null)."""
    if validity is None:
        return NULL
    if validity.shape[0] * 8 < bit_offset + n:
        raise ValueError("validity shorter than the column")
    return &validity[0] if validity.shape[0] else NULL


cdef int64_t check_starts(const int64_t[::1] offsets, const uint8_t[::1] data, const int64_t[::1] starts,
                          const int32_t[::1] roots, int64_t start, Starts *out) except -1:
    """The rows of a contiguous binary column a kernel reads from ``start`` (row i: data[starts[i]:offsets[i + 1]],
    read when roots[i] is 0; -1 a null value, below -1 an error found before): checked once, before the
    kernel reads any, and set in ``out``. Returns their count n (offsets holds n + 1)."""
    cdef int64_t n = offsets.shape[0] - 1, i
    if n < 0:
        raise ValueError("offsets are n + 1 positions")
    if roots.shape[0] < n or starts.shape[0] < n:
        raise ValueError("per-row arrays shorter than the column")
    if start < 0 or start > n:
        raise ValueError("start out of range")
    if not offsets_ok(&offsets[0], n, data.shape[0]):
        raise ValueError("offsets out of range")
    for i in range(start, n):
        if roots[i] > 0 or roots[i] < -255:
            raise ValueError("root out of range")
        if roots[i] == 0 and not offsets[i] <= starts[i] <= offsets[i + 1]:
            raise ValueError("start of a value outside its bytes")
    out.base = &data[0] if data.shape[0] > 0 else <const uint8_t *>""
    out.starts = &starts[0] if n else NULL
    out.offsets = &offsets[0]
    return n


cdef class Source:
    """The values of a binary column as the kernel reads them: contiguous (``offsets``, n + 1 int64
    positions into ``data``) or Arrow binary_view (``views``, uint8 (n, 16): int32 length, then the
    value itself when at most 12 bytes, else a prefix, an int32 buffer index and an int32 offset into
    ``buffers``, e.g. a segment's memory map: read where they lie, not copied). Every offset and view
    is checked against its buffer here, once."""
    def __cinit__(self):
        self._bufs = NULL
        self._sizes = NULL

    def __dealloc__(self):
        free(self._bufs)
        free(self._sizes)

    def __init__(self, offsets=None, data=None, views=None, buffers=()):
        cdef const int64_t[::1] offs
        cdef const uint8_t[::1] d
        cdef const uint8_t[:, ::1] vw
        cdef const uint8_t[::1] buf
        cdef Py_ssize_t k, nb
        cdef int64_t i, n
        cdef int32_t length, bi, off
        cdef const uint8_t *v
        cdef bint ok = True
        keep = []
        if views is None:
            offs = offsets
            d = data
            n = offs.shape[0] - 1
            if n < 0:
                raise ValueError("offsets are n + 1 positions")
            if not offsets_ok(&offs[0], n, d.shape[0]):
                raise ValueError("offsets out of range")
            keep += [offs, d]
            self.rows.n = n
            self.rows.offsets = &offs[0]
            self.rows.base = &d[0] if d.shape[0] > 0 else <const uint8_t *>""
            self.rows.views = NULL
        else:
            vw = views
            if vw.shape[1] != 16:
                raise ValueError("views are (n, 16) bytes")
            nb = len(buffers)
            self._bufs = <const uint8_t **>malloc(max(1, nb) * sizeof(uint8_t *))
            self._sizes = <int64_t *>malloc(max(1, nb) * sizeof(int64_t))
            if self._bufs == NULL or self._sizes == NULL:
                raise MemoryError()
            for k in range(nb):
                buf = np.frombuffer(buffers[k], np.uint8)
                keep.append(buf)
                self._bufs[k] = &buf[0] if buf.shape[0] > 0 else <const uint8_t *>""
                self._sizes[k] = buf.shape[0]
            n = vw.shape[0]
            keep.append(vw)
            with nogil:
                for i in range(n):
                    v = &vw[i, 0]
                    memcpy(&length, v, 4)
                    if length < 0:
                        ok = False
                        break
                    if length > 12:
                        memcpy(&bi, v + 8, 4)
                        memcpy(&off, v + 12, 4)
                        if bi < 0 or bi >= nb or off < 0 or <int64_t>off + length > self._sizes[bi]:
                            ok = False
                            break
            if not ok:
                raise ValueError("a view points outside its buffers")
            self.rows.n = n
            self.rows.views = &vw[0, 0] if n > 0 else <const uint8_t *>""
            self.rows.bufs = self._bufs
            self.rows.bufsizes = self._sizes
        self._keep = keep

    def __len__(self):
        return self.rows.n

    def value(self, int64_t i):
        """Row i's bytes (for error texts)."""
        cdef const uint8_t *p
        cdef const uint8_t *end
        if not 0 <= i < self.rows.n:
            raise IndexError(i)
        row_span(&self.rows, i, &p, &end)
        return (<const char *>p)[:end - p] if end > p else b""


def frame(const int64_t[::1] offsets, const uint8_t[::1] data, const uint8_t[::1] validity=None,
          int64_t bit_offset=0):
    """`frame_rows` of a contiguous binary column (offsets: n + 1 int64 into data)."""
    return frame_rows(Source(offsets, data), validity, bit_offset)


def frame_rows(Source source, const uint8_t[::1] validity=None, int64_t bit_offset=0):
    """The Confluent framing of every value of a `Source`: 0x00, big-endian int32 schema id, payload.

    validity: Arrow validity bits (None: no null), starting at bit `bit_offset`.

    Returns (ids, slots, uniq): ids int32 per row (0 where unframed); slots int32 per row: the
    index of the row's id in `uniq` (distinct ids in order of first appearance), -1 for a null
    value, -F_* for a framing error.
    """
    cdef int64_t n = source.rows.n, i, length, h
    cdef int64_t cap = 64, used = 0, k
    ids_a = np.zeros(max(n, 0), np.int32)
    slots_a = np.empty(max(n, 0), np.int32)
    cdef int32_t[::1] ids = ids_a
    cdef int32_t[::1] slots = slots_a
    cdef const Rows *rows = &source.rows
    cdef const uint8_t *v
    cdef const uint8_t *vend
    cdef const uint8_t *bits = NULL
    cdef int64_t *keys = NULL
    cdef int32_t *vals = NULL
    cdef int64_t *order = NULL
    cdef int64_t *nk
    cdef int32_t *nv
    cdef int32_t sid
    cdef int status
    cdef bint nomem = False
    bits = validity_bits(validity, bit_offset, n)
    keys = <int64_t *>malloc(cap * sizeof(int64_t))
    vals = <int32_t *>malloc(cap * sizeof(int32_t))
    order = <int64_t *>malloc((cap // 2 + 1) * sizeof(int64_t))
    try:
        if keys == NULL or vals == NULL or order == NULL:
            raise MemoryError()
        with nogil:
            for k in range(cap):
                keys[k] = -1
            for i in range(n):
                if is_null(bits, bit_offset, i):
                    slots[i] = -1
                    continue
                row_span(rows, i, &v, &vend)
                status = header(v, vend - v, &sid)
                if status:
                    slots[i] = -status
                    continue
                ids[i] = sid
                # open addressing on the id (a handful of distinct ids per column, as a rule)
                h = (<uint32_t>sid * 2654435761u) & (cap - 1)
                while keys[h] != -1 and keys[h] != <int64_t><uint32_t>sid:
                    h = (h + 1) & (cap - 1)
                if keys[h] == -1:
                    if used + 1 > cap // 2:
                        # grow: rehash the ids seen (their slots are their order of appearance)
                        nk = <int64_t *>malloc(2 * cap * sizeof(int64_t))
                        nv = <int32_t *>malloc(2 * cap * sizeof(int32_t))
                        if nk == NULL or nv == NULL:
                            free(nk)
                            free(nv)
                            nomem = True
                            break
                        free(order)
                        order = <int64_t *>malloc((cap + 1) * sizeof(int64_t))
                        if order == NULL:
                            free(nk)
                            free(nv)
                            nomem = True
                            break
                        for k in range(2 * cap):
                            nk[k] = -1
                        for k in range(cap):
                            if keys[k] != -1:
                                h = (<uint32_t>keys[k] * 2654435761u) & (2 * cap - 1)
                                while nk[h] != -1:
                                    h = (h + 1) & (2 * cap - 1)
                                nk[h] = keys[k]
                                nv[h] = vals[k]
                                order[vals[k]] = keys[k]
                        free(keys)
                        free(vals)
                        keys, vals = nk, nv
                        cap *= 2
                        h = (<uint32_t>sid * 2654435761u) & (cap - 1)
                        while keys[h] != -1:
                            h = (h + 1) & (cap - 1)
                    keys[h] = <int64_t><uint32_t>sid
                    vals[h] = <int32_t>used
                    order[used] = <int64_t><uint32_t>sid
                    used += 1
                slots[i] = vals[h]
        if nomem:
            raise MemoryError()
        uniq = np.empty(used, np.int32)
        for k in range(used):
            uniq[k] = <int32_t><uint32_t>order[k]
        return ids_a, slots_a, uniq
    finally:
        free(keys)
        free(vals)
        free(order)


ctypedef fused offset_t:
    int32_t
    int64_t


cdef void _gather(const Rows *rows, uint8_t *out, offset_t *offs) noexcept nogil:
    cdef int64_t i, total = 0
    cdef const uint8_t *p
    cdef const uint8_t *end
    offs[0] = 0
    for i in range(rows.n):
        row_span(rows, i, &p, &end)
        if end > p:
            memcpy(out + total, p, end - p)
        total += end - p
        offs[i + 1] = <offset_t>total


def gather(Source source):
    """The values of a `Source` one after the other: (offsets, data) as NumPy arrays -- int32 offsets,
    int64 past 2 GiB -- i.e. a binary_view column made contiguous (a null value is empty here: the
    caller keeps the validity)."""
    cdef int64_t n = source.rows.n, i, total = 0
    cdef const uint8_t *p
    cdef const uint8_t *end
    cdef uint8_t *out
    cdef int32_t[::1] o32
    cdef int64_t[::1] o64
    with nogil:
        for i in range(n):
            row_span(&source.rows, i, &p, &end)
            total += end - p
    data_a = np.empty(total, np.uint8)
    cdef uint8_t[::1] data = data_a
    big = total > INT32_MAX
    offs_a = np.empty(n + 1, np.int64 if big else np.int32)
    out = &data[0] if total else NULL
    if big:
        o64 = offs_a
        with nogil:
            _gather(&source.rows, out, &o64[0])
    else:
        o32 = offs_a
        with nogil:
            _gather(&source.rows, out, &o32[0])
    return offs_a, data_a


def frame_protobuf(const int64_t[::1] offsets, const uint8_t[::1] data, const uint8_t[::1] validity=None,
                   int64_t bit_offset=0, int64_t max_indexes=64):
    """The Confluent framing of Protobuf values: 0x00, big-endian int32 schema id, the
    message-index array (a zigzag varint count, then zigzag varint indexes; count 0 -- the single
    byte 0x00 -- means [0]), then the message.

    Returns (ids, starts, first, count, status, at, extra): per row the schema id (int32), where the
    message starts (int64), the first index (int32), the number of indexes (int32; 1 for the 0x00
    shortcut), a status (0 framed, -1 a null value, F_* a framing error) and, for rows with more
    than one index, every index in ``extra`` (int32) from ``at[i]`` (int64 per row, -1 when none).
    """
    cdef int64_t n = offsets.shape[0] - 1, i, j, ecount = 0
    ids_a = np.zeros(max(n, 0), np.int32)
    starts_a = np.zeros(max(n, 0), np.int64)
    first_a = np.zeros(max(n, 0), np.int32)
    count_a = np.zeros(max(n, 0), np.int32)
    status_a = np.zeros(max(n, 0), np.int32)
    at_a = np.full(max(n, 0), -1, np.int64)
    cdef int32_t[::1] ids = ids_a
    cdef int64_t[::1] starts = starts_a
    cdef int32_t[::1] first = first_a
    cdef int32_t[::1] count = count_a
    cdef int32_t[::1] status = status_a
    cdef int64_t[::1] at = at_a
    cdef const uint8_t *base = &data[0] if data.shape[0] else <const uint8_t *>""
    cdef const uint8_t *v
    cdef const uint8_t *p
    cdef const uint8_t *end
    cdef const uint8_t *bits
    cdef uint64_t u
    cdef int64_t cnt, idx
    cdef int32_t *extra = NULL
    cdef int64_t extra_cap = 0
    cdef void *mem
    cdef bint nomem = False, bad
    if n < 0:
        raise ValueError("offsets are n + 1 positions")
    if not offsets_ok(&offsets[0], n, data.shape[0]):
        raise ValueError("offsets out of range")
    bits = validity_bits(validity, bit_offset, n)
    try:
        with nogil:
            for i in range(n):
                if is_null(bits, bit_offset, i):
                    status[i] = -1
                    continue
                v = base + offsets[i]
                end = base + offsets[i + 1]
                status[i] = header(v, end - v, &ids[i])
                if status[i]:
                    continue
                p = v + 5
                if read_varint64(&p, end, &u):
                    status[i] = F_INDEX
                    continue
                cnt = <int64_t>((u >> 1) ^ (~(u & 1) + 1))
                if cnt < 0 or cnt > max_indexes:
                    status[i] = F_INDEX
                    continue
                if cnt == 0:
                    count[i] = 1
                    first[i] = 0
                    starts[i] = p - base
                    continue
                count[i] = <int32_t>cnt
                if cnt > 1:
                    if ecount + cnt > extra_cap:
                        extra_cap = max(2 * extra_cap, ecount + cnt + 64)
                        mem = realloc(extra, extra_cap * sizeof(int32_t))
                        if mem == NULL:
                            nomem = True
                            break
                        extra = <int32_t *>mem
                    at[i] = ecount
                bad = False
                for j in range(cnt):
                    if read_varint64(&p, end, &u):
                        bad = True
                        break
                    idx = <int64_t>((u >> 1) ^ (~(u & 1) + 1))
                    if idx < 0 or idx > INT32_MAX:
                        bad = True
                        break
                    if j == 0:
                        first[i] = <int32_t>idx
                    if cnt > 1:
                        extra[ecount + j] = <int32_t>idx
                if bad:
                    status[i] = F_INDEX
                    at[i] = -1
                    continue
                if cnt > 1:
                    ecount += cnt
                starts[i] = p - base
        if nomem:
            raise MemoryError()
        extra_a = np.zeros(ecount, np.int32)
        for j in range(ecount):
            extra_a[j] = extra[j]
        return ids_a, starts_a, first_a, count_a, status_a, at_a, extra_a
    finally:
        free(extra)
