"""Kafka records as columns: `Records` and `Table` (Arrow layout), the decoder (bytes -> Records) and the
encoder (columns -> record batches).

Modules: `_records` (the result types and column names), `_decoder` (framing scan -> codec dispatch -> the C
kernel), `_encoder` (columns -> batch bounds -> the C writer -> codecs).
"""
from __future__ import annotations

from kafkafmt.record._records import (Records, Table, BinaryColumn, BinaryViewColumn, Headers, Labels, CONTROL_TYPES,
                                      TIMESTAMP_TYPES, CODEC_NAMES, KAFKA_COLUMNS, LOG_DIR_COLUMN,
                                      BATCH_METADATA_COLUMNS, TYPED_COLUMNS, UNTYPED_COLUMNS, COLUMNS, exact_pandas)
from kafkafmt.record._decoder import (decode, scan_batches, entries_end, DecodeOptions, next_entry,
                                      offset_sequence_error, scan_ranges, RangeDecoder)
from kafkafmt.record._encoder import (encode, encode_control, encode_empty_batch, encode_columns, Columns, to_columns)

__all__ = ["Records", "Table", "BinaryColumn", "BinaryViewColumn", "Headers", "Labels", "CONTROL_TYPES",
           "TIMESTAMP_TYPES", "CODEC_NAMES", "KAFKA_COLUMNS", "LOG_DIR_COLUMN", "BATCH_METADATA_COLUMNS",
           "TYPED_COLUMNS", "UNTYPED_COLUMNS", "COLUMNS", "decode", "scan_batches", "entries_end", "DecodeOptions",
           "next_entry", "offset_sequence_error", "scan_ranges", "RangeDecoder", "encode", "encode_control", "encode_empty_batch", "encode_columns", "Columns",
           "to_columns", "exact_pandas"]
