"""Protobuf: .proto schemas compiled at run time, plans for the kernel, the "protobuf" and "protobuf-raw"
formats."""
from __future__ import annotations

from kafkafmt.values.protobuf._schema import (ProtoSchema, compile_registered, compile_text, parse_proto,
                                              well_known_files, descriptor_of, MAX_REFERENCE_DEPTH)
from kafkafmt.values.protobuf._plan import (ProtoPlan, MessagesPlan, MAX_COLUMNS)
from kafkafmt.values.protobuf._wkt import WRAPPERS, JSON_TYPES, message_field_name
from kafkafmt.values.protobuf._json import protobuf_json
from kafkafmt.values.protobuf._format import (ProtobufFormat, RawProtobufFormat, reader_messages, resolve_reader,
                                              arrow_json)

__all__ = ["ProtoSchema", "compile_registered", "compile_text", "parse_proto", "well_known_files",
           "descriptor_of", "MAX_REFERENCE_DEPTH", "ProtoPlan", "MessagesPlan", "JSON_TYPES",
           "MAX_COLUMNS", "WRAPPERS", "ProtobufFormat", "RawProtobufFormat", "reader_messages", "resolve_reader", "message_field_name", "protobuf_json",
           "arrow_json"]
