# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Record kernel: decode the records of many batches into columnar NumPy arrays in one call.

Input: the batch table made by scan.pyx and, per batch, the bytes of its records -- a range of
the input buffer, or the decompressed payload handed over by the Python facade. Output: NumPy
arrays in Arrow's layout (offsets + data + validity bitmaps) that `Columns` owns.

Per batch kind:
  * v2 batch: `recordsCount` varint-encoded records (layout.pxd); offsets and timestamps are
    expanded from the batch's base values and each record's deltas; a LogAppendTime batch gives
    every record the batch's maxTimestamp. Control batches also fill the controls columns.
  * v0/v1 plain message: one record, read from the entry itself.
  * v0/v1 compressed wrapper: the decompressed value is an inner message set; inner offsets of a
    v1 wrapper are relative (absolute = wrapper offset - last inner offset + inner offset, unless
    the wrapper offset is 0, as some librdkafka versions wrote it); v0 inner offsets are absolute.
    Inner v1 records take the wrapper's timestamp type, and its timestamp under LogAppendTime.

Every read is bounded by the end of its record (or batch); lengths are checked before use. When
an output array is full the batch is rolled back and `run` returns NEED_GROW; the caller grows
that array and calls again from that batch, so the arrays are sized from what the data holds,
never from a length field alone.

One concern, the records of many batches into columns in one no-GIL pass: the output arrays it grows
(`Columns`, `GrowableBuffer`), the decompressors it calls inline (kfmt_codecs.h, with their pooled zstd
contexts) and the readers of v2 and legacy records serve that pass alone and are kept beside it so the
compiler inlines them into it; the batch table it reads is scan.pyx's, the on-disk layouts layout.pxd's.
"""
import numpy as np
from libc.stdint cimport uint8_t, uint32_t, int8_t, int16_t, int32_t, int64_t, uintptr_t
from libc.string cimport memcpy, memset
from libc.stdlib cimport malloc, calloc, free, realloc
from cpython.buffer cimport PyBuffer_FillInfo

from kafkafmt._native.kfmt cimport (kfmt_be16, kfmt_be32, kfmt_be64, kfmt_varint, kfmt_varlong, kfmt_crc_init,
                                   kfmt_bytes, kfmt_crc32, kfmt_advise_hugepages, kfmt_copy)
from kafkafmt._native.layout cimport *

cdef extern from "kfmt_codecs.h" nogil:
    int kfmt_load_zstd(const char *path)
    int kfmt_load_lz4(const char *path)
    int kfmt_have_zstd, kfmt_have_lz4
    void *kfmt_ZSTD_createDCtx()
    size_t kfmt_ZSTD_freeDCtx(void *)
    int64_t kfmt_lz4_decompress(const uint8_t *src, int64_t n, uint8_t **buf, int64_t *cap, int64_t limit)
    int64_t kfmt_zstd_decompress(void *dctx, const uint8_t *src, int64_t n, uint8_t **buf, int64_t *cap,
                                 int64_t limit)
    int64_t kfmt_decompressed_guess(int lz4, const uint8_t *src, int64_t n, int64_t ratio, int64_t limit)
    int64_t kfmt_snappy_decompress(const uint8_t *src, int64_t n, uint8_t **buf, int64_t *cap, int64_t limit)
    int64_t kfmt_snappy_size(const uint8_t *src, int64_t n, int64_t limit)
    int KFMT_DECOMP_LIMIT, KFMT_DECOMP_NOMEM

kfmt_crc_init()

# codecs the kernel decompresses itself (bit per codec id): lz4 and zstd once their libraries are loaded,
# snappy always (kfmt_codecs.h decodes it: no library)
C_SNAPPY = 1 << CODEC_SNAPPY
C_LZ4 = 1 << CODEC_LZ4
C_ZSTD = 1 << CODEC_ZSTD


def load_codecs(zstd_path=None, lz4_path=None, snappy=False):
    """Load libzstd / liblz4 (a path or soname each, as kafkafmt._native.libs.find_libraries gives
    them) for in-kernel decompression; returns the C_* bits now available, with C_SNAPPY when ``snappy``
    (the kernel's own decoder: nothing to load)."""
    if zstd_path and not kfmt_have_zstd:
        kfmt_load_zstd(zstd_path.encode())
    if lz4_path and not kfmt_have_lz4:
        kfmt_load_lz4(lz4_path.encode())
    return _loaded() | (C_SNAPPY if snappy else 0)


cdef int _loaded():
    """The C_* bits of the codec libraries loaded."""
    return (C_ZSTD if kfmt_have_zstd else 0) | (C_LZ4 if kfmt_have_lz4 else 0)

# which output to grow (bit mask returned with NEED_GROW)
cpdef enum Grow:
    GROW_RECORDS = 1
    GROW_KEYS = 2
    GROW_VALUES = 4
    GROW_HEADERS = 8
    GROW_HEADER_KEYS = 16
    GROW_HEADER_VALUES = 32
    GROW_CONTROLS = 64

NEED_GROW_ = int(NEED_GROW)


cdef struct Out:
    # per-record columns (capacity rec_cap; offsets arrays hold rec_cap + 1)
    int64_t *offset
    int64_t *timestamp
    int8_t *tstype
    int32_t *bidx
    int64_t rec_cap
    int64_t n
    # binary columns
    int64_t *key_off
    uint8_t *key_data
    uint8_t *key_valid
    int64_t key_cap
    int64_t key_nulls
    int64_t *val_off
    uint8_t *val_data
    uint8_t *val_valid
    int64_t val_cap
    int64_t val_nulls
    # headers: per-record start index (rec_cap + 1), then header rows
    int64_t *hdr_idx
    int64_t hdr_cap
    int64_t n_hdr
    int64_t *hk_off
    uint8_t *hk_data
    uint8_t *hk_valid
    int64_t hk_cap
    int64_t hk_nulls
    int64_t *hv_off
    uint8_t *hv_data
    uint8_t *hv_valid
    int64_t hv_cap
    int64_t hv_nulls
    # control records
    int64_t *c_offset
    int32_t *c_bidx
    int16_t *c_type
    int16_t *c_version
    int32_t *c_epoch
    int64_t *c_ts
    int64_t ctrl_cap
    int64_t n_ctrl
    # binary="view": keys/values as 16-byte Arrow views (rec_cap each) instead of copies; they
    # point at `origin` + offset, data buffer `buf_index` (set per batch by run)
    bint views
    uint8_t *key_views
    uint8_t *val_views
    const uint8_t *origin
    int32_t buf_index
    # in-kernel decompression: scratch output reused batch after batch
    int c_codecs
    uint8_t *scratch
    int64_t scratch_cap
    int64_t max_decompressed
    int64_t scratch_batch       # the batch whose records the scratch holds (kept across a retry)
    int64_t scratch_len
    void *zstd
    # options
    bint skip_payload           # no key, value or header wanted: records are not parsed past the deltas
    bint want_keys
    bint want_values
    bint want_headers
    bint include_control
    bint verify_crc
    # result of the last batch
    int grow
    int64_t err_at          # byte position of the fault inside the batch's records bytes


cdef struct Cursor:
    int64_t n, key_nulls, val_nulls, n_hdr, hv_nulls, n_ctrl


cdef inline void save(Out *o, Cursor *c) noexcept nogil:
    c.n = o.n
    c.key_nulls = o.key_nulls
    c.val_nulls = o.val_nulls
    c.n_hdr = o.n_hdr
    c.hv_nulls = o.hv_nulls
    c.n_ctrl = o.n_ctrl


cdef inline void restore(Out *o, Cursor *c) noexcept nogil:
    o.n = c.n
    o.key_nulls = c.key_nulls
    o.val_nulls = c.val_nulls
    o.n_hdr = c.n_hdr
    o.hv_nulls = c.hv_nulls
    o.n_ctrl = c.n_ctrl


cdef inline void set_bit(uint8_t *bitmap, int64_t i, bint valid) noexcept nogil:
    if valid:
        bitmap[i >> 3] |= <uint8_t>(1 << (i & 7))
    else:
        bitmap[i >> 3] &= <uint8_t>~(1 << (i & 7))


cdef inline int put_binary(int64_t *off, uint8_t *data, uint8_t *valid, int64_t cap, int64_t i,
                           const uint8_t *src, int32_t length, int64_t *nulls, bint copy) noexcept nogil:
    """Append element i of a binary column; returns 1 when the data buffer is full."""
    cdef int64_t start = off[i]
    if length < 0:
        off[i + 1] = start
        set_bit(valid, i, False)
        nulls[0] += 1
        return 0
    if not copy:
        off[i + 1] = start
        set_bit(valid, i, True)
        return 0
    if start + length > cap:
        return 1
    kfmt_copy(data + start, src, length)
    off[i + 1] = start + length
    set_bit(valid, i, True)
    return 0


cdef inline void put_view(uint8_t *views, uint8_t *valid, int64_t i, const uint8_t *src, int32_t length,
                         const Out *o, int64_t *nulls) noexcept nogil:
    """Element i of a binary_view column: int32 length, then the value itself when at most 12
    bytes (zero padded), else its first 4 bytes, the data buffer's index and the int32 offset of
    the value in it (the caller keeps that buffer under 2 GiB)."""
    cdef uint8_t *v = views + 16 * i
    cdef int32_t off
    memset(v, 0, 16)
    if length < 0:
        set_bit(valid, i, False)
        nulls[0] += 1
        return
    memcpy(v, &length, 4)
    if length <= 12:
        memcpy(v + 4, src, length)
    else:
        off = <int32_t>(src - o.origin)
        memcpy(v + 4, src, 4)
        memcpy(v + 8, &o.buf_index, 4)
        memcpy(v + 12, &off, 4)
    set_bit(valid, i, True)


cdef inline int add_record(Out *o, int64_t offset, int64_t ts, int tstype, int32_t bidx,
                           const uint8_t *key, int32_t klen, const uint8_t *val, int32_t vlen) noexcept nogil:
    """Append one record's fixed fields, key and value; returns NEED_GROW when an output is full."""
    cdef int64_t i = o.n
    if i >= o.rec_cap:
        o.grow |= GROW_RECORDS
        return NEED_GROW
    if o.views:
        if o.want_keys:
            put_view(o.key_views, o.key_valid, i, key, klen, o, &o.key_nulls)
        if o.want_values:
            put_view(o.val_views, o.val_valid, i, val, vlen, o, &o.val_nulls)
    elif put_binary(o.key_off, o.key_data, o.key_valid, o.key_cap, i, key, klen, &o.key_nulls, o.want_keys):
        o.grow |= GROW_KEYS
        return NEED_GROW
    elif put_binary(o.val_off, o.val_data, o.val_valid, o.val_cap, i, val, vlen, &o.val_nulls, o.want_values):
        o.grow |= GROW_VALUES
        return NEED_GROW
    o.offset[i] = offset
    o.timestamp[i] = ts
    o.tstype[i] = <int8_t>tstype
    o.bidx[i] = bidx
    o.hdr_idx[i + 1] = o.n_hdr
    o.n = i + 1
    return ERR_NONE


cdef inline int field_error(int rc) noexcept nogil:
    """The error of a kfmt_varint / kfmt_bytes failure (-1: past the end, -2: too long) inside a
    record: its fields run past the length it declares, or a varint is too long."""
    return ERR_RECORD_SIZE if rc == -1 else ERR_VARINT


cdef int add_control(Out *o, int64_t offset, int64_t ts, int32_t bidx,
                     const uint8_t *key, int32_t klen, const uint8_t *val, int32_t vlen) noexcept nogil:
    """Decode a control record: key = int16 version, int16 type; ABORT/COMMIT value = int16
    version, int32 coordinator epoch (other types carry their own schemas: epoch -1)."""
    cdef int64_t i = o.n_ctrl
    cdef int16_t ctype
    if klen < 4:
        return ERR_CONTROL_KEY
    if i >= o.ctrl_cap:
        o.grow |= GROW_CONTROLS
        return NEED_GROW
    ctype = <int16_t>kfmt_be16(key + 2)
    o.c_offset[i] = offset
    o.c_ts[i] = ts
    o.c_bidx[i] = bidx
    o.c_version[i] = <int16_t>kfmt_be16(key)
    o.c_type[i] = ctype
    if (ctype == 0 or ctype == 1) and vlen >= 6:
        o.c_epoch[i] = <int32_t>kfmt_be32(val + 2)
    else:
        o.c_epoch[i] = -1
    o.n_ctrl = i + 1
    return ERR_NONE


cdef int check_headers(const uint8_t **pp, const uint8_t *rend, int32_t hcount) noexcept nogil:
    """Validate the hcount headers at pp[0] (moved past them): ERR_NONE, or the record's error."""
    cdef const uint8_t *hk
    cdef const uint8_t *hv
    cdef int32_t h, hklen, hvlen
    cdef int rc
    for h in range(hcount):
        rc = kfmt_bytes(pp, rend, &hk, &hklen)
        if not rc and hklen < 0:
            return ERR_BAD_LENGTH                # header keys are never null
        if not rc:
            rc = kfmt_bytes(pp, rend, &hv, &hvlen)
        if rc:
            return field_error(rc)
    return ERR_NONE


cdef int write_headers(Out *o, const uint8_t *p, const uint8_t *rend, int32_t hcount) noexcept nogil:
    """Append the hcount headers at p (validated by check_headers): ERR_NONE or NEED_GROW."""
    cdef const uint8_t *hk
    cdef const uint8_t *hv
    cdef int32_t h, hklen, hvlen
    for h in range(hcount):
        if o.n_hdr >= o.hdr_cap:
            o.grow |= GROW_HEADERS
            return NEED_GROW
        kfmt_bytes(&p, rend, &hk, &hklen)
        kfmt_bytes(&p, rend, &hv, &hvlen)
        if put_binary(o.hk_off, o.hk_data, o.hk_valid, o.hk_cap, o.n_hdr, hk, hklen, &o.hk_nulls, True):
            o.grow |= GROW_HEADER_KEYS
            return NEED_GROW
        if put_binary(o.hv_off, o.hv_data, o.hv_valid, o.hv_cap, o.n_hdr, hv, hvlen, &o.hv_nulls, True):
            o.grow |= GROW_HEADER_VALUES
            return NEED_GROW
        o.n_hdr += 1
    return ERR_NONE


# The v2 record loop is compiled twice (a fused-type specialisation, chosen by the type of its
# first argument): for the usual decode -- keys and values copied, a batch of data records --
# with nothing else in the loop, and for the rest (binary views, offsets and timestamps only,
# control batches).
cdef struct Copying:
    char unused
cdef struct General:
    char unused
ctypedef fused RecordLoop:
    Copying
    General


cdef int decode_v2(Out *o, const uint8_t *start, const uint8_t *end, int32_t count, int64_t base_offset,
                   int64_t base_ts, int64_t max_ts, int tstype, int32_t bidx, bint is_control) noexcept nogil:
    if count == 0:
        # Kafka's iterator yields nothing without reading the payload; bytes there would be
        # records lost without a word, so they are an error here
        o.err_at = 0
        return ERR_NONE if end == start else ERR_TRAILING
    if count < 0 or <int64_t>count * V2_MIN_RECORD_SIZE > end - start:
        o.err_at = 0
        return ERR_BAD_COUNT
    if o.views or o.skip_payload or is_control:
        return v2_records(<General *>NULL, o, start, end, count, base_offset, base_ts, max_ts, tstype, bidx,
                          is_control)
    return v2_records(<Copying *>NULL, o, start, end, count, base_offset, base_ts, max_ts, tstype, bidx, False)


cdef int v2_records(RecordLoop *loop, Out *o, const uint8_t *start, const uint8_t *end, int32_t count,
                    int64_t base_offset, int64_t base_ts, int64_t max_ts, int tstype, int32_t bidx,
                    bint is_control) noexcept nogil:
    cdef const uint8_t *p = start
    cdef const uint8_t *rs
    cdef const uint8_t *rend
    cdef const uint8_t *key
    cdef const uint8_t *val
    cdef const uint8_t *hstart
    cdef int32_t r, length, odelta, klen, vlen, hcount
    cdef int64_t tdelta, ts, offset
    cdef int rc
    # the fill levels and output pointers in locals, written back once the batch is decoded (a
    # batch that fails or needs a larger output is rolled back by the caller): kept in registers,
    # not reloaded from *o after every store and copy
    cdef int64_t i = o.n
    cdef int64_t rec_cap = o.rec_cap
    cdef int64_t *out_offset = o.offset
    cdef int64_t *out_ts = o.timestamp
    cdef int8_t *out_tstype = o.tstype
    cdef int32_t *out_bidx = o.bidx
    cdef int64_t *hdr_idx = o.hdr_idx
    cdef bint skip = o.skip_payload and not is_control
    cdef bint want_keys = o.want_keys, want_values = o.want_values, want_headers = o.want_headers
    cdef int64_t *key_off = o.key_off
    cdef int64_t *val_off = o.val_off
    cdef uint8_t *key_data = o.key_data
    cdef uint8_t *val_data = o.val_data
    cdef uint8_t *key_valid = o.key_valid
    cdef uint8_t *val_valid = o.val_valid
    cdef int64_t key_cap = o.key_cap, val_cap = o.val_cap
    cdef int64_t kpos = 0, vpos = 0, key_nulls = o.key_nulls, val_nulls = o.val_nulls
    if RecordLoop is Copying or not (o.views or skip):
        kpos = key_off[i]
        vpos = val_off[i]
    for r in range(count):
        rs = p
        rc = kfmt_varint(&p, end, &length)
        if rc:
            o.err_at = rs - start
            return ERR_RECORD_TRUNCATED if rc == -1 else ERR_VARINT
        if length < 0 or length > end - p:
            o.err_at = rs - start
            return ERR_RECORD_TRUNCATED
        rend = p + length
        if p >= rend:
            o.err_at = rs - start
            return ERR_RECORD_SIZE
        p += 1                                   # record attributes: unused
        rc = kfmt_varlong(&p, rend, &tdelta)
        if not rc:
            rc = kfmt_varint(&p, rend, &odelta)
        if rc:
            o.err_at = rs - start
            return field_error(rc)
        offset = base_offset + odelta
        ts = max_ts if tstype == 1 else base_ts + tdelta
        if RecordLoop is General:
            if skip:
                # offsets and timestamps only: skip to the record's end, as Kafka's
                # DefaultRecord.readPartiallyFrom does for its skipKeyValueIterator
                if i >= rec_cap:
                    o.grow |= GROW_RECORDS
                    return NEED_GROW
                out_offset[i] = offset
                out_ts[i] = ts
                out_tstype[i] = <int8_t>tstype
                out_bidx[i] = bidx
                i += 1
                p = rend
                continue
        rc = kfmt_bytes(&p, rend, &key, &klen)
        if not rc:
            rc = kfmt_bytes(&p, rend, &val, &vlen)
        if not rc:
            rc = kfmt_varint(&p, rend, &hcount)
        if rc:
            o.err_at = rs - start
            return field_error(rc)
        if hcount < 0 or <int64_t>hcount * 2 > rend - p:
            o.err_at = rs - start
            return ERR_BAD_LENGTH
        hstart = p
        if hcount:
            rc = check_headers(&p, rend, hcount)
            if rc != ERR_NONE:
                o.err_at = rs - start
                return rc
        if p != rend:
            o.err_at = rs - start
            return ERR_RECORD_SIZE
        if RecordLoop is General:
            if is_control:
                o.err_at = rs - start
                rc = add_control(o, offset, ts, bidx, key, klen, val, vlen)
                if rc != ERR_NONE:
                    return rc
                if not o.include_control:
                    continue
        # append the record (as add_record, with the locals)
        if i >= rec_cap:
            o.grow |= GROW_RECORDS
            return NEED_GROW
        if RecordLoop is General and o.views:
            if want_keys:
                put_view(o.key_views, key_valid, i, key, klen, o, &key_nulls)
            if want_values:
                put_view(o.val_views, val_valid, i, val, vlen, o, &val_nulls)
        else:
            if klen < 0:
                set_bit(key_valid, i, False)
                key_nulls += 1
            else:
                if want_keys:
                    if kpos + klen > key_cap:
                        o.grow |= GROW_KEYS
                        return NEED_GROW
                    kfmt_copy(key_data + kpos, key, klen)
                    kpos += klen
                set_bit(key_valid, i, True)
            key_off[i + 1] = kpos
            if vlen < 0:
                set_bit(val_valid, i, False)
                val_nulls += 1
            else:
                if want_values:
                    if vpos + vlen > val_cap:
                        o.grow |= GROW_VALUES
                        return NEED_GROW
                    memcpy(val_data + vpos, val, vlen)
                    vpos += vlen
                set_bit(val_valid, i, True)
            val_off[i + 1] = vpos
        out_offset[i] = offset
        out_ts[i] = ts
        out_tstype[i] = <int8_t>tstype
        out_bidx[i] = bidx
        i += 1
        if hcount and want_headers:
            rc = write_headers(o, hstart, rend, hcount)
            if rc != ERR_NONE:
                return rc
        hdr_idx[i] = o.n_hdr
    o.err_at = p - start
    if p != end:
        return ERR_TRAILING
    o.n = i
    o.key_nulls = key_nulls
    o.val_nulls = val_nulls
    return ERR_NONE


cdef inline int legacy_fields(const uint8_t *e, const uint8_t *end, int magic, const uint8_t **key, int32_t *klen,
                              const uint8_t **val, int32_t *vlen) noexcept nogil:
    """Key and value of the v0/v1 message whose entry starts at e and ends at end."""
    cdef const uint8_t *p = e + (V1_KEY_LENGTH_OFFSET if magic == 1 else V0_KEY_LENGTH_OFFSET)
    if end - p < 8:
        return ERR_RECORD_TRUNCATED
    klen[0] = <int32_t>kfmt_be32(p)
    p += 4
    if klen[0] < 0:
        klen[0] = -1                     # as Kafka's LegacyRecord: any negative size is null
    key[0] = p
    if klen[0] > 0:
        if klen[0] > end - p - 4:
            return ERR_RECORD_TRUNCATED
        p += klen[0]
    vlen[0] = <int32_t>kfmt_be32(p)
    p += 4
    if vlen[0] < 0:
        vlen[0] = -1
    val[0] = p
    if vlen[0] > 0:
        if vlen[0] > end - p:
            return ERR_RECORD_TRUNCATED
        p += vlen[0]
    if p != end:
        return ERR_RECORD_SIZE
    return ERR_NONE


cdef int decode_legacy_set(Out *o, const uint8_t *start, const uint8_t *end, int wrapper_magic,
                           int64_t wrapper_offset, int64_t wrapper_ts, int wrapper_tstype, int32_t bidx) noexcept nogil:
    """The inner message set of a compressed v0/v1 wrapper."""
    cdef const uint8_t *p = start
    cdef const uint8_t *e
    cdef const uint8_t *key
    cdef const uint8_t *val
    cdef int32_t size, klen, vlen
    cdef int magic, attr, tstype, rc
    cdef int64_t ts, first = o.n, i, base, last_inner
    while p < end:
        o.err_at = p - start
        if end - p < LOG_OVERHEAD:
            return ERR_RECORD_TRUNCATED
        size = <int32_t>kfmt_be32(p + SIZE_OFFSET)
        if size < V0_RECORD_OVERHEAD:
            return ERR_SIZE_TOO_SMALL
        if size > end - p - LOG_OVERHEAD:
            return ERR_RECORD_TRUNCATED
        e = p
        p += LOG_OVERHEAD + size
        magic = e[MAGIC_OFFSET]
        if magic != 0 and magic != 1:
            return ERR_INNER_MAGIC
        if magic == 1 and size < V1_RECORD_OVERHEAD:
            return ERR_SIZE_TOO_SMALL
        if o.verify_crc and kfmt_crc32(e + MAGIC_OFFSET, size - 4) != kfmt_be32(e + LEGACY_CRC_OFFSET):
            return ERR_INNER_CRC
        attr = e[LEGACY_ATTRIBUTES_OFFSET]
        if attr & CODEC_MASK:
            return ERR_INNER_COMPRESSED
        rc = legacy_fields(e, p, magic, &key, &klen, &val, &vlen)
        if rc != ERR_NONE:
            return rc
        if magic == 1:
            tstype = wrapper_tstype
            ts = wrapper_ts if wrapper_tstype == 1 else <int64_t>kfmt_be64(e + LEGACY_TIMESTAMP_OFFSET)
        else:
            tstype = -1
            ts = -1
        rc = add_record(o, <int64_t>kfmt_be64(e + OFFSET_OFFSET), ts, tstype, bidx, key, klen, val, vlen)
        if rc != ERR_NONE:
            return rc
    o.err_at = 0
    if o.n == first:
        return ERR_INNER_EMPTY
    if wrapper_magic == 1 and wrapper_offset != 0:
        last_inner = o.offset[o.n - 1]
        if wrapper_offset < last_inner:
            return ERR_WRAPPER_OFFSET
        base = wrapper_offset - last_inner
        for i in range(first, o.n):
            o.offset[i] += base
    return ERR_NONE


cdef extern from "stdlib.h" nogil:
    int posix_memalign(void **memptr, size_t alignment, size_t size)

cdef enum:
    HUGE_PAGE = 2 << 20
    # glibc's largest dynamic mmap threshold: larger blocks are always mapped afresh, smaller ones
    # may come from the heap, where freed blocks are reused without page faults
    MMAP_ALWAYS = 32 << 20


cdef class GrowableBuffer:
    """A realloc-managed byte buffer. Growing a large one usually moves no data (glibc remaps its
    pages), unlike a NumPy reallocation. NumPy views are made only once filling is done; the
    buffer refuses to move while a view exists."""
    cdef char *ptr
    cdef Py_ssize_t size
    cdef int exports

    def __cinit__(self, Py_ssize_t size, bint zero=False):
        self.ptr = NULL
        self.size = 0
        self.exports = 0
        self.resize(size, zero)

    def __dealloc__(self):
        free(self.ptr)

    cpdef resize(self, Py_ssize_t size, bint zero=False):
        cdef char *p
        if self.exports:
            raise BufferError("cannot resize a buffer that is viewed")
        size = max(size, 8)
        if size > MMAP_ALWAYS and size > self.size and (self.ptr == NULL or (<uintptr_t>self.ptr) % HUGE_PAGE):
            # a large buffer starts on a 2 MiB boundary, so that transparent huge pages cover all
            # of it (realloc would place it anywhere): 512x fewer page faults while it fills. Not
            # below MMAP_ALWAYS: an aligned block asks the heap for 2 MiB more than its size, which
            # the blocks the last decode freed rarely offer, so the heap grows into fresh pages
            # (hundreds of page faults a decode) instead of reusing them
            p = NULL
            if posix_memalign(<void **>&p, HUGE_PAGE, size) != 0:
                p = NULL
            if p != NULL and self.ptr != NULL:
                memcpy(p, self.ptr, self.size)
                free(self.ptr)
            elif p == NULL:
                p = <char *>realloc(self.ptr, size)
        else:
            p = <char *>realloc(self.ptr, size)
        if p == NULL:
            raise MemoryError(f"cannot allocate {size} bytes")
        if zero and size > self.size:
            memset(p + self.size, 0, size - self.size)
        if size >= HUGE_PAGE and size > self.size:
            kfmt_advise_hugepages(p, size)     # fewer page faults while filling, as NumPy does
        self.ptr = p
        self.size = size

    def __len__(self):
        return self.size

    def __getbuffer__(self, Py_buffer *view, int flags):
        PyBuffer_FillInfo(view, self, self.ptr, self.size, 0, flags)
        self.exports += 1

    def __releasebuffer__(self, Py_buffer *view):
        self.exports -= 1


VIEW_DTYPE = np.dtype((np.void, 16))   # one Arrow binary_view element

# output name -> (dtype, zero-filled, group); a group's arrays are sized together. "copies"
# (offsets of copied keys/values) and "views" follow "records" in their layout's mode and hold
# one element in the other.
_OUTPUTS = {
    "offset": (np.int64, False, "records"), "timestamp": (np.int64, False, "records"),
    "timestamp_type": (np.int8, False, "records"), "batch_index": (np.int32, False, "records"),
    "key_offsets": (np.int64, False, "copies+1"), "value_offsets": (np.int64, False, "copies+1"),
    "key_views": (VIEW_DTYPE, False, "views"), "value_views": (VIEW_DTYPE, False, "views"),
    "header_index": (np.int64, False, "records+1"),
    "key_validity": (np.uint8, True, "records/8"), "value_validity": (np.uint8, True, "records/8"),
    "key_data": (np.uint8, False, "key_data"), "value_data": (np.uint8, False, "value_data"),
    "header_key_offsets": (np.int64, False, "headers+1"), "header_value_offsets": (np.int64, False, "headers+1"),
    "header_key_validity": (np.uint8, True, "headers/8"), "header_value_validity": (np.uint8, True, "headers/8"),
    "header_key_data": (np.uint8, False, "header_key_data"),
    "header_value_data": (np.uint8, False, "header_value_data"),
    "control_offset": (np.int64, False, "controls"), "control_batch_index": (np.int32, False, "controls"),
    "control_type": (np.int16, False, "controls"), "control_version": (np.int16, False, "controls"),
    "control_coordinator_epoch": (np.int32, False, "controls"), "control_timestamp": (np.int64, False, "controls"),
}


def _layout():
    """_OUTPUTS by group: group -> [(name, dtype, itemsize, zero, extra)], extra 0 (cap
    elements), 1 (cap + 1) or 8 (a bitmap of cap bits): computed once, not per call."""
    groups = {}
    for name, (dtype, zero, g) in _OUTPUTS.items():
        base = g.split("+")[0].split("/")[0]
        extra = 1 if g.endswith("+1") else 8 if g.endswith("/8") else 0
        groups.setdefault(base, []).append((name, dtype, np.dtype(dtype).itemsize, zero, extra))
    return groups


_GROUPS = _layout()


cdef inline int64_t _elements(int64_t cap, int extra) noexcept:
    return cap + 1 if extra == 1 else (cap + 7) // 8 if extra == 8 else cap


# zstd decompression contexts kept between calls (creating one costs ~15 us and its first use
# allocates its buffers again); taken and returned with the GIL held
cdef enum:
    DCTX_POOL = 4
cdef void *_dctx_pool[DCTX_POOL]
cdef int _dctx_free = 0


cdef void *_take_dctx():
    global _dctx_free
    if _dctx_free:
        _dctx_free -= 1
        return _dctx_pool[_dctx_free]
    return kfmt_ZSTD_createDCtx()


cdef void _give_dctx(void *d):
    global _dctx_free
    if _dctx_free < DCTX_POOL:
        _dctx_pool[_dctx_free] = d
        _dctx_free += 1
    else:
        kfmt_ZSTD_freeDCtx(d)


cdef int payload_pointers(list payloads, Py_ssize_t nb, const uint8_t ***ptrs, int64_t **lens,
                          list keep) except -1:
    """(pointer, length) of each batch's decompressed payload (NULL, 0 where it is None; every one
    when payloads is None) in two malloc'd arrays the caller frees; the buffers are kept alive in
    `keep`."""
    cdef const uint8_t[::1] view
    cdef Py_ssize_t k
    if payloads is None:
        ptrs[0] = <const uint8_t **>calloc(nb, sizeof(uint8_t *))
        lens[0] = <int64_t *>calloc(nb, sizeof(int64_t))
        if ptrs[0] == NULL or lens[0] == NULL:
            free(ptrs[0])
            free(lens[0])
            ptrs[0] = NULL
            lens[0] = NULL
            raise MemoryError()
        return 0
    ptrs[0] = <const uint8_t **>malloc(nb * sizeof(uint8_t *))
    lens[0] = <int64_t *>malloc(nb * sizeof(int64_t))
    try:
        if ptrs[0] == NULL or lens[0] == NULL:
            raise MemoryError()
        for k in range(nb):
            p = payloads[k]
            if p is None:
                ptrs[0][k] = NULL
                lens[0][k] = 0
            else:
                view = p
                keep.append(view)
                ptrs[0][k] = &view[0] if view.shape[0] > 0 else <const uint8_t *>""
                lens[0][k] = view.shape[0]
    except BaseException:
        free(ptrs[0])
        free(lens[0])
        ptrs[0] = NULL
        lens[0] = NULL
        raise
    return 0


cdef class Columns:
    """Output arrays of the kernel, with their fill levels. Grown by `grow`/`reserve`, filled by
    `run`; `arrays()` hands them to NumPy (after which they can no longer grow)."""
    cdef Out o
    cdef dict buffers                   # name -> GrowableBuffer
    cdef dict caps                      # group -> capacity in elements
    cdef public bint want_keys, want_values, want_headers, include_control, verify_crc
    cdef readonly bint views

    def __cinit__(self, *args, **kwargs):
        self.o.scratch = NULL
        self.o.scratch_cap = 0
        self.o.zstd = NULL
        self.o.c_codecs = 0
        self.o.scratch_batch = -1

    def __dealloc__(self):
        free(self.o.scratch)
        if self.o.zstd != NULL:
            _give_dctx(self.o.zstd)

    def __init__(self, int64_t records, int64_t key_bytes, int64_t value_bytes, int64_t headers=16,
                 int64_t header_key_bytes=256, int64_t header_value_bytes=1024, int64_t controls=0,
                 bint want_keys=True, bint want_values=True, bint want_headers=True,
                 bint include_control=False, bint verify_crc=True, int c_codecs=0,
                 int64_t max_decompressed=512 << 20, bint views=False):
        # views: keys and values become binary_view elements pointing into the input and into the
        # decompressed payloads handed to run() (never into the scratch buffer, which is reused)
        self.views = views
        if views:
            c_codecs = 0
        self.o.c_codecs = c_codecs & (_loaded() | C_SNAPPY)
        self.o.max_decompressed = max_decompressed
        if self.o.c_codecs & C_ZSTD:
            self.o.zstd = _take_dctx()
            if self.o.zstd == NULL:
                raise MemoryError("cannot create a zstd decompression context")
        self.want_keys = want_keys
        self.want_values = want_values
        self.want_headers = want_headers
        self.include_control = include_control
        self.verify_crc = verify_crc
        self.buffers = {}
        self.caps = {}
        self.o.n = self.o.key_nulls = self.o.val_nulls = self.o.n_hdr = self.o.hv_nulls = self.o.n_ctrl = 0
        self.o.hk_nulls = 0
        self._size("copies" if views else "views", 1)     # the other layout's outputs: unused
        self._size("records", max(records, 1))
        self._size("key_data", max(key_bytes, 1) if want_keys and not views else 1)
        self._size("value_data", max(value_bytes, 1) if want_values and not views else 1)
        self._size("headers", max(headers, 1))
        self._size("header_key_data", max(header_key_bytes, 1))
        self._size("header_value_data", max(header_value_bytes, 1))
        self._size("controls", max(controls, 1))
        self._bind()
        self.o.key_off[0] = self.o.val_off[0] = self.o.hdr_idx[0] = 0
        self.o.hk_off[0] = self.o.hv_off[0] = 0

    def _size(self, group, int64_t cap):
        """(Re)size every output of a group to hold cap elements."""
        self.caps[group] = cap
        cdef GrowableBuffer buf
        for name, dtype, itemsize, zero, extra in _GROUPS[group]:
            nbytes = _elements(cap, extra) * itemsize
            buf = self.buffers.get(name)
            if buf is None:
                self.buffers[name] = GrowableBuffer(nbytes, zero)
            else:
                buf.resize(nbytes, zero)
        if group == "records":      # the key/value outputs of this layout hold one element per record
            self._size("views" if self.views else "copies", cap)

    cdef char *_ptr(self, name):
        return (<GrowableBuffer>self.buffers[name]).ptr

    def _bind(self):
        """Point the C struct at the current buffers (after any reallocation)."""
        self.o.offset = <int64_t *>self._ptr("offset")
        self.o.timestamp = <int64_t *>self._ptr("timestamp")
        self.o.tstype = <int8_t *>self._ptr("timestamp_type")
        self.o.bidx = <int32_t *>self._ptr("batch_index")
        self.o.rec_cap = self.caps["records"]
        self.o.key_off = <int64_t *>self._ptr("key_offsets")
        self.o.key_data = <uint8_t *>self._ptr("key_data")
        self.o.key_cap = self.caps["key_data"]
        self.o.key_valid = <uint8_t *>self._ptr("key_validity")
        self.o.val_off = <int64_t *>self._ptr("value_offsets")
        self.o.val_data = <uint8_t *>self._ptr("value_data")
        self.o.val_cap = self.caps["value_data"]
        self.o.val_valid = <uint8_t *>self._ptr("value_validity")
        self.o.key_views = <uint8_t *>self._ptr("key_views")
        self.o.val_views = <uint8_t *>self._ptr("value_views")
        self.o.views = self.views
        self.o.hdr_idx = <int64_t *>self._ptr("header_index")
        self.o.hdr_cap = self.caps["headers"]
        self.o.hk_off = <int64_t *>self._ptr("header_key_offsets")
        self.o.hk_data = <uint8_t *>self._ptr("header_key_data")
        self.o.hk_cap = self.caps["header_key_data"]
        self.o.hk_valid = <uint8_t *>self._ptr("header_key_validity")
        self.o.hv_off = <int64_t *>self._ptr("header_value_offsets")
        self.o.hv_data = <uint8_t *>self._ptr("header_value_data")
        self.o.hv_cap = self.caps["header_value_data"]
        self.o.hv_valid = <uint8_t *>self._ptr("header_value_validity")
        self.o.c_offset = <int64_t *>self._ptr("control_offset")
        self.o.c_bidx = <int32_t *>self._ptr("control_batch_index")
        self.o.c_type = <int16_t *>self._ptr("control_type")
        self.o.c_version = <int16_t *>self._ptr("control_version")
        self.o.c_epoch = <int32_t *>self._ptr("control_coordinator_epoch")
        self.o.c_ts = <int64_t *>self._ptr("control_timestamp")
        self.o.ctrl_cap = self.caps["controls"]
        self.o.want_keys = self.want_keys
        self.o.want_values = self.want_values
        self.o.skip_payload = not (self.want_keys or self.want_values or self.want_headers)
        self.o.want_headers = self.want_headers
        self.o.include_control = self.include_control
        self.o.verify_crc = self.verify_crc

    def grow(self, int mask, int64_t need_bytes=0):
        """Enlarge the outputs named by `mask` (at least doubling; data buffers by need_bytes too)."""
        c = self.caps
        if mask & GROW_RECORDS:
            self._size("records", 2 * c["records"] + 16)
        if mask & GROW_KEYS:
            self._size("key_data", 2 * c["key_data"] + need_bytes)
        if mask & GROW_VALUES:
            self._size("value_data", 2 * c["value_data"] + need_bytes)
        if mask & GROW_HEADERS:
            self._size("headers", 2 * c["headers"] + 16)
        if mask & GROW_HEADER_KEYS:
            self._size("header_key_data", 2 * c["header_key_data"] + need_bytes)
        if mask & GROW_HEADER_VALUES:
            self._size("header_value_data", 2 * c["header_value_data"] + need_bytes)
        if mask & GROW_CONTROLS:
            self._size("controls", 2 * c["controls"] + 16)
        self._bind()

    def reserve(self, int64_t key_bytes, int64_t value_bytes, int64_t records=0):
        """Make room for at least this many more key/value bytes and records, growing
        geometrically so chunk-by-chunk callers reallocate only O(log n) times."""
        cdef int64_t kused = 0, vused = 0
        if not self.views:
            kused = self.o.key_off[self.o.n]
            vused = self.o.val_off[self.o.n]
        c = self.caps
        changed = False
        if self.views:
            key_bytes = value_bytes = 0
        if self.want_keys and c["key_data"] - kused < key_bytes:
            self._size("key_data", max(kused + key_bytes, c["key_data"] * 3 // 2))
            changed = True
        if self.want_values and c["value_data"] - vused < value_bytes:
            self._size("value_data", max(vused + value_bytes, c["value_data"] * 3 // 2))
            changed = True
        if c["records"] - self.o.n < records:
            self._size("records", max(self.o.n + records, c["records"] * 3 // 2))
            changed = True
        if changed:
            self._bind()

    def reserve_headers(self, int64_t headers, int64_t key_bytes, int64_t value_bytes):
        """Room for at least this many more header rows and header key/value bytes."""
        c = self.caps
        cdef int64_t n = self.o.n_hdr, kused = self.o.hk_off[self.o.n_hdr], vused = self.o.hv_off[self.o.n_hdr]
        if c["headers"] - n < headers:
            self._size("headers", max(n + headers, c["headers"] * 3 // 2))
        if c["header_key_data"] - kused < key_bytes:
            self._size("header_key_data", max(kused + key_bytes, c["header_key_data"] * 3 // 2))
        if c["header_value_data"] - vused < value_bytes:
            self._size("header_value_data", max(vused + value_bytes, c["header_value_data"] * 3 // 2))
        self._bind()

    @property
    def counts(self):
        """Fill levels: records, key bytes, value bytes, headers, header key/value bytes, controls."""
        if self.o.skip_payload:   # only the fixed-width columns were written
            return dict(records=self.o.n, key_nulls=0, value_nulls=0, headers=0, header_value_nulls=0,
                        controls=self.o.n_ctrl, key_bytes=0, value_bytes=0, header_key_bytes=0,
                        header_value_bytes=0)
        return dict(records=self.o.n, key_nulls=self.o.key_nulls, value_nulls=self.o.val_nulls,
                    headers=self.o.n_hdr, header_value_nulls=self.o.hv_nulls, controls=self.o.n_ctrl,
                    key_bytes=0 if self.views else self.o.key_off[self.o.n],
                    value_bytes=0 if self.views else self.o.val_off[self.o.n],
                    header_key_bytes=self.o.hk_off[self.o.n_hdr],
                    header_value_bytes=self.o.hv_off[self.o.n_hdr])

    @property
    def skip_payload(self):
        """True when only offsets, timestamps and types were decoded (no key/value/header arrays)."""
        return self.o.skip_payload

    def arrays(self):
        """NumPy views of the filled part of every output (the buffers stop growing)."""
        c = self.counts
        used = {"records": c["records"], "headers": c["headers"], "controls": c["controls"],
                "views": c["records"] if self.views else 0, "copies": 0 if self.views else c["records"],
                "key_data": c["key_bytes"], "value_data": c["value_bytes"],
                "header_key_data": c["header_key_bytes"], "header_value_data": c["header_value_bytes"]}
        out = {}
        cdef GrowableBuffer buf
        cdef int64_t n
        for group, outputs in _GROUPS.items():
            for name, dtype, itemsize, zero, extra in outputs:
                n = _elements(used[group], extra)
                buf = self.buffers[name]
                buf.resize(n * itemsize)   # give back the spare room
                out[name] = np.frombuffer(buf, dtype=dtype, count=n)
        # realloc may have moved the buffers: point the C struct at them, with their new sizes
        self.caps.update({g: max(v, 1) for g, v in used.items()})
        self._bind()
        return out

    def mark(self):
        """The fill levels now, for `rewind` (to drop what later runs decoded)."""
        return (self.o.n, self.o.key_nulls, self.o.val_nulls, self.o.n_hdr, self.o.hv_nulls, self.o.n_ctrl)

    def rewind(self, mark):
        """Drop everything decoded since `mark` was taken (the outputs keep their room)."""
        self.o.n, self.o.key_nulls, self.o.val_nulls, self.o.n_hdr, self.o.hv_nulls, self.o.n_ctrl = mark
        self.o.scratch_batch = -1

    def run(self, const uint8_t[::1] buf, dict batches, Py_ssize_t start, Py_ssize_t stop, list payloads=None,
            const int32_t[::1] buf_index=None, int64_t batch_base=0):
        """Decode batches [start, stop). payloads[i - start] holds the decompressed records
        (v2) or inner message set (v0/v1) of batch i when it is compressed, else None (payloads
        None: no batch has one).
        buf_index (views): per batch, the index of the data buffer its payload is (views into buf
        are buffer 0); buf and every payload must be under 2 GiB. batch_base: added to the
        batch numbers written (batch_index), when these batches follow others decoded into the
        same outputs by earlier runs over other tables.

        Returns (status, batch, err_at, grow_mask): status ERR_NONE when all were decoded, an
        error code for batch `batch` (err_at: byte position inside its records bytes), or
        NEED_GROW (call grow(grow_mask) and run again from `batch`).
        """
        cdef Py_ssize_t nb = stop - start
        cdef const uint8_t **ptrs = NULL
        cdef int64_t *lens = NULL
        cdef list keep = []
        cdef const int64_t[::1] position = batches["position"]
        cdef const int32_t[::1] size = batches["size"]
        cdef const int8_t[::1] magic = batches["magic"]
        cdef const int8_t[::1] codec = batches["codec"]
        cdef const int8_t[::1] tstype = batches["timestamp_type"]
        cdef const uint8_t[::1] is_control = batches["is_control"].view(np.uint8)
        cdef int64_t[::1] base_offset = batches["base_offset"]
        cdef const int64_t[::1] last_offset = batches["last_offset"]
        cdef int32_t[::1] last_offset_delta = batches["last_offset_delta"]
        cdef const int64_t[::1] first_ts = batches["first_timestamp"]
        cdef const int64_t[::1] max_ts = batches["max_timestamp"]
        cdef int32_t[::1] count = batches["record_count"]
        cdef const int64_t[::1] pstart = batches["payload_start"]
        cdef const int64_t[::1] plen = batches["payload_len"]
        cdef const uint8_t *base = &buf[0] if buf.shape[0] > 0 else NULL
        cdef const uint8_t *src
        cdef const uint8_t *e
        cdef const uint8_t *key
        cdef const uint8_t *val
        cdef int32_t klen, vlen
        cdef int64_t srclen, first, got
        cdef Py_ssize_t b, k
        cdef int status = ERR_NONE
        cdef Cursor cur
        cdef const int32_t *bix = NULL
        if nb <= 0:
            return (ERR_NONE, stop, 0, 0)
        if self.views:
            if buf_index is None or buf_index.shape[0] < stop:
                raise ValueError("views need a data buffer index for every batch")
            bix = &buf_index[0]
        payload_pointers(payloads, nb, &ptrs, &lens, keep)
        try:
            self.o.grow = 0
            self.o.err_at = 0
            b = start
            with nogil:
                while b < stop:
                    k = b - start
                    save(&self.o, &cur)
                    if bix != NULL:    # where this batch's views point
                        if ptrs[k] != NULL:
                            self.o.origin = ptrs[k]
                            self.o.buf_index = bix[b]
                        else:
                            self.o.origin = base
                            self.o.buf_index = 0
                    if magic[b] == 2:
                        if ptrs[k] != NULL:
                            src = ptrs[k]
                            srclen = lens[k]
                        else:
                            src = base + pstart[b]
                            srclen = plen[b]
                            if (self.o.c_codecs >> codec[b]) & 1 and (count[b] > 0 or srclen > 0) and \
                                    self.o.scratch_batch == b:
                                src = self.o.scratch   # decompressed before an output had to grow
                                srclen = self.o.scratch_len
                            elif (self.o.c_codecs >> codec[b]) & 1 and (count[b] > 0 or srclen > 0):
                                # decompress here, into the reused scratch buffer
                                self.o.scratch_batch = -1
                                if codec[b] == CODEC_LZ4:
                                    got = kfmt_lz4_decompress(src, srclen, &self.o.scratch, &self.o.scratch_cap,
                                                              self.o.max_decompressed)
                                elif codec[b] == CODEC_SNAPPY:
                                    got = kfmt_snappy_decompress(src, srclen, &self.o.scratch, &self.o.scratch_cap,
                                                                 self.o.max_decompressed)
                                else:
                                    got = kfmt_zstd_decompress(self.o.zstd, src, srclen, &self.o.scratch,
                                                               &self.o.scratch_cap, self.o.max_decompressed)
                                if got < 0:
                                    self.o.err_at = 0
                                    status = (ERR_DECOMPRESS_LIMIT if got == KFMT_DECOMP_LIMIT else
                                              ERR_NOMEM if got == KFMT_DECOMP_NOMEM else ERR_DECOMPRESS)
                                    restore(&self.o, &cur)
                                    break
                                src = self.o.scratch if self.o.scratch != NULL else <const uint8_t *>""
                                srclen = got
                                self.o.scratch_batch = b
                                self.o.scratch_len = got
                        status = decode_v2(&self.o, src, src + srclen, count[b], base_offset[b],
                                           first_ts[b], max_ts[b], tstype[b], <int32_t>(b + batch_base),
                                           is_control[b])
                    elif ptrs[k] != NULL:
                        first = self.o.n
                        status = decode_legacy_set(&self.o, ptrs[k], ptrs[k] + lens[k], magic[b], last_offset[b],
                                                   first_ts[b], tstype[b], <int32_t>(b + batch_base))
                        if status == ERR_NONE:
                            base_offset[b] = self.o.offset[first]
                            count[b] = <int32_t>(self.o.n - first)
                            last_offset_delta[b] = <int32_t>(last_offset[b] - base_offset[b])
                    else:
                        e = base + position[b]
                        status = legacy_fields(e, e + size[b], magic[b], &key, &klen, &val, &vlen)
                        if status == ERR_NONE:
                            status = add_record(&self.o, base_offset[b], first_ts[b], tstype[b],
                                                <int32_t>(b + batch_base), key, klen, val, vlen)
                    if status != ERR_NONE:
                        restore(&self.o, &cur)
                        break
                    b += 1
        finally:
            free(ptrs)
            free(lens)
        return (status, b, self.o.err_at, self.o.grow)


def decompressed_guess(const uint8_t[::1] buf, const int64_t[::1] rows, const int8_t[::1] codec,
                       const int64_t[::1] pstart, const int64_t[::1] plen, int64_t ratio, int64_t limit):
    """Per batch of `rows` (lz4, zstd or snappy v2 batches, payloads in buf at pstart/plen of the batch
    table), what its payload decompresses to as far as its frame headers tell (snappy: its blocks' sizes),
    `ratio` x its stored size where they do not (kfmt_codecs.h's kfmt_decompressed_guess), each at most
    limit: the kernel's outputs are sized from these before anything is decompressed."""
    cdef Py_ssize_t i, b, nr = rows.shape[0], n = buf.shape[0]
    out = np.empty(nr, np.int64)
    cdef int64_t[::1] o = out
    with nogil:
        for i in range(nr):
            b = rows[i]
            if plen[b] <= 0 or pstart[b] < 0 or pstart[b] + plen[b] > n:
                o[i] = 0
            elif codec[b] == CODEC_SNAPPY:
                o[i] = kfmt_snappy_size(&buf[pstart[b]], plen[b], limit)
                if o[i] < 0:        # (too large: the limit; damaged: a guess -- the decompressor says what)
                    o[i] = limit if o[i] == KFMT_DECOMP_LIMIT else min(ratio * plen[b], limit)
            else:
                o[i] = kfmt_decompressed_guess(codec[b] == CODEC_LZ4, &buf[pstart[b]], plen[b], ratio, limit)
    return out


def take_binary(const int64_t[::1] offsets, const uint8_t[::1] data, const int64_t[::1] rows):
    """Gather rows of a binary column: (new int64 offsets, new data)."""
    cdef Py_ssize_t n = rows.shape[0], i
    new_offsets = np.empty(n + 1, np.int64)
    cdef int64_t[::1] no = new_offsets
    cdef int64_t total = 0, r
    no[0] = 0
    for i in range(n):
        r = rows[i]
        if r < 0 or r >= offsets.shape[0] - 1:
            raise IndexError(f"row {r} out of range")
        total += offsets[r + 1] - offsets[r]
        no[i + 1] = total
    new_data = np.empty(max(total, 1), np.uint8)
    cdef uint8_t[::1] nd = new_data
    with nogil:
        for i in range(n):
            r = rows[i]
            if offsets[r + 1] > offsets[r]:
                memcpy(&nd[no[i]], &data[offsets[r]], offsets[r + 1] - offsets[r])
    return new_offsets, new_data[:total]
