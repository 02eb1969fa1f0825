"""Kafka's internal topics as tables: __consumer_offsets, __transaction_state, __cluster_metadata.

Each function takes a `kafkafmt.Records` (``read_log_dirs(root, topics=["__consumer_offsets"])``,
``read_segment(path)``, a KRaft ``.checkpoint`` snapshot, ...) and returns a ``pyarrow.Table``:

* `consumer_offsets` -- one row per record of __consumer_offsets (offset commits decoded in bulk in C)
* `group_members` -- one row per member of each classic GroupMetadataValue
* `transaction_state` -- one row per record of __transaction_state
* `cluster_metadata` -- one row per KRaft metadata record
* `connect_configs`, `connect_offsets`, `connect_status` -- one row per record of Kafka Connect's
  internal topics (`kafkafmt.internal.connect`)

Bad input never raises: a corrupt or truncated key/value gives nulls and an ``error`` text naming the
message, version and field that failed; an unknown record type or a value version newer than these
schemas gives a row with the raw bytes (``raw_key``/``raw_value``) and one `KafkafmtWarning` per call.
The schemas are data (`kafkafmt.internal.schemas`), read by one generic decoder
(`kafkafmt.internal.codec`) that also writes them (`encode_group_record` & co., for tests and samples).
"""
from __future__ import annotations

import struct
import warnings

import numpy as np

from kafkafmt.internal.codec import (SchemaError, decode_message, encode_message, json_text, read_uvarint,
                                     to_json_data, write_uvarint)
from kafkafmt.internal.schemas import (CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION, GROUP_RECORDS,
                                       METADATA_RECORDS, SHARE_STATE_RECORDS, TRANSACTION_RECORDS,
                                       TRANSACTION_STATUS, in_versions)
from kafkafmt.errors import KafkafmtWarning
from kafkafmt.internal import connect as _connect

__all__ = ["consumer_offsets", "group_members", "transaction_state", "cluster_metadata", "TABLES", "TOPIC_OF",
           "schema_of", "connect_configs", "connect_offsets", "connect_status", "CONNECT_TABLES",
           "decode_coordinator_record", "decode_metadata_record", "encode_group_record",
           "encode_transaction_record", "encode_metadata_record", "encode_subscription", "encode_assignment",
           "metadata_type_enum_name", "dump_text", "SchemaError", "GROUP_KINDS"]

#: record type -> kind name in consumer_offsets
GROUP_KINDS = {t: kind for t, (kind, _, _) in GROUP_RECORDS.items()}

def _pa():
    import pyarrow as pa
    return pa


# ------------------------------------------------------------------------------------------------
# schemas of the tables

def _schemas():
    pa = _pa()
    ts = pa.timestamp("ms", tz="UTC")
    tps = pa.list_(pa.struct([("topic", pa.string()), ("partitions", pa.list_(pa.int32()))]))
    return {name: schema.append(pa.field("source_partition", pa.int32())).append(pa.field("log_dir", pa.string()))
            for name, schema in _record_schemas(pa, ts, tps).items()}


#: the columns every table ends with: where its row was read (two partitions of __consumer_offsets, or two
#: copies of one, hold rows that are otherwise alike)
SOURCE_COLUMNS = ("source_partition", "log_dir")


def _record_schemas(pa, ts, tps):
    return dict(_kafka_schemas(pa, ts, tps), **_connect.record_schemas(pa, ts))


def _kafka_schemas(pa, ts, tps):
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
        "cluster_metadata": pa.schema([
            ("offset", pa.int64()), ("timestamp", ts), ("api_key", pa.int16()), ("record_type", pa.string()),
            ("version", pa.int16()), ("fields", pa.string()), ("topic_name", pa.string()),
            ("topic_id", pa.string()), ("partition_id", pa.int32()), ("broker_id", pa.int32()),
            ("leader", pa.int32()), ("replicas", pa.list_(pa.int32())), ("isr", pa.list_(pa.int32())),
            ("config_resource", pa.string()), ("config_name", pa.string()), ("config_value", pa.string()),
            ("error", pa.string()), ("raw_value", pa.binary())]),
    }


#: Kafka Connect's internal topics as tables (their topics' default names in TOPIC_OF; any name
#: works, as they are configured per Connect cluster)
CONNECT_TABLES = ("connect_configs", "connect_offsets", "connect_status")
#: every table of an internal topic: Kafka's own, then Kafka Connect's
TABLES = ("consumer_offsets", "group_members", "transaction_state", "cluster_metadata") + CONNECT_TABLES
#: the internal topic each table is read from
TOPIC_OF = {"consumer_offsets": "__consumer_offsets", "group_members": "__consumer_offsets",
            "transaction_state": "__transaction_state", "cluster_metadata": "__cluster_metadata",
            "connect_configs": "connect-configs", "connect_offsets": "connect-offsets",
            "connect_status": "connect-status"}
def _with_source(table, recs, rows=None):
    """The table with `SOURCE_COLUMNS` appended: the partition and log dir of each row's record
    (``rows``: the record of each row, when a record gives several rows or none)."""
    pa = _pa()
    n = len(recs)
    part = recs.partition
    part = np.full(n, -1 if part is None else part, np.int32) if not isinstance(part, np.ndarray) else part
    log_dir = recs.log_dir
    log_dir = np.full(n, log_dir, object) if not isinstance(log_dir, np.ndarray) else log_dir
    if rows is not None:
        part, log_dir = part[rows], log_dir[rows]
    part_arr = pa.array(part.astype(np.int32, copy=False), mask=part < 0)
    return table.append_column(pa.field("source_partition", pa.int32()), part_arr) \
                .append_column(pa.field("log_dir", pa.string()), pa.array(log_dir.tolist(), pa.string()))


def schema_of(table):
    """The pyarrow schema of one of `TABLES` (for Spark and writers that need it before any data).

    Parameters
    ----------
    table : str
        One of `TABLES` or `CONNECT_TABLES`.

    Returns
    -------
    pyarrow.Schema

    Examples
    --------
    >>> from kafkafmt import internal
    >>> internal.schema_of("consumer_offsets").names[:7]
    ['offset', 'timestamp', 'kind', 'group', 'topic', 'partition', 'committed_offset']
    """
    return _schemas()[table]


# ------------------------------------------------------------------------------------------------
# helpers

def _parts(col):
    offsets = np.ascontiguousarray(col.offsets, dtype=np.int64)
    data = np.ascontiguousarray(np.asarray(col.data, dtype=np.uint8).reshape(-1))
    if len(data) == 0:
        data = np.zeros(1, np.uint8)
    return offsets, data, np.ascontiguousarray(col.is_null().view(np.uint8))


def _bitmap(valid):
    return _pa().py_buffer(np.packbits(valid, bitorder="little"))


def _string_array(offsets, data, valid):
    pa = _pa()
    n = len(offsets) - 1
    nulls = int(n - np.count_nonzero(valid))
    if offsets.dtype == np.int32:
        return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data),
                                           _bitmap(valid) if nulls else None, nulls)
    arr = pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data),
                                           _bitmap(valid) if nulls else None, nulls)
    return arr.cast(pa.string())


def _masked(values, valid, type):
    """A primitive Arrow array on `values`' buffer (no copy) with `valid` as its validity."""
    pa = _pa()
    n = len(values)
    nulls = int(n - np.count_nonzero(valid))
    return pa.Array.from_buffers(type, n, [_bitmap(valid) if nulls else None, pa.py_buffer(values)], nulls)


def _sparse_binary(col, rows, n):
    """A binary column of n rows holding col's bytes at `rows` and null elsewhere."""
    pa = _pa()
    if len(rows) == 0:
        return pa.nulls(n, pa.binary())
    offsets = np.asarray(col.offsets, dtype=np.int64)
    keep = np.zeros(n, bool)
    keep[rows] = True
    keep &= ~col.is_null()
    rows = np.nonzero(keep)[0]
    lengths = np.zeros(n, np.int64)
    lengths[rows] = offsets[rows + 1] - offsets[rows]
    out = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=out[1:])
    data = np.asarray(col.data, dtype=np.uint8).reshape(-1)
    buf = np.concatenate([data[offsets[r]:offsets[r + 1]] for r in rows]) if len(rows) else np.zeros(0, np.uint8)
    nulls = int(n - len(rows))
    if out[-1] >= 2 ** 31:
        return pa.Array.from_buffers(pa.large_binary(), n, [_bitmap(keep) if nulls else None, pa.py_buffer(out),
                                                            pa.py_buffer(buf)], nulls).cast(pa.binary())
    return pa.Array.from_buffers(pa.binary(), n, [_bitmap(keep) if nulls else None,
                                                  pa.py_buffer(out.astype(np.int32)), pa.py_buffer(buf)], nulls)


def _text_column(texts_by_row, n):
    """A string column from {row: text}, null elsewhere, without a Python object per row."""
    pa = _pa()
    if not texts_by_row:
        return pa.nulls(n, pa.string())
    uniq = sorted(set(texts_by_row.values()))
    code = {t: i for i, t in enumerate(uniq)}
    idx = np.full(n, -1, np.int32)
    for r, t in texts_by_row.items():
        idx[r] = code[t]
    indices = pa.array(idx, mask=idx < 0)
    return pa.array(uniq, pa.string()).take(indices)


def _warn(topic, counts):
    parts = [f"{c} {what}" for what, c in counts.items() if c]
    if parts:
        warnings.warn(f"{topic}: " + ", ".join(parts) + "; their raw bytes are kept in the raw_* columns",
                      KafkafmtWarning, stacklevel=3)


def _ts_array(ms):
    pa = _pa()
    ms = np.ascontiguousarray(ms, dtype=np.int64)
    return pa.Array.from_buffers(pa.timestamp("ms", tz="UTC"), len(ms), [None, pa.py_buffer(ms)])


# ------------------------------------------------------------------------------------------------
# coordinator records (generic, one record)

def _coordinator_registry(topic):
    return {"consumer_offsets": GROUP_RECORDS, "transaction_state": TRANSACTION_RECORDS,
            "share_group_state": SHARE_STATE_RECORDS}[topic]


def decode_coordinator_record(key, value, topic="consumer_offsets"):
    """Decode one coordinator record (key bytes, value bytes or None) of `topic`
    (``consumer_offsets``, ``transaction_state`` or ``share_group_state``).

    Returns a dict: ``type`` (the key's int16), ``kind``, ``key`` (dict), ``version`` (value version or
    None), ``value`` (dict, or None for a tombstone), ``key_message`` / ``value_message`` (the schemas).
    Raises `SchemaError` for corrupt bytes, `LookupError` for an unknown type or value version.

    Parameters
    ----------
    key : bytes
        The record's key.
    value : bytes or None
        The record's value (None: a tombstone).
    topic : {"consumer_offsets", "transaction_state", "share_group_state"}
        Whose records.

    Returns
    -------
    dict

    Raises
    ------
    SchemaError
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
        raise SchemaError("the key is null")
    if len(key) < 2:
        raise SchemaError("key: truncated before the record type")
    rtype = struct.unpack_from(">h", key)[0]
    if rtype not in registry:
        raise LookupError(f"unknown record type {rtype}")
    kind, kmsg, vmsg = registry[rtype]
    try:
        k, _ = decode_message(kmsg, 0, key, 2)
    except SchemaError as e:
        raise SchemaError(f"key: {e}") from None
    out = {"type": rtype, "kind": kind, "key": k, "version": None, "value": None,
           "key_message": kmsg, "value_message": vmsg}
    if value is None:
        return out
    if len(value) < 2:
        raise SchemaError(f"value: {vmsg.name if vmsg else kind}: truncated before the version")
    ver = struct.unpack_from(">h", value)[0]
    out["version"] = ver
    if vmsg is None or not in_versions(vmsg.valid, ver):
        raise LookupError(f"unknown value version {ver} for record type {rtype} ({kind})")
    try:
        out["value"], _ = decode_message(vmsg, ver, value, 2)
    except SchemaError as e:
        raise SchemaError(f"value: {e}") from None
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
    return _encode_coordinator(GROUP_RECORDS, rtype, key, version, value)


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
    return _encode_coordinator(TRANSACTION_RECORDS, 0, {"TransactionalId": transactional_id}, version, value)


def _encode_coordinator(registry, rtype, key, version, value):
    kind, kmsg, vmsg = registry[rtype]
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

    Parameters
    ----------
    recs : Records
        The records of the topic (``read_log_dirs(root, topics=[...])``, ``read_segment(path)``, ...).

    Returns
    -------
    pyarrow.Table
        With ``source_partition`` and ``log_dir`` appended.

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

    pa = _pa()
    if _MAX_VERSIONS is None:
        _MAX_VERSIONS = _max_versions()
    n = len(recs)
    ko, kd, kn = _parts(recs.key)
    vo, vd, vn = _parts(recs.value)
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
            except SchemaError as e:
                errors[i] = f"value: {e}"
                raw_extra.append(i)
    _warn("__consumer_offsets", counts)
    if raw_extra:
        raw_rows = np.union1d(raw_rows, np.asarray(raw_extra, np.int64))

    has_value = r["has_value"]
    ets = r["expire_timestamp"]
    has_expire = r["has_expire"] & (ets != -1)
    cols = [
        pa.array(np.asarray(recs.offset, np.int64)),
        _ts_array(recs.timestamp),
        kind_arr,
        _string_array(r["group_offsets"], r["group_data"], r["has_group"]),
        _string_array(r["topic_offsets"], r["topic_data"], r["has_topic"]),
        _masked(r["partition"], r["has_topic"], pa.int32()),
        _masked(r["offset"], has_value, pa.int64()),
        _masked(r["leader_epoch"], r["has_epoch"] & has_value, pa.int32()),
        _string_array(r["metadata_offsets"], r["metadata_data"], has_value),
        _masked(r["commit_timestamp"], has_value, pa.timestamp("ms", tz="UTC")),
        _masked(ets, has_expire & has_value, pa.timestamp("ms", tz="UTC")),
        pa.array(vn.view(np.bool_)),
        _text_column(errors, n),
        _sparse_binary(recs.key, raw_rows, n),
        _sparse_binary(recs.value, raw_rows, n),
    ]
    schema = _schemas()["consumer_offsets"]
    return _with_source(pa.Table.from_arrays(cols, schema=_without_source(schema)), recs)


# ------------------------------------------------------------------------------------------------
# group_members

def _decode_versioned(msg, data):
    """ConsumerProtocol bytes: int16 version, then the message; newer versions read as the newest
    known (fields are only ever appended), as Kafka's ConsumerProtocol does."""
    if data is None or len(data) < 2:
        raise SchemaError(f"{msg.name}: truncated before the version")
    ver = struct.unpack_from(">h", data)[0]
    if ver < 0:
        raise SchemaError(f"{msg.name}: negative version {ver}")
    ver = min(ver, msg.valid[1])
    return decode_message(msg, ver, data, 2)[0]


def group_members(recs):
    """One row per member of each classic-protocol GroupMetadataValue (record type 2): ``offset,
    timestamp, group, generation, protocol_type, protocol, leader, member_id, group_instance_id,
    client_id, client_host, rebalance_timeout, session_timeout, subscription, assignment, error``.

    For ``protocol_type == "consumer"`` the member's subscription (topics, list<string>) and
    assignment (list<struct<topic, partitions>>) are decoded (ConsumerProtocol v0-v3). A group
    with no members gives one row with null member fields (the group went Empty); tombstones give
    no row (see `consumer_offsets`). A corrupt value gives a row with nulls and ``error``.

    Parameters
    ----------
    recs : Records
        The records of the topic (``read_log_dirs(root, topics=[...])``, ``read_segment(path)``, ...).

    Returns
    -------
    pyarrow.Table

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
    pa = _pa()
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
    schema = _without_source(_schemas()["group_members"])
    cols = {name: [] for name in schema.names}
    cols["_record"] = []    # the record of each row
    unknown = 0
    for i in rows.tolist():
        base = {"offset": int(recs.offset[i]), "timestamp": int(recs.timestamp[i]), "_record": i}
        try:
            d = decode_coordinator_record(keys[i], vals[i])
        except LookupError as e:
            unknown += 1
            _append(cols, base, error=str(e))
            continue
        except SchemaError as e:
            try:  # the key may still name the group
                base["group"] = decode_message(GROUP_RECORDS[2][1], 0, keys[i], 2)[0]["group"]
            except SchemaError:
                pass
            _append(cols, base, error=str(e))
            continue
        v = d["value"]
        base.update(group=d["key"]["group"], generation=v["generation"], protocol_type=v["protocolType"],
                    protocol=v["protocol"], leader=v["leader"])
        if not v["members"]:
            _append(cols, base)
            continue
        consumer = v["protocolType"] == "consumer"
        for m in v["members"]:
            row = dict(base, member_id=m["memberId"], group_instance_id=m.get("groupInstanceId"),
                       client_id=m["clientId"], client_host=m["clientHost"],
                       rebalance_timeout=m.get("rebalanceTimeout"), session_timeout=m["sessionTimeout"])
            err = None
            if consumer:
                try:
                    row["subscription"] = _decode_versioned(CONSUMER_PROTOCOL_SUBSCRIPTION, m["subscription"])["Topics"]
                except SchemaError as e:
                    err = f"member {m['memberId']} subscription: {e}"
                try:
                    a = _decode_versioned(CONSUMER_PROTOCOL_ASSIGNMENT, m["assignment"]) if m["assignment"] else None
                    if a is not None:
                        row["assignment"] = [{"topic": tp["Topic"], "partitions": tp["Partitions"]}
                                             for tp in a["AssignedPartitions"]]
                except SchemaError as e:
                    err = (err + "; " if err else "") + f"member {m['memberId']} assignment: {e}"
            _append(cols, row, error=err)
    if unknown:
        _warn("__consumer_offsets", {"group metadata records with a value version newer than known": unknown})
    source = np.asarray(cols.pop("_record"), np.int64)
    return _with_source(pa.Table.from_pydict(cols, schema=schema), recs, source)


def _without_source(schema):
    return _pa().schema([f for f in schema if f.name not in SOURCE_COLUMNS])


def _append(cols, row, error=None):
    for name, lst in cols.items():
        lst.append(error if name == "error" else row.get(name))


# ------------------------------------------------------------------------------------------------
# transaction_state

def transaction_state(recs):
    """One row per __transaction_state record: ``offset, timestamp, transactional_id, producer_id,
    producer_epoch, timeout_ms, status, partitions, last_update_timestamp, start_timestamp,
    previous_producer_id, next_producer_id, next_producer_epoch, client_transaction_version,
    tombstone, error, raw_key, raw_value``.

    ``status`` is Kafka's name (Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit,
    CompleteAbort, Dead, PrepareEpochFence); the tagged fields (v1+) take Kafka's defaults when
    absent and are null for v0 values.

    Parameters
    ----------
    recs : Records
        The records of the topic (``read_log_dirs(root, topics=[...])``, ``read_segment(path)``, ...).

    Returns
    -------
    pyarrow.Table

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
    pa = _pa()
    keys, vals = recs.key, recs.value
    n = len(recs)
    vnull = vals.is_null()
    cols = {name: [] for name in _schemas()["transaction_state"].names}
    counts = {"records of unknown type": 0, "records with a value version newer than known": 0}
    raw = []
    for i in range(n):
        row = {"offset": int(recs.offset[i]), "timestamp": int(recs.timestamp[i]), "tombstone": bool(vnull[i])}
        err = None
        try:
            d = decode_coordinator_record(keys[i], vals[i], "transaction_state")
        except LookupError as e:
            counts["records of unknown type" if str(e).startswith("unknown record type") else
                   "records with a value version newer than known"] += 1
            err = str(e)
            raw.append(i)
            d = _key_only(keys[i])
        except SchemaError as e:
            err = str(e)
            raw.append(i)
            d = _key_only(keys[i])
        if d is not None:
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
        _append(cols, row, error=err)
    _warn("__transaction_state", counts)
    cols.pop("raw_key")
    cols.pop("raw_value")
    schema = _schemas()["transaction_state"]
    table = pa.Table.from_pydict(cols, schema=pa.schema([f for f in _without_source(schema)
                                                          if not f.name.startswith("raw_")]))
    rows = np.asarray(raw, np.int64)
    table = table.append_column(schema.field("raw_key"), _sparse_binary(keys, rows, n)) \
                 .append_column(schema.field("raw_value"), _sparse_binary(vals, rows, n))
    return _with_source(table, recs)


def _key_only(key):
    """The decoded key of a record whose value failed, or None."""
    try:
        if key is None or len(key) < 2:
            return None
        rtype = struct.unpack_from(">h", key)[0]
        if rtype not in TRANSACTION_RECORDS:
            return None
        return {"key": decode_message(TRANSACTION_RECORDS[rtype][1], 0, key, 2)[0], "value": None, "version": None}
    except SchemaError:
        return None


# ------------------------------------------------------------------------------------------------
# cluster_metadata (KRaft)

_CONFIG_RESOURCE = {2: "topic", 4: "broker", 8: "broker_logger", 16: "client_metrics", 32: "group"}


def metadata_type_enum_name(api_key):
    """Kafka's MetadataRecordType name as DumpLogSegments prints it (``TOPIC_RECORD``).

    Parameters
    ----------
    api_key : int
        The record's api key.

    Returns
    -------
    str or None
        None for an api key these schemas do not know.

    Examples
    --------
    >>> from kafkafmt import internal
    >>> internal.metadata_type_enum_name(2), internal.metadata_type_enum_name(3)
    ('TOPIC_RECORD', 'PARTITION_RECORD')
    """
    msg = METADATA_RECORDS.get(api_key)
    if msg is None:
        return None
    name = msg.name
    out = []
    for j, c in enumerate(name):
        if c.isupper() and j and not name[j - 1].isupper():
            out.append("_")
        out.append(c.upper())
    return "".join(out)


def decode_metadata_record(value):
    """Decode one KRaft metadata record value: uvarint frame version, uvarint api key, uvarint
    version, then the message. Returns (api_key, version, message schema, dict). Raises `SchemaError`
    for corrupt bytes, `LookupError` (with api_key/version known) for an unknown type or version.

    Parameters
    ----------
    value : bytes
        The record's value.

    Returns
    -------
    (int, int, Message, dict)

    Raises
    ------
    SchemaError
        Corrupt bytes.
    LookupError
        An unknown type or version (with api_key/version known).

    Examples
    --------
    The first record of the sample's ``__cluster_metadata``:

    >>> import kafkafmt
    >>> from kafkafmt import internal
    >>> from kafkafmt.sample import sample_dir
    >>> recs = kafkafmt.read_log_dir(f"{sample_dir()}/__cluster_metadata-0")
    >>> internal.decode_metadata_record(recs.value[0])
    (12, 0, <Message FeatureLevelRecord v0-0>, {'Name': 'metadata.version', 'FeatureLevel': 19})
    """
    if value is None:
        raise SchemaError("the value is null")
    end = len(value)
    frame, pos = read_uvarint(value, 0, end)
    api_key, pos = read_uvarint(value, pos, end)
    version, pos = read_uvarint(value, pos, end)
    if frame > 1:
        raise LookupError(f"unknown frame version {frame}", api_key, version)
    msg = METADATA_RECORDS.get(api_key)
    if msg is None:
        raise LookupError(f"unknown metadata record type (api key {api_key})", api_key, version)
    if not in_versions(msg.valid, version):
        raise LookupError(f"unknown version {version} of {msg.name}", api_key, version)
    data, _ = decode_message(msg, version, value, pos, end)
    return api_key, version, msg, data


def encode_metadata_record(api_key, version, values, frame_version=1, extra_tags=None):
    """Value bytes of a KRaft metadata record (the key is null).

    Parameters
    ----------
    api_key, version : int
        The record type and its version.
    values : dict
        The message's fields, by Kafka field name.
    frame_version : int
        The frame version written first.
    extra_tags : dict, optional
        Tagged fields to add.

    Returns
    -------
    bytes

    Examples
    --------
    >>> from kafkafmt import internal
    >>> value = internal.encode_metadata_record(2, 0, {"Name": "orders", "TopicId": bytes(16)})
    >>> internal.decode_metadata_record(value)[3]
    {'Name': 'orders', 'TopicId': b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00'}
    """
    out = bytearray()
    write_uvarint(out, frame_version)
    write_uvarint(out, api_key)
    write_uvarint(out, version)
    return bytes(out) + encode_message(METADATA_RECORDS[api_key], version, values, extra_tags=extra_tags)


def _uuid_text(b):
    import base64
    return base64.urlsafe_b64encode(bytes(b)).decode("ascii").rstrip("=")


def cluster_metadata(recs):
    """One row per KRaft metadata record (a __cluster_metadata segment or a ``.checkpoint``
    snapshot): ``offset, timestamp, api_key, record_type, version, fields, topic_name, topic_id,
    partition_id, broker_id, leader, replicas, isr, config_resource, config_name, config_value,
    error, raw_value``.

    ``fields`` is the JSON ``data`` object Kafka's DumpLogSegments prints. Promoted columns come from
    the records that carry them (``broker_id`` from broker and controller registrations, fencing,
    producer-id blocks; ``leader``/``replicas``/``isr`` from PartitionRecord and from
    PartitionChangeRecord when it changes them; ``config_resource`` as ``topic:NAME``,
    ``broker:ID`` (``broker:`` the cluster default), ...). ``topic_id`` is Kafka's base64 text.

    Parameters
    ----------
    recs : Records
        The records of the topic (``read_log_dirs(root, topics=[...])``, ``read_segment(path)``, ...).

    Returns
    -------
    pyarrow.Table

    Examples
    --------
    The sample's topics and their configs, as its KRaft log created them:

    >>> import kafkafmt
    >>> from kafkafmt import internal
    >>> from kafkafmt.sample import sample_dir
    >>> recs = kafkafmt.read_log_dir(f"{sample_dir()}/__cluster_metadata-0")
    >>> table = internal.cluster_metadata(recs)
    >>> table.num_rows
    36
    >>> table.filter(table["api_key"].to_numpy() == 2)["topic_name"].to_pylist()
    ['clicks', 'orders', 'payments', 'customers', '_schemas', 'shipments', '__consumer_offsets']
    >>> configs = table.filter(table["api_key"].to_numpy() == 4)
    >>> configs.select(["config_resource", "config_name", "config_value"]).slice(0, 2).to_pylist()
    [{'config_resource': 'topic:clicks', 'config_name': 'retention.ms', 'config_value': '604800000'},
     {'config_resource': 'topic:orders', 'config_name': 'compression.type', 'config_value': 'producer'}]
    """
    pa = _pa()
    vals = recs.value
    n = len(recs)
    cols = {name: [] for name in _schemas()["cluster_metadata"].names}
    counts = {"records of unknown type": 0, "records with a version newer than known": 0}
    raw = []
    for i in range(n):
        row = {"offset": int(recs.offset[i]), "timestamp": int(recs.timestamp[i])}
        err = None
        try:
            api_key, version, msg, data = decode_metadata_record(vals[i])
        except LookupError as e:
            err = e.args[0]
            row["api_key"], row["version"] = e.args[1], e.args[2]
            counts["records of unknown type" if "type" in err or "frame" in err
                   else "records with a version newer than known"] += 1
            if row["api_key"] in METADATA_RECORDS:
                row["record_type"] = METADATA_RECORDS[row["api_key"]].name
            raw.append(i)
        except SchemaError as e:
            err = str(e)
            raw.append(i)
        else:
            row.update(api_key=api_key, version=version, record_type=msg.name,
                       fields=json_text(to_json_data(msg, data)))
            _promote(row, api_key, data)
        for k in ("api_key", "version"):
            if row.get(k) is not None and row[k] > 0x7FFF:
                row[k] = None
        _append(cols, row, error=err)
    _warn("__cluster_metadata", counts)
    cols.pop("raw_value")
    schema = _schemas()["cluster_metadata"]
    table = pa.Table.from_pydict(cols, schema=pa.schema([f for f in _without_source(schema)
                                                          if f.name != "raw_value"]))
    table = table.append_column(schema.field("raw_value"), _sparse_binary(vals, np.asarray(raw, np.int64), n))
    return _with_source(table, recs)


def _promote(row, api_key, d):
    if "TopicId" in d and api_key in (2, 3, 5, 9):
        row["topic_id"] = _uuid_text(d["TopicId"])
    if api_key == 2:
        row["topic_name"] = d["Name"]
    elif api_key == 28:
        row["topic_name"] = d["TopicName"]
    elif api_key == 3:
        row.update(partition_id=d["PartitionId"], leader=d["Leader"], replicas=d["Replicas"], isr=d["Isr"])
    elif api_key == 5:
        row["partition_id"] = d["PartitionId"]
        if "Leader" in d:
            row["leader"] = d["Leader"]
        row["replicas"] = d.get("Replicas")
        row["isr"] = d.get("Isr")
    elif api_key in (0, 1, 17, 15):
        row["broker_id"] = d["BrokerId"]
    elif api_key in (7, 8):
        row["broker_id"] = d["Id"]
    elif api_key == 27:
        row["broker_id"] = d["ControllerId"]
    elif api_key == 4:
        rtype = _CONFIG_RESOURCE.get(d["ResourceType"], str(d["ResourceType"]))
        row.update(config_resource=f"{rtype}:{d['ResourceName']}", config_name=d["Name"], config_value=d["Value"])


# ------------------------------------------------------------------------------------------------
# DumpLogSegments text (kafka-dump-log.sh --offsets-decoder / --transaction-log-decoder /
# --cluster-metadata-decoder)

def _consumer_protocol_json(msg, data):
    """Kafka's dump replaces a consumer member's subscription/assignment bytes by their JSON, read at
    the version they carry; anything it cannot read keeps the base64 bytes."""
    if data is None or len(data) < 2:
        raise SchemaError("truncated")
    ver = struct.unpack_from(">h", data)[0]
    if not in_versions(msg.valid, ver):
        raise SchemaError(f"unsupported version {ver}")
    return to_json_data(msg, decode_message(msg, ver, data, 2)[0])


def dump_text(decoder, key, value, offset):
    """(key text or None, payload text or None) as Kafka's DumpLogSegments prints a record with
    ``decoder`` = ``"offsets"`` (--offsets-decoder), ``"transaction-log"`` (--transaction-log-decoder)
    or ``"cluster-metadata"`` (--cluster-metadata-decoder): ``key: {"type":"1","data":{...}}
    payload: {"version":"3","data":{...}}``, ``<DELETE>`` for a tombstone, ``Unknown record type ...``
    / ``Error at offset ...`` texts for what cannot be read.

    Parameters
    ----------
    decoder : {"offsets", "transaction-log", "cluster-metadata"}
    key, value : bytes or None
        The record's key and value.
    offset : int
        The record's offset (for error texts).

    Returns
    -------
    (str or None, str or None)

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt import internal
    >>> from kafkafmt.sample import sample_dir
    >>> recs = kafkafmt.read_log_dir(f"{sample_dir()}/__cluster_metadata-0")
    >>> internal.dump_text("cluster-metadata", recs.key[0], recs.value[0], int(recs.offset[0]))
    (None, '{"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version","featureLevel":19}}')
    """
    if decoder == "cluster-metadata":
        try:
            api_key, version, msg, data = decode_metadata_record(value)
        except (SchemaError, LookupError) as e:
            return None, f"Error at {offset}, skipping. {e.args[0] if e.args else e}"
        return None, json_text({"type": metadata_type_enum_name(api_key), "version": version,
                                "data": to_json_data(msg, data)})
    topic = {"offsets": "consumer_offsets", "transaction-log": "transaction_state"}[decoder]
    if key is None:
        raise ValueError(f"Failed to decode message at offset {offset} using the specified decoder "
                         "(message had a missing key)")
    try:
        d = decode_coordinator_record(key, value, topic)
    except LookupError as e:
        if str(e).startswith("unknown record type"):
            return f"Unknown record type {struct.unpack_from('>h', key)[0]} at offset {offset}, skipping.", None
        return f"Error at offset {offset}, skipping. {e}", None
    except SchemaError as e:
        return f"Error at offset {offset}, skipping. {e}", None
    key_text = json_text({"type": str(d["type"]), "data": to_json_data(d["key_message"], d["key"])})
    if d["value"] is None:
        return key_text, "<DELETE>"
    data = to_json_data(d["value_message"], d["value"])
    if d["type"] == 2 and data.get("protocolType") == "consumer":
        for m in data.get("members") or []:
            raw = next((x for x in d["value"]["members"] if x["memberId"] == m["memberId"]), None)
            if raw is None:
                continue
            for field, msg in (("subscription", CONSUMER_PROTOCOL_SUBSCRIPTION),
                               ("assignment", CONSUMER_PROTOCOL_ASSIGNMENT)):
                try:
                    m[field] = _consumer_protocol_json(msg, raw[field])
                except SchemaError:
                    pass
    return key_text, json_text({"version": str(d["version"]), "data": data})


# ------------------------------------------------------------------------------------------------
# Kafka Connect's internal topics

def connect_configs(recs):
    """One row per record of Kafka Connect's config topic (``config.storage.topic``, by default
    ``connect-configs``): ``offset, timestamp, kind, key, connector, task, properties, tasks,
    state, state_v2, task_count, session_key, algorithm, creation_timestamp, include_tasks,
    only_failed, logger_namespace, level, tombstone, error, raw_key, raw_value, source_partition,
    log_dir`` (`kafkafmt.internal.connect`).

    Parameters
    ----------
    recs : Records
        The records of the topic (``read_log_dirs(root, topics=[...])``, ``read_segment(path)``, ...).

    Returns
    -------
    pyarrow.Table

    Examples
    --------
    >>> import json
    >>> import kafkafmt
    >>> from kafkafmt import internal
    >>> def write_topic(path, records):         # as a Connect worker writes them: string keys, JSON values
    ...     kafkafmt.write_log_dir(path, keys=[k.encode() for k, _ in records],
    ...                            values=[None if v is None else json.dumps(v).encode() for _, v in records],
    ...                            timestamps=[1767225600000 + i for i in range(len(records))])
    ...     return kafkafmt.read_log_dir(path)
    >>> recs = write_topic("connect/connect-configs-0", [
    ...     ("connector-file-source", {"properties": {"connector.class": "FileStreamSource", "tasks.max": "1"}}),
    ...     ("task-file-source-0", {"properties": {"task.class": "FileStreamSourceTask"}}),
    ...     ("commit-file-source", {"tasks": 1})])
    >>> for row in internal.connect_configs(recs).to_pylist():
    ...     print(row["kind"], row["connector"], row["task"], row["properties"], row["tasks"])
    connector file-source None [('connector.class', 'FileStreamSource'), ('tasks.max', '1')] None
    task file-source 0 [('task.class', 'FileStreamSourceTask')] None
    commit file-source None None 1
    """
    return _with_source(_connect.configs_table(recs, _without_source(_schemas()["connect_configs"])), recs)


def connect_offsets(recs):
    """One row per record of Kafka Connect's offsets topic (``offset.storage.topic``, by default
    ``connect-offsets``): ``offset, timestamp, connector, connect_partition, connect_offset,
    tombstone, error, raw_key, raw_value, source_partition, log_dir`` (`kafkafmt.internal.connect`).

    Parameters
    ----------
    recs : Records
        The records of the topic (``read_log_dirs(root, topics=[...])``, ``read_segment(path)``, ...).

    Returns
    -------
    pyarrow.Table

    Examples
    --------
    >>> import json
    >>> import kafkafmt
    >>> from kafkafmt import internal
    >>> def write_topic(path, records):         # as a Connect worker writes them: string keys, JSON values
    ...     kafkafmt.write_log_dir(path, keys=[k.encode() for k, _ in records],
    ...                            values=[None if v is None else json.dumps(v).encode() for _, v in records],
    ...                            timestamps=[1767225600000 + i for i in range(len(records))])
    ...     return kafkafmt.read_log_dir(path)
    >>> recs = write_topic("connect/connect-offsets-0", [
    ...     ('["file-source",{"filename":"/tmp/a.txt"}]', {"position": 1234})])
    >>> row = internal.connect_offsets(recs).to_pylist()[0]
    >>> row["connector"], row["connect_partition"], row["connect_offset"]
    ('file-source', '{"filename":"/tmp/a.txt"}', '{"position":1234}')
    """
    return _with_source(_connect.offsets_table(recs, _without_source(_schemas()["connect_offsets"])), recs)


def connect_status(recs):
    """One row per record of Kafka Connect's status topic (``status.storage.topic``, by default
    ``connect-status``): ``offset, timestamp, kind, key, connector, task, topic, state, trace,
    worker_id, generation, discover_timestamp, tombstone, error, raw_key, raw_value,
    source_partition, log_dir`` (`kafkafmt.internal.connect`).

    Parameters
    ----------
    recs : Records
        The records of the topic (``read_log_dirs(root, topics=[...])``, ``read_segment(path)``, ...).

    Returns
    -------
    pyarrow.Table

    Examples
    --------
    >>> import json
    >>> import kafkafmt
    >>> from kafkafmt import internal
    >>> def write_topic(path, records):         # as a Connect worker writes them: string keys, JSON values
    ...     kafkafmt.write_log_dir(path, keys=[k.encode() for k, _ in records],
    ...                            values=[None if v is None else json.dumps(v).encode() for _, v in records],
    ...                            timestamps=[1767225600000 + i for i in range(len(records))])
    ...     return kafkafmt.read_log_dir(path)
    >>> recs = write_topic("connect/connect-status-0", [
    ...     ("status-connector-file-source", {"state": "RUNNING", "trace": None, "worker_id": "10.0.0.1:8083",
    ...                                       "generation": 3}),
    ...     ("status-task-file-source-0", None)])
    >>> for row in internal.connect_status(recs).to_pylist():
    ...     print(row["kind"], row["connector"], row["task"], row["state"], row["worker_id"], row["tombstone"])
    connector file-source None RUNNING 10.0.0.1:8083 False
    task file-source 0 None None True
    """
    return _with_source(_connect.status_table(recs, _without_source(_schemas()["connect_status"])), recs)
