"""The coordinators' records: __consumer_offsets (`consumer_offsets`, `group_members`),
__transaction_state (`transaction_state`) and __share_group_state (`share_group_state`) as tables, and
one coordinator record decoded or written (`decode_coordinator_record`, `encode_coordinator_record` &
co.).

A coordinator record's key is an int16 record type then the key message; its value an int16
version then the value message; a null value is a tombstone (Kafka's CoordinatorRecordSerde).
"""
from __future__ import annotations

import struct

import numpy as np

from kafkafmt.errors import ValueDecodeError
from kafkafmt.internal._columns import (append_row, arrow, column_parts, masked_array, source_schemas,
                                        sparse_binary, string_array, text_column, timestamp_array, warn_counts,
                                        with_source, without_source)
from kafkafmt.internal._tables import InternalTable, internal_table, register_table, table_doc
from kafkafmt.internal.codec import decode_message, encode_message, uuid_text
from kafkafmt.internal.schemas import (CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION, GROUP_RECORDS,
                                       SHARE_STATE_RECORDS, TRANSACTION_RECORDS, TRANSACTION_STATUS, in_versions)

__all__ = ["GROUP_KINDS", "record_schemas", "decode_versioned", "decode_coordinator_record",
           "encode_coordinator_record", "encode_group_record", "encode_transaction_record", "encode_subscription",
           "encode_assignment", "consumer_offsets", "group_members", "transaction_state", "share_group_state"]

#: record type -> kind name in consumer_offsets
GROUP_KINDS = {t: kind for t, (kind, _, _) in GROUP_RECORDS.items()}


def record_schemas(pa, ts):
    """The coordinator tables' schemas (without the source columns every table ends with)."""
    tps = pa.list_(pa.struct([("topic", pa.string()), ("partitions", pa.list_(pa.int32()))]))
    return {
        "consumer_offsets": pa.schema([
            ("offset", pa.int64()), ("timestamp", ts), ("kind", pa.string()), ("group", pa.string()),
            ("topic", pa.string()), ("partition", pa.int32()), ("committed_offset", pa.int64()),
            ("leader_epoch", pa.int32()), ("metadata", pa.string()), ("commit_timestamp", ts),
            ("expire_timestamp", ts), ("tombstone", pa.bool_()), ("error", pa.string()),
            ("raw_key", pa.binary()), ("raw_value", pa.binary())]),
        "group_members": pa.schema([
            ("offset", pa.int64()), ("timestamp", ts), ("group", pa.string()), ("generation", pa.int32()),
            ("protocol_type", pa.string()), ("protocol", pa.string()), ("leader", pa.string()),
            ("member_id", pa.string()), ("group_instance_id", pa.string()), ("client_id", pa.string()),
            ("client_host", pa.string()), ("rebalance_timeout", pa.int32()), ("session_timeout", pa.int32()),
            ("subscription", pa.list_(pa.string())), ("assignment", tps), ("error", pa.string())]),
        "transaction_state": pa.schema([
            ("offset", pa.int64()), ("timestamp", ts), ("transactional_id", pa.string()),
            ("producer_id", pa.int64()), ("producer_epoch", pa.int16()), ("timeout_ms", pa.int32()),
            ("status", pa.string()), ("partitions", tps), ("last_update_timestamp", ts),
            ("start_timestamp", ts), ("previous_producer_id", pa.int64()), ("next_producer_id", pa.int64()),
            ("next_producer_epoch", pa.int16()), ("client_transaction_version", pa.int16()),
            ("tombstone", pa.bool_()), ("error", pa.string()), ("raw_key", pa.binary()),
            ("raw_value", pa.binary())]),
        "share_group_state": pa.schema([
            ("offset", pa.int64()), ("timestamp", ts), ("kind", pa.string()), ("group", pa.string()),
            ("topic_id", pa.string()), ("partition", pa.int32()), ("snapshot_epoch", pa.int32()),
            ("state_epoch", pa.int32()), ("leader_epoch", pa.int32()), ("start_offset", pa.int64()),
            ("delivery_complete_count", pa.int32()), ("create_timestamp", ts), ("write_timestamp", ts),
            ("state_batches", pa.list_(pa.struct([
                ("first_offset", pa.int64()), ("last_offset", pa.int64()), ("delivery_state", pa.int8()),
                ("delivery_count", pa.int16())]))),
            ("tombstone", pa.bool_()), ("error", pa.string()), ("raw_key", pa.binary()),
            ("raw_value", pa.binary())]),
    }


def _schemas():
    return source_schemas(record_schemas)


# ------------------------------------------------------------------------------------------------
# coordinator records (generic, one record)

def _coordinator_registry(topic):
    """The record types of a coordinator topic's table (its `InternalTable.records`)."""
    records = internal_table(topic).records
    if records is None:
        raise ValueError(f"{topic} is not a table of a coordinator's topic")
    return records


def decode_coordinator_record(key, value, topic="consumer_offsets"):
    """Decode one coordinator record (key bytes, value bytes or None) of `topic`
    (``consumer_offsets``, ``transaction_state`` or ``share_group_state``).

    Returns a dict: ``type`` (the key's int16), ``kind``, ``key`` (dict), ``version`` (value version or
    None), ``value`` (dict, or None for a tombstone), ``key_message`` / ``value_message`` (the schemas).
    Raises `ValueDecodeError` for corrupt bytes, `LookupError` for an unknown type or value version.

    Parameters
    ----------
    key : bytes
        The record's key.
    value : bytes or None
        The record's value (None: a tombstone).
    topic : str
        The table whose topic's records these are: ``consumer_offsets``, ``transaction_state``,
        ``share_group_state`` (any `InternalTable` with ``records``).

    Returns
    -------
    dict

    Raises
    ------
    ValueDecodeError
        Corrupt bytes.
    LookupError
        An unknown type or value version.

    Examples
    --------
    The first record of the sample's ``__consumer_offsets``: the ``billing`` group's metadata.

    >>> import kafkafmt
    >>> from kafkafmt import internal
    >>> from kafkafmt.sample import sample_dir
    >>> recs = kafkafmt.read_log_dir(f"{sample_dir()}/__consumer_offsets-0")
    >>> rec = internal.decode_coordinator_record(recs.key[0], recs.value[0])
    >>> rec["kind"], rec["key"], rec["version"]
    ('group_metadata', {'group': 'billing'}, 3)
    >>> [m["clientId"] for m in rec["value"]["members"]]
    ['consumer-billing-1']
    """
    registry = _coordinator_registry(topic)
    if key is None:
        raise ValueDecodeError("the key is null")
    if len(key) < 2:
        raise ValueDecodeError("key: truncated before the record type")
    rtype = struct.unpack_from(">h", key)[0]
    if rtype not in registry:
        raise LookupError(f"unknown record type {rtype}")
    kind, kmsg, vmsg = registry[rtype]
    try:
        k, _ = decode_message(kmsg, 0, key, 2)
    except ValueDecodeError as e:
        raise ValueDecodeError(f"key: {e}") from None
    out = {"type": rtype, "kind": kind, "key": k, "version": None, "value": None,
           "key_message": kmsg, "value_message": vmsg}
    if value is None:
        return out
    if len(value) < 2:
        raise ValueDecodeError(f"value: {vmsg.name if vmsg else kind}: truncated before the version")
    ver = struct.unpack_from(">h", value)[0]
    out["version"] = ver
    if vmsg is None or not in_versions(vmsg.valid, ver):
        raise LookupError(f"unknown value version {ver} for record type {rtype} ({kind})")
    try:
        out["value"], _ = decode_message(vmsg, ver, value, 2)
    except ValueDecodeError as e:
        raise ValueDecodeError(f"value: {e}") from None
    return out


def encode_group_record(rtype, key, version=None, value=None):
    """(key bytes, value bytes or None) of a __consumer_offsets record: `rtype` is the record type
    (1 offset commit, 2 group metadata, ...), `key`/`value` dicts by Kafka field name, `value=None` a
    tombstone.

    Parameters
    ----------
    rtype : int
        The record type (1 offset commit, 2 group metadata, ...).
    key : dict
        The key's fields, by Kafka field name.
    version : int, optional
        The value's version.
    value : dict, optional
        The value's fields, by Kafka field name; None: a tombstone.

    Returns
    -------
    (bytes, bytes or None)

    Examples
    --------
    >>> from kafkafmt import internal
    >>> key, value = internal.encode_group_record(
    ...     1, {"group": "billing", "topic": "orders", "partition": 0},
    ...     3, {"offset": 2400, "leaderEpoch": 3, "metadata": "", "commitTimestamp": 1767226380000})
    >>> internal.decode_coordinator_record(key, value)["value"]
    {'offset': 2400, 'leaderEpoch': 3, 'metadata': '', 'commitTimestamp': 1767226380000}
    >>> internal.encode_group_record(2, {"group": "old-reports"})
    (b'\\x00\\x02\\x00\\x0bold-reports', None)
    """
    return encode_coordinator_record("consumer_offsets", rtype, key, version, value)


def encode_transaction_record(transactional_id, version=None, value=None):
    """(key bytes, value bytes or None) of a __transaction_state record.

    Parameters
    ----------
    transactional_id : str
        The key.
    version : int, optional
        The value's version.
    value : dict, optional
        The TransactionLogValue's fields, by Kafka field name; None: a tombstone.

    Returns
    -------
    (bytes, bytes or None)

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt import internal
    >>> from kafkafmt.sample import sample_dir
    >>> value = {"ProducerId": 1001, "ProducerEpoch": 0, "TransactionTimeoutMs": 60000, "TransactionStatus": 1,
    ...          "TransactionPartitions": [{"Topic": "payments", "PartitionIds": [0]}],
    ...          "TransactionLastUpdateTimestampMs": 1767225601000, "TransactionStartTimestampMs": 1767225601000}
    >>> key, value = internal.encode_transaction_record("payments-tx-1", 0, value)
    >>> key
    b'\\x00\\x00\\x00\\rpayments-tx-1'
    >>> internal.decode_coordinator_record(key, value, "transaction_state")["value"]["TransactionStatus"]
    1
    """
    return encode_coordinator_record("transaction_state", 0, {"TransactionalId": transactional_id}, version, value)


def encode_coordinator_record(topic, rtype, key, version=None, value=None):
    """(key bytes, value bytes or None) of a record of a coordinator's topic, as its coordinator writes
    it: the int16 record type and the key message; the int16 version and the value message.

    Parameters
    ----------
    topic : str
        The table whose topic the record is of (``consumer_offsets``, ``transaction_state``,
        ``share_group_state``: any `InternalTable` with ``records``).
    rtype : int
        The record type.
    key : dict
        The key's fields, by Kafka field name.
    version : int, optional
        The value's version (default: the newest known).
    value : dict, optional
        The value's fields, by Kafka field name; None: a tombstone.

    Returns
    -------
    (bytes, bytes or None)

    Examples
    --------
    A share group's state of one partition, as the share coordinator snapshots it:

    >>> from kafkafmt import internal
    >>> key, value = internal.encode_coordinator_record(
    ...     "share_group_state", 0, {"GroupId": "sg", "TopicId": bytes(16), "Partition": 0},
    ...     0, {"SnapshotEpoch": 1, "StateEpoch": 0, "LeaderEpoch": 5, "StartOffset": 10,
    ...         "CreateTimestamp": 1767225600000, "WriteTimestamp": 1767225600000,
    ...         "StateBatches": [{"FirstOffset": 10, "LastOffset": 19, "DeliveryState": 2, "DeliveryCount": 1}]})
    >>> internal.decode_coordinator_record(key, value, "share_group_state")["kind"]
    'share_snapshot'
    """
    kind, kmsg, vmsg = _coordinator_registry(topic)[rtype]
    kb = struct.pack(">h", rtype) + encode_message(kmsg, 0, key)
    if value is None:
        return kb, None
    if version is None:
        version = vmsg.valid[1]
    return kb, struct.pack(">h", version) + encode_message(vmsg, version, value)


def encode_subscription(version, topics, user_data=None, owned_partitions=(), generation_id=-1, rack_id=None):
    """ConsumerProtocolSubscription bytes (int16 version first), as a consumer sends them.

    Parameters
    ----------
    version : int
        The ConsumerProtocolSubscription version (0-3).
    topics : list of str
        The topics subscribed to.
    user_data : bytes, optional
    owned_partitions : list of (str, list of int)
        v1+: ``[(topic, [p, ...]), ...]``.
    generation_id : int
        v2+.
    rack_id : str, optional
        v3+.

    Returns
    -------
    bytes

    Examples
    --------
    The subscription of the sample's ``billing`` member, as its group metadata holds it:

    >>> import kafkafmt
    >>> from kafkafmt import internal
    >>> from kafkafmt.sample import sample_dir
    >>> recs = kafkafmt.read_log_dir(f"{sample_dir()}/__consumer_offsets-0")
    >>> member = internal.decode_coordinator_record(recs.key[0], recs.value[0])["value"]["members"][0]
    >>> member["subscription"] == internal.encode_subscription(
    ...     1, ["orders", "payments"], owned_partitions=[("orders", [0, 1]), ("payments", [0])])
    True
    """
    return struct.pack(">h", version) + encode_message(CONSUMER_PROTOCOL_SUBSCRIPTION, version, {
        "Topics": list(topics), "UserData": user_data,
        "OwnedPartitions": [{"Topic": t, "Partitions": list(p)} for t, p in owned_partitions],
        "GenerationId": generation_id, "RackId": rack_id})


def encode_assignment(version, partitions, user_data=None):
    """ConsumerProtocolAssignment bytes (int16 version first); partitions: [(topic, [p, ...]), ...].

    Parameters
    ----------
    version : int
        The ConsumerProtocolAssignment version (0-3).
    partitions : list of (str, list of int)
        ``[(topic, [p, ...]), ...]``.
    user_data : bytes, optional

    Returns
    -------
    bytes

    Examples
    --------
    The assignment of the sample's ``billing`` member, as its group metadata holds it:

    >>> import kafkafmt
    >>> from kafkafmt import internal
    >>> from kafkafmt.sample import sample_dir
    >>> recs = kafkafmt.read_log_dir(f"{sample_dir()}/__consumer_offsets-0")
    >>> member = internal.decode_coordinator_record(recs.key[0], recs.value[0])["value"]["members"][0]
    >>> member["assignment"] == internal.encode_assignment(1, [("orders", [0, 1]), ("payments", [0])])
    True
    """
    return struct.pack(">h", version) + encode_message(CONSUMER_PROTOCOL_ASSIGNMENT, version, {
        "AssignedPartitions": [{"Topic": t, "Partitions": list(p)} for t, p in partitions],
        "UserData": user_data})


# ------------------------------------------------------------------------------------------------
# consumer_offsets

def _max_versions():
    mv = np.full(64, -2, np.int16)
    for t, (_, _, vmsg) in GROUP_RECORDS.items():
        mv[t] = -1 if vmsg is None else vmsg.valid[1]
    return mv


_MAX_VERSIONS = None


@table_doc("With ``source_partition`` and ``log_dir`` appended.")
def consumer_offsets(recs):
    """One row per __consumer_offsets record: ``offset, timestamp, kind, group, topic, partition,
    committed_offset, leader_epoch, metadata, commit_timestamp, expire_timestamp, tombstone, error,
    raw_key, raw_value``.

    ``kind`` is ``offset_commit``, ``group_metadata`` or the snake_case name of a newer group
    coordinator record (``consumer_group_member_metadata``, ``share_group_metadata``,
    ``streams_group_topology``, ...), ``unknown`` for a type these schemas do not know. Offset-commit
    keys and values (v0-v4) are decoded in C straight into columns; ``leader_epoch`` is null before
    v3, ``expire_timestamp`` outside v1 (and where it is -1). A tombstone keeps its key fields, with
    null value fields. Other kinds fill ``group`` (their values are checked: a corrupt one sets
    ``error``).

    Examples
    --------
    The last offset each of the sample's consumer groups committed:

    >>> import kafkafmt
    >>> from kafkafmt import internal
    >>> from kafkafmt.sample import sample_dir
    >>> recs = kafkafmt.read_log_dir(f"{sample_dir()}/__consumer_offsets-0")
    >>> table = internal.consumer_offsets(recs)
    >>> table["kind"].value_counts().to_pylist()
    [{'values': 'group_metadata', 'counts': 6}, {'values': 'offset_commit', 'counts': 62}]
    >>> commits = table.filter(table["kind"].to_numpy(zero_copy_only=False) == "offset_commit").to_pandas()
    >>> commits.groupby(["group", "topic", "partition"]).committed_offset.last().astype(int)
    group        topic     partition
    analytics    clicks    0             600
                 orders    0            2400
                           1            2400
    billing      orders    0            2400
                           1            2400
                 payments  0             122
    old-reports  clicks    0             251
    Name: committed_offset, dtype: int64
    """
    global _MAX_VERSIONS
    from kafkafmt._native.schema import ERROR_CODES, STATUS, decode_group_records

    pa = arrow()
    if _MAX_VERSIONS is None:
        _MAX_VERSIONS = _max_versions()
    n = len(recs)
    ko, kd, kn = column_parts(recs.key)
    vo, vd, vn = column_parts(recs.value)
    r = decode_group_records(ko, kd, kn, vo, vd, vn, _MAX_VERSIONS)
    status, rtype, vver = r["status"], r["rtype"], r["version"]

    # kind
    kinds = [GROUP_KINDS.get(t, "unknown") for t in range(64)] + ["unknown"]
    kind_idx = np.where((rtype >= 0) & (rtype < 64), rtype, 64).astype(np.int32)
    kind_arr = pa.array(kinds, pa.string()).take(pa.array(kind_idx, mask=rtype == -1))

    # errors and raw bytes (few rows: a Python loop over them only)
    errors = {}
    raw_rows = np.nonzero((status == STATUS["unknown_type"]) | (status == STATUS["unknown_version"])
                          | (status == STATUS["key_error"]) | (status == STATUS["value_error"]))[0]
    counts = {"records of unknown type": 0, "records with a value version newer than known": 0}
    for i in raw_rows.tolist():
        st, t, v = int(status[i]), int(rtype[i]), int(vver[i])
        if st == STATUS["unknown_type"]:
            errors[i] = f"unknown record type {t}"
            counts["records of unknown type"] += 1
        elif st == STATUS["unknown_version"]:
            errors[i] = f"unknown value version {v} for record type {t} ({GROUP_KINDS[t]})"
            counts["records with a value version newer than known"] += 1
        else:
            part, field, what = ERROR_CODES[int(r["error"][i])]
            if part == "key":
                name = GROUP_RECORDS[t][1].name if t in GROUP_RECORDS else "key"
                errors[i] = f"key: {what}" if field is None else f"key: {name} field {field}: {what}"
            else:
                name = GROUP_RECORDS[t][2].name
                errors[i] = (f"value: {name}: {what}" if field is None
                             else f"value: {name} v{v} field {field}: {what}")
    # values of the other kinds: checked with the generic reader
    other = np.nonzero((status == STATUS["ok"]) & (rtype > 1))[0]
    raw_extra = []
    if len(other):
        vcol = recs.value
        for i in other.tolist():
            vmsg = GROUP_RECORDS[int(rtype[i])][2]
            if vmsg is None:
                continue
            try:
                decode_message(vmsg, int(vver[i]), vcol[i], 2)
            except ValueDecodeError as e:
                errors[i] = f"value: {e}"
                raw_extra.append(i)
    warn_counts("__consumer_offsets", counts)
    if raw_extra:
        raw_rows = np.union1d(raw_rows, np.asarray(raw_extra, np.int64))

    has_value = r["has_value"]
    ets = r["expire_timestamp"]
    has_expire = r["has_expire"] & (ets != -1)
    cols = [
        pa.array(np.asarray(recs.offset, np.int64)),
        timestamp_array(recs.timestamp),
        kind_arr,
        string_array(r["group_offsets"], r["group_data"], r["has_group"]),
        string_array(r["topic_offsets"], r["topic_data"], r["has_topic"]),
        masked_array(r["partition"], r["has_topic"], pa.int32()),
        masked_array(r["offset"], has_value, pa.int64()),
        masked_array(r["leader_epoch"], r["has_epoch"] & has_value, pa.int32()),
        string_array(r["metadata_offsets"], r["metadata_data"], has_value),
        masked_array(r["commit_timestamp"], has_value, pa.timestamp("ms", tz="UTC")),
        masked_array(ets, has_expire & has_value, pa.timestamp("ms", tz="UTC")),
        pa.array(vn.view(np.bool_)),
        text_column(errors, n),
        sparse_binary(recs.key, raw_rows, n),
        sparse_binary(recs.value, raw_rows, n),
    ]
    schema = _schemas()["consumer_offsets"]
    return with_source(pa.Table.from_arrays(cols, schema=without_source(schema)), recs)


# ------------------------------------------------------------------------------------------------
# group_members

def decode_versioned(msg, data):
    """ConsumerProtocol bytes: int16 version, then the message; newer versions read as the newest
    known (fields are only ever appended), as Kafka's ConsumerProtocol does."""
    if data is None or len(data) < 2:
        raise ValueDecodeError(f"{msg.name}: truncated before the version")
    ver = struct.unpack_from(">h", data)[0]
    if ver < 0:
        raise ValueDecodeError(f"{msg.name}: negative version {ver}")
    ver = min(ver, msg.valid[1])
    return decode_message(msg, ver, data, 2)[0]


@table_doc()
def group_members(recs):
    """One row per member of each classic-protocol GroupMetadataValue (record type 2): ``offset,
    timestamp, group, generation, protocol_type, protocol, leader, member_id, group_instance_id,
    client_id, client_host, rebalance_timeout, session_timeout, subscription, assignment, error``.

    For ``protocol_type == "consumer"`` the member's subscription (topics, list<string>) and
    assignment (list<struct<topic, partitions>>) are decoded (ConsumerProtocol v0-v3). A group
    with no members gives one row with null member fields (the group went Empty); tombstones give
    no row (see `consumer_offsets`). A corrupt value gives a row with nulls and ``error``.

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt import internal
    >>> from kafkafmt.sample import sample_dir
    >>> recs = kafkafmt.read_log_dir(f"{sample_dir()}/__consumer_offsets-0")
    >>> for row in internal.group_members(recs).to_pylist():
    ...     print(row["offset"], row["group"], row["generation"], row["client_id"], row["subscription"])
    0 billing 1 consumer-billing-1 ['orders', 'payments']
    1 old-reports 1 consumer-old-reports-1 ['clicks']
    3 analytics 1 consumer-analytics-1 ['clicks', 'orders']
    3 analytics 1 consumer-analytics-2 ['clicks', 'orders']
    7 old-reports 2 None None
    35 analytics 2 consumer-analytics-1 ['clicks', 'orders']
    """
    pa = arrow()
    keys, vals = recs.key, recs.value
    koff = np.asarray(keys.offsets, np.int64)
    kdata = np.asarray(keys.data, np.uint8).reshape(-1)
    knull = keys.is_null()
    vnull = recs.value.is_null()
    klen = koff[1:] - koff[:-1]
    # type-2 keys, found without decoding every key
    first = np.zeros(len(recs), np.int32)
    ok = (~knull) & (klen >= 2)
    idx = koff[:-1][ok]
    first[ok] = (kdata[idx].astype(np.int32) << 8) | kdata[idx + 1]
    rows = np.nonzero(ok & (first == 2) & ~vnull)[0]
    schema = without_source(_schemas()["group_members"])
    cols = {name: [] for name in schema.names}
    cols["_record"] = []    # the record of each row
    unknown = 0
    for i in rows.tolist():
        base = {"offset": int(recs.offset[i]), "timestamp": int(recs.timestamp[i]), "_record": i}
        try:
            d = decode_coordinator_record(keys[i], vals[i])
        except LookupError as e:
            unknown += 1
            append_row(cols, base, error=str(e))
            continue
        except ValueDecodeError as e:
            try:  # the key may still name the group
                base["group"] = decode_message(GROUP_RECORDS[2][1], 0, keys[i], 2)[0]["group"]
            except ValueDecodeError:
                pass
            append_row(cols, base, error=str(e))
            continue
        v = d["value"]
        base.update(group=d["key"]["group"], generation=v["generation"], protocol_type=v["protocolType"],
                    protocol=v["protocol"], leader=v["leader"])
        if not v["members"]:
            append_row(cols, base)
            continue
        consumer = v["protocolType"] == "consumer"
        for m in v["members"]:
            row = dict(base, member_id=m["memberId"], group_instance_id=m.get("groupInstanceId"),
                       client_id=m["clientId"], client_host=m["clientHost"],
                       rebalance_timeout=m.get("rebalanceTimeout"), session_timeout=m["sessionTimeout"])
            err = None
            if consumer:
                try:
                    row["subscription"] = decode_versioned(CONSUMER_PROTOCOL_SUBSCRIPTION, m["subscription"])["Topics"]
                except ValueDecodeError as e:
                    err = f"member {m['memberId']} subscription: {e}"
                try:
                    a = decode_versioned(CONSUMER_PROTOCOL_ASSIGNMENT, m["assignment"]) if m["assignment"] else None
                    if a is not None:
                        row["assignment"] = [{"topic": tp["Topic"], "partitions": tp["Partitions"]}
                                             for tp in a["AssignedPartitions"]]
                except ValueDecodeError as e:
                    err = (err + "; " if err else "") + f"member {m['memberId']} assignment: {e}"
            append_row(cols, row, error=err)
    if unknown:
        warn_counts("__consumer_offsets", {"group metadata records with a value version newer than known": unknown})
    source = np.asarray(cols.pop("_record"), np.int64)
    return with_source(pa.Table.from_pydict(cols, schema=schema), recs, source)


# ------------------------------------------------------------------------------------------------
# transaction_state

@table_doc()
def transaction_state(recs):
    """One row per __transaction_state record: ``offset, timestamp, transactional_id, producer_id,
    producer_epoch, timeout_ms, status, partitions, last_update_timestamp, start_timestamp,
    previous_producer_id, next_producer_id, next_producer_epoch, client_transaction_version,
    tombstone, error, raw_key, raw_value``.

    ``status`` is Kafka's name (Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit,
    CompleteAbort, Dead, PrepareEpochFence); the tagged fields (v1+) take Kafka's defaults when
    absent and are null for v0 values.

    Examples
    --------
    A ``__transaction_state`` partition with one transaction's record and its tombstone (the sample has
    no such topic):

    >>> import kafkafmt
    >>> from kafkafmt import internal
    >>> from kafkafmt.sample import sample_dir
    >>> value = {"ProducerId": 1001, "ProducerEpoch": 0, "TransactionTimeoutMs": 60000, "TransactionStatus": 1,
    ...          "TransactionPartitions": [{"Topic": "payments", "PartitionIds": [0]}],
    ...          "TransactionLastUpdateTimestampMs": 1767225601000, "TransactionStartTimestampMs": 1767225601000}
    >>> key, value = internal.encode_transaction_record("payments-tx-1", 0, value)
    >>> _ = kafkafmt.write_log_dir("txn/__transaction_state-0", keys=[key, key], values=[value, None],
    ...                            timestamps=[1767225601000, 1767225609000])
    >>> table = internal.transaction_state(kafkafmt.read_log_dir("txn/__transaction_state-0"))
    >>> for row in table.select(["offset", "transactional_id", "producer_id", "status", "tombstone"]).to_pylist():
    ...     print(row)
    {'offset': 0, 'transactional_id': 'payments-tx-1', 'producer_id': 1001, 'status': 'Ongoing', 'tombstone': False}
    {'offset': 1, 'transactional_id': 'payments-tx-1', 'producer_id': None, 'status': None, 'tombstone': True}
    """
    return _record_table(recs, "transaction_state", _transaction_row)


def _transaction_row(row, d):
    row["transactional_id"] = d["key"]["TransactionalId"]
    v = d["value"]
    if v is not None:
        row.update(producer_id=v["ProducerId"], producer_epoch=v["ProducerEpoch"],
                   timeout_ms=v["TransactionTimeoutMs"],
                   status=TRANSACTION_STATUS.get(v["TransactionStatus"], f"Unknown({v['TransactionStatus']})"),
                   partitions=None if v["TransactionPartitions"] is None else
                   [{"topic": p["Topic"], "partitions": p["PartitionIds"]} for p in v["TransactionPartitions"]],
                   last_update_timestamp=v["TransactionLastUpdateTimestampMs"],
                   start_timestamp=v["TransactionStartTimestampMs"])
        if d["version"] >= 1:
            row.update(previous_producer_id=v.get("PreviousProducerId", -1),
                       next_producer_id=v.get("NextProducerId", -1),
                       next_producer_epoch=v.get("NextProducerEpoch", -1),
                       client_transaction_version=v.get("ClientTransactionVersion", 0))


def _record_table(recs, name, fill):
    """One row per record of a coordinator's topic, the table ``name``'s: ``fill(row, decoded)`` sets a
    row's columns from its decoded record (`decode_coordinator_record`'s dict; the key alone, with a
    null value, when the value cannot be read). Records that cannot be read keep their bytes in
    ``raw_key``/``raw_value`` with an ``error``; unknown types and newer versions warn once."""
    pa = arrow()
    keys, vals = recs.key, recs.value
    n = len(recs)
    vnull = vals.is_null()
    schema = _schemas()[name]
    records = _coordinator_registry(name)
    cols = {f.name: [] for f in without_source(schema) if not f.name.startswith("raw_")}
    counts = {"records of unknown type": 0, "records with a value version newer than known": 0}
    raw = []
    for i in range(n):
        row = {"offset": int(recs.offset[i]), "timestamp": int(recs.timestamp[i]), "tombstone": bool(vnull[i])}
        err = None
        try:
            d = decode_coordinator_record(keys[i], vals[i], name)
        except LookupError as e:
            unknown_type = str(e).startswith("unknown record type")
            counts["records of unknown type" if unknown_type else "records with a value version newer than known"] += 1
            err = str(e)
            raw.append(i)
            d = _key_only(keys[i], records)
            if unknown_type:
                row["kind"] = "unknown"
        except ValueDecodeError as e:
            err = str(e)
            raw.append(i)
            d = _key_only(keys[i], records)
        if d is not None:
            fill(row, d)
        append_row(cols, row, error=err)
    warn_counts(internal_table(name).topic, counts)
    table = pa.Table.from_pydict(cols, schema=pa.schema([schema.field(c) for c in cols]))
    rows = np.asarray(raw, np.int64)
    table = table.append_column(schema.field("raw_key"), sparse_binary(keys, rows, n)) \
                 .append_column(schema.field("raw_value"), sparse_binary(vals, rows, n))
    return with_source(table, recs)


def _key_only(key, records):
    """The decoded key of a record whose value failed, or None."""
    try:
        if key is None or len(key) < 2:
            return None
        rtype = struct.unpack_from(">h", key)[0]
        if rtype not in records:
            return None
        kind, kmsg, _ = records[rtype]
        return {"type": rtype, "kind": kind, "key": decode_message(kmsg, 0, key, 2)[0], "value": None,
                "version": None}
    except ValueDecodeError:
        return None


# ------------------------------------------------------------------------------------------------
# share_group_state

@table_doc()
def share_group_state(recs):
    """One row per __share_group_state record (KIP-932's share groups: which records of a partition
    each share group has delivered): ``offset, timestamp, kind, group, topic_id, partition,
    snapshot_epoch, state_epoch, leader_epoch, start_offset, delivery_complete_count,
    create_timestamp, write_timestamp, state_batches, tombstone, error, raw_key, raw_value``.

    ``kind`` is ``share_snapshot`` (the whole state of a share-partition: ShareSnapshotKey/Value) or
    ``share_update`` (a change since the last snapshot: ShareUpdateKey/Value; ``start_offset`` -1
    when it does not move), ``unknown`` for a record type these schemas do not know. ``topic_id``
    is Kafka's base64 text (as ``cluster_metadata``'s, to join topic names on); ``state_batches``
    lists ``first_offset, last_offset, delivery_state`` (0 Available, 2 Acknowledged, 4 Archived)
    and ``delivery_count``. ``state_epoch``, ``create_timestamp`` and ``write_timestamp`` are a
    snapshot's only; ``delivery_complete_count`` (Kafka 4.2) is -1 when not written.

    Examples
    --------
    A ``__share_group_state`` partition with a snapshot and an update of one share-partition (the
    sample has no such topic):

    >>> import kafkafmt
    >>> from kafkafmt import internal
    >>> key = {"GroupId": "shippers", "TopicId": bytes(range(16)), "Partition": 0}
    >>> snapshot = internal.encode_coordinator_record("share_group_state", 0, key, 0, {
    ...     "SnapshotEpoch": 0, "StateEpoch": 1, "LeaderEpoch": 3, "StartOffset": 100,
    ...     "CreateTimestamp": 1767225600000, "WriteTimestamp": 1767225600000, "StateBatches": []})
    >>> update = internal.encode_coordinator_record("share_group_state", 1, key, 0, {
    ...     "SnapshotEpoch": 0, "LeaderEpoch": 3, "StartOffset": -1, "DeliveryCompleteCount": 5,
    ...     "StateBatches": [{"FirstOffset": 100, "LastOffset": 104, "DeliveryState": 2, "DeliveryCount": 1}]})
    >>> _ = kafkafmt.write_log_dir("share/__share_group_state-0", keys=[snapshot[0], update[0]],
    ...                            values=[snapshot[1], update[1]], timestamps=[1767225600000, 1767225601000])
    >>> table = internal.share_group_state(kafkafmt.read_log_dir("share/__share_group_state-0"))
    >>> for row in table.select(["kind", "group", "topic_id", "start_offset", "state_batches"]).to_pylist():
    ...     print(row)
    {'kind': 'share_snapshot', 'group': 'shippers', 'topic_id': 'AAECAwQFBgcICQoLDA0ODw', 'start_offset': 100,
     'state_batches': []}
    {'kind': 'share_update', 'group': 'shippers', 'topic_id': 'AAECAwQFBgcICQoLDA0ODw', 'start_offset': -1,
     'state_batches': [{'first_offset': 100, 'last_offset': 104, 'delivery_state': 2, 'delivery_count': 1}]}
    """
    return _record_table(recs, "share_group_state", _share_row)


def _share_row(row, d):
    k = d["key"]
    row.update(kind=d["kind"], group=k["GroupId"], topic_id=uuid_text(k["TopicId"]), partition=k["Partition"])
    v = d["value"]
    if v is not None:
        row.update(snapshot_epoch=v["SnapshotEpoch"], state_epoch=v.get("StateEpoch"), leader_epoch=v["LeaderEpoch"],
                   start_offset=v["StartOffset"], delivery_complete_count=v.get("DeliveryCompleteCount", -1),
                   create_timestamp=v.get("CreateTimestamp"), write_timestamp=v.get("WriteTimestamp"),
                   state_batches=[{"first_offset": b["FirstOffset"], "last_offset": b["LastOffset"],
                                   "delivery_state": b["DeliveryState"], "delivery_count": b["DeliveryCount"]}
                                  for b in v["StateBatches"]])


# ------------------------------------------------------------------------------------------------
# the tables of the coordinators' topics

register_table(InternalTable(
    "consumer_offsets", "__consumer_offsets", record_schemas, consumer_offsets,
    "one row per record: offset commits, group metadata and the newer group coordinator records",
    encoding="coordinator", records=GROUP_RECORDS, decoder="offsets"))
register_table(InternalTable(
    "group_members", "__consumer_offsets", record_schemas, group_members,
    "one row per member of each classic group's metadata, with its subscription and assignment",
    encoding="coordinator", records=GROUP_RECORDS, decoder="offsets"))
register_table(InternalTable(
    "transaction_state", "__transaction_state", record_schemas, transaction_state,
    "one row per record: each transactional id's state", encoding="coordinator", records=TRANSACTION_RECORDS,
    decoder="transaction-log"))
register_table(InternalTable(
    "share_group_state", "__share_group_state", record_schemas, share_group_state,
    "one row per record: share groups' delivery state snapshots and updates", encoding="coordinator",
    records=SHARE_STATE_RECORDS, decoder="share-group-state"))
