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


def scan(const uint8_t[::1] data, int crc_mode=CRC_STRICT, Py_ssize_t start=0, int64_t max_size=256 << 20):
    """Scan the entries of `data` from byte `start`.

    max_size: the largest size field accepted (larger ones are corrupt, not a truncated tail).
    Returns a dict: the batch table columns (BATCH_COLUMNS + PAYLOAD_COLUMNS), "count",
    "valid_end" (byte position after the last good entry), "tail" (TAIL_*), and "error"
    (code, position, offset) for the first malformed entry, or None.
    """
    cdef const uint8_t *buf = &data[0] if data.shape[0] > 0 else NULL
    cdef Py_ssize_t n = data.shape[0]
    cdef Py_ssize_t pos = start, count = 0
    cdef int32_t size = 0, size1 = 0
    cdef int tail = TAIL_NONE
    cdef int err = ERR_NONE, err1 = ERR_NONE
    cdef int rc
    if start < 0 or start > n:
        raise ValueError(f"start={start} is outside the data (0..{n})")

    cdef const uint8_t *ahead = buf
    # pass 1: count entries and find where valid framing ends
    with nogil:
        while True:
            if buf != NULL:
                kfmt_prefetch_ahead(buf + pos, PREFETCH_DISTANCE, buf + n, &ahead)
            rc = check_entry(buf, n, pos, max_size, &size, &tail)
            if rc == -1:
                break
            if rc != ERR_NONE:
                err1 = rc
                size1 = size        # pass 2 reuses `size`: keep the bad entry's for the message
                break
            count += 1
            pos += LOG_OVERHEAD + size

    # bool columns are filled as uint8 and viewed as bool at the end
    cols = {name: np.empty(count, np.uint8 if dtype is np.bool_ else dtype)
            for name, dtype in BATCH_COLUMNS + PAYLOAD_COLUMNS}
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

    cdef Py_ssize_t i, good = 0, err_pos = -1
    cdef int64_t err_offset = -1
    cdef const uint8_t *e
    cdef int magic, attr
    cdef int32_t cnt
    cdef uint32_t crc
    cdef int64_t vstart = 0, vlen = 0
    cdef bint ok

    # pass 2: read every header field (the framing was validated by pass 1)
    ahead = buf
    with nogil:
        pos = start
        for i in range(count):
            e = buf + pos
            kfmt_prefetch_ahead(e, PREFETCH_DISTANCE, buf + n, &ahead)
            size = <int32_t>kfmt_be32(e + SIZE_OFFSET)
            magic = e[MAGIC_OFFSET]
            c_position[i] = pos
            c_size[i] = size + LOG_OVERHEAD
            c_magic[i] = magic
            if magic == 2:
                attr = <int16_t>kfmt_be16(e + ATTRIBUTES_OFFSET)
                crc = kfmt_be32(e + CRC_OFFSET)
                c_base[i] = <int64_t>kfmt_be64(e + OFFSET_OFFSET)
                c_lod[i] = <int32_t>kfmt_be32(e + LAST_OFFSET_DELTA_OFFSET)
                c_last[i] = c_base[i] + c_lod[i]
                c_ple[i] = <int32_t>kfmt_be32(e + PARTITION_LEADER_EPOCH_OFFSET)
                c_fts[i] = <int64_t>kfmt_be64(e + BASE_TIMESTAMP_OFFSET)
                c_mts[i] = <int64_t>kfmt_be64(e + MAX_TIMESTAMP_OFFSET)
                c_pid[i] = <int64_t>kfmt_be64(e + PRODUCER_ID_OFFSET)
                c_pepoch[i] = <int16_t>kfmt_be16(e + PRODUCER_EPOCH_OFFSET)
                c_bseq[i] = <int32_t>kfmt_be32(e + BASE_SEQUENCE_OFFSET)
                cnt = <int32_t>kfmt_be32(e + RECORDS_COUNT_OFFSET)
                c_count[i] = cnt
                c_tstype[i] = 1 if attr & TIMESTAMP_TYPE_BIT else 0
                c_txn[i] = (attr & TRANSACTIONAL_BIT) != 0
                c_ctrl[i] = (attr & CONTROL_BIT) != 0
                c_pstart[i] = pos + RECORDS_OFFSET
                c_plen[i] = size + LOG_OVERHEAD - RECORDS_OFFSET
                if crc_mode != CRC_SKIP:
                    ok = kfmt_crc32c(e + ATTRIBUTES_OFFSET, size + LOG_OVERHEAD - ATTRIBUTES_OFFSET) == crc
                else:
                    ok = True
                if cnt < 0 or (((attr & CODEC_MASK) == CODEC_NONE) and
                               <int64_t>cnt * V2_MIN_RECORD_SIZE > c_plen[i]):
                    err = ERR_BAD_COUNT
            else:
                attr = e[LEGACY_ATTRIBUTES_OFFSET]
                crc = kfmt_be32(e + LEGACY_CRC_OFFSET)
                c_base[i] = <int64_t>kfmt_be64(e + OFFSET_OFFSET)
                c_last[i] = c_base[i]
                c_lod[i] = 0
                c_ple[i] = -1
                if magic == 1:
                    c_fts[i] = <int64_t>kfmt_be64(e + LEGACY_TIMESTAMP_OFFSET)
                    c_tstype[i] = 1 if attr & TIMESTAMP_TYPE_BIT else 0
                else:
                    c_fts[i] = -1
                    c_tstype[i] = -1
                c_mts[i] = c_fts[i]
                c_pid[i] = -1
                c_pepoch[i] = -1
                c_bseq[i] = -1
                c_count[i] = 1
                c_txn[i] = False
                c_ctrl[i] = False
                rc = legacy_value(buf, pos, size, magic, &vstart, &vlen)
                if rc != ERR_NONE:
                    err = rc
                c_pstart[i] = vstart
                c_plen[i] = vlen
                if crc_mode != CRC_SKIP:
                    ok = kfmt_crc32(e + MAGIC_OFFSET, size - 4) == crc
                else:
                    ok = True
            c_attr[i] = attr
            c_codec[i] = attr & CODEC_MASK
            c_crc[i] = crc
            c_crc_valid[i] = ok
            if not ok and crc_mode == CRC_STRICT:
                err = ERR_CRC           # a bad checksum explains any other fault in the entry
            if err != ERR_NONE:
                # stop at the first bad entry; pass 1's own error (if any) lies further on
                err_pos = pos
                err_offset = c_base[i]
                break
            good = i + 1
            pos += LOG_OVERHEAD + size

        if err == ERR_NONE and err1 != ERR_NONE:
            # the framing error found by pass 1, at the entry after the last good one
            err = err1
            err_pos = pos
            size = size1
            if n - pos >= LOG_OVERHEAD:
                err_offset = <int64_t>kfmt_be64(buf + pos)

    for name, dtype in BATCH_COLUMNS:
        if dtype is np.bool_:
            cols[name] = cols[name].view(np.bool_)
    if good < count:
        for name in list(cols):
            cols[name] = cols[name][:good]
    cols["count"] = good
    cols["valid_end"] = pos if err == ERR_NONE else err_pos
    cols["tail"] = tail if err == ERR_NONE else TAIL_NONE
    cols["error"] = None if err == ERR_NONE else (err, err_pos, err_offset, size)
    return cols


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
    "table", "crc32": "pclmulqdq" | "armv8-crc" | "table"} (KAFKAFMT_CRC_SOFTWARE=1 at import
    forces "table")."""
    cdef int bits = kfmt_crc_backends()
    return {"crc32c": "sse4.2" if bits & 1 else "armv8-crc" if bits & 4 else "table",
            "crc32": "pclmulqdq" if bits & 2 else "armv8-crc" if bits & 4 else "table"}


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
                if (attr & CODEC_MASK) > CODEC_ZSTD or cnt < 0 or (
                        (attr & CODEC_MASK) == CODEC_NONE and
                        <int64_t>cnt * V2_MIN_RECORD_SIZE > size + LOG_OVERHEAD - RECORDS_OFFSET):
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
