# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Bulk decoding of __remote_log_metadata values (KIP-405's topic-based RemoteLogMetadataManager) straight
into column arrays.

One call decodes every value of a chunk, without the GIL and without a Python object per record. A value
is RemoteLogMetadataSerde's frame -- uvarint frame version (1), uvarint api key, uvarint version -- then the
message, flexible in every version: RemoteLogSegmentMetadataRecord (0), RemoteLogSegmentMetadataUpdateRecord
(1), RemotePartitionDeleteMetadataRecord (2), RemoteLogSegmentMetadataSnapshotRecord (3), versions 0-1
(storage/src/main/resources/message/*.json). Strings go into Arrow layout, checked as UTF-8; uuids are
written as Kafka prints them (22 characters of URL-safe base64); tagged fields Kafka's schemas name are
read (TxnIndexEmpty, BrokerLeaderEpoch, EndOffset), others skipped as Kafka skips them. Every length is
checked against the bytes left before anything is copied; a value that does not read gives its row a
status and an error code (kafkafmt.internal names them).
"""
import numpy as np

from libc.stdint cimport uint8_t, uint32_t, uint64_t, int8_t, int16_t, int32_t, int64_t
from libc.string cimport memcpy

from kafkafmt._native.arrowcols cimport utf8_ok
from kafkafmt._native.wire cimport be32, be64, read_uvarint

# status per row
cdef enum:
    ST_OK = 0
    ST_ERROR = 1            # the message does not read (err: what failed)
    ST_UNKNOWN_TYPE = 2     # an api key these schemas do not know
    ST_UNKNOWN_VERSION = 3  # a version newer than these schemas
    ST_NULL = 4             # a null value
    ST_FRAME = 5            # the frame does not read (err: what failed)

# error codes
cdef enum:
    E_NONE = 0
    E_FRAME_READ = 1
    E_FRAME_ZERO = 2
    E_FRAME_VERSION = 3
    E_API_KEY_READ = 4
    E_VERSION_READ = 5
    E_TOPIC = 6
    E_TOPIC_UTF8 = 7
    E_TOPIC_ID = 8
    E_PARTITION = 9
    E_SEGMENT_ID = 10
    E_START_OFFSET = 11
    E_END_OFFSET = 12
    E_BROKER_ID = 13
    E_MAX_TIMESTAMP = 14
    E_EVENT_TIMESTAMP = 15
    E_LEADER_EPOCHS = 16
    E_SIZE = 17
    E_CUSTOM_METADATA = 18
    E_STATE = 19
    E_TAGS = 20
    E_TAG_SIZE = 21
    E_GARBAGE = 22
    E_TOPIC_NULL = 23
    E_API_KEY_LARGE = 24
    E_VERSION_LARGE = 25

#: code -> (field, what) of a message that does not read; (None, text) for the frame's own errors
ERROR_CODES = {
    E_FRAME_READ: (None, "Error while reading frame version"),
    E_FRAME_ZERO: (None, "Could not deserialize metadata record with frame version 0. Note that upgrades from the "
                         "preview release of KRaft in 2.8 to newer versions are not supported."),
    E_FRAME_VERSION: (None, "Could not deserialize metadata record due to unknown frame version {frame}(only frame "
                            "version 1 is supported)"),
    E_API_KEY_READ: (None, "Error while reading type"),
    E_VERSION_READ: (None, "Error while reading version"),
    E_API_KEY_LARGE: (None, "Value for type was too large."),
    E_VERSION_LARGE: (None, "Value for version was too large."),
    E_TOPIC: ("Name", "truncated or bad length"),
    E_TOPIC_UTF8: ("Name", "string is not valid UTF-8"),
    E_TOPIC_NULL: ("Name", "non-nullable field was serialized as null"),
    E_TOPIC_ID: ("Id", "truncated"),
    E_PARTITION: ("Partition", "truncated"),
    E_SEGMENT_ID: ("Id", "truncated"),
    E_START_OFFSET: ("StartOffset", "truncated"),
    E_END_OFFSET: ("EndOffset", "truncated"),
    E_BROKER_ID: ("BrokerId", "truncated"),
    E_MAX_TIMESTAMP: ("MaxTimestampMs", "truncated"),
    E_EVENT_TIMESTAMP: ("EventTimestampMs", "truncated"),
    E_LEADER_EPOCHS: ("SegmentLeaderEpochs", "truncated or bad length"),
    E_SIZE: ("SegmentSizeInBytes", "truncated"),
    E_CUSTOM_METADATA: ("CustomMetadata", "truncated or bad length"),
    E_STATE: ("state", "truncated"),
    E_TAGS: ("tagged fields", "truncated or bad length"),
    E_TAG_SIZE: ("tagged fields", "a known tagged field of the wrong size"),
    E_GARBAGE: (None, "Found {left} byte(s) of garbage after {api_key}"),
}

STATUS = {"ok": ST_OK, "error": ST_ERROR, "unknown_type": ST_UNKNOWN_TYPE, "unknown_version": ST_UNKNOWN_VERSION,
          "null": ST_NULL, "frame": ST_FRAME}

cdef enum:
    MAX_VERSION_C = 1     # newest version of each api key known here
    ID_CHARS_C = 22       # characters of a Kafka Uuid's text

MAX_VERSION = MAX_VERSION_C
ID_CHARS = ID_CHARS_C

cdef const char *B64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


cdef inline void uuid_text(const uint8_t *u, uint8_t *out) noexcept nogil:
    """16 bytes as Kafka's Uuid.toString: URL-safe base64 without padding (22 characters)."""
    cdef int i, j = 0
    cdef uint32_t v
    for i in range(0, 15, 3):
        v = (<uint32_t>u[i] << 16) | (<uint32_t>u[i + 1] << 8) | u[i + 2]
        out[j] = B64[(v >> 18) & 63]
        out[j + 1] = B64[(v >> 12) & 63]
        out[j + 2] = B64[(v >> 6) & 63]
        out[j + 3] = B64[v & 63]
        j += 4
    v = <uint32_t>u[15] << 16
    out[20] = B64[(v >> 18) & 63]
    out[21] = B64[(v >> 12) & 63]


cdef inline int skip_tags(const uint8_t **pp, const uint8_t *end) noexcept nogil:
    """Skip a struct's tagged-field section (no tag of it is known); 0 ok, -1 bad."""
    cdef uint32_t count, tag, size, k
    if read_uvarint(pp, end, &count):
        return -1
    if count > <uint32_t>(end - pp[0]):
        return -1
    for k in range(count):
        if read_uvarint(pp, end, &tag) or read_uvarint(pp, end, &size) or size > <uint32_t>(end - pp[0]):
            return -1
        pp[0] += size
    return 0


cdef struct Out:
    # fixed-width columns, one entry per row
    int16_t *api_key
    int16_t *version
    int32_t *frame
    int8_t *status
    int8_t *err
    int32_t *left
    int32_t *partition
    int64_t *start_offset
    int64_t *end_offset
    int32_t *broker_id
    int64_t *max_ts
    int64_t *event_ts
    int32_t *size
    int8_t *state
    uint8_t *txn_empty
    int32_t *broker_epoch
    uint8_t *topic_id
    uint8_t *segment_id
    uint8_t *has_topic
    uint8_t *has_segment
    uint8_t *has_offsets     # start offset (and end offset) of segment metadata
    uint8_t *has_end         # end offset (segment metadata, or the v1 tag of an update / partition delete)
    uint8_t *has_segment_fields   # max timestamp, size, leader epochs, txn index flag
    uint8_t *has_common      # broker id, event timestamp, state
    uint8_t *has_custom
    uint8_t *has_broker_epoch
    # variable-width columns
    int32_t *topic_off
    uint8_t *topic_data
    int64_t topic_pos
    int32_t *custom_off
    uint8_t *custom_data
    int64_t custom_pos
    int32_t *epoch_off
    int32_t *epoch
    int64_t *epoch_offset
    int64_t epoch_pos
    int64_t epoch_cap


cdef int read_topic_id_partition(const uint8_t **pp, const uint8_t *end, Out *o, Py_ssize_t i) noexcept nogil:
    """TopicIdPartition {Name string, Id uuid, Partition int32, tags}: 0 ok, else an error code."""
    cdef const uint8_t *p = pp[0]
    cdef uint32_t u
    cdef int64_t n
    if read_uvarint(&p, end, &u):
        return E_TOPIC
    if u == 0:
        return E_TOPIC_NULL
    n = <int64_t>u - 1
    if n > end - p:
        return E_TOPIC
    if not utf8_ok(p, n):
        return E_TOPIC_UTF8
    memcpy(o.topic_data + o.topic_pos, p, n)
    o.topic_pos += n
    o.topic_off[i + 1] = <int32_t>o.topic_pos
    o.has_topic[i] = 1
    p += n
    if end - p < 16:
        return E_TOPIC_ID
    uuid_text(p, o.topic_id + i * ID_CHARS_C)
    p += 16
    if end - p < 4:
        return E_PARTITION
    o.partition[i] = be32(p)
    p += 4
    if skip_tags(&p, end):
        return E_TAGS
    pp[0] = p
    return 0


cdef int read_segment_id(const uint8_t **pp, const uint8_t *end, Out *o, Py_ssize_t i) noexcept nogil:
    """RemoteLogSegmentId {TopicIdPartition, Id uuid, tags}."""
    cdef int rc = read_topic_id_partition(pp, end, o, i)
    if rc:
        return rc
    if end - pp[0] < 16:
        return E_SEGMENT_ID
    uuid_text(pp[0], o.segment_id + i * ID_CHARS_C)
    o.has_segment[i] = 1
    pp[0] += 16
    if skip_tags(pp, end):
        return E_TAGS
    return 0


cdef int read_i64(const uint8_t **pp, const uint8_t *end, int64_t *out, int code) noexcept nogil:
    if end - pp[0] < 8:
        return code
    out[0] = be64(pp[0])
    pp[0] += 8
    return 0


cdef int read_i32(const uint8_t **pp, const uint8_t *end, int32_t *out, int code) noexcept nogil:
    if end - pp[0] < 4:
        return code
    out[0] = be32(pp[0])
    pp[0] += 4
    return 0


cdef int read_custom(const uint8_t **pp, const uint8_t *end, Out *o, Py_ssize_t i) noexcept nogil:
    """CustomMetadata: nullable compact bytes."""
    cdef uint32_t u
    cdef int64_t n
    if read_uvarint(pp, end, &u):
        return E_CUSTOM_METADATA
    if u == 0:
        return 0
    n = <int64_t>u - 1
    if n > end - pp[0]:
        return E_CUSTOM_METADATA
    memcpy(o.custom_data + o.custom_pos, pp[0], n)
    o.custom_pos += n
    o.custom_off[i + 1] = <int32_t>o.custom_pos
    o.has_custom[i] = 1
    pp[0] += n
    return 0


cdef int read_epochs(const uint8_t **pp, const uint8_t *end, Out *o, Py_ssize_t i) noexcept nogil:
    """SegmentLeaderEpochs: compact array of {LeaderEpoch int32, Offset int64, tags}."""
    cdef uint32_t u, k
    cdef int64_t n
    if read_uvarint(pp, end, &u) or u == 0:
        return E_LEADER_EPOCHS
    n = <int64_t>u - 1
    if n * 13 > end - pp[0] or o.epoch_pos + n > o.epoch_cap:
        return E_LEADER_EPOCHS
    for k in range(n):
        if end - pp[0] < 12:
            return E_LEADER_EPOCHS
        o.epoch[o.epoch_pos] = be32(pp[0])
        o.epoch_offset[o.epoch_pos] = be64(pp[0] + 4)
        o.epoch_pos += 1
        pp[0] += 12
        if skip_tags(pp, end):
            return E_LEADER_EPOCHS
    o.epoch_off[i + 1] = <int32_t>o.epoch_pos
    return 0


cdef int read_top_tags(const uint8_t **pp, const uint8_t *end, Out *o, Py_ssize_t i, int api_key,
                       int version) noexcept nogil:
    """The message's own tagged fields: TxnIndexEmpty (tag 0 of segment metadata and snapshots),
    BrokerLeaderEpoch (v1: tag 1 of those, tag 0 of updates and partition deletes), EndOffset (v1: tag 1
    of updates and partition deletes); other tags skipped."""
    cdef uint32_t count, tag, size, k
    cdef const uint8_t *p
    if read_uvarint(pp, end, &count) or count > <uint32_t>(end - pp[0]):
        return E_TAGS
    for k in range(count):
        if read_uvarint(pp, end, &tag) or read_uvarint(pp, end, &size) or size > <uint32_t>(end - pp[0]):
            return E_TAGS
        p = pp[0]
        if api_key == 0 or api_key == 3:
            if tag == 0:
                if size != 1:
                    return E_TAG_SIZE
                o.txn_empty[i] = p[0] != 0
            elif tag == 1 and version >= 1:
                if size != 4:
                    return E_TAG_SIZE
                o.broker_epoch[i] = be32(p)
        elif version >= 1:
            if tag == 0:
                if size != 4:
                    return E_TAG_SIZE
                o.broker_epoch[i] = be32(p)
            elif tag == 1:
                if size != 8:
                    return E_TAG_SIZE
                o.end_offset[i] = be64(p)
        pp[0] += size
    return 0


cdef int read_message(const uint8_t **pp, const uint8_t *end, Out *o, Py_ssize_t i, int api_key,
                      int version) noexcept nogil:
    cdef int rc
    cdef const uint8_t *p
    if version >= 1:        # tagged fields of version 1, at their defaults until read
        o.has_broker_epoch[i] = 1
        o.broker_epoch[i] = -1 if api_key == 1 else 0
        if api_key == 1 or api_key == 2:
            o.has_end[i] = 1
            o.end_offset[i] = -1 if api_key == 1 else 0
    if api_key == 2:
        rc = read_topic_id_partition(pp, end, o, i)
    elif api_key == 3:
        if end - pp[0] < 16:
            return E_SEGMENT_ID
        uuid_text(pp[0], o.segment_id + i * ID_CHARS_C)
        o.has_segment[i] = 1
        pp[0] += 16
        rc = 0
    else:
        rc = read_segment_id(pp, end, o, i)
    if rc:
        return rc
    if api_key == 0 or api_key == 3:
        rc = read_i64(pp, end, &o.start_offset[i], E_START_OFFSET)
        if rc == 0:
            rc = read_i64(pp, end, &o.end_offset[i], E_END_OFFSET)
        if rc:
            return rc
        o.has_offsets[i] = 1
        o.has_end[i] = 1
    rc = read_i32(pp, end, &o.broker_id[i], E_BROKER_ID)
    if rc:
        return rc
    if api_key == 0 or api_key == 3:
        rc = read_i64(pp, end, &o.max_ts[i], E_MAX_TIMESTAMP)
        if rc:
            return rc
    rc = read_i64(pp, end, &o.event_ts[i], E_EVENT_TIMESTAMP)
    if rc:
        return rc
    if api_key == 0 or api_key == 3:
        rc = read_epochs(pp, end, o, i)
        if rc == 0:
            rc = read_i32(pp, end, &o.size[i], E_SIZE)
        if rc:
            return rc
        o.has_segment_fields[i] = 1
    if api_key != 2:
        rc = read_custom(pp, end, o, i)
        if rc:
            return rc
    if end - pp[0] < 1:
        return E_STATE
    o.state[i] = <int8_t>pp[0][0]
    pp[0] += 1
    o.has_common[i] = 1
    return read_top_tags(pp, end, o, i, api_key, version)


def decode_remote_log_metadata(const int64_t[::1] voff, const uint8_t[::1] vdata, const uint8_t[::1] vnull):
    """Decode n values of __remote_log_metadata.

    voff: n+1 offsets into vdata; vnull: 1 where the value is null. Returns a dict of NumPy arrays (see
    kafkafmt.internal's remote_log_metadata); string and binary columns as Arrow int32 offsets and data.
    """
    cdef Py_ssize_t n = voff.shape[0] - 1
    cdef Py_ssize_t vbytes = vdata.shape[0]
    if vbytes >= 0x7FFFFFFF:
        raise ValueError("decode __remote_log_metadata values in chunks under 2 GiB")
    cols = {
        "api_key": np.full(n, -1, np.int16), "version": np.full(n, -1, np.int16), "frame": np.full(n, -1, np.int32),
        "status": np.zeros(n, np.int8), "error": np.zeros(n, np.int8), "left": np.zeros(n, np.int32),
        "partition": np.zeros(n, np.int32), "start_offset": np.zeros(n, np.int64),
        "end_offset": np.zeros(n, np.int64), "broker_id": np.zeros(n, np.int32), "max_timestamp": np.zeros(n, np.int64),
        "event_timestamp": np.zeros(n, np.int64), "segment_size": np.zeros(n, np.int32), "state": np.zeros(n, np.int8),
        "txn_index_empty": np.zeros(n, np.uint8), "broker_leader_epoch": np.zeros(n, np.int32),
        "topic_id": np.zeros(max(n * ID_CHARS, 1), np.uint8), "segment_id": np.zeros(max(n * ID_CHARS, 1), np.uint8),
        "has_topic": np.zeros(n, np.uint8), "has_segment": np.zeros(n, np.uint8),
        "has_offsets": np.zeros(n, np.uint8), "has_end": np.zeros(n, np.uint8),
        "has_segment_fields": np.zeros(n, np.uint8), "has_common": np.zeros(n, np.uint8),
        "has_custom": np.zeros(n, np.uint8), "has_broker_epoch": np.zeros(n, np.uint8),
        "topic_offsets": np.zeros(n + 1, np.int32), "topic_data": np.empty(max(vbytes, 1), np.uint8),
        "custom_offsets": np.zeros(n + 1, np.int32), "custom_data": np.empty(max(vbytes, 1), np.uint8),
        "epoch_offsets": np.zeros(n + 1, np.int32),
    }
    cdef int64_t cap = vbytes // 13 + 1
    cols["epochs"] = np.empty(cap, np.int32)
    cols["epoch_start_offsets"] = np.empty(cap, np.int64)
    cdef Out o
    cdef int16_t[::1] api_key = cols["api_key"]
    cdef int16_t[::1] version = cols["version"]
    cdef int32_t[::1] frame = cols["frame"]
    cdef int8_t[::1] status = cols["status"]
    cdef int8_t[::1] err = cols["error"]
    cdef int32_t[::1] left = cols["left"]
    cdef int32_t[::1] partition = cols["partition"]
    cdef int64_t[::1] start_offset = cols["start_offset"]
    cdef int64_t[::1] end_offset = cols["end_offset"]
    cdef int32_t[::1] broker_id = cols["broker_id"]
    cdef int64_t[::1] max_ts = cols["max_timestamp"]
    cdef int64_t[::1] event_ts = cols["event_timestamp"]
    cdef int32_t[::1] size = cols["segment_size"]
    cdef int8_t[::1] state = cols["state"]
    cdef uint8_t[::1] txn_empty = cols["txn_index_empty"]
    cdef int32_t[::1] broker_epoch = cols["broker_leader_epoch"]
    cdef uint8_t[::1] topic_id = cols["topic_id"]
    cdef uint8_t[::1] segment_id = cols["segment_id"]
    cdef uint8_t[::1] has_topic = cols["has_topic"]
    cdef uint8_t[::1] has_segment = cols["has_segment"]
    cdef uint8_t[::1] has_offsets = cols["has_offsets"]
    cdef uint8_t[::1] has_end = cols["has_end"]
    cdef uint8_t[::1] has_segment_fields = cols["has_segment_fields"]
    cdef uint8_t[::1] has_common = cols["has_common"]
    cdef uint8_t[::1] has_custom = cols["has_custom"]
    cdef uint8_t[::1] has_broker_epoch = cols["has_broker_epoch"]
    cdef int32_t[::1] topic_off = cols["topic_offsets"]
    cdef uint8_t[::1] topic_data = cols["topic_data"]
    cdef int32_t[::1] custom_off = cols["custom_offsets"]
    cdef uint8_t[::1] custom_data = cols["custom_data"]
    cdef int32_t[::1] epoch_off = cols["epoch_offsets"]
    cdef int32_t[::1] epoch = cols["epochs"]
    cdef int64_t[::1] epoch_offset = cols["epoch_start_offsets"]
    if n:
        o.api_key, o.version, o.frame = &api_key[0], &version[0], &frame[0]
        o.status, o.err, o.left = &status[0], &err[0], &left[0]
        o.partition, o.start_offset, o.end_offset = &partition[0], &start_offset[0], &end_offset[0]
        o.broker_id, o.max_ts, o.event_ts, o.size = &broker_id[0], &max_ts[0], &event_ts[0], &size[0]
        o.state, o.txn_empty, o.broker_epoch = &state[0], &txn_empty[0], &broker_epoch[0]
        o.has_topic, o.has_segment, o.has_offsets, o.has_end = &has_topic[0], &has_segment[0], &has_offsets[0], &has_end[0]
        o.has_segment_fields, o.has_common = &has_segment_fields[0], &has_common[0]
        o.has_custom, o.has_broker_epoch = &has_custom[0], &has_broker_epoch[0]
    o.topic_id, o.segment_id = &topic_id[0], &segment_id[0]
    o.topic_off, o.topic_data, o.topic_pos = &topic_off[0], &topic_data[0], 0
    o.custom_off, o.custom_data, o.custom_pos = &custom_off[0], &custom_data[0], 0
    o.epoch_off, o.epoch, o.epoch_offset = &epoch_off[0], &epoch[0], &epoch_offset[0]
    o.epoch_pos, o.epoch_cap = 0, cap

    cdef const uint8_t *vb = &vdata[0] if vbytes else NULL
    cdef const uint8_t *p
    cdef const uint8_t *end
    cdef Py_ssize_t i
    cdef uint32_t u
    cdef int rc, key
    cdef int64_t tpos, cpos, epos

    with nogil:
        for i in range(n):
            o.topic_off[i + 1] = <int32_t>o.topic_pos
            o.custom_off[i + 1] = <int32_t>o.custom_pos
            o.epoch_off[i + 1] = <int32_t>o.epoch_pos
            if vnull[i]:
                o.status[i] = ST_NULL
                continue
            p = vb + voff[i]
            end = vb + voff[i + 1]
            if read_uvarint(&p, end, &u):
                o.status[i], o.err[i] = ST_FRAME, E_FRAME_READ
                continue
            o.frame[i] = <int32_t>u
            if u == 0 or u != 1:
                o.status[i], o.err[i] = ST_FRAME, (E_FRAME_ZERO if u == 0 else E_FRAME_VERSION)
                continue
            if read_uvarint(&p, end, &u):
                o.status[i], o.err[i] = ST_FRAME, E_API_KEY_READ
                continue
            if u > 0x7FFF:
                o.status[i], o.err[i] = ST_FRAME, E_API_KEY_LARGE
                continue
            key = <int>u
            o.api_key[i] = <int16_t>u
            if read_uvarint(&p, end, &u):
                o.status[i], o.err[i] = ST_FRAME, E_VERSION_READ
                continue
            if u > 0x7FFF:
                o.status[i], o.err[i] = ST_FRAME, E_VERSION_LARGE
                continue
            o.version[i] = <int16_t>u
            if key > 3:
                o.status[i] = ST_UNKNOWN_TYPE
                continue
            if u > MAX_VERSION_C:
                o.status[i] = ST_UNKNOWN_VERSION
                continue
            tpos, cpos, epos = o.topic_pos, o.custom_pos, o.epoch_pos
            rc = read_message(&p, end, &o, i, key, <int>u)
            if rc == 0 and p != end:
                rc = E_GARBAGE
                o.left[i] = <int32_t>(end - p)
            if rc:
                o.status[i], o.err[i] = ST_ERROR, rc
                # the row keeps nothing of a message that does not read
                o.has_topic[i] = o.has_segment[i] = o.has_offsets[i] = o.has_end[i] = 0
                o.has_segment_fields[i] = o.has_common[i] = o.has_custom[i] = o.has_broker_epoch[i] = 0
                o.topic_pos, o.custom_pos, o.epoch_pos = tpos, cpos, epos
                o.topic_off[i + 1] = <int32_t>tpos
                o.custom_off[i + 1] = <int32_t>cpos
                o.epoch_off[i + 1] = <int32_t>epos
    cols["topic_data"] = cols["topic_data"][:o.topic_pos]
    cols["custom_data"] = cols["custom_data"][:o.custom_pos]
    cols["epochs"] = cols["epochs"][:o.epoch_pos]
    cols["epoch_start_offsets"] = cols["epoch_start_offsets"][:o.epoch_pos]
    return cols
