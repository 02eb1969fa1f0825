"""Avro: schemas (names, references, logical types), plans compiled once per (writer, reader) pair, and
decoded values as kafka-avro-console-consumer's JSON text, and the ``"avro"`` format."""
from __future__ import annotations

from kafkafmt.values.avro._schema import (AvroType, Field, parse_schema, parse_registered, encode_default,
                                          names_match, can_promote, PRIMITIVES, zigzag, field_aliases)
from kafkafmt.values.avro._plan import (AvroPlan, MAX_COLUMNS, MAX_NODES, ZERO_ITEMS_CAP, Column)
from kafkafmt.values.avro._json import (avro_json, avro_json_array, to_json_data, storage_values, java_number,
                                        json_string)
from kafkafmt.values.avro._format import AvroFormat

__all__ = ["AvroType", "Field", "parse_schema", "parse_registered", "encode_default", "names_match",
           "can_promote", "PRIMITIVES", "zigzag", "field_aliases", "AvroPlan", "MAX_COLUMNS", "MAX_NODES",
           "ZERO_ITEMS_CAP", "Column", "avro_json", "avro_json_array", "to_json_data", "storage_values",
           "java_number", "json_string", "AvroFormat"]
