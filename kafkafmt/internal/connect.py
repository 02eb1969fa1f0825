"""Kafka Connect's internal topics as tables: ``connect-configs``, ``connect-offsets``,
``connect-status`` (the defaults of ``config.storage.topic``, ``offset.storage.topic`` and
``status.storage.topic``; any name works: the functions take the records).

Keys are UTF-8 strings (StringSerializer) except the offsets topic's; values are JSON written by
the worker's internal JsonConverter with ``schemas.enable=false``; a null value is a tombstone
(Kafka Connect's sources: KafkaConfigBackingStore, KafkaOffsetBackingStore / OffsetUtils,
KafkaStatusBackingStore):

* configs -- ``connector-<c>`` {"properties": {...}}; ``task-<c>-<n>`` {"properties": {...}};
  ``commit-<c>`` {"tasks": n}; ``target-state-<c>`` {"state": "STARTED" | "PAUSED" | "STOPPED",
  "state.v2": ...}; ``tasks-fencing-<c>`` {"task-count": n}; ``session-key`` {"key": base64,
  "algorithm", "creation-timestamp"}; ``restart-connector-<c>`` {"include-tasks", "only-failed"};
  ``logger-cluster-<namespace>`` {"level"};
* offsets -- key ``["<connector>", {source partition}]``, value the source offset object;
* status -- ``status-connector-<c>`` / ``status-task-<c>-<n>`` {"state", "trace", "worker_id",
  "generation"}; ``status-topic-<topic>:connector-<c>`` {"topic": {"name", "connector", "task",
  "discoverTimestamp"}}.

A Connect cluster names its topics itself: Kafka's defaults are ``connect-configs`` & co., Confluent's
images ``docker-connect-configs``, Strimzi ``<cluster>-configs``, Debezium's examples
``my_connect_configs``, MirrorMaker 2 ``mm2-configs.<source>.internal``. Each table's topic is found by
such names and by the shape of its first records (`looks_like_configs` & co.; see
`kafkafmt.internal.find_topic`).

A record that does not parse keeps its bytes in ``raw_key``/``raw_value`` with an ``error`` text;
an unknown key kind is ``kind = "unknown"`` (kept raw too).
"""
from __future__ import annotations

import json

from kafkafmt.internal._columns import source_schemas, with_source, without_source
from kafkafmt.internal._tables import SAMPLE_RECORDS, InternalTable, looks_doc, register_table, table_doc

__all__ = ["configs_table", "offsets_table", "status_table", "record_schemas", "connect_configs", "connect_offsets",
           "connect_status", "looks_like_configs", "looks_like_offsets", "looks_like_status"]

_CONFIG_PREFIXES = (("connector-", "connector"), ("target-state-", "target_state"), ("tasks-fencing-", "tasks_fencing"),
                    ("task-", "task"), ("commit-", "commit"), ("restart-connector-", "restart"),
                    ("logger-cluster-", "logger_cluster"))


def record_schemas(pa, ts):
    """The three tables' schemas (without the source columns every table ends with)."""
    raw = [("tombstone", pa.bool_()), ("error", pa.string()), ("raw_key", pa.binary()), ("raw_value", pa.binary())]
    return {
        "connect_configs": pa.schema([
            ("offset", pa.int64()), ("timestamp", ts), ("kind", pa.string()), ("key", pa.string()),
            ("connector", pa.string()), ("task", pa.int32()), ("properties", pa.map_(pa.string(), pa.string())),
            ("tasks", pa.int32()), ("state", pa.string()), ("state_v2", pa.string()), ("task_count", pa.int32()),
            ("session_key", pa.string()), ("algorithm", pa.string()), ("creation_timestamp", ts),
            ("include_tasks", pa.bool_()), ("only_failed", pa.bool_()), ("logger_namespace", pa.string()),
            ("level", pa.string())] + raw),
        "connect_offsets": pa.schema([
            ("offset", pa.int64()), ("timestamp", ts), ("connector", pa.string()),
            ("connect_partition", pa.string()), ("connect_offset", pa.string())] + raw),
        "connect_status": pa.schema([
            ("offset", pa.int64()), ("timestamp", ts), ("kind", pa.string()), ("key", pa.string()),
            ("connector", pa.string()), ("task", pa.int32()), ("topic", pa.string()), ("state", pa.string()),
            ("trace", pa.string()), ("worker_id", pa.string()), ("generation", pa.int32()),
            ("discover_timestamp", ts)] + raw),
    }


def _text(b):
    return None if b is None else bytes(b).decode("utf-8")


def _task_of(rest):
    """'<connector>-<n>' -> (connector, n); connector names may hold dashes: n follows the last."""
    connector, _, n = rest.rpartition("-")
    if not connector or not n.isdigit():
        raise ValueError(f"not <connector>-<task>: {rest!r}")
    return connector, int(n)


def _table(rows, schema):
    import pyarrow as pa
    return pa.Table.from_pydict({f.name: [r.get(f.name) for r in rows] for f in schema}, schema=schema)


def _base(recs, i, key, value):
    return {"offset": int(recs.offset[i]), "timestamp": int(recs.timestamp[i]), "tombstone": value is None}


def _bad(row, key, value, text):
    row.update(error=text, raw_key=None if key is None else bytes(key), raw_value=None if value is None else bytes(value))


#: what a record that does not read raises (a row with ``error``, not a failed read)
_ROW_ERRORS = (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError)


def _each_record(recs, schema, fill, errors):
    """The table of one row per record: ``fill(row, key, value)`` completes the row `_base` starts;
    one of ``errors`` raised makes it an error row (``error`` saying why, the raw key and value kept)."""
    keys, vals = recs.key, recs.value
    rows = []
    for i in range(len(recs)):
        key, value = keys[i], vals[i]
        row = _base(recs, i, key, value)
        try:
            fill(row, key, value)
        except errors as exc:
            _bad(row, key, value, f"{type(exc).__name__}: {exc}")
        rows.append(row)
    return _table(rows, schema)


def _json(value):
    doc = json.loads(bytes(value))
    if not isinstance(doc, dict):
        raise ValueError("the value is not a JSON object")
    return doc


def _config_row(row, key, value):
    """Fill the row of a config topic record."""
    k = _text(key)
    row["key"] = k
    kind, rest = "unknown", None
    if k == "session-key":
        kind = "session_key"
    else:
        for prefix, name in _CONFIG_PREFIXES:
            if k is not None and k.startswith(prefix):
                kind, rest = name, k[len(prefix):]
                break
    row["kind"] = kind
    if kind == "task":
        row["connector"], row["task"] = _task_of(rest)
    elif kind == "logger_cluster":
        row["logger_namespace"] = rest
    elif rest is not None:
        row["connector"] = rest
    if kind == "unknown":
        _bad(row, key, value, f"unknown config key {k!r}")
    elif value is not None:
        doc = _json(value)
        if kind in ("connector", "task"):
            props = doc["properties"]
            row["properties"] = None if props is None else [(str(a), None if b is None else str(b))
                                                            for a, b in props.items()]
        elif kind == "commit":
            row["tasks"] = int(doc["tasks"])
        elif kind == "target_state":
            row["state"], row["state_v2"] = doc["state"], doc.get("state.v2")
        elif kind == "tasks_fencing":
            row["task_count"] = int(doc["task-count"])
        elif kind == "session_key":
            row.update(session_key=doc["key"], algorithm=doc["algorithm"],
                       creation_timestamp=int(doc["creation-timestamp"]))
        elif kind == "restart":
            row.update(include_tasks=bool(doc.get("include-tasks")), only_failed=bool(doc.get("only-failed")))
        elif kind == "logger_cluster":
            row["level"] = doc["level"]


def configs_table(recs, schema):
    """One row per record of Kafka Connect's config topic: ``offset, timestamp, kind, key,
    connector, task, properties, tasks, state, state_v2, task_count, session_key, algorithm,
    creation_timestamp, include_tasks, only_failed, logger_namespace, level, tombstone, error,
    raw_key, raw_value``.

    ``kind`` is ``connector``, ``task``, ``commit``, ``target_state``, ``tasks_fencing``,
    ``session_key``, ``restart``, ``logger_cluster`` or ``unknown``; ``properties`` the connector's
    or task's configuration (map<string, string>).
    """
    return _each_record(recs, schema, _config_row, _ROW_ERRORS)


def _offset_row(row, key, value):
    """Fill the row of an offsets topic record."""
    k = json.loads(bytes(key))
    if not (isinstance(k, list) and len(k) == 2 and isinstance(k[0], str)):
        raise ValueError("the key is not [connector, partition]")
    row["connector"] = k[0]
    row["connect_partition"] = json.dumps(k[1], separators=(",", ":"), ensure_ascii=False)
    if value is not None:
        row["connect_offset"] = json.dumps(json.loads(bytes(value)), separators=(",", ":"),
                                           ensure_ascii=False)


def offsets_table(recs, schema):
    """One row per record of Kafka Connect's offsets topic: ``offset, timestamp, connector,
    connect_partition, connect_offset, tombstone, error, raw_key, raw_value`` (then. The source partition and offset are JSON text (their fields
    are the connector's own); a tombstone (offset reset) has a null ``connect_offset``."""
    return _each_record(recs, schema, _offset_row, (ValueError, TypeError, UnicodeDecodeError))


def _status_row(row, key, value):
    """Fill the row of a status topic record."""
    k = _text(key)
    row["key"] = k
    if k is not None and k.startswith("status-connector-"):
        row["kind"], row["connector"] = "connector", k[len("status-connector-"):]
    elif k is not None and k.startswith("status-task-"):
        row["kind"] = "task"
        row["connector"], row["task"] = _task_of(k[len("status-task-"):])
    elif k is not None and k.startswith("status-topic-") and ":connector-" in k:
        topic, _, connector = k[len("status-topic-"):].partition(":connector-")
        row.update(kind="topic", topic=topic, connector=connector)
    else:
        row["kind"] = "unknown"
        _bad(row, key, value, f"unknown status key {k!r}")
    if value is not None and row["kind"] in ("connector", "task"):
        doc = _json(value)
        row.update(state=doc["state"], trace=doc.get("trace"), worker_id=doc["worker_id"],
                   generation=int(doc["generation"]))
    elif value is not None and row["kind"] == "topic":
        t = _json(value)["topic"]
        row.update(task=int(t["task"]), discover_timestamp=int(t["discoverTimestamp"]))
        row["topic"], row["connector"] = t.get("name", row["topic"]), t.get("connector", row["connector"])


def status_table(recs, schema):
    """One row per record of Kafka Connect's status topic: ``offset, timestamp, kind, key,
    connector, task, topic, state, trace, worker_id, generation, discover_timestamp, tombstone,
    error, raw_key, raw_value``; ``kind`` is ``connector``,
    ``task``, ``topic`` or ``unknown``. A tombstone is a connector or task destroyed, or a topic no
    longer used."""
    return _each_record(recs, schema, _status_row, _ROW_ERRORS)


def _schemas():
    return source_schemas(record_schemas)


# ------------------------------------------------------------------------------------------------
# Kafka Connect's internal topics

@table_doc()
def connect_configs(recs):
    """One row per record of Kafka Connect's config topic (``config.storage.topic``, by default
    ``connect-configs``): ``offset, timestamp, kind, key, connector, task, properties, tasks,
    state, state_v2, task_count, session_key, algorithm, creation_timestamp, include_tasks,
    only_failed, logger_namespace, level, tombstone, error, raw_key, raw_value, source_partition,
    log_dir`` (`kafkafmt.internal.connect`).

    Examples
    --------
    A topic as a Connect worker writes it (string keys, JSON values):

    >>> import kafkafmt
    >>> from kafkafmt import internal
    >>> recs = kafkafmt.decode(kafkafmt.encode(
    ...     keys=[b"connector-file-source", b"task-file-source-0", b"commit-file-source"],
    ...     values=[b'{"properties": {"connector.class": "FileStreamSource", "tasks.max": "1"}}',
    ...             b'{"properties": {"task.class": "FileStreamSourceTask"}}', b'{"tasks": 1}']))
    >>> for row in internal.connect_configs(recs).to_pylist():
    ...     print(row["kind"], row["connector"], row["task"], row["properties"], row["tasks"])
    connector file-source None [('connector.class', 'FileStreamSource'), ('tasks.max', '1')] None
    task file-source 0 [('task.class', 'FileStreamSourceTask')] None
    commit file-source None None 1
    """
    return with_source(configs_table(recs, without_source(_schemas()["connect_configs"])), recs)


@table_doc()
def connect_offsets(recs):
    """One row per record of Kafka Connect's offsets topic (``offset.storage.topic``, by default
    ``connect-offsets``): ``offset, timestamp, connector, connect_partition, connect_offset,
    tombstone, error, raw_key, raw_value, source_partition, log_dir`` (`kafkafmt.internal.connect`).

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt import internal
    >>> recs = kafkafmt.decode(kafkafmt.encode(keys=[b'["file-source",{"filename":"/tmp/a.txt"}]'],
    ...                                        values=[b'{"position": 1234}']))
    >>> row = internal.connect_offsets(recs).to_pylist()[0]
    >>> row["connector"], row["connect_partition"], row["connect_offset"]
    ('file-source', '{"filename":"/tmp/a.txt"}', '{"position":1234}')
    """
    return with_source(offsets_table(recs, without_source(_schemas()["connect_offsets"])), recs)


@table_doc()
def connect_status(recs):
    """One row per record of Kafka Connect's status topic (``status.storage.topic``, by default
    ``connect-status``): ``offset, timestamp, kind, key, connector, task, topic, state, trace,
    worker_id, generation, discover_timestamp, tombstone, error, raw_key, raw_value,
    source_partition, log_dir`` (`kafkafmt.internal.connect`).

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt import internal
    >>> recs = kafkafmt.decode(kafkafmt.encode(
    ...     keys=[b"status-connector-file-source", b"status-task-file-source-0"],
    ...     values=[b'{"state": "RUNNING", "trace": null, "worker_id": "10.0.0.1:8083", "generation": 3}', None]))
    >>> for row in internal.connect_status(recs).to_pylist():
    ...     print(row["kind"], row["connector"], row["task"], row["state"], row["worker_id"], row["tombstone"])
    connector file-source None RUNNING 10.0.0.1:8083 False
    task file-source 0 None None True
    """
    return with_source(status_table(recs, without_source(_schemas()["connect_status"])), recs)


# ------------------------------------------------------------------------------------------------
# the shape of each topic's records, to find it under any name

_STATUS_PREFIXES = ("status-connector-", "status-task-", "status-topic-")


def _looks(recs, key_fits, value_fits):
    """Whether the first records all fit (None: no records to judge)."""
    n = 0 if recs is None else min(len(recs), SAMPLE_RECORDS)
    if n == 0:
        return None
    keys, vals = recs.key, recs.value
    for i in range(n):
        key, value = keys[i], vals[i]
        try:
            if key is None or not key_fits(bytes(key)) or (value is not None and not value_fits(bytes(value))):
                return False
        except (ValueError, UnicodeDecodeError):
            return False
    return True


def _config_key(k):
    text = k.decode("utf-8")
    return text == "session-key" or any(text.startswith(prefix) for prefix, _ in _CONFIG_PREFIXES)


def _offset_key(k):
    doc = json.loads(k)
    return isinstance(doc, list) and len(doc) == 2 and isinstance(doc[0], str)


def _status_key(k):
    return k.decode("utf-8").startswith(_STATUS_PREFIXES)


def _is_json_object(v):
    return isinstance(json.loads(v), dict)


def _is_json(v):
    json.loads(v)
    return True


@looks_doc
def looks_like_configs(recs):
    """Whether records look like a Connect config topic's: keys ``connector-<c>``, ``task-<c>-<n>``,
    ``commit-<c>``, ``target-state-<c>``, ``session-key``...; values JSON objects or null.

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.internal import connect
    >>> recs = kafkafmt.decode(kafkafmt.encode(keys=[b"connector-file-source"], values=[b'{"properties": {}}']))
    >>> connect.looks_like_configs(recs), connect.looks_like_status(recs)
    (True, False)
    """
    return _looks(recs, _config_key, _is_json_object)


@looks_doc
def looks_like_offsets(recs):
    """Whether records look like a Connect offsets topic's: keys ``["<connector>", {partition}]``, values
    JSON or null.

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.internal import connect
    >>> recs = kafkafmt.decode(kafkafmt.encode(keys=[b'["file-source",{"filename":"a.txt"}]'],
    ...                                        values=[b'{"position":12}']))
    >>> connect.looks_like_offsets(recs), connect.looks_like_configs(recs)
    (True, False)
    """
    return _looks(recs, _offset_key, _is_json)


@looks_doc
def looks_like_status(recs):
    """Whether records look like a Connect status topic's: keys ``status-connector-<c>``,
    ``status-task-<c>-<n>``, ``status-topic-<t>:connector-<c>``; values JSON objects or null.

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.internal import connect
    >>> recs = kafkafmt.decode(kafkafmt.encode(keys=[b"status-task-file-source-0"], values=[None]))
    >>> connect.looks_like_status(recs)
    True
    """
    return _looks(recs, _status_key, _is_json_object)


register_table(InternalTable(
    "connect_configs", "connect-configs", record_schemas, connect_configs,
    "one row per record of Kafka Connect's config topic (config.storage.topic): connectors' and tasks' "
    "configurations, target states, commits", names=(r"connect.*config", r"^mm2-configs\."),
    looks=looks_like_configs))
register_table(InternalTable(
    "connect_offsets", "connect-offsets", record_schemas, connect_offsets,
    "one row per record of Kafka Connect's offsets topic (offset.storage.topic): source connectors' offsets",
    names=(r"connect.*offset", r"^mm2-offsets\."), looks=looks_like_offsets))
register_table(InternalTable(
    "connect_status", "connect-status", record_schemas, connect_status,
    "one row per record of Kafka Connect's status topic (status.storage.topic): connectors', tasks' and "
    "topics' states", names=(r"connect.*status", r"^mm2-status\."), looks=looks_like_status))
