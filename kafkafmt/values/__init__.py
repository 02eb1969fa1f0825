"""Typed keys and values: the value-format table (`FORMATS`), `decode_column`, the typed options of the
readers, and the formats themselves -- `avro`, `protobuf`, `json` -- with the schema sources in `registry`.

Importing this package registers every format.
"""
from __future__ import annotations

from kafkafmt.values._formats import (decode_column, value_type, DecodedColumn, ValueFormat, FORMATS, register_format,
                                      get_format, reader_schema_for, pinned_reader, column_parts, column_validity,
                                      raise_strict, nullable_type, merge_types, conform)
from kafkafmt.values._typed import (TypedOptions, open_typed, decode_values, empty_typed, type_values,
                                    reader_schema_of_text, READER_KEYS, VALUE_ERRORS, UNTYPED_TOPICS,
                                    NO_SCHEMA_FORMATS, FailedValues)
from kafkafmt.values._registryformat import (RegistryFormat, FORMAT_OF_TYPE)
from kafkafmt.values import avro, json, protobuf, registry  # noqa: F401  (registers every format)

__all__ = ["decode_column", "value_type", "DecodedColumn", "ValueFormat", "FORMATS", "register_format",
           "get_format", "reader_schema_for", "pinned_reader", "column_parts", "column_validity", "raise_strict",
           "nullable_type", "merge_types", "conform", "TypedOptions", "open_typed", "decode_values", "empty_typed",
           "type_values", "reader_schema_of_text", "READER_KEYS", "VALUE_ERRORS", "UNTYPED_TOPICS",
           "NO_SCHEMA_FORMATS", "FailedValues", "RegistryFormat",
           "FORMAT_OF_TYPE", "avro", "protobuf", "json", "registry"]
