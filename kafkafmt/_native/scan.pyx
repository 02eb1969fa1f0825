# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Framing pre-scan: one pass over a buffer of log entries, one row per batch.

A log (a .log segment, a Fetch response's record set) is a sequence of entries, each
``int64 offset, int32 size, <size bytes>``; the byte at position 16 of every entry is the magic,
so v0, v1 and v2 may follow one another. For magic 2 an entry is a record batch; for magic 0/1 it
is one "shallow" message, which is either a plain message or a compressed wrapper whose value
holds an inner message set.

`scan` reads every header field into NumPy columns (the batch table), checks CRCs in C, and says
where valid data ends. It reads nothing past the buffer: every length is checked first. It stops
at the first malformed entry and reports it with an error code; a final entry whose declared size
runs past the end of the buffer is a truncated tail (Kafka's readers treat it as end of data).
"""
import numpy as np
from libc.stdint cimport uint8_t, uint32_t, int8_t, int16_t, int32_t, int64_t
from cpython.mem cimport PyMem_Malloc, PyMem_Free
from libc.string cimport memset

from kafkafmt._native.kfmt cimport (kfmt_be16, kfmt_be32, kfmt_be64, kfmt_crc_init, kfmt_crc32c, kfmt_crc32,
                                   kfmt_crc32_table_only, kfmt_crc32c_table_only, kfmt_crc_backends,
                                   kfmt_prefetch_ahead)
from kafkafmt._native.layout cimport *

kfmt_crc_init()

cdef enum:
    PREFETCH_DISTANCE = 4096    # bytes fetched ahead of the entry walk


cpdef enum CrcMode:
    CRC_SKIP = 0        # do not compute checksums
    CRC_REPORT = 1      # compute them into crc_valid, keep going
    CRC_STRICT = 2      # stop at the first mismatch

cpdef enum Tail:
    TAIL_NONE = 0
    TAIL_TRUNCATED = 1  # the last entry's declared size runs past the end of the buffer
    TAIL_ZEROS = 2      # the rest of the buffer is zero bytes (a preallocated segment's unused tail)

# the same values for Python callers
CRC_SKIP_, CRC_REPORT_, CRC_STRICT_ = int(CRC_SKIP), int(CRC_REPORT), int(CRC_STRICT)
TAIL_NONE_, TAIL_TRUNCATED_, TAIL_ZEROS_ = int(TAIL_NONE), int(TAIL_TRUNCATED), int(TAIL_ZEROS)

# Every error code of the C loops (scan here, kernel.pyx; numbered in layout.pxd): its name, the kind
# of exception it is ("corrupt": CorruptRecordError, "crc": CrcError, "compression":
# CompressionError, "limit": DecompressionLimitError) and its message ({size}: the entry's size
# field, for the framing errors). kafkafmt.record._decoder raises from this table alone.
_ERROR_TABLE = (
    (ERR_SIZE_TOO_SMALL, "SIZE_TOO_SMALL", "corrupt", "entry size {size} is smaller than the minimum for its magic"),
    (ERR_BAD_MAGIC, "BAD_MAGIC", "corrupt", "unknown magic byte"),
    (ERR_CRC, "CRC", "crc", "CRC mismatch: the stored checksum does not match the batch's bytes"),
    (ERR_BAD_COUNT, "BAD_COUNT", "corrupt", "record count is negative or larger than the batch can hold"),
    (ERR_RECORD_TRUNCATED, "RECORD_TRUNCATED", "corrupt", "a record runs past the end of its batch"),
    (ERR_VARINT, "VARINT", "corrupt", "varint longer than allowed"),
    (ERR_BAD_LENGTH, "BAD_LENGTH", "corrupt", "negative header key length or header count"),
    (ERR_RECORD_SIZE, "RECORD_SIZE", "corrupt", "record size field disagrees with the record's contents"),
    (ERR_TRAILING, "TRAILING", "corrupt", "bytes left in the batch after its declared records"),
    (ERR_INNER_COMPRESSED, "INNER_COMPRESSED", "corrupt", "compressed message inside a compressed wrapper"),
    (ERR_INNER_EMPTY, "INNER_EMPTY", "corrupt", "compressed wrapper holds no messages"),
    (ERR_INNER_MAGIC, "INNER_MAGIC", "corrupt", "inner message has an invalid magic"),
    (ERR_WRAPPER_OFFSET, "WRAPPER_OFFSET", "corrupt", "v1 wrapper offset is below its last inner relative offset"),
    (ERR_CONTROL_KEY, "CONTROL_KEY", "corrupt", "control record key is shorter than version + type"),
    (ERR_NULL_WRAPPER, "NULL_WRAPPER", "corrupt", "compressed wrapper has a null value"),
    (ERR_INNER_CRC, "INNER_CRC", "crc", "CRC mismatch in a message inside a compressed wrapper"),
    (ERR_SIZE_TOO_LARGE, "SIZE_TOO_LARGE", "corrupt",
     "entry size {size} exceeds the largest allowed batch size (max_batch_bytes)"),
    (ERR_DECOMPRESS, "DECOMPRESS", "compression", "compressed records do not decompress"),
    (ERR_DECOMPRESS_LIMIT, "DECOMPRESS_LIMIT", "limit",
     "compressed records decompress to more than max_decompressed bytes"),
    (ERR_NOMEM, "NOMEM", "compression", "out of memory while decompressing"),
)
#: error code -> (kind, message)
ERROR_INFO = {int(code): (kind, message) for code, _, kind, message in _ERROR_TABLE}
#: error name (as in layout.pxd, without ERR_) -> code, for Python code that raises one itself
ERROR_CODES = {name: int(code) for code, name, _, _ in _ERROR_TABLE}

BATCH_COLUMNS = (
    ("position", np.int64), ("size", np.int32), ("base_offset", np.int64), ("last_offset", np.int64),
    ("last_offset_delta", np.int32), ("partition_leader_epoch", np.int32), ("magic", np.int8),
    ("crc", np.uint32), ("crc_valid", np.bool_), ("attributes", np.int16), ("codec", np.int8),
    ("timestamp_type", np.int8), ("is_transactional", np.bool_), ("is_control", np.bool_),
    ("producer_id", np.int64), ("producer_epoch", np.int16), ("base_sequence", np.int32),
    ("first_timestamp", np.int64), ("max_timestamp", np.int64), ("record_count", np.int32),
)
# not user-facing: where each batch's records (v2) or value (v0/v1) lie in the buffer
PAYLOAD_COLUMNS = (("payload_start", np.int64), ("payload_len", np.int64))


cdef inline int check_entry(const uint8_t *buf, Py_ssize_t n, Py_ssize_t pos, int64_t max_size,
                            int32_t *size_out, int *tail) noexcept nogil:
    """Validate the framing of the entry at pos. Returns ERR_NONE, an error code, or -1 at end."""
    cdef Py_ssize_t remaining = n - pos
    cdef int32_t size
    cdef int8_t magic
    cdef Py_ssize_t i
    if remaining <= 0:
        return -1
    if remaining < LOG_OVERHEAD:
        tail[0] = TAIL_TRUNCATED
        return -1
    size = <int32_t>kfmt_be32(buf + pos + SIZE_OFFSET)
    if size < V0_RECORD_OVERHEAD:
        # a preallocated segment file ends in zeros: that is end of data, not corruption
        for i in range(pos, n):
            if buf[i] != 0:
                size_out[0] = size
                return ERR_SIZE_TOO_SMALL
        tail[0] = TAIL_ZEROS
        return -1
    if size > max_size:
        # as Kafka's readers do with maxMessageSize: no real batch is this large
        size_out[0] = size
        return ERR_SIZE_TOO_LARGE
    if <Py_ssize_t>size > remaining - LOG_OVERHEAD:
        tail[0] = TAIL_TRUNCATED
        return -1
    magic = <int8_t>buf[pos + MAGIC_OFFSET]
    size_out[0] = size
    if magic == 2:
        if size < V2_HEADER_SIZE - LOG_OVERHEAD:
            return ERR_SIZE_TOO_SMALL
    elif magic == 1:
        if size < V1_RECORD_OVERHEAD:
            return ERR_SIZE_TOO_SMALL
    elif magic != 0:
        return ERR_BAD_MAGIC
    return ERR_NONE


cdef inline int legacy_value(const uint8_t *buf, Py_ssize_t pos, int32_t size, int magic,
                             int64_t *vstart, int64_t *vlen) noexcept nogil:
    """Find the value field of a v0/v1 message; checks key and value lengths against its size."""
    cdef Py_ssize_t end = pos + LOG_OVERHEAD + size
    cdef Py_ssize_t p = pos + (V1_KEY_LENGTH_OFFSET if magic == 1 else V0_KEY_LENGTH_OFFSET)
    cdef int32_t klen, vl
    klen = <int32_t>kfmt_be32(buf + p)
    p += 4
    if klen > 0:                         # any negative size is null, as in Kafka's LegacyRecord
        if klen > end - p - 4:
            return ERR_RECORD_TRUNCATED
        p += klen
    vl = <int32_t>kfmt_be32(buf + p)
    p += 4
    if vl < 0:
        vl = -1
    if vl > 0 and vl > end - p:
        return ERR_RECORD_TRUNCATED
    if p + (vl if vl > 0 else 0) != end:
        return ERR_RECORD_SIZE
    vstart[0] = p
    vlen[0] = vl
    return ERR_NONE


cdef inline bint v2_bad_count(int attr, int32_t cnt, int64_t payload_len) noexcept nogil:
    """A v2 batch's record count that is negative, or (uncompressed) more records than its payload holds."""
    return cnt < 0 or (((attr & CODEC_MASK) == CODEC_NONE) and <int64_t>cnt * V2_MIN_RECORD_SIZE > payload_len)


cdef struct ScanCols:
    # the batch table's columns (BATCH_COLUMNS + PAYLOAD_COLUMNS), as raw pointers
    int64_t *position
    int32_t *size
    int64_t *base
    int64_t *last
    int32_t *lod
    int32_t *ple
    int8_t *magic
    uint32_t *crc
    uint8_t *crc_valid
    int16_t *attr
    int8_t *codec
    int8_t *tstype
    uint8_t *txn
    uint8_t *ctrl
    int64_t *pid
    int16_t *pepoch
    int32_t *bseq
    int64_t *fts
    int64_t *mts
    int32_t *count
    int64_t *pstart
    int64_t *plen


cdef struct ScanResult:
    Py_ssize_t count        # entries whose framing pass 1 accepted
    Py_ssize_t good         # entries written (the rows before the first bad one)
    Py_ssize_t valid_end
    int tail
    int err
    Py_ssize_t err_pos
    int64_t err_offset
    int32_t size            # the bad entry's size field (for the message)


cdef inline Py_ssize_t count_entries(const uint8_t *buf, Py_ssize_t n, Py_ssize_t start, int64_t max_size,
                                     ScanResult *r) noexcept nogil:
    """Pass 1: count the entries from start and find where valid framing ends (r: count, tail,
    and pass 1's error and its entry's size; pass 2 reports it unless it finds one first).
    Returns the position after the last entry counted."""
    cdef Py_ssize_t pos = start
    cdef int32_t size = 0
    cdef int rc
    cdef const uint8_t *ahead = buf
    r.count = 0
    r.tail = TAIL_NONE
    r.err = ERR_NONE
    r.size = 0
    while True:
        if buf != NULL:
            kfmt_prefetch_ahead(buf + pos, PREFETCH_DISTANCE, buf + n, &ahead)
        rc = check_entry(buf, n, pos, max_size, &size, &r.tail)
        if rc == -1:
            break
        if rc != ERR_NONE:
            r.err = rc
            r.size = size        # pass 2 reuses `size`: keep the bad entry's for the message
            break
        r.count += 1
        pos += LOG_OVERHEAD + size
    return pos


cdef void fill_entries(const uint8_t *buf, Py_ssize_t n, Py_ssize_t start, int crc_mode, ScanCols *c,
                       Py_ssize_t row, ScanResult *r) noexcept nogil:
    """Pass 2: read every header field of the r.count entries from start (their framing was
    validated by pass 1) into rows row.. of the columns; stop at the first bad entry. Sets r.good,
    valid_end, err, err_pos, err_offset, tail (none after an error) and size."""
    cdef Py_ssize_t i, k, pos = start
    cdef const uint8_t *e
    cdef const uint8_t *ahead = buf
    cdef int magic, attr
    cdef int32_t cnt, size = 0
    cdef uint32_t crc
    cdef int64_t vstart = 0, vlen = 0
    cdef bint ok
    cdef int err = ERR_NONE, rc
    # the column pointers as locals: the compiler need not reload them after every byte written
    cdef int64_t *c_position = c.position
    cdef int32_t *c_size = c.size
    cdef int64_t *c_base = c.base
    cdef int64_t *c_last = c.last
    cdef int32_t *c_lod = c.lod
    cdef int32_t *c_ple = c.ple
    cdef int8_t *c_magic = c.magic
    cdef uint32_t *c_crc = c.crc
    cdef uint8_t *c_crc_valid = c.crc_valid
    cdef int16_t *c_attr = c.attr
    cdef int8_t *c_codec = c.codec
    cdef int8_t *c_tstype = c.tstype
    cdef uint8_t *c_txn = c.txn
    cdef uint8_t *c_ctrl = c.ctrl
    cdef int64_t *c_pid = c.pid
    cdef int16_t *c_pepoch = c.pepoch
    cdef int32_t *c_bseq = c.bseq
    cdef int64_t *c_fts = c.fts
    cdef int64_t *c_mts = c.mts
    cdef int32_t *c_count = c.count
    cdef int64_t *c_pstart = c.pstart
    cdef int64_t *c_plen = c.plen
    r.good = 0
    r.err_pos = -1
    r.err_offset = -1
    for i in range(r.count):
        k = row + i
        e = buf + pos
        kfmt_prefetch_ahead(e, PREFETCH_DISTANCE, buf + n, &ahead)
        size = <int32_t>kfmt_be32(e + SIZE_OFFSET)
        magic = e[MAGIC_OFFSET]
        c_position[k] = pos
        c_size[k] = size + LOG_OVERHEAD
        c_magic[k] = magic
        if magic == 2:
            attr = <int16_t>kfmt_be16(e + ATTRIBUTES_OFFSET)
            crc = kfmt_be32(e + CRC_OFFSET)
            c_base[k] = <int64_t>kfmt_be64(e + OFFSET_OFFSET)
            c_lod[k] = <int32_t>kfmt_be32(e + LAST_OFFSET_DELTA_OFFSET)
            c_last[k] = c_base[k] + c_lod[k]
            c_ple[k] = <int32_t>kfmt_be32(e + PARTITION_LEADER_EPOCH_OFFSET)
            c_fts[k] = <int64_t>kfmt_be64(e + BASE_TIMESTAMP_OFFSET)
            c_mts[k] = <int64_t>kfmt_be64(e + MAX_TIMESTAMP_OFFSET)
            c_pid[k] = <int64_t>kfmt_be64(e + PRODUCER_ID_OFFSET)
            c_pepoch[k] = <int16_t>kfmt_be16(e + PRODUCER_EPOCH_OFFSET)
            c_bseq[k] = <int32_t>kfmt_be32(e + BASE_SEQUENCE_OFFSET)
            cnt = <int32_t>kfmt_be32(e + RECORDS_COUNT_OFFSET)
            c_count[k] = cnt
            c_tstype[k] = 1 if attr & TIMESTAMP_TYPE_BIT else 0
            c_txn[k] = (attr & TRANSACTIONAL_BIT) != 0
            c_ctrl[k] = (attr & CONTROL_BIT) != 0
            c_pstart[k] = pos + RECORDS_OFFSET
            c_plen[k] = size + LOG_OVERHEAD - RECORDS_OFFSET
            if crc_mode != CRC_SKIP:
                ok = kfmt_crc32c(e + ATTRIBUTES_OFFSET, size + LOG_OVERHEAD - ATTRIBUTES_OFFSET) == crc
            else:
                ok = True
            if v2_bad_count(attr, cnt, c_plen[k]):
                err = ERR_BAD_COUNT
        else:
            attr = e[LEGACY_ATTRIBUTES_OFFSET]
            crc = kfmt_be32(e + LEGACY_CRC_OFFSET)
            c_base[k] = <int64_t>kfmt_be64(e + OFFSET_OFFSET)
            c_last[k] = c_base[k]
            c_lod[k] = 0
            c_ple[k] = -1
            if magic == 1:
                c_fts[k] = <int64_t>kfmt_be64(e + LEGACY_TIMESTAMP_OFFSET)
                c_tstype[k] = 1 if attr & TIMESTAMP_TYPE_BIT else 0
            else:
                c_fts[k] = -1
                c_tstype[k] = -1
            c_mts[k] = c_fts[k]
            c_pid[k] = -1
            c_pepoch[k] = -1
            c_bseq[k] = -1
            c_count[k] = 1
            c_txn[k] = False
            c_ctrl[k] = False
            rc = legacy_value(buf, pos, size, magic, &vstart, &vlen)
            if rc != ERR_NONE:
                err = rc
            c_pstart[k] = vstart
            c_plen[k] = vlen
            if crc_mode != CRC_SKIP:
                ok = kfmt_crc32(e + MAGIC_OFFSET, size - 4) == crc
            else:
                ok = True
        c_attr[k] = attr
        c_codec[k] = attr & CODEC_MASK
        c_crc[k] = crc
        c_crc_valid[k] = ok
        if not ok and crc_mode == CRC_STRICT:
            err = ERR_CRC           # a bad checksum explains any other fault in the entry
        if err != ERR_NONE:
            # stop at the first bad entry; pass 1's own error (if any) lies further on
            r.err_pos = pos
            r.err_offset = c_base[k]
            break
        r.good = i + 1
        pos += LOG_OVERHEAD + size

    if err == ERR_NONE and r.err != ERR_NONE:
        # the framing error found by pass 1, at the entry after the last good one
        err = r.err
        r.err_pos = pos
        size = r.size
        if n - pos >= LOG_OVERHEAD:
            r.err_offset = <int64_t>kfmt_be64(buf + pos)
    r.err = err
    r.size = size
    if err == ERR_NONE:
        r.valid_end = pos
    else:
        r.valid_end = r.err_pos
        r.tail = TAIL_NONE


cdef dict new_columns(Py_ssize_t count, ScanCols *c):
    """The batch table's columns for count rows (bool columns as uint8, viewed as bool at the
    end), with c pointing at them."""
    cols = {name: np.empty(count, np.uint8 if dtype is np.bool_ else dtype)
            for name, dtype in BATCH_COLUMNS + PAYLOAD_COLUMNS}
    memset(c, 0, sizeof(ScanCols))
    cdef int64_t[::1] c_position = cols["position"]
    cdef int32_t[::1] c_size = cols["size"]
    cdef int64_t[::1] c_base = cols["base_offset"]
    cdef int64_t[::1] c_last = cols["last_offset"]
    cdef int32_t[::1] c_lod = cols["last_offset_delta"]
    cdef int32_t[::1] c_ple = cols["partition_leader_epoch"]
    cdef int8_t[::1] c_magic = cols["magic"]
    cdef uint32_t[::1] c_crc = cols["crc"]
    cdef uint8_t[::1] c_crc_valid = cols["crc_valid"]
    cdef int16_t[::1] c_attr = cols["attributes"]
    cdef int8_t[::1] c_codec = cols["codec"]
    cdef int8_t[::1] c_tstype = cols["timestamp_type"]
    cdef uint8_t[::1] c_txn = cols["is_transactional"]
    cdef uint8_t[::1] c_ctrl = cols["is_control"]
    cdef int64_t[::1] c_pid = cols["producer_id"]
    cdef int16_t[::1] c_pepoch = cols["producer_epoch"]
    cdef int32_t[::1] c_bseq = cols["base_sequence"]
    cdef int64_t[::1] c_fts = cols["first_timestamp"]
    cdef int64_t[::1] c_mts = cols["max_timestamp"]
    cdef int32_t[::1] c_count = cols["record_count"]
    cdef int64_t[::1] c_pstart = cols["payload_start"]
    cdef int64_t[::1] c_plen = cols["payload_len"]
    if count == 0:
        return cols
    c.position = &c_position[0]
    c.size = &c_size[0]
    c.base = &c_base[0]
    c.last = &c_last[0]
    c.lod = &c_lod[0]
    c.ple = &c_ple[0]
    c.magic = &c_magic[0]
    c.crc = &c_crc[0]
    c.crc_valid = &c_crc_valid[0]
    c.attr = &c_attr[0]
    c.codec = &c_codec[0]
    c.tstype = &c_tstype[0]
    c.txn = &c_txn[0]
    c.ctrl = &c_ctrl[0]
    c.pid = &c_pid[0]
    c.pepoch = &c_pepoch[0]
    c.bseq = &c_bseq[0]
    c.fts = &c_fts[0]
    c.mts = &c_mts[0]
    c.count = &c_count[0]
    c.pstart = &c_pstart[0]
    c.plen = &c_plen[0]
    return cols


cdef dict bool_views(dict cols, Py_ssize_t rows):
    """The columns cut to rows, bool columns viewed as bool."""
    for name, dtype in BATCH_COLUMNS:
        if dtype is np.bool_:
            cols[name] = cols[name].view(np.bool_)
    if rows < len(cols["position"]):
        for name in list(cols):
            cols[name] = cols[name][:rows]
    return cols


def scan(const uint8_t[::1] data, int crc_mode=CRC_STRICT, Py_ssize_t start=0, int64_t max_size=256 << 20):
    """Scan the entries of `data` from byte `start`.

    max_size: the largest size field accepted (larger ones are corrupt, not a truncated tail).
    Returns a dict: the batch table columns (BATCH_COLUMNS + PAYLOAD_COLUMNS), "count",
    "valid_end" (byte position after the last good entry), "tail" (TAIL_*), and "error"
    (code, position, offset) for the first malformed entry, or None.
    """
    cdef const uint8_t *buf = &data[0] if data.shape[0] > 0 else NULL
    cdef Py_ssize_t n = data.shape[0]
    cdef ScanResult r
    cdef ScanCols c
    if start < 0 or start > n:
        raise ValueError(f"start={start} is outside the data (0..{n})")
    with nogil:
        count_entries(buf, n, start, max_size, &r)
    cols = new_columns(r.count, &c)
    with nogil:
        fill_entries(buf, n, start, crc_mode, &c, 0, &r)
    cols = bool_views(cols, r.good)
    cols["count"] = r.good
    cols["valid_end"] = r.valid_end
    cols["tail"] = r.tail
    cols["error"] = None if r.err == ERR_NONE else (r.err, r.err_pos, r.err_offset, r.size)
    return cols


def entries_end(const uint8_t[::1] data, Py_ssize_t start=0, int64_t max_size=256 << 20):
    """(count, end): the number of entries from `start` that `scan` with CRC_SKIP puts in its table
    and the position after the last of them (its "valid_end" short of a fault) -- framing and the
    header checks alone, no table built: where a chunk of whole entries ends."""
    cdef const uint8_t *buf = &data[0] if data.shape[0] > 0 else NULL
    cdef const uint8_t *ahead = buf
    cdef Py_ssize_t n = data.shape[0], count = 0, pos = start
    cdef int32_t size = 0
    cdef int magic, tail = TAIL_NONE
    cdef int64_t vstart = 0, vlen = 0
    if start < 0 or start > n:
        raise ValueError(f"start={start} is outside the data (0..{n})")
    with nogil:
        while True:
            # pass 1's framing checks (count_entries), then those fill_entries makes besides the CRC
            if buf != NULL:
                kfmt_prefetch_ahead(buf + pos, PREFETCH_DISTANCE, buf + n, &ahead)
            if check_entry(buf, n, pos, max_size, &size, &tail) != ERR_NONE:
                break
            magic = buf[pos + MAGIC_OFFSET]
            if magic == 2:
                if v2_bad_count(<int16_t>kfmt_be16(buf + pos + ATTRIBUTES_OFFSET),
                                <int32_t>kfmt_be32(buf + pos + RECORDS_COUNT_OFFSET),
                                size + LOG_OVERHEAD - RECORDS_OFFSET):
                    break
            elif legacy_value(buf, pos, size, magic, &vstart, &vlen) != ERR_NONE:
                break
            count += 1
            pos += LOG_OVERHEAD + size
    return count, pos


def scan_ranges(const uint8_t[::1] data, const int64_t[::1] starts, const int64_t[::1] stops, int crc_mode=CRC_STRICT,
                int64_t max_size=256 << 20):
    """Scan several byte ranges of `data` -- each [starts[i], stops[i]) its own sequence of entries,
    as `scan` scans ``data[:stop]`` from start -- into one batch table: range i's entries (up to
    its first malformed one) are rows first[i]..first[i] + count[i].

    Returns (columns, ranges): the batch table columns (BATCH_COLUMNS + PAYLOAD_COLUMNS, positions
    in data) and a dict of per-range arrays: "first", "count", "valid_end", "tail" and "error"
    (the error code, 0 for none), "error_position", "error_offset", "error_size".
    """
    cdef const uint8_t *buf = &data[0] if data.shape[0] > 0 else NULL
    cdef Py_ssize_t n = data.shape[0], nr = starts.shape[0], i, total = 0, row = 0
    if stops.shape[0] != nr:
        raise ValueError("starts and stops differ in length")
    for i in range(nr):
        if not 0 <= starts[i] <= stops[i] <= n:
            raise ValueError(f"range [{starts[i]}, {stops[i]}) is outside the data (0..{n})")
    cdef ScanResult *res = <ScanResult *>PyMem_Malloc(max(nr, 1) * sizeof(ScanResult))
    if res == NULL:
        raise MemoryError()
    cdef ScanCols c
    try:
        with nogil:
            for i in range(nr):
                count_entries(buf, stops[i], starts[i], max_size, &res[i])
                total += res[i].count
        cols = new_columns(total, &c)
        with nogil:
            for i in range(nr):
                fill_entries(buf, stops[i], starts[i], crc_mode, &c, row, &res[i])
                row += res[i].good
        cols = bool_views(cols, row)
        ranges = {name: np.empty(nr, dtype) for name, dtype in (
            ("first", np.int64), ("count", np.int64), ("valid_end", np.int64), ("tail", np.int8),
            ("error", np.int32), ("error_position", np.int64), ("error_offset", np.int64), ("error_size", np.int32))}
        fill_ranges(res, nr, ranges)
    finally:
        PyMem_Free(res)
    return cols, ranges


cdef void fill_ranges(ScanResult *res, Py_ssize_t nr, dict ranges):
    cdef int64_t[::1] first = ranges["first"]
    cdef int64_t[::1] count = ranges["count"]
    cdef int64_t[::1] valid_end = ranges["valid_end"]
    cdef int8_t[::1] tail = ranges["tail"]
    cdef int32_t[::1] error = ranges["error"]
    cdef int64_t[::1] error_position = ranges["error_position"]
    cdef int64_t[::1] error_offset = ranges["error_offset"]
    cdef int32_t[::1] error_size = ranges["error_size"]
    cdef Py_ssize_t i, row = 0
    for i in range(nr):
        first[i] = row
        count[i] = res[i].good
        row += res[i].good
        valid_end[i] = res[i].valid_end
        tail[i] = res[i].tail
        error[i] = res[i].err
        error_position[i] = res[i].err_pos
        error_offset[i] = res[i].err_offset
        error_size[i] = res[i].size


ctypedef uint32_t (*crc_fn)(const uint8_t *p, size_t n) noexcept nogil


cdef uint32_t _checksum(const uint8_t[::1] data, crc_fn fn):
    cdef uint32_t c
    with nogil:
        c = fn(&data[0] if data.shape[0] else <const uint8_t *>"", data.shape[0])
    return c


def crc32c(const uint8_t[::1] data):
    """crc32c (Castagnoli) of a buffer, as Kafka's Crc32C.compute."""
    return _checksum(data, kfmt_crc32c)


def crc32(const uint8_t[::1] data):
    """crc32 (IEEE) of a buffer, as java.util.zip.CRC32."""
    return _checksum(data, kfmt_crc32)


def crc32c_table(const uint8_t[::1] data):
    """crc32c by the slicing-by-8 tables, whatever the CPU has (the fallback path, for tests)."""
    return _checksum(data, kfmt_crc32c_table_only)


def crc32_table(const uint8_t[::1] data):
    """crc32 by the slicing-by-8 tables, whatever the CPU has (the fallback path, for tests)."""
    return _checksum(data, kfmt_crc32_table_only)


def crc_backends():
    """The implementation each CRC uses in this process: {"crc32c": "sse4.2" | "armv8-crc" |
    "table", "crc32": "pclmulqdq" | "armv8-crc" | "table"}, prefixed "avx512-vpclmulqdq+" when
    inputs from 256 bytes are folded 512 bits wide (KAFKAFMT_CRC_SOFTWARE=1 at import forces
    "table")."""
    cdef int bits = kfmt_crc_backends()
    wide = "avx512-vpclmulqdq+" if bits & 8 else ""
    return {"crc32c": wide + "sse4.2" if bits & 1 else "armv8-crc" if bits & 4 else "table",
            "crc32": wide + "pclmulqdq" if bits & 2 else "armv8-crc" if bits & 4 else "table"}


def find_next_entry(const uint8_t[::1] data, Py_ssize_t start, int64_t min_offset=-1,
                    int64_t max_size=256 << 20, int64_t budget=-1):
    """Resynchronize after corruption: the first position >= start where a plausible entry
    begins -- a size in range that fits in the buffer, magic 0/1/2 with that magic's minimum
    size, consistent length fields (v0/v1 key and value lengths, v2 record count and codec), an
    offset >= min_offset -- whose CRC verifies. -1 when there is none, -2 when the CRC work
    exceeded `budget` bytes (default: 8 x the bytes searched + 1 MiB) before one was found:
    without a budget, crafted data with a plausible header at every position costs
    (bytes searched) x (claimed size) of CRC work -- hours for a few MB."""
    cdef const uint8_t *buf = &data[0] if data.shape[0] > 0 else NULL
    cdef Py_ssize_t n = data.shape[0], q
    cdef int32_t size, cnt
    cdef int magic, attr
    cdef int64_t offset, vstart = 0, vlen = 0
    cdef Py_ssize_t found = -1
    if budget < 0:
        budget = 8 * max(<int64_t>(n - max(start, 0)), 0) + (1 << 20)
    with nogil:
        for q in range(max(start, 0), n - LOG_OVERHEAD - V0_RECORD_OVERHEAD + 1):
            size = <int32_t>kfmt_be32(buf + q + SIZE_OFFSET)
            if size < V0_RECORD_OVERHEAD or size > max_size or <Py_ssize_t>size > n - q - LOG_OVERHEAD:
                continue
            magic = buf[q + MAGIC_OFFSET]
            if magic == 2:
                if size < V2_HEADER_SIZE - LOG_OVERHEAD:
                    continue
                attr = <int16_t>kfmt_be16(buf + q + ATTRIBUTES_OFFSET)
                cnt = <int32_t>kfmt_be32(buf + q + RECORDS_COUNT_OFFSET)
                if (attr & CODEC_MASK) > CODEC_ZSTD or v2_bad_count(attr, cnt, size + LOG_OVERHEAD - RECORDS_OFFSET):
                    continue
            elif magic == 1 or magic == 0:
                if magic == 1 and size < V1_RECORD_OVERHEAD:
                    continue
                if legacy_value(buf, q, size, magic, &vstart, &vlen) != ERR_NONE:
                    continue
            else:
                continue
            offset = <int64_t>kfmt_be64(buf + q)
            if offset < min_offset:
                continue
            budget -= size
            if budget < 0:
                found = -2
                break
            if magic == 2:
                if kfmt_crc32c(buf + q + ATTRIBUTES_OFFSET, size + LOG_OVERHEAD - ATTRIBUTES_OFFSET) != kfmt_be32(buf + q + CRC_OFFSET):
                    continue
            elif kfmt_crc32(buf + q + MAGIC_OFFSET, size - 4) != kfmt_be32(buf + q + LEGACY_CRC_OFFSET):
                continue
            found = q
            break
    return found
