"""kafkafmt: read Apache Kafka's on-disk data into NumPy, Arrow and pandas, without a broker."""
from kafkafmt._util.collect import paused as _paused

# (importing kafkafmt and what it uses makes a few hundred thousand objects and no garbage: the collector
# would run some eighty times on the way, for nothing)
with _paused():
    from kafkafmt._util.threads import cpu_count, set_cpu_count
    from kafkafmt._version import __version__
    from kafkafmt.errors import (CompressionError, CorruptRecordError, CrcError, DataLossError, DecompressionLimitError,
                                 EncodeError, IncarnationError, KafkafmtError, KafkafmtWarning, NotALogDirError,
                                 NotKafkaDataError,
                                 PathNotFoundError, SchemaError, SchemaNotFoundError, SchemaRegistryError,
                                 UnsupportedCodecError, ValueDecodeError)
    from kafkafmt.record import (CONTROL_TYPES, BinaryColumn, DecodeOptions, Headers, Records, Table, decode, encode,
                                 encode_control, scan_batches)
    from kafkafmt.log import (LogWriter, ReportEntry, ReportKind, find_log_dirs, list_partitions, list_segments,
                              offset_for_timestamp, read_index, read_leader_epoch_checkpoint, read_partition_metadata,
                              read_producer_snapshot, read_timeindex, read_txnindex, write_log_dir)
    from kafkafmt.values import DecodedColumn, decode_column, type_values, value_type
    from kafkafmt.values.registry import RegisteredSchema, SchemaRegistry, open_registry
    from kafkafmt.read import iter_log_dir, iter_log_dirs, read_log_dir, read_log_dirs, read_segment
    from kafkafmt.read import find_internal_topic
    from kafkafmt.lakehouse import ExportResult, SchemaEvolutionError, export_table
    from kafkafmt.recovery import RecoveryAction, RecoveryPlan, rebuild_indexes, recover
    from kafkafmt.recovery import undo as undo_recovery

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
    "export_table", "ExportResult", "DataLossError", "IncarnationError", "SchemaEvolutionError",
    "find_internal_topic",
]
