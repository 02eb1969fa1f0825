# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Bulk decoding of __consumer_offsets keys and offset-commit values straight into column arrays.

One call decodes every record of a chunk, without the GIL and without a Python object per record:
the key's int16 record type, the group (every group-coordinator key starts with it), topic and
partition of offset-commit keys, and OffsetCommitValue v0-v4 (classic v0-v3, flexible v4 with its
tagged fields skipped). Strings go into Arrow layout (int64 offsets + data), checked as UTF-8.
Everything else (GroupMetadataValue members, the KIP-848 records' values) is left to the generic
schema reader in kafkafmt.internal.codec; this only checks their value version.
Layouts and versions: group-coordinator/src/main/resources/common/message/OffsetCommit{Key,Value}.json.
"""
import numpy as np

from libc.stdint cimport uint8_t, uint32_t, uint64_t, int8_t, int16_t, int32_t, int64_t
from libc.string cimport memcpy

from kafkafmt._native.arrowcols cimport utf8_ok
from kafkafmt._native.wire cimport be16, be32, be64, read_uvarint

# status per row
cdef enum:
    ST_OK = 0
    ST_TOMBSTONE = 1
    ST_UNKNOWN_TYPE = 2
    ST_UNKNOWN_VERSION = 3
    ST_KEY_ERROR = 4
    ST_VALUE_ERROR = 5

# error codes (kafkafmt.internal names them)
cdef enum:
    E_NONE = 0
    E_KEY_NULL = 1
    E_KEY_TYPE = 2
    E_KEY_GROUP = 3
    E_KEY_GROUP_UTF8 = 4
    E_KEY_TOPIC = 5
    E_KEY_TOPIC_UTF8 = 6
    E_KEY_PARTITION = 7
    E_VALUE_VERSION = 8
    E_VALUE_OFFSET = 9
    E_VALUE_EPOCH = 10
    E_VALUE_METADATA = 11
    E_VALUE_METADATA_UTF8 = 12
    E_VALUE_COMMIT_TS = 13
    E_VALUE_EXPIRE_TS = 14
    E_VALUE_TAGS = 15
    E_KEY_GROUP_NULL = 16
    E_KEY_TOPIC_NULL = 17
    E_VALUE_METADATA_NULL = 18

ERROR_CODES = {
    E_KEY_NULL: ("key", None, "the key is null"),
    E_KEY_TYPE: ("key", None, "truncated before the record type"),
    E_KEY_GROUP: ("key", "group", "truncated or bad length"),
    E_KEY_GROUP_UTF8: ("key", "group", "string is not valid UTF-8"),
    E_KEY_TOPIC: ("key", "topic", "truncated or bad length"),
    E_KEY_TOPIC_UTF8: ("key", "topic", "string is not valid UTF-8"),
    E_KEY_PARTITION: ("key", "partition", "truncated"),
    E_VALUE_VERSION: ("value", None, "truncated before the version"),
    E_VALUE_OFFSET: ("value", "offset", "truncated"),
    E_VALUE_EPOCH: ("value", "leaderEpoch", "truncated"),
    E_VALUE_METADATA: ("value", "metadata", "truncated or bad length"),
    E_VALUE_METADATA_UTF8: ("value", "metadata", "string is not valid UTF-8"),
    E_VALUE_COMMIT_TS: ("value", "commitTimestamp", "truncated"),
    E_VALUE_EXPIRE_TS: ("value", "expireTimestamp", "truncated"),
    E_VALUE_TAGS: ("value", "tagged fields", "truncated or bad length"),
    E_KEY_GROUP_NULL: ("key", "group", "non-nullable field was serialized as null"),
    E_KEY_TOPIC_NULL: ("key", "topic", "non-nullable field was serialized as null"),
    E_VALUE_METADATA_NULL: ("value", "metadata", "non-nullable field was serialized as null"),
}

STATUS = {"ok": ST_OK, "tombstone": ST_TOMBSTONE, "unknown_type": ST_UNKNOWN_TYPE,
          "unknown_version": ST_UNKNOWN_VERSION, "key_error": ST_KEY_ERROR, "value_error": ST_VALUE_ERROR}


cdef inline void set_off(void *offs, bint wide, Py_ssize_t i, int64_t v) noexcept nogil:
    if wide:
        (<int64_t *>offs)[i] = v
    else:
        (<int32_t *>offs)[i] = <int32_t>v


cdef inline int read_string(const uint8_t **pp, const uint8_t *end, bint compact,
                            uint8_t *dst, int64_t *dpos, void *offs, bint wide, Py_ssize_t row) noexcept nogil:
    """Copy one non-nullable string into dst at dpos; 0 ok, 1 bad length/truncated, 2 bad UTF-8, 3 null."""
    cdef const uint8_t *p = pp[0]
    cdef int64_t n
    cdef uint32_t u
    if compact:
        if read_uvarint(&p, end, &u):
            return 1
        if u == 0:
            return 3
        n = <int64_t>u - 1
    else:
        if end - p < 2:
            return 1
        n = be16(p)
        p += 2
        if n == -1:
            return 3
        if n < 0:
            return 1
    if n > end - p:
        return 1
    if not utf8_ok(p, n):
        return 2
    memcpy(dst + dpos[0], p, n)
    dpos[0] += n
    if wide:
        (<int64_t *>offs)[row + 1] = dpos[0]
    else:
        (<int32_t *>offs)[row + 1] = <int32_t>dpos[0]
    pp[0] = p + n
    return 0


def decode_group_records(const int64_t[::1] koff, const uint8_t[::1] kdata, const uint8_t[::1] knull,
                         const int64_t[::1] voff, const uint8_t[::1] vdata, const uint8_t[::1] vnull,
                         const int16_t[::1] max_version):
    """Decode n coordinator records of __consumer_offsets.

    koff/voff: n+1 offsets into kdata/vdata; knull/vnull: 1 where the key/value is null.
    max_version[t]: newest value version known for record type t (-2: unknown type, -1: any version).
    Returns a dict of NumPy arrays (see kafkafmt.internal).
    """
    cdef Py_ssize_t n = koff.shape[0] - 1
    cdef Py_ssize_t ntypes = max_version.shape[0]
    rtype_a = np.full(n, -1, np.int16)
    vver_a = np.full(n, -1, np.int16)
    status_a = np.zeros(n, np.int8)
    err_a = np.zeros(n, np.int8)
    part_a = np.zeros(n, np.int32)
    off_a = np.zeros(n, np.int64)
    epoch_a = np.zeros(n, np.int32)
    cts_a = np.zeros(n, np.int64)
    ets_a = np.zeros(n, np.int64)
    has_group_a = np.zeros(n, np.uint8)
    has_topic_a = np.zeros(n, np.uint8)
    has_value_a = np.zeros(n, np.uint8)  # offset-commit value fields decoded
    has_epoch_a = np.zeros(n, np.uint8)
    has_expire_a = np.zeros(n, np.uint8)
    cdef Py_ssize_t kbytes = kdata.shape[0], vbytes = vdata.shape[0]
    # Arrow string offsets: int32 unless the strings could reach 2 GiB
    cdef bint kwide = kbytes >= 0x7FFFFFFF, vwide = vbytes >= 0x7FFFFFFF
    goff_a = np.zeros(n + 1, np.int64 if kwide else np.int32)
    toff_a = np.zeros(n + 1, np.int64 if kwide else np.int32)
    moff_a = np.zeros(n + 1, np.int64 if vwide else np.int32)
    gdata_a = np.empty(max(kbytes, 1), np.uint8)
    tdata_a = np.empty(max(kbytes, 1), np.uint8)
    mdata_a = np.empty(max(vbytes, 1), np.uint8)

    cdef int16_t[::1] rtype = rtype_a
    cdef int16_t[::1] vver = vver_a
    cdef int8_t[::1] status = status_a
    cdef int8_t[::1] err = err_a
    cdef int32_t[::1] part = part_a
    cdef int64_t[::1] off = off_a
    cdef int32_t[::1] epoch = epoch_a
    cdef int64_t[::1] cts = cts_a
    cdef int64_t[::1] ets = ets_a
    cdef uint8_t[::1] has_group = has_group_a
    cdef uint8_t[::1] has_topic = has_topic_a
    cdef uint8_t[::1] has_value = has_value_a
    cdef uint8_t[::1] has_epoch = has_epoch_a
    cdef uint8_t[::1] has_expire = has_expire_a
    cdef uint8_t[::1] gob = goff_a.view(np.uint8)
    cdef uint8_t[::1] tob = toff_a.view(np.uint8)
    cdef uint8_t[::1] mob = moff_a.view(np.uint8)
    cdef void *goff = &gob[0]
    cdef void *toff = &tob[0]
    cdef void *moff = &mob[0]
    cdef uint8_t[::1] gdata = gdata_a
    cdef uint8_t[::1] tdata = tdata_a
    cdef uint8_t[::1] mdata = mdata_a

    cdef const uint8_t *kb = &kdata[0] if kbytes else NULL
    cdef const uint8_t *vb = &vdata[0] if vbytes else NULL
    cdef const uint8_t *p
    cdef const uint8_t *end
    cdef int64_t gpos = 0, tpos = 0, mpos = 0
    cdef Py_ssize_t i
    cdef int16_t t, ver, maxv
    cdef int rc, k
    cdef uint32_t ntags, tag, size
    cdef bint flex

    with nogil:
        for i in range(n):
            set_off(goff, kwide, i + 1, gpos)
            set_off(toff, kwide, i + 1, tpos)
            set_off(moff, vwide, i + 1, mpos)
            # ---- key
            if knull[i]:
                status[i] = ST_KEY_ERROR
                err[i] = E_KEY_NULL
                continue
            p = kb + koff[i]
            end = kb + koff[i + 1]
            if end - p < 2:
                status[i] = ST_KEY_ERROR
                err[i] = E_KEY_TYPE
                continue
            t = be16(p)
            p += 2
            rtype[i] = t
            if t < 0 or t >= ntypes or max_version[t] == -2:
                status[i] = ST_UNKNOWN_TYPE
                continue
            rc = read_string(&p, end, False, &gdata[0], &gpos, goff, kwide, i)
            if rc:
                status[i] = ST_KEY_ERROR
                err[i] = E_KEY_GROUP if rc == 1 else (E_KEY_GROUP_UTF8 if rc == 2 else E_KEY_GROUP_NULL)
                continue
            has_group[i] = 1
            if t <= 1:
                rc = read_string(&p, end, False, &tdata[0], &tpos, toff, kwide, i)
                if rc:
                    status[i] = ST_KEY_ERROR
                    err[i] = E_KEY_TOPIC if rc == 1 else (E_KEY_TOPIC_UTF8 if rc == 2 else E_KEY_TOPIC_NULL)
                    continue
                if end - p < 4:
                    status[i] = ST_KEY_ERROR
                    err[i] = E_KEY_PARTITION
                    continue
                part[i] = be32(p)
                has_topic[i] = 1
            # ---- value
            if vnull[i]:
                status[i] = ST_TOMBSTONE
                continue
            p = vb + voff[i]
            end = vb + voff[i + 1]
            if end - p < 2:
                status[i] = ST_VALUE_ERROR
                err[i] = E_VALUE_VERSION
                continue
            ver = be16(p)
            p += 2
            vver[i] = ver
            maxv = max_version[t]
            if ver < 0 or (maxv >= 0 and ver > maxv):
                status[i] = ST_UNKNOWN_VERSION
                continue
            if t > 1:
                continue
            # OffsetCommitValue v0..v4
            flex = ver >= 4
            if end - p < 8:
                status[i] = ST_VALUE_ERROR
                err[i] = E_VALUE_OFFSET
                continue
            off[i] = be64(p)
            p += 8
            if ver >= 3:
                if end - p < 4:
                    status[i] = ST_VALUE_ERROR
                    err[i] = E_VALUE_EPOCH
                    continue
                epoch[i] = be32(p)
                has_epoch[i] = 1
                p += 4
            rc = read_string(&p, end, flex, &mdata[0], &mpos, moff, vwide, i)
            if rc:
                status[i] = ST_VALUE_ERROR
                err[i] = E_VALUE_METADATA if rc == 1 else (E_VALUE_METADATA_UTF8 if rc == 2 else E_VALUE_METADATA_NULL)
                continue
            if end - p < 8:
                status[i] = ST_VALUE_ERROR
                err[i] = E_VALUE_COMMIT_TS
                continue
            cts[i] = be64(p)
            p += 8
            if ver == 1:
                if end - p < 8:
                    status[i] = ST_VALUE_ERROR
                    err[i] = E_VALUE_EXPIRE_TS
                    continue
                ets[i] = be64(p)
                has_expire[i] = 1
                p += 8
            if flex:
                rc = read_uvarint(&p, end, &ntags)
                k = 0
                while rc == 0 and k < <int>ntags:
                    if read_uvarint(&p, end, &tag) or read_uvarint(&p, end, &size) or size > <uint32_t>(end - p):
                        rc = -1
                        break
                    p += size
                    k += 1
                if rc:
                    status[i] = ST_VALUE_ERROR
                    err[i] = E_VALUE_TAGS
                    continue
            has_value[i] = 1

    return {
        "rtype": rtype_a, "version": vver_a, "status": status_a, "error": err_a,
        "partition": part_a, "offset": off_a, "leader_epoch": epoch_a, "commit_timestamp": cts_a,
        "expire_timestamp": ets_a, "has_group": has_group_a.view(np.bool_), "has_topic": has_topic_a.view(np.bool_),
        "has_value": has_value_a.view(np.bool_), "has_epoch": has_epoch_a.view(np.bool_),
        "has_expire": has_expire_a.view(np.bool_),
        "group_offsets": goff_a, "group_data": gdata_a[:gpos], "topic_offsets": toff_a, "topic_data": tdata_a[:tpos],
        "metadata_offsets": moff_a, "metadata_data": mdata_a[:mpos],
    }
