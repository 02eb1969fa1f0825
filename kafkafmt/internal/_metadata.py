"""KRaft's metadata log: __cluster_metadata segments and ``.checkpoint`` snapshots as a table
(`cluster_metadata`), and one metadata record decoded or written.

A record's key is null; its value a uvarint frame version, uvarint api key, uvarint version, then
the message (Kafka's MetadataRecordSerde).
"""
from __future__ import annotations

import numpy as np

from kafkafmt.errors import ValueDecodeError
from kafkafmt.internal._columns import (append_row, arrow, source_schemas, sparse_binary, warn_counts,
                                        with_source, without_source)
from kafkafmt.internal._tables import InternalTable, register_table, table_doc
from kafkafmt.internal.codec import (decode_message, encode_message, json_text, read_uvarint,
                                     to_json_data, uuid_text, write_uvarint)
from kafkafmt.internal.schemas import METADATA_RECORDS, in_versions

__all__ = ["record_schemas", "metadata_type_enum_name", "decode_metadata_record", "encode_metadata_record",
           "cluster_metadata"]


def record_schemas(pa, ts):
    """The cluster_metadata table's schema (without the source columns every table ends with)."""
    return {
        "cluster_metadata": pa.schema([
            ("offset", pa.int64()), ("timestamp", ts), ("api_key", pa.int16()), ("record_type", pa.string()),
            ("version", pa.int16()), ("fields", pa.string()), ("topic_name", pa.string()),
            ("topic_id", pa.string()), ("partition_id", pa.int32()), ("broker_id", pa.int32()),
            ("leader", pa.int32()), ("replicas", pa.list_(pa.int32())), ("isr", pa.list_(pa.int32())),
            ("config_resource", pa.string()), ("config_name", pa.string()), ("config_value", pa.string()),
            ("error", pa.string()), ("raw_value", pa.binary())]),
    }


def _schemas():
    return source_schemas(record_schemas)


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
    version, then the message. Returns (api_key, version, message schema, dict). Raises `ValueDecodeError`
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
    ValueDecodeError
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
        raise ValueDecodeError("the value is null")
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


@table_doc()
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
    pa = arrow()
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
        except ValueDecodeError as e:
            err = str(e)
            raw.append(i)
        else:
            row.update(api_key=api_key, version=version, record_type=msg.name,
                       fields=json_text(to_json_data(msg, data)))
            _promote(row, api_key, data)
        for k in ("api_key", "version"):
            if row.get(k) is not None and row[k] > 0x7FFF:
                row[k] = None
        append_row(cols, row, error=err)
    warn_counts("__cluster_metadata", counts)
    cols.pop("raw_value")
    schema = _schemas()["cluster_metadata"]
    table = pa.Table.from_pydict(cols, schema=pa.schema([f for f in without_source(schema)
                                                          if f.name != "raw_value"]))
    table = table.append_column(schema.field("raw_value"), sparse_binary(vals, np.asarray(raw, np.int64), n))
    return with_source(table, recs)


def _promote(row, api_key, d):
    if "TopicId" in d and api_key in (2, 3, 5, 9):
        row["topic_id"] = uuid_text(d["TopicId"])
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


register_table(InternalTable(
    "cluster_metadata", "__cluster_metadata", record_schemas, cluster_metadata,
    "one row per KRaft metadata record, of its segments and .checkpoint snapshots (read first)",
    encoding="metadata", decoder="cluster-metadata", snapshots=True))
