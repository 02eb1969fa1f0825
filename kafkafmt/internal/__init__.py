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

Modules by job: `_tables` (which tables there are, their topics and schemas), `_columns` (Arrow columns
from record buffers), `_coordinator` (__consumer_offsets and __transaction_state), `_metadata` (KRaft),
`_dump` (kafka-dump-log's text), `connect` (Kafka Connect's topics), `schemas` and `codec` (Kafka's messages).
"""
from __future__ import annotations

from kafkafmt.internal.codec import SchemaError
from kafkafmt.internal._coordinator import (GROUP_KINDS, consumer_offsets, decode_coordinator_record,
                                            encode_assignment, encode_group_record, encode_subscription,
                                            encode_transaction_record, group_members, transaction_state)
from kafkafmt.internal._metadata import (cluster_metadata, decode_metadata_record, encode_metadata_record,
                                         metadata_type_enum_name)
from kafkafmt.internal._dump import dump_text
from kafkafmt.internal.connect import connect_configs, connect_offsets, connect_status
from kafkafmt.internal._tables import CONNECT_TABLES, TABLES, TOPIC_OF, schema_of

__all__ = ["consumer_offsets", "group_members", "transaction_state", "cluster_metadata", "TABLES", "TOPIC_OF",
           "schema_of", "connect_configs", "connect_offsets", "connect_status", "CONNECT_TABLES",
           "decode_coordinator_record", "decode_metadata_record", "encode_group_record",
           "encode_transaction_record", "encode_metadata_record", "encode_subscription", "encode_assignment",
           "metadata_type_enum_name", "dump_text", "SchemaError", "GROUP_KINDS"]
