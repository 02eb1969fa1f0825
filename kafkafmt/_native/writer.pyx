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
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t, int8_t, int16_t, int32_t, int64_t
from libc.string cimport memcpy

from kafkafmt._native.kfmt cimport (kfmt_put_varint, kfmt_put_varlong, kfmt_varint_size, kfmt_varlong_size,
                                   kfmt_put_be16,
                                   kfmt_put_be32, kfmt_put_be64, kfmt_crc_init, kfmt_crc32c, kfmt_crc32)
from kafkafmt._native.layout cimport *

kfmt_crc_init()


cdef struct Binary:
    const int64_t *off
    const uint8_t *data
    const uint8_t *valid     # NULL: no nulls


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
        memcpy(p, b.data + b.off[i], n)
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


cdef Binary binary(const int64_t[::1] off, const uint8_t[::1] data, object valid):
    cdef Binary b
    cdef const uint8_t[::1] v
    b.off = &off[0]
    b.data = &data[0] if data.shape[0] else <const uint8_t *>""
    if valid is None:
        b.valid = NULL
    else:
        v = valid
        b.valid = &v[0] if v.shape[0] else NULL
    return b


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
    cdef Binary k = binary(key[0], key[1], key[2])
    cdef Binary v = binary(value[0], value[1], value[2])
    cdef const int64_t[::1] hidx = headers[0]
    cdef Binary hk = binary(headers[1], headers[2], None)
    cdef Binary hv = binary(headers[3], headers[4], headers[5])
    cdef Py_ssize_t nb = bounds.shape[0] - 1
    positions = np.empty(nb + 1, np.int64)
    cdef int64_t[::1] pos = positions
    cdef uint8_t *base = &o[0]
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
    cdef Binary k = binary(key[0], key[1], key[2])
    cdef Binary v = binary(value[0], value[1], value[2])
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
                memcpy(p, k.data + k.off[i], kl)
                p += kl
            vl = blen(&v, i)
            kfmt_put_be32(p, <uint32_t>vl)
            p += 4
            if vl > 0:
                memcpy(p, v.data + v.off[i], vl)
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
    cdef Binary k = binary(key[0], key[1], key[2])
    cdef Binary v = binary(value[0], value[1], value[2])
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
