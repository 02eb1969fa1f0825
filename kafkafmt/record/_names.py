"""Kafka's names for what a read returns, each written once: the control record types, the timestamp types and
the codec names (Kafka's), and the columns of ``to_arrow()`` / ``to_pandas()`` (Spark's Kafka source's, plus
the batch metadata, typed-value and log-dir columns)."""
from __future__ import annotations

from kafkafmt.codecs import CODEC_NAMES  # noqa: F401 (re-exported: the CLI and Spark use it from here)

__all__ = ["CONTROL_TYPES", "TIMESTAMP_TYPES", "CODEC_NAMES", "KAFKA_COLUMNS", "LOG_DIR_COLUMN",
           "BATCH_METADATA_COLUMNS", "TYPED_COLUMNS", "UNTYPED_COLUMNS", "COLUMNS", "BATCH_FIELDS"]

CONTROL_TYPES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}
TIMESTAMP_TYPES = {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}

#: Spark's Kafka-source columns, as `Records.to_arrow` names them
KAFKA_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers")
#: the log dir a record was read from (reads of log dirs; several copies of one partition tell apart by it)
LOG_DIR_COLUMN = "logDir"
#: the batch metadata columns (``to_arrow(batch_metadata=True)``, Spark's ``includeBatchMetadata``)
BATCH_METADATA_COLUMNS = ("producerId", "producerEpoch", "baseSequence", "leaderEpoch", "codec")
#: every column a read can be asked for (``columns=[...]``)
#: the columns typed keys and values add (``value_format=`` / ``key_format=``), by side: schema id, error
TYPED_COLUMNS = {"key": ("keySchemaId", "keyError"), "value": ("valueSchemaId", "valueError")}
#: the column of the bytes of keys and values left untyped (``untyped_topics="bytes"``: topics without
#: a schema), by side; null where the key or value is typed
UNTYPED_COLUMNS = {"key": "keyBytes", "value": "valueBytes"}
COLUMNS = KAFKA_COLUMNS + BATCH_METADATA_COLUMNS + (LOG_DIR_COLUMN,)
#: the batch table's fields behind the first four batch metadata columns
BATCH_FIELDS = ("producer_id", "producer_epoch", "base_sequence", "partition_leader_epoch")
