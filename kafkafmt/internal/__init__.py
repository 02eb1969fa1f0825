"""Kafka's internal topics as tables: __consumer_offsets, __transaction_state, __share_group_state,
__cluster_metadata, __remote_log_metadata, and Kafka Connect's topics.

Each function takes a `kafkafmt.Records` (``read_log_dirs(root, topics=["__consumer_offsets"])``,
``read_segment(path)``, a KRaft ``.checkpoint`` snapshot, ...) and returns a ``pyarrow.Table``:

* `consumer_offsets` -- one row per record of __consumer_offsets (offset commits decoded in bulk in C)
* `group_members` -- one row per member of each classic GroupMetadataValue
* `transaction_state` -- one row per record of __transaction_state
* `share_group_state` -- one row per record of __share_group_state (share groups' delivery state)
* `cluster_metadata` -- one row per KRaft metadata record
* `remote_log_metadata` -- one row per __remote_log_metadata event (tiered storage's segment copies and
  deletes); `remote_log_segments` rebuilds each remote segment's current state from them
* `connect_configs`, `connect_offsets`, `connect_status` -- one row per record of Kafka Connect's
  internal topics (`kafkafmt.internal.connect`), found under any name (`find_topic`)

Which tables there are is itself a table: `INTERNAL_TABLES` holds an `InternalTable` per table (its
topic, schema, builder and kafka-dump-log decoder), which every door reads: these functions,
``kafkafmt export --internal``, ``kafkafmt dump``'s decoder flags and Spark's ``decode`` option.

Bad input never makes a table raise: a corrupt or truncated key/value gives nulls and an ``error``
text naming the message, version and field that failed (one record decoded alone raises
`kafkafmt.ValueDecodeError`); an unknown record type or a value version newer than these
schemas gives a row with the raw bytes (``raw_key``/``raw_value``) and one `KafkafmtWarning` per call.
The schemas are data (`kafkafmt.internal.schemas`), read by one generic decoder
(`kafkafmt.internal.codec`) that also writes them (`encode_group_record` & co., for tests and samples).

Modules by job: `_tables` (the table of tables, `find_topic`), `_columns` (Arrow columns
from record buffers), `_coordinator` (__consumer_offsets and __transaction_state), `_metadata` (KRaft),
`_remote_log` (tiered storage's __remote_log_metadata),
`_dump` (kafka-dump-log's text), `connect` (Kafka Connect's topics), `schemas` and `codec` (Kafka's messages).
"""
from __future__ import annotations

from kafkafmt.internal import codec
from kafkafmt.internal._tables import (INTERNAL_TABLES, InternalTable, decoders, find_topic, internal_table,
                                       register_table, schema_of)
from kafkafmt.internal._coordinator import (GROUP_KINDS, consumer_offsets, decode_coordinator_record,
                                            encode_assignment, encode_coordinator_record, encode_group_record,
                                            encode_subscription, encode_transaction_record, group_members,
                                            share_group_state, transaction_state)
from kafkafmt.internal._metadata import (cluster_metadata, decode_metadata_record, encode_metadata_record,
                                         metadata_type_enum_name)
from kafkafmt.internal._remote_log import (DEFAULT_METADATA_PARTITIONS, REMOTE_LOG_METADATA,
                                           REMOTE_LOG_METADATA_KINDS, decode_remote_log_metadata_record,
                                           encode_remote_log_metadata_record, metadata_partition,
                                           remote_log_metadata, remote_log_metadata_text, remote_log_segments)
from kafkafmt.internal._dump import dump_text
from kafkafmt.internal.connect import connect_configs, connect_offsets, connect_status

__all__ = ["consumer_offsets", "group_members", "transaction_state", "share_group_state", "cluster_metadata",
           "TABLES", "TOPIC_OF", "schema_of", "connect_configs", "connect_offsets", "connect_status",
           "CONNECT_TABLES", "INTERNAL_TABLES", "InternalTable", "register_table", "internal_table", "decoders",
           "find_topic", "decode_coordinator_record", "decode_metadata_record", "encode_coordinator_record",
           "encode_group_record", "encode_transaction_record", "encode_metadata_record", "encode_subscription",
           "encode_assignment", "metadata_type_enum_name", "dump_text", "GROUP_KINDS", "remote_log_metadata",
           "remote_log_segments", "decode_remote_log_metadata_record", "encode_remote_log_metadata_record",
           "remote_log_metadata_text", "metadata_partition", "REMOTE_LOG_METADATA", "REMOTE_LOG_METADATA_KINDS",
           "DEFAULT_METADATA_PARTITIONS"]

#: every table of an internal topic (the names of `INTERNAL_TABLES`): Kafka's own, then Kafka Connect's
TABLES = tuple(INTERNAL_TABLES)
#: Kafka Connect's tables: their topics are named by each Connect cluster (`find_topic` finds them)
CONNECT_TABLES = tuple(name for name, t in INTERNAL_TABLES.items() if t.names)
#: the internal topic each table is read from (its default name, for Connect's)
TOPIC_OF = {name: t.topic for name, t in INTERNAL_TABLES.items()}


def __getattr__(name):
    if name == "SchemaError":      # deprecated: kafkafmt.ValueDecodeError (see kafkafmt.internal.codec)
        return codec.SchemaError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
