"""kafkafmt: read Apache Kafka's on-disk data into NumPy, Arrow and pandas, without a broker."""
from kafkafmt.decoder import DecodeOptions, decode, scan_batches
from kafkafmt.discovery import find_log_dirs, list_partitions, list_segments
from kafkafmt.encoder import encode, encode_control
from kafkafmt.errors import (CompressionError, CorruptRecordError, CrcError, DataLossError, DecompressionLimitError, EncodeError,
                             KafkafmtError, KafkafmtWarning, NotALogDirError, NotKafkaDataError, PathNotFoundError,
                             SchemaError, SchemaNotFoundError, SchemaRegistryError, UnsupportedCodecError,
                             ValueDecodeError)
from kafkafmt.logdir import iter_log_dir, iter_log_dirs, read_log_dir, read_log_dirs, read_segment
from kafkafmt.lakehouse import ExportResult, export_table
from kafkafmt.logwriter import LogWriter, write_log_dir
from kafkafmt.planner import offset_for_timestamp
from kafkafmt.records import CONTROL_TYPES, BinaryColumn, Headers, Records, Table
from kafkafmt.recovery import RecoveryAction, RecoveryPlan, rebuild_indexes, recover
from kafkafmt.recovery import undo as undo_recovery
from kafkafmt.reports import ReportEntry, ReportKind
from kafkafmt.schemaregistry import RegisteredSchema, SchemaRegistry, open_registry
from kafkafmt.sidefiles import (read_index, read_leader_epoch_checkpoint, read_partition_metadata,
                                read_producer_snapshot, read_timeindex, read_txnindex)
from kafkafmt.threads import cpu_count, set_cpu_count
from kafkafmt.values import DecodedColumn, decode_column, value_type
from kafkafmt.typed import type_values
from kafkafmt import jsonvalues as _jsonvalues  # noqa: E402,F401  (registers the JSON formats)
from kafkafmt import protovalues as _protovalues  # noqa: E402,F401  (registers the Protobuf formats)
from kafkafmt import registryformat as _registryformat  # noqa: E402,F401  (registers "registry")

__version__ = "0.1.0"

__all__ = [
    "decode", "read_segment", "scan_batches", "DecodeOptions", "Records", "BinaryColumn", "Headers", "Table",
    "CONTROL_TYPES", "KafkafmtError", "CorruptRecordError", "CrcError", "CompressionError", "DecompressionLimitError",
    "UnsupportedCodecError", "NotKafkaDataError", "PathNotFoundError", "NotALogDirError", "KafkafmtWarning",
    "encode", "encode_control", "EncodeError",
    "read_log_dir", "read_log_dirs", "iter_log_dir", "iter_log_dirs", "list_partitions", "list_segments",
    "find_log_dirs", "offset_for_timestamp", "ReportEntry", "ReportKind", "LogWriter", "write_log_dir",
    "read_index", "read_timeindex", "read_txnindex", "read_producer_snapshot", "read_leader_epoch_checkpoint",
    "read_partition_metadata", "set_cpu_count", "cpu_count",
    "recover", "rebuild_indexes", "undo_recovery", "RecoveryPlan", "RecoveryAction",
    "SchemaRegistry", "RegisteredSchema", "open_registry", "decode_column", "value_type", "DecodedColumn",
    "type_values",
    "SchemaRegistryError", "SchemaNotFoundError", "SchemaError", "ValueDecodeError",
    "export_table", "ExportResult", "DataLossError",
]
