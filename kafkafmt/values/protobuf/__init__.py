"""Protobuf: .proto schemas compiled at run time, plans for the kernel, the "protobuf" and "protobuf-raw"
formats."""
from __future__ import annotations

from kafkafmt.values.protobuf._schema import (ProtoSchema, compile_registered, compile_text, parse_proto,
                                              well_known_files, descriptor_of, MAX_REFERENCE_DEPTH)
from kafkafmt.values.protobuf._plan import (ProtoPlan, MessagesPlan, MAX_COLUMNS, WRAPPERS, JSON_TYPES)
from kafkafmt.values.protobuf._format import (ProtobufFormat, RawProtobufFormat, reader_messages, resolve_reader,
                                              arrow_json)

__all__ = ["ProtoSchema", "compile_registered", "compile_text", "parse_proto", "well_known_files",
           "descriptor_of", "MAX_REFERENCE_DEPTH", "ProtoPlan", "MessagesPlan", "JSON_TYPES",
           "MAX_COLUMNS", "WRAPPERS", "ProtobufFormat", "RawProtobufFormat", "reader_messages", "resolve_reader",
           "arrow_json"]
