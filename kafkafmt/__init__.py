"""kafkafmt: read Apache Kafka's on-disk data into NumPy, Arrow and pandas, without a broker."""
from kafkafmt.decoder import decode, read_segment
from kafkafmt.errors import (CompressionError, CorruptRecordError, CrcError, DecompressionLimitError,
                             KafkafmtError, UnsupportedCodecError)
from kafkafmt.records import CONTROL_TYPES, BinaryColumn, Headers, Records, Table

__version__ = "0.1.0"

__all__ = [
    "decode", "read_segment", "Records", "BinaryColumn", "Headers", "Table", "CONTROL_TYPES",
    "KafkafmtError", "CorruptRecordError", "CrcError", "CompressionError", "DecompressionLimitError",
    "UnsupportedCodecError",
]
from kafkafmt.encoder import encode, encode_control  # noqa: E402
from kafkafmt.errors import EncodeError  # noqa: E402

__all__ += ["encode", "encode_control", "EncodeError"]
