"""Typed keys and values: the value-format table (`FORMATS`), `decode_column`, the typed options of the
readers, and the formats themselves -- `avro`, `protobuf`, `json` -- with the schema sources in `registry`.

The formats are one table, `FORMATS` (`kafkafmt.values._formats`): each is a module plus one entry there,
and every door -- the readers, the command line, Spark, the Arrow stream, export -- reads it.
"""
from __future__ import annotations

from kafkafmt.values._formats import (decode_column, value_type, DecodedColumn, ValueFormat, FORMATS, register_format,
                                      get_format, BUILTIN_FORMATS, ENTRY_POINTS, format_names, needs_schema,
                                      format_of_type, schema_types, KernelFormat, reader_schema_for, pinned_reader,
                                      scan_names, named_reader,
                                      column_parts, column_validity, raise_strict, nullable_type, merge_types,
                                      conform, kernel_source, null_array, gather_views,
                                      frame_error_text, PerRegistry, count_errors, field_error_text, error_texts)
from kafkafmt.values._typed import (TypedOptions, open_typed, decode_values, empty_typed, type_values,
                                    reader_schema_of_text, READER_KEYS, VALUE_ERRORS, UNTYPED_TOPICS,
                                    FailedValues)
from kafkafmt.values._registryformat import RegistryFormat
from kafkafmt.values._options import (ValueShape, DEFAULT_MAX_DEPTH, TIME_UNITS, ADDITIONAL_PROPERTIES,
                                      EXTRAS_FIELD)
from kafkafmt.values import registry  # noqa: F401  (the subpackages' public names)

#: the formats' subpackages, imported when first named (`FORMATS` imports a format's class when it is used: a
#: read of untyped records -- every command's -- imports none of them)
_FORMAT_PACKAGES = ("avro", "json", "protobuf")


def __getattr__(name):
    if name in _FORMAT_PACKAGES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["decode_column", "value_type", "DecodedColumn", "ValueFormat", "FORMATS", "register_format",
           "get_format", "BUILTIN_FORMATS", "ENTRY_POINTS", "format_names", "needs_schema", "format_of_type",
           "schema_types", "KernelFormat", "reader_schema_for", "pinned_reader", "scan_names", "named_reader",
           "column_parts", "column_validity",
           "raise_strict", "nullable_type", "merge_types", "conform", "kernel_source", "null_array", "gather_views",
           "frame_error_text", "PerRegistry",
           "TypedOptions", "open_typed", "decode_values", "empty_typed", "type_values", "reader_schema_of_text", "READER_KEYS", "VALUE_ERRORS", "UNTYPED_TOPICS",
           "FailedValues", "RegistryFormat", "avro", "protobuf", "json", "registry",
           "ValueShape", "DEFAULT_MAX_DEPTH", "TIME_UNITS", "ADDITIONAL_PROPERTIES", "EXTRAS_FIELD",
           "count_errors", "field_error_text", "error_texts"]
