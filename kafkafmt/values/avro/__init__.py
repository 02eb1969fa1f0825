"""Avro values: schemas, plans compiled once per (writer, reader) pair, JSON text."""
