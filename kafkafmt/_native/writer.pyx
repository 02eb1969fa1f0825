# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Encoder kernel: columns in, Kafka bytes out (the mirror of kernel.pyx).

* `encode_v2` writes whole v2 record batches (61-byte header, varint records with headers,
  crc32c) for many batches in one call; the batch boundaries and per-batch header fields come
  from the caller. For a compressed batch the facade compresses the records section written here
  and re-frames it (`frame_v2`).
* `encode_legacy` writes v0/v1 messages (offset, size, crc32, magic, attributes, [timestamp],
  key, value), one per record: a plain message set, or the inner set of a compressed wrapper.

Layouts: see layout.pxd. Record encoding (v2): length varint, attributes int8 (0), timestampDelta
varlong, offsetDelta varint, keyLength varint (-1 = null), key, valueLength varint, value,
headerCount varint, then per header keyLength varint, key, valueLength varint, value.
"""
import numpy as np
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t, int8_t, int16_t, int32_t, int64_t, uintptr_t
from libc.string cimport memcpy

from kafkafmt._native.kfmt cimport (kfmt_put_varint, kfmt_put_varlong, kfmt_varint_size, kfmt_varlong_size,
                                   kfmt_put_be16, kfmt_advise_hugepages,
                                   kfmt_put_be32, kfmt_put_be64, kfmt_crc_init, kfmt_crc32c, kfmt_crc32)
from kafkafmt._native.layout cimport *
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF

cdef extern from "Python.h":
    PyObject *c_bytes_new "PyBytes_FromStringAndSize"(const char *v, Py_ssize_t n)
    int _PyBytes_Resize(PyObject **b, Py_ssize_t n) except -1
    int c_bytes_check "PyBytes_CheckExact"(PyObject *o)
    Py_ssize_t c_bytes_size "PyBytes_GET_SIZE"(PyObject *o)
    char *c_bytes_data "PyBytes_AS_STRING"(PyObject *o)
    int c_bytearray_check "PyByteArray_CheckExact"(PyObject *o)
    Py_ssize_t c_bytearray_size "PyByteArray_GET_SIZE"(PyObject *o)
    char *c_bytearray_data "PyByteArray_AS_STRING"(PyObject *o)
    int c_unicode_check "PyUnicode_CheckExact"(PyObject *o)
    const char *c_utf8 "PyUnicode_AsUTF8AndSize"(PyObject *o, Py_ssize_t *size)
    int c_long_check "PyLong_CheckExact"(PyObject *o)
    long long c_as_longlong "PyLong_AsLongLongAndOverflow"(PyObject *o, int *overflow)
    int c_list_check "PyList_CheckExact"(PyObject *o)
    int c_tuple_check "PyTuple_CheckExact"(PyObject *o)
    Py_ssize_t c_list_size "PyList_GET_SIZE"(PyObject *o)
    PyObject *c_list_item "PyList_GET_ITEM"(PyObject *o, Py_ssize_t i)
    Py_ssize_t c_tuple_size "PyTuple_GET_SIZE"(PyObject *o)
    PyObject *c_tuple_item "PyTuple_GET_ITEM"(PyObject *o, Py_ssize_t i)
    void PyErr_Clear()
    PyObject *Py_None

kfmt_crc_init()


cdef struct Binary:
    const int64_t *off
    const uint8_t *data
    const uint8_t *valid     # NULL: no nulls
    const uint8_t **ptr      # NULL, or element i's bytes at ptr[i] (not in data): see binary_refs_from_list


cdef inline const uint8_t *bdata(Binary *b, int64_t i) noexcept nogil:
    return b.ptr[i] if b.ptr != NULL else b.data + b.off[i]


cdef inline bint is_valid(const uint8_t *valid, int64_t i) noexcept nogil:
    return valid == NULL or (valid[i >> 3] >> (i & 7)) & 1


cdef inline int32_t blen(Binary *b, int64_t i) noexcept nogil:
    """Length of element i, -1 when null."""
    if not is_valid(b.valid, i):
        return -1
    return <int32_t>(b.off[i + 1] - b.off[i])


cdef inline uint8_t *put_bytes_v(uint8_t *p, Binary *b, int64_t i) noexcept nogil:
    cdef int32_t n = blen(b, i)
    p += kfmt_put_varint(p, n)
    if n > 0:
        memcpy(p, bdata(b, i), n)
        p += n
    return p


cdef inline int64_t record_body_size(Binary *k, Binary *v, Binary *hk, Binary *hv, const int64_t *hidx, int64_t i,
                                     int64_t ts_delta, int32_t offset_delta) noexcept nogil:
    """Bytes of a v2 record after its length varint (layout.pxd), given its deltas."""
    cdef int32_t kl = blen(k, i), vl = blen(v, i), hl
    cdef int64_t h, body = (1 + kfmt_varlong_size(ts_delta) + kfmt_varint_size(offset_delta)
                            + kfmt_varint_size(kl) + (kl if kl > 0 else 0)
                            + kfmt_varint_size(vl) + (vl if vl > 0 else 0)
                            + kfmt_varint_size(<int32_t>(hidx[i + 1] - hidx[i])))
    for h in range(hidx[i], hidx[i + 1]):
        hl = blen(hk, h)
        body += kfmt_varint_size(hl) + hl
        hl = blen(hv, h)
        body += kfmt_varint_size(hl) + (hl if hl > 0 else 0)
    return body


cdef Binary binary(const int64_t[::1] off, const uint8_t[::1] data, object valid, object ptrs=None):
    cdef Binary b
    cdef const uint8_t[::1] v
    cdef const uintptr_t[::1] pv
    b.off = &off[0]
    b.data = &data[0] if data.shape[0] else <const uint8_t *>""
    if valid is None:
        b.valid = NULL
    else:
        v = valid
        b.valid = &v[0] if v.shape[0] else NULL
    b.ptr = NULL
    if ptrs is not None:
        pv = ptrs
        if pv.shape[0] < off.shape[0] - 1:
            raise ValueError("fewer pointers than elements")
        b.ptr = <const uint8_t **>&pv[0] if pv.shape[0] else NULL
    return b


cdef Binary binary_t(tuple t):
    """A Binary from (offsets, data, validity[, pointers])."""
    return binary(t[0], t[1], t[2], t[3] if len(t) > 3 else None)


def max_v2_size(int64_t records, int64_t payload_bytes, int64_t headers, int64_t batches):
    """An upper bound of encode_v2's output size."""
    return batches * V2_HEADER_SIZE + records * (5 + 1 + 10 + 5 + 5 + 5 + 5) + headers * 10 + payload_bytes


def encode_v2(object out, key, value, headers, const int64_t[::1] offsets, const int64_t[::1] timestamps,
              const int64_t[::1] bounds, const int16_t[::1] attributes, const int32_t[::1] leader_epoch,
              const int64_t[::1] producer_id, const int16_t[::1] producer_epoch, const int32_t[::1] base_sequence,
              const int64_t[::1] max_timestamp, bint write_crc=True):
    """Write batches b = 0..len(bounds)-2, batch b holding records bounds[b]:bounds[b+1].

    key, value: (offsets int64, data uint8, validity bitmap or None); headers: (record index
    int64 [n+1], key offsets, key data, value offsets, value data, value validity or None).
    max_timestamp[b] >= 0 overrides the batch's maxTimestamp (LogAppendTime), else it is the
    largest record timestamp. Returns an int64 array of batch start positions (len(bounds)).
    """
    cdef uint8_t[::1] o = out
    return encode_v2_into(&o[0], o.shape[0], key, value, headers, offsets, timestamps, bounds, attributes,
                          leader_epoch, producer_id, producer_epoch, base_sequence, max_timestamp, write_crc)


def encode_v2_bytes(int64_t cap, key, value, headers, const int64_t[::1] offsets, const int64_t[::1] timestamps,
                    const int64_t[::1] bounds, const int16_t[::1] attributes, const int32_t[::1] leader_epoch,
                    const int64_t[::1] producer_id, const int16_t[::1] producer_epoch,
                    const int32_t[::1] base_sequence, const int64_t[::1] max_timestamp):
    """encode_v2 straight into a new bytes object (cap: max_v2_size; shrunk to fit), so the result
    is not copied once more: (bytes, positions)."""
    cdef PyObject *raw = c_bytes_new(NULL, cap)
    if raw == NULL:
        raise MemoryError()
    cdef uint8_t *base = <uint8_t *>c_bytes_data(raw)
    cdef object res
    kfmt_advise_hugepages(base, cap)
    try:
        positions = encode_v2_into(base, cap, key, value, headers, offsets, timestamps, bounds, attributes,
                                   leader_epoch, producer_id, producer_epoch, base_sequence, max_timestamp, True)
    except BaseException:
        res = <object>raw
        Py_DECREF(res)             # the reference raw owned; res's goes at return
        raise
    _PyBytes_Resize(&raw, positions[len(positions) - 1])   # the only reference: shrinks in place (mremap), or raises
    res = <object>raw
    Py_DECREF(res)                 # hand raw's reference over to res
    return res, positions


cdef object encode_v2_into(uint8_t *base, Py_ssize_t cap, key, value, headers, const int64_t[::1] offsets,
                           const int64_t[::1] timestamps, const int64_t[::1] bounds,
                           const int16_t[::1] attributes, const int32_t[::1] leader_epoch,
                           const int64_t[::1] producer_id, const int16_t[::1] producer_epoch,
                           const int32_t[::1] base_sequence, const int64_t[::1] max_timestamp, bint write_crc):
    cdef Binary k = binary_t(tuple(key))
    cdef Binary v = binary_t(tuple(value))
    cdef const int64_t[::1] hidx = headers[0]
    cdef Binary hk = binary(headers[1], headers[2], None)
    cdef Binary hv = binary(headers[3], headers[4], headers[5])
    cdef Py_ssize_t nb = bounds.shape[0] - 1
    positions = np.empty(nb + 1, np.int64)
    cdef int64_t[::1] pos = positions
    cdef uint8_t *p = base
    cdef uint8_t *batch
    cdef Py_ssize_t b
    cdef int64_t i, h, first, last, base_off, base_ts, max_ts, body
    cdef int32_t kl, vl, hl
    with nogil:
        for b in range(nb):
            first = bounds[b]
            last = bounds[b + 1]
            batch = p
            pos[b] = p - base
            base_off = offsets[first]
            base_ts = timestamps[first]
            max_ts = base_ts
            p += V2_HEADER_SIZE
            for i in range(first, last):
                if timestamps[i] > max_ts:
                    max_ts = timestamps[i]
                # exact body size first, so the length varint goes in front without moving bytes
                body = record_body_size(&k, &v, &hk, &hv, &hidx[0], i, timestamps[i] - base_ts,
                                        <int32_t>(offsets[i] - base_off))
                p += kfmt_put_varint(p, <int32_t>body)
                p[0] = 0                                   # record attributes
                p += 1
                p += kfmt_put_varlong(p, timestamps[i] - base_ts)
                p += kfmt_put_varint(p, <int32_t>(offsets[i] - base_off))
                p = put_bytes_v(p, &k, i)
                p = put_bytes_v(p, &v, i)
                p += kfmt_put_varint(p, <int32_t>(hidx[i + 1] - hidx[i]))
                for h in range(hidx[i], hidx[i + 1]):
                    p = put_bytes_v(p, &hk, h)
                    p = put_bytes_v(p, &hv, h)
            if max_timestamp[b] >= 0:
                max_ts = max_timestamp[b]
            kfmt_put_be64(batch + OFFSET_OFFSET, <uint64_t>base_off)
            kfmt_put_be32(batch + SIZE_OFFSET, <uint32_t>(p - batch - LOG_OVERHEAD))
            kfmt_put_be32(batch + PARTITION_LEADER_EPOCH_OFFSET, <uint32_t>leader_epoch[b])
            batch[MAGIC_OFFSET] = 2
            kfmt_put_be16(batch + ATTRIBUTES_OFFSET, <uint16_t>attributes[b])
            kfmt_put_be32(batch + LAST_OFFSET_DELTA_OFFSET, <uint32_t>(offsets[last - 1] - base_off if last > first else 0))
            kfmt_put_be64(batch + BASE_TIMESTAMP_OFFSET, <uint64_t>base_ts)
            kfmt_put_be64(batch + MAX_TIMESTAMP_OFFSET, <uint64_t>max_ts)
            kfmt_put_be64(batch + PRODUCER_ID_OFFSET, <uint64_t>producer_id[b])
            kfmt_put_be16(batch + PRODUCER_EPOCH_OFFSET, <uint16_t>producer_epoch[b])
            kfmt_put_be32(batch + BASE_SEQUENCE_OFFSET, <uint32_t>base_sequence[b])
            kfmt_put_be32(batch + RECORDS_COUNT_OFFSET, <uint32_t>(last - first))
            if write_crc:
                kfmt_put_be32(batch + CRC_OFFSET, kfmt_crc32c(batch + ATTRIBUTES_OFFSET, p - batch - ATTRIBUTES_OFFSET))
        pos[nb] = p - base
    return positions


def frame_v2(const uint8_t[::1] header, const uint8_t[::1] payload, int codec):
    """A v2 batch from an uncompressed batch's 61-byte header and a compressed records section:
    sets the size and the codec bits, then the crc32c."""
    cdef Py_ssize_t n = V2_HEADER_SIZE + payload.shape[0]
    out = bytearray(n)
    cdef uint8_t[::1] o = out
    cdef uint16_t attr
    memcpy(&o[0], &header[0], V2_HEADER_SIZE)
    if payload.shape[0]:
        memcpy(&o[V2_HEADER_SIZE], &payload[0], payload.shape[0])
    kfmt_put_be32(&o[SIZE_OFFSET], <uint32_t>(n - LOG_OVERHEAD))
    attr = (((<uint16_t>o[ATTRIBUTES_OFFSET]) << 8) | o[ATTRIBUTES_OFFSET + 1])
    attr = (attr & ~CODEC_MASK) | (codec & CODEC_MASK)
    kfmt_put_be16(&o[ATTRIBUTES_OFFSET], attr)
    kfmt_put_be32(&o[CRC_OFFSET], kfmt_crc32c(&o[ATTRIBUTES_OFFSET], n - ATTRIBUTES_OFFSET))
    return out


def max_legacy_size(int64_t records, int64_t payload_bytes):
    return records * (LOG_OVERHEAD + V1_RECORD_OVERHEAD) + payload_bytes


def encode_legacy(object out, key, value, const int64_t[::1] offsets, const int64_t[::1] timestamps,
                  Py_ssize_t start, Py_ssize_t stop, int magic, int attributes):
    """Write records start..stop-1 as v0/v1 messages with the given offsets (absolute, or the
    relative inner offsets of a v1 wrapper) and attributes. Returns the bytes written."""
    cdef uint8_t[::1] o = out
    cdef Binary k = binary_t(tuple(key))
    cdef Binary v = binary_t(tuple(value))
    cdef uint8_t *p = &o[0]
    cdef uint8_t *m
    cdef int64_t i
    cdef int32_t kl, vl
    with nogil:
        for i in range(start, stop):
            m = p
            kfmt_put_be64(m + OFFSET_OFFSET, <uint64_t>offsets[i])
            m[MAGIC_OFFSET] = <uint8_t>magic
            m[LEGACY_ATTRIBUTES_OFFSET] = <uint8_t>attributes
            p = m + (V1_KEY_LENGTH_OFFSET if magic == 1 else V0_KEY_LENGTH_OFFSET)
            if magic == 1:
                kfmt_put_be64(m + LEGACY_TIMESTAMP_OFFSET, <uint64_t>timestamps[i])
            kl = blen(&k, i)
            kfmt_put_be32(p, <uint32_t>kl)
            p += 4
            if kl > 0:
                memcpy(p, bdata(&k, i), kl)
                p += kl
            vl = blen(&v, i)
            kfmt_put_be32(p, <uint32_t>vl)
            p += 4
            if vl > 0:
                memcpy(p, bdata(&v, i), vl)
                p += vl
            kfmt_put_be32(m + SIZE_OFFSET, <uint32_t>(p - m - LOG_OVERHEAD))
            kfmt_put_be32(m + LEGACY_CRC_OFFSET, kfmt_crc32(m + MAGIC_OFFSET, p - m - MAGIC_OFFSET))
    return p - &o[0]


def legacy_wrapper(int64_t offset, int magic, int attributes, int64_t timestamp, const uint8_t[::1] value):
    """One v0/v1 message with a null key and the given (compressed) value."""
    cdef Py_ssize_t header = V1_KEY_LENGTH_OFFSET if magic == 1 else V0_KEY_LENGTH_OFFSET
    cdef Py_ssize_t n = header + 8 + value.shape[0]
    out = bytearray(n)
    cdef uint8_t[::1] o = out
    cdef uint8_t *m = &o[0]
    kfmt_put_be64(m + OFFSET_OFFSET, <uint64_t>offset)
    kfmt_put_be32(m + SIZE_OFFSET, <uint32_t>(n - LOG_OVERHEAD))
    m[MAGIC_OFFSET] = <uint8_t>magic
    m[LEGACY_ATTRIBUTES_OFFSET] = <uint8_t>attributes
    if magic == 1:
        kfmt_put_be64(m + LEGACY_TIMESTAMP_OFFSET, <uint64_t>timestamp)
    kfmt_put_be32(m + header, <uint32_t>0xFFFFFFFF)
    kfmt_put_be32(m + header + 4, <uint32_t>value.shape[0])
    if value.shape[0]:
        memcpy(m + header + 8, &value[0], value.shape[0])
    kfmt_put_be32(m + LEGACY_CRC_OFFSET, kfmt_crc32(m + MAGIC_OFFSET, n - MAGIC_OFFSET))
    return out


def split_v2(key, value, headers, const int64_t[::1] offsets, const int64_t[::1] timestamps,
             int64_t batch_size, int64_t max_records):
    """Batch boundaries as a producer makes them: records join the open batch while its exact
    encoded size (61-byte header + records, deltas taken from the batch's first record) stays
    within batch_size; a record that does not fit starts the next batch (a batch always takes at
    least one record). Also ends a batch before max_records or an offset delta past 2^31-1.
    Returns an int64 array of record indices [0, ..., n]."""
    cdef Binary k = binary_t(tuple(key))
    cdef Binary v = binary_t(tuple(value))
    cdef const int64_t[::1] hidx = headers[0]
    cdef Binary hk = binary(headers[1], headers[2], None)
    cdef Binary hv = binary(headers[3], headers[4], headers[5])
    cdef Py_ssize_t n = offsets.shape[0], i
    bounds = np.empty(n + 1, np.int64)
    cdef int64_t[::1] bd = bounds
    cdef Py_ssize_t nb = 0
    cdef int64_t size = 0, count = 0, base_off = 0, base_ts = 0, body, h, rec
    cdef int32_t kl, vl, hl
    with nogil:
        bd[0] = 0
        for i in range(n):
            if count == 0:
                base_off = offsets[i]
                base_ts = timestamps[i]
            body = record_body_size(&k, &v, &hk, &hv, &hidx[0], i, timestamps[i] - base_ts,
                                    <int32_t>(offsets[i] - base_off))
            rec = kfmt_varint_size(<int32_t>body) + body
            if count > 0 and (V2_HEADER_SIZE + size + rec > batch_size or count >= max_records
                              or offsets[i] - base_off > 0x7FFFFFFF):
                nb += 1
                bd[nb] = i
                count = 0
                size = 0
                base_off = offsets[i]
                base_ts = timestamps[i]
                # sizes depend on the deltas: this record again, against its new batch
                body = record_body_size(&k, &v, &hk, &hv, &hidx[0], i, 0, 0)
                rec = kfmt_varint_size(<int32_t>body) + body
            size += rec
            count += 1
        if n > 0:
            nb += 1
            bd[nb] = n
    return bounds[:nb + 1]


# --- Python sequences -> writer columns (encoder.to_columns' fast path) --------------------------
# Each function takes a list and returns the columns, or None when an item is of a type it does not
# handle itself (memoryview, NumPy scalars, wrong types, ints beyond 64 bits...): the caller then
# takes its general path, which converts or rejects the item with a message. No Python code runs
# while a list is walked (items are borrowed references), so the list cannot change under it.



cdef inline int bytes_len(PyObject *x, Py_ssize_t *n) noexcept:
    """1 for bytes/bytearray (length in n), 0 for None, -1 for anything else."""
    if x == Py_None:
        return 0
    if c_bytes_check(x):
        n[0] = c_bytes_size(x)
        return 1
    if c_bytearray_check(x):
        n[0] = c_bytearray_size(x)
        return 1
    return -1


cdef inline const char *bytes_ptr(PyObject *x) noexcept:
    return c_bytes_data(x) if c_bytes_check(x) else c_bytearray_data(x)


cdef inline int header_key(PyObject *k, const char **p, Py_ssize_t *n) noexcept:
    """A header key as UTF-8 bytes (str, or bytes/bytearray as they are): 1, or -1 when unhandled."""
    if c_unicode_check(k):
        p[0] = c_utf8(k, n)
        if p[0] == NULL:                # not encodable (lone surrogates): the general path says why
            PyErr_Clear()
            return -1
        return 1
    if c_bytes_check(k) or c_bytearray_check(k):
        p[0] = bytes_ptr(k)
        n[0] = c_bytes_size(k) if c_bytes_check(k) else c_bytearray_size(k)
        return 1
    return -1


cdef inline int header_pair(PyObject *h, PyObject **k, PyObject **v) noexcept:
    """Split a (key, value) tuple or 2-list; -1 when h is anything else."""
    if c_tuple_check(h) and c_tuple_size(h) == 2:
        k[0] = c_tuple_item(h, 0)
        v[0] = c_tuple_item(h, 1)
        return 1
    if c_list_check(h) and c_list_size(h) == 2:
        k[0] = c_list_item(h, 0)
        v[0] = c_list_item(h, 1)
        return 1
    return -1


def binary_from_list(list items):
    """(offsets int64[n + 1], data uint8, validity bitmap or None) of a list of bytes / bytearray /
    None (null), or None when an item is anything else."""
    cdef PyObject *lst = <PyObject *>items
    cdef Py_ssize_t n = c_list_size(lst), i, length = 0
    cdef int64_t total = 0, nulls = 0
    cdef int kind
    offsets = np.empty(n + 1, np.int64)
    cdef int64_t[::1] off = offsets
    off[0] = 0
    for i in range(n):
        kind = bytes_len(c_list_item(lst, i), &length)
        if kind < 0:
            return None
        if kind == 0:
            nulls += 1
        else:
            total += length
        off[i + 1] = total
    data = np.empty(total if total > 0 else 1, np.uint8)
    cdef uint8_t[::1] dv = data
    cdef uint8_t *d = &dv[0]
    cdef PyObject *x
    for i in range(n):
        x = c_list_item(lst, i)
        if off[i + 1] > off[i]:
            memcpy(d + off[i], bytes_ptr(x), off[i + 1] - off[i])
    if not nulls:
        return offsets, data, None
    validity = np.zeros((n + 7) // 8, np.uint8)
    cdef uint8_t[::1] vb = validity
    for i in range(n):
        if c_list_item(lst, i) != Py_None:
            vb[i >> 3] |= <uint8_t>(1 << (i & 7))
    return offsets, data, validity


def int64_from_list(list items):
    """An int64 array of a list of Python ints (not bools), or None when an item is anything
    else or does not fit in 64 bits."""
    cdef PyObject *lst = <PyObject *>items
    cdef Py_ssize_t n = c_list_size(lst), i
    cdef PyObject *x
    cdef int overflow = 0
    cdef long long v
    out = np.empty(n, np.int64)
    cdef int64_t[::1] o = out
    for i in range(n):
        x = c_list_item(lst, i)
        if not c_long_check(x):
            return None
        v = c_as_longlong(x, &overflow)
        if overflow:
            return None
        o[i] = v
    return out


def headers_from_list(list items):
    """Headers of n records from a list of per-record header lists (or tuples, or None: no
    headers) of (key, value) pairs -- key str (UTF-8) or bytes, value bytes or None. Returns
    (index int64[n + 1], (key offsets, key data, None), (value offsets, value data, validity or
    None)), or None when anything is of another shape or type."""
    cdef PyObject *lst = <PyObject *>items
    cdef Py_ssize_t n = c_list_size(lst), i, j, m, klen = 0, vlen = 0
    cdef PyObject *hs
    cdef PyObject *h
    cdef PyObject *k
    cdef PyObject *v
    cdef const char *kp
    cdef int64_t nh = 0, kbytes = 0, vbytes = 0, vnulls = 0
    cdef int kind
    cdef bint is_list
    # pass 1: shapes, types and sizes
    for i in range(n):
        hs = c_list_item(lst, i)
        if hs == Py_None:
            continue
        if c_list_check(hs):
            m = c_list_size(hs)
            is_list = True
        elif c_tuple_check(hs):
            m = c_tuple_size(hs)
            is_list = False
        else:
            return None
        for j in range(m):
            h = c_list_item(hs, j) if is_list else c_tuple_item(hs, j)
            if header_pair(h, &k, &v) < 0 or header_key(k, &kp, &klen) < 0:
                return None
            kind = bytes_len(v, &vlen)
            if kind < 0:
                return None
            if kind == 0:
                vnulls += 1
            else:
                vbytes += vlen
            kbytes += klen
            nh += 1
    index = np.empty(n + 1, np.int64)
    koff = np.empty(nh + 1, np.int64)
    voff = np.empty(nh + 1, np.int64)
    kdata = np.empty(kbytes if kbytes > 0 else 1, np.uint8)
    vdata = np.empty(vbytes if vbytes > 0 else 1, np.uint8)
    validity = np.zeros((nh + 7) // 8, np.uint8) if vnulls else None
    cdef int64_t[::1] ix = index
    cdef int64_t[::1] ko = koff
    cdef int64_t[::1] vo = voff
    cdef uint8_t[::1] kd = kdata
    cdef uint8_t[::1] vd = vdata
    cdef uint8_t[::1] vb
    if vnulls:
        vb = validity
    cdef int64_t r = 0
    ix[0] = 0
    ko[0] = 0
    vo[0] = 0
    # pass 2: copy
    for i in range(n):
        hs = c_list_item(lst, i)
        if hs != Py_None:
            is_list = c_list_check(hs)
            m = c_list_size(hs) if is_list else c_tuple_size(hs)
            for j in range(m):
                h = c_list_item(hs, j) if is_list else c_tuple_item(hs, j)
                header_pair(h, &k, &v)
                header_key(k, &kp, &klen)
                if klen:
                    memcpy(&kd[ko[r]], kp, klen)
                ko[r + 1] = ko[r] + klen
                if bytes_len(v, &vlen) > 0:
                    if vlen:
                        memcpy(&vd[vo[r]], bytes_ptr(v), vlen)
                    vo[r + 1] = vo[r] + vlen
                    if vnulls:
                        vb[r >> 3] |= <uint8_t>(1 << (r & 7))
                else:
                    vo[r + 1] = vo[r]
                r += 1
        ix[i + 1] = r
    return index, (koff, kdata, None), (voff, vdata, validity)


def binary_refs_from_list(list items, bint copy_list=True):
    """As binary_from_list for a list of bytes / None only, without copying the bytes: returns
    (offsets int64[n + 1], validity bitmap or None, pointers uintp[n] to each item's bytes, keep) --
    `keep` must outlive every use of the pointers: an immutable tuple of the items, or with
    copy_list=False the list itself (only for a caller that uses the pointers before any Python
    code could change the list) -- or None when an item is anything else (bytearray, whose buffer
    may move, included)."""
    cdef PyObject *lst = <PyObject *>items
    cdef Py_ssize_t n = c_list_size(lst), i
    cdef PyObject *x
    cdef int64_t total = 0, nulls = 0
    offsets = np.empty(n + 1, np.int64)
    pointers = np.empty(n, np.uintp)
    cdef int64_t[::1] off = offsets
    cdef uintptr_t[::1] ptr = pointers
    off[0] = 0
    for i in range(n):
        x = c_list_item(lst, i)
        if x == Py_None:
            nulls += 1
            ptr[i] = 0
        elif c_bytes_check(x):
            total += c_bytes_size(x)
            ptr[i] = <uintptr_t>c_bytes_data(x)
        else:
            return None
        off[i + 1] = total
    validity = None
    cdef uint8_t[::1] vb
    if nulls:
        validity = np.zeros((n + 7) // 8, np.uint8)
        vb = validity
        for i in range(n):
            if c_list_item(lst, i) != Py_None:
                vb[i >> 3] |= <uint8_t>(1 << (i & 7))
    return offsets, validity, pointers, (tuple(items) if copy_list else items)


def gather(const int64_t[::1] offsets, const uintptr_t[::1] pointers):
    """The contiguous data of a pointer-based binary column (see binary_refs_from_list)."""
    cdef Py_ssize_t n = pointers.shape[0], i
    cdef int64_t base = offsets[0] if offsets.shape[0] else 0
    total = offsets[n] - base if n else 0
    data = np.empty(total if total > 0 else 1, np.uint8)
    cdef uint8_t[::1] d = data
    with nogil:
        for i in range(n):
            if offsets[i + 1] > offsets[i]:
                memcpy(&d[offsets[i] - base], <const void *>pointers[i], offsets[i + 1] - offsets[i])
    return data


def frame_v2_all(const uint8_t[::1] batches, const int64_t[::1] positions, list payloads, int codec):
    """frame_v2 for every batch at once, into one new bytes object: batch b's 61-byte header is
    batches[positions[b]:positions[b] + 61] (an uncompressed batch as encode_v2 wrote it),
    payloads[b] its compressed records (any bytes-like)."""
    cdef Py_ssize_t nb = len(payloads), b
    cdef int64_t total = 0
    cdef const uint8_t[::1] pv
    for b in range(nb):
        total += V2_HEADER_SIZE + memoryview(payloads[b]).nbytes
    cdef PyObject *raw = c_bytes_new(NULL, total)
    if raw == NULL:
        raise MemoryError()
    cdef object res = <object>raw
    Py_DECREF(res)
    cdef uint8_t *o = <uint8_t *>c_bytes_data(raw)
    cdef uint8_t *e
    cdef uint16_t attr
    cdef Py_ssize_t n
    for b in range(nb):
        pv = payloads[b]
        n = V2_HEADER_SIZE + pv.shape[0]
        e = o
        memcpy(e, &batches[positions[b]], V2_HEADER_SIZE)
        if pv.shape[0]:
            memcpy(e + V2_HEADER_SIZE, &pv[0], pv.shape[0])
        kfmt_put_be32(e + SIZE_OFFSET, <uint32_t>(n - LOG_OVERHEAD))
        attr = (((<uint16_t>e[ATTRIBUTES_OFFSET]) << 8) | e[ATTRIBUTES_OFFSET + 1])
        attr = (attr & ~CODEC_MASK) | (codec & CODEC_MASK)
        kfmt_put_be16(e + ATTRIBUTES_OFFSET, attr)
        kfmt_put_be32(e + CRC_OFFSET, kfmt_crc32c(e + ATTRIBUTES_OFFSET, n - ATTRIBUTES_OFFSET))
        o += n
    return res
