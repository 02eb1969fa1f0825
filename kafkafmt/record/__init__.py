"""Kafka records as columns: `Records` and `Table` (Arrow layout), the decoder (bytes -> Records) and the
encoder (columns -> record batches).

Modules: `_names` (Kafka's names and the column names, once), `_columns` (binary columns and headers in
Arrow's layout), `_table` (the batch and control tables), `_records` (`Records`), `_entries` (the framing
scan: entry headers, CRCs, the offset sequence, without decoding records), `_decoder` (framing scan ->
codec dispatch -> the C kernel), `_encoder` (columns -> batch bounds -> the C writer -> codecs), `_portable` (the Arrow types every
engine holds: what the Arrow hand-off and the exports give).
"""
from __future__ import annotations

from kafkafmt.record._names import (CONTROL_TYPES, TIMESTAMP_TYPES, CODEC_NAMES, KAFKA_COLUMNS, LOG_DIR_COLUMN,
                                    BATCH_METADATA_COLUMNS, TYPED_COLUMNS, UNTYPED_COLUMNS, COLUMNS)
from kafkafmt.record._columns import (BinaryColumn, BinaryViewColumn, Headers, cast_table)
from kafkafmt.record._table import (Table)
from kafkafmt.record._records import (Records, Labels, exact_pandas)
from kafkafmt.record._entries import (scan_batches, entries_end, next_entry, offset_sequence_error, scan_ranges)
from kafkafmt.record._decoder import (decode, DecodeOptions, RangeDecoder)
from kafkafmt.record._encoder import (encode, encode_control, encode_empty_batch, encode_columns, Columns, to_columns)
from kafkafmt.record._portable import (INTERVAL_FIELDS, EMPTY_STRUCT_FIELD, interval_type, interval_fields,
                                       placeholder_struct, portable_type, portable_column, portable_table)

__all__ = ["Records", "Table", "BinaryColumn", "BinaryViewColumn", "Headers", "Labels", "CONTROL_TYPES",
           "TIMESTAMP_TYPES", "CODEC_NAMES", "KAFKA_COLUMNS", "LOG_DIR_COLUMN", "BATCH_METADATA_COLUMNS",
           "TYPED_COLUMNS", "UNTYPED_COLUMNS", "COLUMNS", "decode", "scan_batches", "entries_end", "DecodeOptions",
           "next_entry", "offset_sequence_error", "scan_ranges", "RangeDecoder", "encode", "encode_control", "encode_empty_batch", "encode_columns", "Columns",
           "to_columns", "INTERVAL_FIELDS", "EMPTY_STRUCT_FIELD", "interval_type", "interval_fields",
           "placeholder_struct", "portable_type", "portable_column", "portable_table", "exact_pandas", "cast_table"]
