"""KIP-405's ``__remote_log_metadata`` (the brokers' topic-based RemoteLogMetadataManager) as a table of events
(`remote_log_metadata`), each remote segment's current state rebuilt from them (`remote_log_segments`),
one event decoded, written or printed as kafka-dump-log prints it, and the metadata partition an event of a
user partition goes to (`metadata_partition`).

A record's key is null; its value RemoteLogMetadataSerde's frame -- uvarint frame version (1), uvarint
api key, uvarint version -- then the message (`kafkafmt.internal.schemas.REMOTE_LOG_METADATA_RECORDS`). The
table's values are decoded in bulk in C (`kafkafmt._native.remotelog`): the topic grows with every segment a
cluster tiers, unlike the other internal topics.
"""
from __future__ import annotations

import numpy as np

from kafkafmt.errors import ValueDecodeError
from kafkafmt.internal._columns import (arrow, column_parts, masked_array, source_schemas, sparse_binary,
                                        string_array, text_column, timestamp_array, warn_counts, with_source,
                                        without_source)
from kafkafmt.internal._tables import InternalTable, register_table
from kafkafmt.internal.codec import decode_message, encode_message, read_uvarint, uuid_text, write_uvarint
from kafkafmt.internal.schemas import (REMOTE_LOG_METADATA_RECORDS, REMOTE_LOG_SEGMENT_STATES,
                                       REMOTE_PARTITION_DELETE_STATES, in_versions)

__all__ = ["REMOTE_LOG_METADATA", "REMOTE_LOG_METADATA_KINDS", "DEFAULT_METADATA_PARTITIONS", "record_schemas",
           "remote_log_metadata", "remote_log_segments", "decode_remote_log_metadata_record",
           "encode_remote_log_metadata_record", "remote_log_metadata_text", "metadata_partition"]

#: the topic (TopicBasedRemoteLogMetadataManagerConfig.REMOTE_LOG_METADATA_TOPIC_NAME)
REMOTE_LOG_METADATA = "__remote_log_metadata"
#: its partitions unless ``remote.log.metadata.topic.num.partitions`` says otherwise
DEFAULT_METADATA_PARTITIONS = 50
#: api key -> the ``kind`` of its rows
REMOTE_LOG_METADATA_KINDS = {0: "segment_metadata", 1: "segment_update", 2: "partition_delete",
                             3: "segment_snapshot"}
_FRAME_VERSION = 1


def record_schemas(pa, ts):
    """The remote_log_metadata table's schema (without the source columns every table ends with)."""
    return {
        "remote_log_metadata": pa.schema([
            ("offset", pa.int64()), ("timestamp", ts), ("kind", pa.string()), ("api_key", pa.int16()),
            ("version", pa.int16()), ("topic", pa.string()), ("topic_id", pa.string()), ("partition", pa.int32()),
            ("segment_id", pa.string()), ("start_offset", pa.int64()), ("end_offset", pa.int64()),
            ("broker_id", pa.int32()), ("max_timestamp", ts), ("event_timestamp", ts),
            ("segment_size_in_bytes", pa.int32()),
            ("segment_leader_epochs", pa.list_(pa.struct([("leader_epoch", pa.int32()), ("offset", pa.int64())]))),
            ("custom_metadata", pa.binary()), ("state", pa.string()), ("txn_index_empty", pa.bool_()),
            ("broker_leader_epoch", pa.int32()), ("error", pa.string()), ("raw_value", pa.binary())]),
    }


def _schema():
    return source_schemas(record_schemas)["remote_log_metadata"]


# ------------------------------------------------------------------------------------------------
# the table

def _error_texts(r, rows):
    """{row: error text} of the rows that do not read, in Kafka's words where Kafka has them."""
    from kafkafmt._native.remotelog import ERROR_CODES, STATUS

    out = {}
    counts = {"records of unknown type": 0, "records with a version newer than known": 0}
    status, key, ver = r["status"], r["api_key"], r["version"]
    for i in rows.tolist():
        st, k, v = int(status[i]), int(key[i]), int(ver[i])
        if st == STATUS["null"]:
            out[i] = "the value is null"
        elif st == STATUS["unknown_type"]:
            out[i] = f"Unknown metadata id {k}"
            counts["records of unknown type"] += 1
        elif st == STATUS["unknown_version"]:
            out[i] = f"Failed to deserialize record with type {k}: version {v} of " \
                     f"{REMOTE_LOG_METADATA_RECORDS[k].name} is newer than known"
            counts["records with a version newer than known"] += 1
        else:
            field, what = ERROR_CODES[int(r["error"][i])]
            what = what.format(frame=int(r["frame"][i]), left=int(r["left"][i]), api_key=k)
            if field is None:
                out[i] = what
            else:
                out[i] = f"Failed to deserialize record with type {k}: {REMOTE_LOG_METADATA_RECORDS[k].name} " \
                         f"v{v} field {field}: {what}"
    return out, counts


def _fixed_text(buf, valid, width):
    """A string column of fixed-width texts (Kafka's Uuid texts), null where not ``valid``."""
    n = len(valid)
    offsets = np.arange(n + 1, dtype=np.int32) * width
    return string_array(offsets, np.ascontiguousarray(buf[:n * width] if n else np.zeros(1, np.uint8)), valid)


def remote_log_metadata(recs):
    """One row per ``__remote_log_metadata`` record (KIP-405: every segment copy and delete the brokers'
    RemoteLogMetadataManager published): ``offset, timestamp, kind, api_key, version, topic, topic_id,
    partition, segment_id, start_offset, end_offset, broker_id, max_timestamp, event_timestamp,
    segment_size_in_bytes, segment_leader_epochs, custom_metadata, state, txn_index_empty,
    broker_leader_epoch, error, raw_value``.

    ``kind`` is ``segment_metadata`` (RemoteLogSegmentMetadataRecord: a copy starting, with the segment's
    offsets, size, max timestamp and leader epochs), ``segment_update`` (RemoteLogSegmentMetadataUpdateRecord:
    the copy finished, a delete started or finished), ``partition_delete`` (RemotePartitionDeleteMetadataRecord)
    or ``segment_snapshot`` (a cache snapshot record; brokers do not publish those). ``topic_id`` and
    ``segment_id`` are Kafka's Uuid texts (as its tools print them and LocalTieredStorage names files);
    ``state`` is the RemoteLogSegmentState or RemotePartitionDeleteState name. ``custom_metadata`` is null
    when absent (the remote storage manager returned none). Tagged fields: ``txn_index_empty``
    (TxnIndexEmpty: Kafka's default, false, when absent) on segment metadata; ``broker_leader_epoch``
    (version 1 only); a version-1 update or partition delete carries its ``end_offset``.

    A value that does not read (its offset is the row's ``offset``) gives a row with the ``error`` text --
    Kafka's own where Kafka has one (kafka-dump-log prints it as "Error at offset N, skipping. ...") -- and
    its bytes in ``raw_value``; an unknown api key or a version newer than known also warns once.

    Parameters
    ----------
    recs : Records
        The records of the topic (``read_log_dirs(root, topics=["__remote_log_metadata"])``, ...).

    Returns
    -------
    pyarrow.Table

    Examples
    --------
    A copy of one segment, started and finished (its custom metadata comes with the update):

    >>> import kafkafmt
    >>> from kafkafmt import internal
    >>> seg = {"TopicIdPartition": {"Name": "orders", "Id": bytes(range(16)), "Partition": 3},
    ...        "Id": bytes(range(16, 32))}
    >>> started = internal.encode_remote_log_metadata_record(0, {
    ...     "RemoteLogSegmentId": seg, "StartOffset": 0, "EndOffset": 999, "BrokerId": 1,
    ...     "MaxTimestampMs": 1767225600000, "EventTimestampMs": 1767225660000,
    ...     "SegmentLeaderEpochs": [{"LeaderEpoch": 0, "Offset": 0}], "SegmentSizeInBytes": 1048576,
    ...     "RemoteLogSegmentState": 0})
    >>> finished = internal.encode_remote_log_metadata_record(1, {
    ...     "RemoteLogSegmentId": seg, "BrokerId": 1, "EventTimestampMs": 1767225662000,
    ...     "CustomMetadata": b"\\x01", "RemoteLogSegmentState": 1})
    >>> _ = kafkafmt.write_log_dir("rlmm/__remote_log_metadata-36", keys=[None, None],
    ...                            values=[started, finished], timestamps=[1767225660000, 1767225662000])
    >>> table = internal.remote_log_metadata(kafkafmt.read_log_dir("rlmm/__remote_log_metadata-36"))
    >>> for row in table.select(["kind", "topic", "partition", "segment_id", "end_offset", "state"]).to_pylist():
    ...     print(row)
    {'kind': 'segment_metadata', 'topic': 'orders', 'partition': 3, 'segment_id': 'EBESExQVFhcYGRobHB0eHw',
     'end_offset': 999, 'state': 'COPY_SEGMENT_STARTED'}
    {'kind': 'segment_update', 'topic': 'orders', 'partition': 3, 'segment_id': 'EBESExQVFhcYGRobHB0eHw',
     'end_offset': None, 'state': 'COPY_SEGMENT_FINISHED'}
    """
    from kafkafmt._native.remotelog import ID_CHARS, STATUS, decode_remote_log_metadata

    pa = arrow()
    n = len(recs)
    vo, vd, vn = column_parts(recs.value)
    r = decode_remote_log_metadata(vo, vd, vn)
    status, api_key = r["status"], r["api_key"]
    ok = status == STATUS["ok"]
    bad = np.nonzero(~ok)[0]
    errors, counts = _error_texts(r, bad)
    # state names: segment states, then partition delete states after them
    seg_names = [REMOTE_LOG_SEGMENT_STATES.get(i) for i in range(4)]
    del_names = [REMOTE_PARTITION_DELETE_STATES.get(i) for i in range(3)]
    state = r["state"].astype(np.int32)
    is_delete = api_key == 2
    known = np.where(is_delete, (state >= 0) & (state < 3), (state >= 0) & (state < 4))
    has_state = r["has_common"].view(bool)
    for i in np.nonzero(has_state & ~known)[0].tolist():
        table_of = REMOTE_PARTITION_DELETE_STATES if is_delete[i] else REMOTE_LOG_SEGMENT_STATES
        errors[i] = f"unknown {'RemotePartitionDeleteState' if is_delete[i] else 'RemoteLogSegmentState'} id " \
                    f"{state[i]} (one of {', '.join(map(str, table_of))})"
    raw_rows = np.asarray(sorted(set(bad.tolist()) | set(errors)), np.int64)
    names = pa.array(seg_names + del_names, pa.string())
    state_idx = np.where(is_delete, state + 4, state).astype(np.int32)
    kinds = pa.array([REMOTE_LOG_METADATA_KINDS[k] for k in range(4)], pa.string())
    kind_idx = np.where(ok, api_key, 0).astype(np.int32)

    has_epochs = r["has_segment_fields"].view(bool)
    epochs = pa.StructArray.from_arrays([pa.array(r["epochs"]), pa.array(r["epoch_start_offsets"])],
                                        names=["leader_epoch", "offset"])
    epoch_lists = pa.ListArray.from_arrays(pa.array(r["epoch_offsets"]), epochs,
                                           mask=pa.array(~has_epochs))
    segment_fields = r["has_segment_fields"].view(bool)
    ts = pa.timestamp("ms", tz="UTC")
    cols = [
        pa.array(np.asarray(recs.offset, np.int64)),
        timestamp_array(recs.timestamp),
        kinds.take(pa.array(kind_idx, mask=~ok)),
        masked_array(api_key, api_key >= 0, pa.int16()),
        masked_array(r["version"], r["version"] >= 0, pa.int16()),
        string_array(r["topic_offsets"], r["topic_data"], r["has_topic"].view(bool)),
        _fixed_text(r["topic_id"], r["has_topic"].view(bool), ID_CHARS),
        masked_array(r["partition"], r["has_topic"].view(bool), pa.int32()),
        _fixed_text(r["segment_id"], r["has_segment"].view(bool), ID_CHARS),
        masked_array(r["start_offset"], r["has_offsets"].view(bool), pa.int64()),
        masked_array(r["end_offset"], r["has_end"].view(bool), pa.int64()),
        masked_array(r["broker_id"], has_state, pa.int32()),
        masked_array(r["max_timestamp"], segment_fields, ts),
        masked_array(r["event_timestamp"], has_state, ts),
        masked_array(r["segment_size"], segment_fields, pa.int32()),
        epoch_lists,
        string_array(r["custom_offsets"], r["custom_data"], r["has_custom"].view(bool)).cast(pa.binary()),
        names.take(pa.array(state_idx, mask=~(has_state & known))),
        pa.array(r["txn_index_empty"].view(bool), mask=~(segment_fields & (api_key != 1))),
        masked_array(r["broker_leader_epoch"], r["has_broker_epoch"].view(bool), pa.int32()),
        text_column(errors, n),
        sparse_binary(recs.value, raw_rows, n),
    ]
    warn_counts(REMOTE_LOG_METADATA, counts)
    return with_source(pa.Table.from_arrays(cols, schema=without_source(_schema())), recs)


# ------------------------------------------------------------------------------------------------
# each segment's current state

def remote_log_segments(events):
    """Each remote segment's current state, as a consumer of ``__remote_log_metadata`` rebuilds its cache:
    the last event of each segment id wins (in each metadata partition's log order), over the segment's
    metadata (its offsets, size, max timestamp, leader epochs from the ``segment_metadata`` event), and its
    topic-partition's last partition delete state is applied beside it.

    One row per segment id: ``topic, topic_id, partition, segment_id, start_offset, end_offset,
    max_timestamp, segment_size_in_bytes, segment_leader_epochs, txn_index_empty, state, broker_id,
    event_timestamp, custom_metadata, copy_started, events, partition_delete_state, source_partition,
    log_dir`` -- ``state``, ``broker_id``, ``event_timestamp`` and ``custom_metadata`` of the last event (an
    update carries the custom metadata Kafka's cache then holds), ``copy_started`` the event time of the
    copy's start, ``events`` how many events name the segment, ``partition_delete_state`` the last
    RemotePartitionDeleteState of its topic-partition (null when none). Kafka's cache drops the segments
    whose state is ``DELETE_SEGMENT_FINISHED`` and those of a partition whose delete is
    ``DELETE_PARTITION_FINISHED``; they stay here, so that what should be gone can be looked for.

    Parameters
    ----------
    events : pyarrow.Table or Records
        `remote_log_metadata`'s table, or the records to build it from.

    Returns
    -------
    pyarrow.Table
        Sorted by topic, partition, start offset.

    Examples
    --------
    A segment whose copy started, then finished:

    >>> import kafkafmt
    >>> from kafkafmt import internal
    >>> seg = {"TopicIdPartition": {"Name": "orders", "Id": bytes(range(16)), "Partition": 3},
    ...        "Id": bytes(range(16, 32))}
    >>> started = internal.encode_remote_log_metadata_record(0, {
    ...     "RemoteLogSegmentId": seg, "StartOffset": 0, "EndOffset": 999, "BrokerId": 1, "EventTimestampMs": 5,
    ...     "SegmentLeaderEpochs": [{"LeaderEpoch": 0, "Offset": 0}], "SegmentSizeInBytes": 1048576})
    >>> finished = internal.encode_remote_log_metadata_record(1, {
    ...     "RemoteLogSegmentId": seg, "BrokerId": 1, "EventTimestampMs": 9, "RemoteLogSegmentState": 1})
    >>> _ = kafkafmt.write_log_dir("rlmm/__remote_log_metadata-36", keys=[None, None], values=[started, finished])
    >>> events = internal.remote_log_metadata(kafkafmt.read_log_dir("rlmm/__remote_log_metadata-36"))
    >>> segments = internal.remote_log_segments(events)
    >>> segments.select(["segment_id", "end_offset", "state", "events"]).to_pylist()
    [{'segment_id': 'EBESExQVFhcYGRobHB0eHw', 'end_offset': 999, 'state': 'COPY_SEGMENT_FINISHED', 'events': 2}]
    """
    import pyarrow.compute as pc

    pa = arrow()
    if not isinstance(events, pa.Table):
        events = remote_log_metadata(events)
    api_key = events.column("api_key").fill_null(-1).to_numpy(zero_copy_only=False)
    seg_rows = np.nonzero(((api_key == 0) | (api_key == 1))
                          & events.column("segment_id").is_valid().to_numpy(zero_copy_only=False))[0]
    segs = events.select(["offset", "api_key", "topic", "topic_id", "partition", "segment_id", "start_offset",
                          "end_offset", "broker_id", "max_timestamp", "event_timestamp", "segment_size_in_bytes",
                          "segment_leader_epochs", "custom_metadata", "state", "txn_index_empty",
                          "source_partition", "log_dir"]).take(pa.array(seg_rows, pa.int64()))
    code = pc.dictionary_encode(segs.column("segment_id")).combine_chunks().indices.to_numpy(zero_copy_only=False)
    source = segs.column("source_partition").fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    order = np.lexsort((segs.column("offset").to_numpy(), source, code.astype(np.int64)))
    code_sorted = code[order]
    change = code_sorted[1:] != code_sorted[:-1]
    last = order[np.r_[change, True]] if len(order) else order
    first_of_group = np.r_[True, change] if len(order) else np.zeros(0, bool)
    counts = np.diff(np.r_[np.nonzero(first_of_group)[0], len(order)])
    # the segment's metadata: its last segment_metadata event (-1: none held)
    is_meta = segs.column("api_key").to_numpy(zero_copy_only=False)[order] == 0
    group = np.cumsum(first_of_group) - 1
    meta = np.full(len(last), -1, np.int64)
    meta[group[is_meta]] = order[is_meta]          # later rows of a group overwrite earlier ones
    m = segs.select(["start_offset", "end_offset", "max_timestamp", "segment_size_in_bytes", "segment_leader_epochs",
                     "txn_index_empty", "event_timestamp"]).take(pa.array(meta, mask=meta < 0))
    t = segs.select(["topic", "topic_id", "partition", "segment_id", "state", "broker_id", "event_timestamp",
                     "custom_metadata", "source_partition", "log_dir"]).take(pa.array(last, pa.int64()))
    out = {}
    for name in ("topic", "topic_id", "partition", "segment_id"):
        out[name] = t.column(name)
    for name in ("start_offset", "end_offset", "max_timestamp", "segment_size_in_bytes", "segment_leader_epochs",
                 "txn_index_empty"):
        out[name] = m.column(name)
    for name in ("state", "broker_id", "event_timestamp", "custom_metadata"):
        out[name] = t.column(name)
    out["copy_started"] = m.column("event_timestamp")
    out["events"] = pa.array(counts.astype(np.int32), pa.int32())
    out["partition_delete_state"] = _partition_delete_states(events, t)
    out["source_partition"] = t.column("source_partition")
    out["log_dir"] = t.column("log_dir")
    table = pa.table(out)
    return table.sort_by([("topic", "ascending"), ("partition", "ascending"), ("start_offset", "ascending"),
                          ("segment_id", "ascending")])


def _partition_delete_states(events, segs):
    """The last partition delete state of each segment row's (topic id, partition), null when none."""
    import pyarrow.compute as pc

    pa = arrow()
    api_key = events.column("api_key").fill_null(-1).to_numpy(zero_copy_only=False)
    rows = np.nonzero(api_key == 2)[0]
    state = np.full(segs.num_rows, -1, np.int64)
    names = []
    if len(rows):
        d = events.select(["offset", "source_partition", "topic_id", "partition", "state"]).take(pa.array(rows, pa.int64()))
        order = np.lexsort((d.column("offset").to_numpy(), d.column("source_partition").fill_null(-1).to_numpy()))
        tid, part, st = (d.column(c).to_pylist() for c in ("topic_id", "partition", "state"))
        last = {}
        for i in order.tolist():            # one per partition delete event: few
            last[(tid[i], part[i])] = st[i]
        names = sorted(set(last.values()) - {None})
        for (t, p), s in last.items():      # one vectorized pass per deleted partition
            if s is None:
                continue
            hit = pc.and_(pc.equal(segs.column("topic_id"), t), pc.equal(segs.column("partition"), p))
            state[hit.fill_null(False).to_numpy(zero_copy_only=False)] = names.index(s)
    return pa.array(names, pa.string()).take(pa.array(state, mask=state < 0)) if names else \
        pa.nulls(segs.num_rows, pa.string())


# ------------------------------------------------------------------------------------------------
# one event

def decode_remote_log_metadata_record(value):
    """Decode one ``__remote_log_metadata`` value: uvarint frame version (1), uvarint api key, uvarint
    version, then the message. Returns (api_key, version, message schema, dict).

    Parameters
    ----------
    value : bytes
        The record's value.

    Returns
    -------
    (int, int, Message, dict)

    Raises
    ------
    ValueDecodeError
        The value does not read (the message says why, in Kafka's words where Kafka has them).

    Examples
    --------
    >>> from kafkafmt import internal
    >>> seg = {"TopicIdPartition": {"Name": "orders", "Id": bytes(range(16)), "Partition": 3},
    ...        "Id": bytes(range(16, 32))}
    >>> value = internal.encode_remote_log_metadata_record(1, {
    ...     "RemoteLogSegmentId": seg, "BrokerId": 1, "EventTimestampMs": 1767225662000,
    ...     "CustomMetadata": b"\\x01", "RemoteLogSegmentState": 1})
    >>> api_key, version, msg, data = internal.decode_remote_log_metadata_record(value)
    >>> msg.name, data["RemoteLogSegmentState"], data["CustomMetadata"]
    ('RemoteLogSegmentMetadataUpdateRecord', 1, b'\\x01')
    """
    if value is None:
        raise ValueDecodeError("the value is null")
    value = bytes(value)
    end = len(value)
    try:
        frame, pos = read_uvarint(value, 0, end)
    except ValueDecodeError:
        raise ValueDecodeError("Error while reading frame version") from None
    if frame == 0:
        raise ValueDecodeError("Could not deserialize metadata record with frame version 0. Note that upgrades "
                               "from the preview release of KRaft in 2.8 to newer versions are not supported.")
    if frame != _FRAME_VERSION:
        raise ValueDecodeError(f"Could not deserialize metadata record due to unknown frame version {frame}"
                               f"(only frame version {_FRAME_VERSION} is supported)")
    try:
        api_key, pos = read_uvarint(value, pos, end)
    except ValueDecodeError:
        raise ValueDecodeError("Error while reading type") from None
    try:
        version, pos = read_uvarint(value, pos, end)
    except ValueDecodeError:
        raise ValueDecodeError("Error while reading version") from None
    msg = REMOTE_LOG_METADATA_RECORDS.get(api_key)
    if msg is None:
        raise ValueDecodeError(f"Unknown metadata id {api_key}")
    if not in_versions(msg.valid, version):
        raise ValueDecodeError(f"Failed to deserialize record with type {api_key}: version {version} of "
                               f"{msg.name} is newer than known")
    try:
        data, pos = decode_message(msg, version, value, pos, end)
    except ValueDecodeError as e:
        raise ValueDecodeError(f"Failed to deserialize record with type {api_key}: {e}") from None
    if pos != end:
        raise ValueDecodeError(f"Found {end - pos} byte(s) of garbage after {api_key}")
    return api_key, version, msg, data


def encode_remote_log_metadata_record(api_key, values, version=0, extra_tags=None):
    """Value bytes of a ``__remote_log_metadata`` record, as RemoteLogMetadataSerde writes them (the key
    is null).

    Parameters
    ----------
    api_key : int
        0 RemoteLogSegmentMetadataRecord, 1 RemoteLogSegmentMetadataUpdateRecord,
        2 RemotePartitionDeleteMetadataRecord, 3 RemoteLogSegmentMetadataSnapshotRecord.
    values : dict
        The message's fields, by Kafka field name (uuids as 16 bytes).
    version : int
        The message's version (0 or 1).
    extra_tags : dict, optional
        ``{tag: bytes}`` tagged fields to add as they are.

    Returns
    -------
    bytes

    Examples
    --------
    >>> from kafkafmt import internal
    >>> value = internal.encode_remote_log_metadata_record(2, {
    ...     "TopicIdPartition": {"Name": "orders", "Id": bytes(16), "Partition": 0}, "BrokerId": 3000,
    ...     "EventTimestampMs": 0, "RemotePartitionDeleteState": 0})
    >>> value[:3], internal.decode_remote_log_metadata_record(value)[3]["RemotePartitionDeleteState"]
    (b'\\x01\\x02\\x00', 0)
    """
    out = bytearray()
    write_uvarint(out, _FRAME_VERSION)
    write_uvarint(out, api_key)
    write_uvarint(out, version)
    return bytes(out) + encode_message(REMOTE_LOG_METADATA_RECORDS[api_key], version, values, extra_tags=extra_tags)


def _custom_text(b):
    return "Optional.empty" if b is None else f"Optional[CustomMetadata{{{len(b)} bytes}}]"


def _epochs_text(entries):
    """A NavigableMap<Integer, Long> as Java prints it: ``{0=0, 3=120}`` (by epoch)."""
    pairs = sorted((e["LeaderEpoch"], e["Offset"]) for e in entries)
    return "{" + ", ".join(f"{k}={v}" for k, v in pairs) + "}"


def _tip_text(tip):
    return f"{uuid_text(tip['Id'])}:{tip['Name']}-{tip['Partition']}"


def remote_log_metadata_text(value, offset):
    """What kafka-dump-log prints for a ``__remote_log_metadata`` value with ``--remote-log-metadata-decoder``:
    the event's ``toString`` (``RemoteLogSegmentMetadata{...}``, ``RemoteLogSegmentMetadataUpdate{...}``,
    ``RemotePartitionDeleteMetadata{...}``), or ``Error at offset N, skipping. <why>``.

    Parameters
    ----------
    value : bytes or None
        The record's value.
    offset : int
        The record's offset.

    Returns
    -------
    str

    Examples
    --------
    The controller marking a partition for deletion, and a value that does not read:

    >>> from kafkafmt import internal
    >>> value = internal.encode_remote_log_metadata_record(2, {
    ...     "TopicIdPartition": {"Name": "orders", "Id": bytes(range(16)), "Partition": 3}, "BrokerId": 3000,
    ...     "EventTimestampMs": 1767225662000, "RemotePartitionDeleteState": 0})
    >>> print(internal.remote_log_metadata_text(value, 1))
    RemotePartitionDeleteMetadata{topicPartition=AAECAwQFBgcICQoLDA0ODw:orders-3, state=DELETE_PARTITION_MARKED, eventTimestampMs=1767225662000, brokerId=3000}
    >>> internal.remote_log_metadata_text(b"corrupted", 9)
    'Error at offset 9, skipping. Could not deserialize metadata record due to unknown frame version 99(only frame version 1 is supported)'
    """
    try:
        api_key, _, _, d = decode_remote_log_metadata_record(value)
    except ValueDecodeError as e:
        return f"Error at offset {offset}, skipping. {e}"
    if api_key == 2:
        state = REMOTE_PARTITION_DELETE_STATES.get(d["RemotePartitionDeleteState"], "null")
        return (f"RemotePartitionDeleteMetadata{{topicPartition={_tip_text(d['TopicIdPartition'])}, state={state}, "
                f"eventTimestampMs={d['EventTimestampMs']}, brokerId={d['BrokerId']}}}")
    state = REMOTE_LOG_SEGMENT_STATES.get(d["RemoteLogSegmentState"], "null")
    if api_key == 3:
        return (f"RemoteLogSegmentMetadataSnapshot{{segmentId={uuid_text(d['SegmentId'])}, "
                f"startOffset={d['StartOffset']}, endOffset={d['EndOffset']}, maxTimestampMs={d['MaxTimestampMs']}, "
                f"segmentLeaderEpochs={_epochs_text(d['SegmentLeaderEpochs'])}, "
                f"segmentSizeInBytes={d['SegmentSizeInBytes']}, customMetadata={_custom_text(d['CustomMetadata'])}, "
                f"state={state}}}")
    sid = d["RemoteLogSegmentId"]
    sid_text = f"RemoteLogSegmentId{{topicIdPartition={_tip_text(sid['TopicIdPartition'])}, id={uuid_text(sid['Id'])}}}"
    if api_key == 1:
        return (f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={sid_text}, "
                f"customMetadata={_custom_text(d['CustomMetadata'])}, state={state}, "
                f"eventTimestampMs={d['EventTimestampMs']}, brokerId={d['BrokerId']}}}")
    return (f"RemoteLogSegmentMetadata{{remoteLogSegmentId={sid_text}, startOffset={d['StartOffset']}, "
            f"endOffset={d['EndOffset']}, brokerId={d['BrokerId']}, maxTimestampMs={d['MaxTimestampMs']}, "
            f"eventTimestampMs={d['EventTimestampMs']}, segmentLeaderEpochs={_epochs_text(d['SegmentLeaderEpochs'])}, "
            f"segmentSizeInBytes={d['SegmentSizeInBytes']}, customMetadata={_custom_text(d['CustomMetadata'])}, "
            f"state={state}, txnIdxEmpty={'true' if d.get('TxnIndexEmpty') else 'false'}}}")


# ------------------------------------------------------------------------------------------------
# which metadata partition

def _murmur2(data):
    """Kafka's Utils.murmur2 (seed 0x9747b28c) of bytes, as a signed 32-bit int."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    rest = length % 4
    tail = length - rest
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def _java_int(v):
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def metadata_partition(topic_id, partition, partitions=DEFAULT_METADATA_PARTITIONS):
    """The ``__remote_log_metadata`` partition the events of a user partition go to, as Kafka's
    RemoteLogMetadataTopicPartitioner picks it: murmur2 of ``Objects.hash(topicId's least significant bits,
    its most significant bits, partition)`` (4 bytes, big-endian), made positive, modulo ``partitions``.
    The topic's name is not hashed.

    Parameters
    ----------
    topic_id : str or bytes
        The topic id: Kafka's Uuid text, or its 16 bytes.
    partition : int
        The user partition.
    partitions : int
        ``__remote_log_metadata``'s partitions (``remote.log.metadata.topic.num.partitions``, 50 by default).

    Returns
    -------
    int

    Examples
    --------
    >>> from kafkafmt import internal
    >>> internal.metadata_partition("AAECAwQFBgcICQoLDA0ODw", 3)
    36
    """
    import base64

    raw = base64.urlsafe_b64decode(topic_id + "==") if isinstance(topic_id, str) else bytes(topic_id)
    msb, lsb = int.from_bytes(raw[:8], "big"), int.from_bytes(raw[8:], "big")
    h = 1
    for long_bits in (lsb, msb):                       # Long.hashCode: (int) (v ^ (v >>> 32))
        h = _java_int(31 * h + _java_int(long_bits ^ (long_bits >> 32)))
    h = _java_int(31 * h + int(partition))
    return (_murmur2(h.to_bytes(4, "big", signed=True)) & 0x7FFFFFFF) % int(partitions)


register_table(InternalTable(
    "remote_log_metadata", REMOTE_LOG_METADATA, record_schemas, remote_log_metadata,
    "one row per event of tiered storage's remote log metadata: segment copies and deletes, partition deletes",
    encoding="remote-log-metadata", decoder="remote-log-metadata"))
