"""kafkafmt: read Apache Kafka's on-disk data into NumPy, Arrow and pandas, without a broker.

Every public name below is imported when first used (PEP 562): a process that reads a log dir does not
import the writer, the lakehouse export, the recovery or the typed values' formats unless it uses them.
"""
import importlib as _importlib
from typing import TYPE_CHECKING

from kafkafmt._version import __version__  # noqa: F401  (kafkafmt.__version__)

if TYPE_CHECKING:       # (what type checkers and editors see: the names as `_FROM` gives them -- a test keeps both alike)
    from kafkafmt._util.threads import cpu_count, set_cpu_count
    from kafkafmt.errors import (CompressionError, CorruptRecordError, CrcError, DataLossError, DecompressionLimitError,
                                 EncodeError, IncarnationError, KafkafmtError, KafkafmtWarning, NotALogDirError,
                                 NotKafkaDataError, PathNotFoundError, SchemaError, SchemaNotFoundError,
                                 SchemaRegistryError, UnsupportedCodecError, ValueDecodeError)
    from kafkafmt.record import (CONTROL_TYPES, BinaryColumn, DecodeOptions, Headers, Records, Table, decode, encode,
                                 encode_control, scan_batches)
    from kafkafmt.log import (LogWriter, ReportEntry, ReportKind, find_log_dirs, list_partitions, list_segments,
                              offset_for_timestamp, read_index, read_leader_epoch_checkpoint, read_partition_metadata,
                              read_producer_snapshot, read_timeindex, read_txnindex, write_log_dir)
    from kafkafmt.values import DecodedColumn, decode_column, type_values, value_type
    from kafkafmt.values.registry import RegisteredSchema, SchemaRegistry, open_registry
    from kafkafmt.read import (iter_log_dir, iter_log_dirs, read_log_dir, read_log_dirs, read_segment,
                               find_internal_topic)
    from kafkafmt.lakehouse import ExportResult, SchemaEvolutionError, export_table
    from kafkafmt.recovery import RecoveryAction, RecoveryPlan, rebuild_indexes, recover
    from kafkafmt.recovery import undo as undo_recovery

#: public name -> (the module that defines it, its name there)
_FROM = {name: (module, name) for module, names in {
    "kafkafmt._util.threads": "cpu_count set_cpu_count",
    "kafkafmt.errors": "CompressionError CorruptRecordError CrcError DataLossError DecompressionLimitError EncodeError "
                       "IncarnationError KafkafmtError KafkafmtWarning NotALogDirError NotKafkaDataError "
                       "PathNotFoundError SchemaError SchemaNotFoundError SchemaRegistryError UnsupportedCodecError "
                       "ValueDecodeError",
    "kafkafmt.record": "CONTROL_TYPES BinaryColumn DecodeOptions Headers Records Table decode encode encode_control "
                       "scan_batches",
    "kafkafmt.log": "LogWriter ReportEntry ReportKind find_log_dirs list_partitions list_segments offset_for_timestamp "
                    "read_index read_leader_epoch_checkpoint read_partition_metadata read_producer_snapshot "
                    "read_timeindex read_txnindex write_log_dir",
    "kafkafmt.values": "DecodedColumn decode_column type_values value_type",
    "kafkafmt.values.registry": "RegisteredSchema SchemaRegistry open_registry",
    "kafkafmt.read": "iter_log_dir iter_log_dirs read_log_dir read_log_dirs read_segment find_internal_topic",
    "kafkafmt.lakehouse": "ExportResult SchemaEvolutionError export_table",
    "kafkafmt.recovery": "RecoveryAction RecoveryPlan rebuild_indexes recover",
}.items() for name in names.split()}
_FROM["undo_recovery"] = ("kafkafmt.recovery", "undo")

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


#: the packages ``kafkafmt.<name>`` gives without importing them first, imported when first asked for: those this
#: package's names come from and what they use (the others -- cli, report, spark, ... -- as any package's: once
#: imported)
_SUBMODULES = frozenset(("codecs", "errors", "internal", "lakehouse", "log", "read", "record", "recovery", "storage",
                         "values"))


def __getattr__(name):
    where = _FROM.get(name)
    if where is None and name not in _SUBMODULES:
        raise AttributeError(f"module 'kafkafmt' has no attribute {name!r}")
    from kafkafmt._util.collect import paused

    # (importing kafkafmt's modules makes a few hundred thousand objects and no garbage: the collector would run
    # some eighty times on the way, for nothing)
    with paused():
        if where is None:
            return _importlib.import_module(f"{__name__}.{name}")   # (which sets it here: asked once)
        value = getattr(_importlib.import_module(where[0]), where[1])
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
