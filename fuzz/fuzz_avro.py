#!/usr/bin/env python3
"""Atheris harness: the Avro kernel (kafkafmt._native.avro) through kafkafmt.values._formats.decode_column,
on hostile values in the Schema Registry's wire format (issue 23).

Input: ``sel byte, then values`` -- each value ``uint16 length (0xFFFF: null), bytes`` (the bytes
carry the framing: 0x00, big-endian schema id, Avro body). ``sel % len(PAIRS)`` picks a (writer,
reader) schema pair: schema id 1 is the writer, id 2 the reader itself, any other id is unknown;
bit 7 of sel picks ``trailing="ignore"``.

What counts as a finding: any exception (decode_column must never raise on values), an Arrow
result that does not validate (``validate(full=True)``), a row that is neither decoded, nor null
with an error, nor a null input; a row whose result differs when it is decoded alone (the rollback
of a failed row must leave the others untouched); for the pairs without logical types, a value
kafkafmt decodes that fastavro does not decode to the same thing.

    python fuzz/fuzz_avro.py --seed fuzz/corpus/avro      # write seeds (values written by fastavro)
    python fuzz/fuzz_avro.py fuzz/corpus/avro -max_total_time=60
"""
from __future__ import annotations

import io
import json
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

warnings.simplefilter("ignore")

import numpy as np  # noqa: E402,F401  (imported before instrumentation)
import pyarrow  # noqa: E402,F401
from typedfuzz import Finding, check_rows, join, main as run, split  # noqa: E402

NODE = {"type": "record", "name": "Node", "fields": [
    {"name": "v", "type": "int"}, {"name": "kids", "type": {"type": "array", "items": "Node"}},
    {"name": "next", "type": ["null", "Node"]}]}

EVERY = {"type": "record", "name": "Every", "fields": [
    {"name": "n", "type": "null"}, {"name": "b", "type": "boolean"}, {"name": "i", "type": "int"},
    {"name": "l", "type": "long"}, {"name": "f", "type": "float"}, {"name": "d", "type": "double"},
    {"name": "by", "type": "bytes"}, {"name": "s", "type": "string"},
    {"name": "fx", "type": {"type": "fixed", "name": "F3", "size": 3}},
    {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}},
    {"name": "arr", "type": {"type": "array", "items": ["null", "long"]}},
    {"name": "m", "type": {"type": "map", "values": {"type": "array", "items": "string"}}},
    {"name": "u", "type": ["int", "string",
                           {"type": "record", "name": "In", "fields": [{"name": "x", "type": "int"}]}]},
    {"name": "empty", "type": {"type": "array", "items": {"type": "record", "name": "Z", "fields": []}}}]}

LOGICAL = {"type": "record", "name": "Logical", "fields": [
    {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
    {"name": "decf", "type": {"type": "fixed", "name": "D16", "size": 16, "logicalType": "decimal",
                              "precision": 38, "scale": 0}},
    {"name": "big", "type": {"type": "bytes", "logicalType": "decimal", "precision": 60, "scale": 3}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "tu", "type": {"type": "long", "logicalType": "time-micros"}},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "dur", "type": {"type": "fixed", "name": "Dur", "size": 12, "logicalType": "duration"}}]}

V1 = {"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "int"}, {"name": "note", "type": "string"},
    {"name": "st", "type": {"type": "enum", "name": "St", "symbols": ["NEW", "PAID", "GONE"]}},
    {"name": "old", "type": {"type": "map", "values": NODE}}, {"name": "p", "type": "float"}]}
V3 = {"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "long"}, {"name": "comment", "type": "string", "aliases": ["note"]},
    {"name": "st", "type": {"type": "enum", "name": "St", "symbols": ["PAID", "NEW"], "default": "NEW"}},
    {"name": "p", "type": "double"}, {"name": "tags", "type": {"type": "array", "items": "string"}, "default": ["x"]},
    {"name": "raw", "type": "bytes", "default": "\u00ff"}]}

#: (writer, reader, fastavro differential)
PAIRS = [(EVERY, EVERY, True), (NODE, NODE, False), (LOGICAL, LOGICAL, False), (V1, V3, False),
         ("bytes", "bytes", False), ({"type": "array", "items": "null"}, {"type": "array", "items": "null"}, True),
         (["null", "string", "long"], ["null", "string", "long"], True)]


def _fastavro_like(v, t):
    """kafkafmt's to_pylist value as fastavro returns it (maps as dicts, general unions unwrapped)."""
    if v is None:
        return None
    if isinstance(t, list):
        nonnull = [b for b in t if b != "null"]
        if len(nonnull) == 1:
            return _fastavro_like(v, nonnull[0])
        for i, b in enumerate(nonnull):
            if v.get(f"member{i}") is not None:
                return _fastavro_like(v[f"member{i}"], b)
        return None
    if isinstance(t, dict):
        k = t["type"]
        if k == "record":
            return {f["name"]: _fastavro_like(v[f["name"]], f["type"]) for f in t["fields"]}
        if k == "array":
            return [_fastavro_like(x, t["items"]) for x in v]
        if k == "map":
            return {key: _fastavro_like(x, t["values"]) for key, x in v}
    return v


def _same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (a != a and b != b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def check(data):
    import pyarrow as pa
    from kafkafmt.values.avro import storage_values
    from kafkafmt.values.registry import InlineSchemaRegistry
    from kafkafmt.values import decode_column

    sel, values = split(data)
    writer, reader, differential = PAIRS[sel % len(PAIRS)]
    trailing = "ignore" if sel & 0x80 else "error"
    reg = InlineSchemaRegistry({1: json.dumps(writer), 2: json.dumps(reader)})
    column = pa.array(values, pa.binary())
    dec = decode_column(column, format="avro", registry=reg, reader_schema=2, trailing=trailing)
    if len(dec.schema_id) != len(values):
        raise Finding("schema ids' length differs from the input's")
    can_be_null = reader == "null" or (isinstance(reader, list) and "null" in reader)
    errors = check_rows(values, dec, null_ok=can_be_null)
    rows = storage_values(dec.values).to_pylist()      # temporal types as integers: any value converts
    for i in range(min(len(values), 16)):      # alone, each row decodes the same
        one = decode_column(column[i:i + 1], format="avro", registry=reg, reader_schema=2, trailing=trailing)
        if one.error.to_pylist()[0] != errors[i] or not _same(storage_values(one.values).to_pylist(), rows[i:i + 1]):
            raise Finding(f"row {i} decodes differently alone")
    if differential:
        from fastavro import parse_schema, schemaless_reader
        parsed = parse_schema(json.loads(json.dumps(writer)))
        for i, v in enumerate(values):
            if errors[i] is not None or v is None or v[1:5] != b"\x00\x00\x00\x01":
                continue
            try:
                theirs = schemaless_reader(io.BytesIO(v[5:]), parsed, None)
            except Exception as exc:  # noqa: BLE001
                raise Finding(f"row {i}: kafkafmt decoded what fastavro rejects ({exc!r})") from None
            if not _same(_fastavro_like(rows[i], reader), theirs):
                raise Finding(f"row {i}: {rows[i]!r} vs fastavro's {theirs!r}")


def seeds():
    """Valid values of every pair, written by fastavro, plus some framing variants."""
    import decimal
    import uuid

    from fastavro import parse_schema, schemaless_writer

    def body(schema, value):
        out = io.BytesIO()
        schemaless_writer(out, parse_schema(json.loads(json.dumps(schema))), value)
        return out.getvalue()

    def node(n):
        value = None
        for i in range(n):
            value = {"v": i, "kids": [{"v": -1, "kids": [], "next": None}] * (i % 2), "next": value}
        return value

    every = [{"n": None, "b": i % 2 == 0, "i": i, "l": -i * 10 ** 10, "f": 1.5, "d": -2.25, "by": bytes(range(i)),
              "s": "é" * i, "fx": b"abc", "e": "ABC"[i % 3], "arr": [None, i], "m": {"k": ["x"] * i},
              "u": [i, "s", ("In", {"x": i})][i % 3], "empty": [{}] * i} for i in range(4)]
    logical = [{"dec": decimal.Decimal("-1234567.89"), "decf": decimal.Decimal(10 ** 37), "big": decimal.Decimal("1.5"),
                "day": 19000, "tm": 3_600_000, "tu": 1, "ts": 1_700_000_000_000_000, "uid": str(uuid.UUID(int=7)),
                "dur": b"\x01\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00"}]
    v1 = [{"id": i, "note": "n", "st": ["NEW", "PAID", "GONE"][i % 3], "old": {"a": node(2)}, "p": 0.5}
          for i in range(3)]
    framed = {
        0: [body(EVERY, r) for r in every], 1: [body(NODE, node(n)) for n in (1, 4)],
        2: [body(LOGICAL, r) for r in logical],
        3: [body(V1, r) for r in v1], 4: [b"", b"\x00\xff"], 5: [body(PAIRS[5][0], [None] * n) for n in (0, 3)],
        6: [body(PAIRS[6][0], v) for v in (None, "x", 5)],
    }
    out = []
    for sel, bodies in framed.items():
        vals = [b"\x00\x00\x00\x00\x01" + b for b in bodies]
        out.append(join(sel, vals))
        odd = [None, b"\x00\x00\x00\x00\x02" + bodies[0], b"junk", b"\x00\x00\x00\x00\x09"]
        out.append(join(sel | 0x80, vals + odd))
    return out


def main():
    run(seeds, check, ["kafkafmt.values._formats", "kafkafmt.values.avro._plan", "kafkafmt.values.avro._schema",
                       "kafkafmt.values.registry"], before=["fastavro"])


if __name__ == "__main__":
    main()
