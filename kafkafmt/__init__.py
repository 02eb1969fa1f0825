"""kafkafmt: read Apache Kafka's on-disk data into NumPy, Arrow and pandas, without a broker."""
from kafkafmt.record._decoder import DecodeOptions, decode, scan_batches
from kafkafmt.log._discovery import find_log_dirs, list_partitions, list_segments
from kafkafmt.record._encoder import encode, encode_control
from kafkafmt.errors import (CompressionError, CorruptRecordError, CrcError, DataLossError, DecompressionLimitError, EncodeError,
                             KafkafmtError, KafkafmtWarning, NotALogDirError, NotKafkaDataError, PathNotFoundError,
                             SchemaError, SchemaNotFoundError, SchemaRegistryError, UnsupportedCodecError,
                             ValueDecodeError)
from kafkafmt.read._readers import iter_log_dir, iter_log_dirs, read_log_dir, read_log_dirs, read_segment
from kafkafmt.lakehouse import ExportResult, export_table
from kafkafmt.log._writer import LogWriter, write_log_dir
from kafkafmt.log._planner import offset_for_timestamp
from kafkafmt.record._records import CONTROL_TYPES, BinaryColumn, Headers, Records, Table
from kafkafmt.recovery import RecoveryAction, RecoveryPlan, rebuild_indexes, recover
from kafkafmt.recovery import undo as undo_recovery
from kafkafmt.log._notes import ReportEntry, ReportKind
from kafkafmt.values.registry._sources import RegisteredSchema, SchemaRegistry, open_registry
from kafkafmt.log._sidefiles import (read_index, read_leader_epoch_checkpoint, read_partition_metadata,
                                read_producer_snapshot, read_timeindex, read_txnindex)
from kafkafmt._util.threads import cpu_count, set_cpu_count
from kafkafmt.values._formats import DecodedColumn, decode_column, value_type
from kafkafmt.values._typed import type_values
from kafkafmt.values.json import _format as _jsonvalues  # noqa: E402,F401  (registers the JSON formats)
from kafkafmt.values.protobuf import _format as _protovalues  # noqa: E402,F401  (registers the Protobuf formats)
from kafkafmt.values import _registryformat as _registryformat  # noqa: E402,F401  (registers "registry")

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
