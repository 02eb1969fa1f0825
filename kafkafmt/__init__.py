"""kafkafmt: read Apache Kafka's on-disk data into NumPy, Arrow and pandas, without a broker."""
from kafkafmt.decoder import decode, read_segment, scan_batches
from kafkafmt.errors import (CompressionError, CorruptRecordError, CrcError, DecompressionLimitError,
                             KafkafmtError, UnsupportedCodecError)
from kafkafmt.records import CONTROL_TYPES, BinaryColumn, Headers, Records, Table

__version__ = "0.1.0"

__all__ = [
    "decode", "read_segment", "scan_batches", "Records", "BinaryColumn", "Headers", "Table", "CONTROL_TYPES",
    "KafkafmtError", "CorruptRecordError", "CrcError", "CompressionError", "DecompressionLimitError",
    "UnsupportedCodecError",
]
from kafkafmt.encoder import encode, encode_control  # noqa: E402
from kafkafmt.errors import EncodeError  # noqa: E402

__all__ += ["encode", "encode_control", "EncodeError"]
from kafkafmt.logdir import (iter_log_dir, iter_log_dirs, list_partitions, list_segments,  # noqa: E402
                             offset_for_timestamp, read_log_dir, read_log_dirs)
from kafkafmt.logwriter import LogWriter, write_log_dir  # noqa: E402
from kafkafmt.sidefiles import (read_index, read_leader_epoch_checkpoint, read_partition_metadata,  # noqa: E402
                                read_producer_snapshot, read_timeindex, read_txnindex)

__all__ += ["read_log_dir", "read_log_dirs", "iter_log_dir", "iter_log_dirs", "list_partitions", "list_segments",
            "offset_for_timestamp", "LogWriter", "write_log_dir", "read_index", "read_timeindex", "read_txnindex",
            "read_producer_snapshot", "read_leader_epoch_checkpoint", "read_partition_metadata"]
