"""Typed keys and values: the value-format table, the typed options, Avro, Protobuf, JSON and the schema
registries."""
