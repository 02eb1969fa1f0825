#!/usr/bin/env python3
"""Atheris harness: the JSON kernel (kafkafmt._native.jsontext) through
kafkafmt.values._formats.decode_column, on hostile JSON texts (issue 24).

Input: ``sel byte, then values`` -- each value ``uint16 length (0xFFFF: null), bytes``. ``sel %
len(TARGETS)`` picks the target: a JSON Schema (``{}``: any JSON as its text; a typed object with
nested objects, arrays, maps, enums, date-times; a closed object) or an Arrow schema, read with
format "json" (bit 7 of sel: "json-schema", the values framed with 0x00 and a schema id).

What counts as a finding: any exception, an Arrow result that does not validate, a row that is
neither decoded, nor null with an error, nor a null input; a row that decodes differently alone;
and the differential against ``json.loads``: a row kafkafmt decodes that json.loads refuses, and,
for the ``{}`` target, a row json.loads reads (UTF-8, no duplicate keys, no lone surrogates) that
kafkafmt refuses or reads as other JSON; for the typed targets, a decoded row whose fields differ
from json.loads' (by the schema: timestamps, dates, enums and maps compared by value).

    python fuzz/fuzz_json.py --seed fuzz/corpus/json
    python fuzz/fuzz_json.py fuzz/corpus/json -max_total_time=60
"""
from __future__ import annotations

import datetime
import json
import math
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

warnings.simplefilter("ignore")

import numpy as np  # noqa: E402,F401  (imported before instrumentation)
import pyarrow as pa  # noqa: E402
from typedfuzz import Finding, check_rows, join, main as run, split  # noqa: E402

TYPED = {"type": "object", "properties": {
    "i": {"type": "integer"}, "n": {"type": ["number", "null"]}, "s": {"type": "string"}, "b": {"type": "boolean"},
    "a": {"type": "array", "items": {"type": "integer"}}, "o": {"$ref": "#/definitions/O"},
    "m": {"type": "object", "additionalProperties": {"type": "string"}}, "e": {"enum": ["X", "Y"]},
    "t": {"type": "string", "format": "date-time"}, "d": {"type": "string", "format": "date"}, "any": {}},
    "required": ["i"], "definitions": {"O": {"type": "object", "properties": {"x": {"type": "string"},
                                                                             "o": {"$ref": "#/definitions/O"}}}}}
CLOSED = {"type": "object", "properties": {"k": {"type": "integer"}}, "additionalProperties": False}
ARROW = pa.schema([pa.field("u", pa.uint8(), False), ("f", pa.float32()), ("l", pa.list_(pa.int16())),
                   ("ts", pa.timestamp("ms")), ("bin", pa.binary())])
TARGETS = [{}, TYPED, CLOSED, ARROW]


def _same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b and type(a) is type(b) or (isinstance(a, int) and isinstance(b, int) and a == b)


def _loads(raw):
    """json.loads as kafkafmt's contract reads it: UTF-8, no duplicate keys, no lone surrogates;
    None when it refuses (the reason: 'refused' or 'outside')."""
    try:
        text = raw.decode("utf-8")
    except UnicodeError:
        return None, "outside"
    dup = []

    def hook(pairs):
        dup.append(len(pairs) != len({k for k, _ in pairs}))
        return dict(pairs)
    try:
        doc = json.loads(text, object_pairs_hook=hook)
    except ValueError:
        return None, "refused"
    if any(dup):
        return None, "outside"
    try:
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except UnicodeError:
        return None, "outside"
    return doc, None


def _typed_ok(row, doc):
    """A decoded TYPED row agrees with json.loads' document."""
    if not isinstance(doc, dict):
        return False
    for k in ("i", "n", "s", "b", "a"):
        if not _same(row[k], doc.get(k)) and not (k in ("i", "a") and _ints(row[k], doc.get(k))):
            if not (k == "n" and isinstance(doc.get(k), int) and row[k] == float(doc[k])):
                return False
    if row["e"] != doc.get("e"):
        return False
    if dict(row["m"] or []) != (doc.get("m") or {}) and not (row["m"] is None and doc.get("m") is None):
        return False
    if (row["any"] is None) != (doc.get("any") is None) or (row["any"] is not None and
                                                             not _same(json.loads(row["any"]), doc["any"])):
        return False
    if (row["t"] is None) != (doc.get("t") is None) or (row["d"] is None) != (doc.get("d") is None):
        return False
    if row["d"] is not None and row["d"] != datetime.date.fromisoformat(doc["d"]):
        return False
    return True


def _ints(a, b):
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_ints(x, y) for x, y in zip(a, b))
    return a is not None and b is not None and float(a) == float(b)


def check(data):
    from kafkafmt.values import decode_column

    sel, values = split(data)
    target = TARGETS[sel % len(TARGETS)]
    framed = bool(sel & 0x80) and not isinstance(target, pa.Schema)
    if framed:
        values = [None if v is None else b"\x00\x00\x00\x00\x07" + v for v in values]
    fmt = "json-schema" if framed else "json"
    column = pa.array(values, pa.binary())
    dec = decode_column(column, format=fmt, reader_schema=target)
    errors = check_rows(values, dec, null_ok=target == {})
    rows = dec.values.to_pylist()
    for i in range(min(len(values), 8)):
        one = decode_column(column[i:i + 1], format=fmt, reader_schema=target)
        if one.error.to_pylist()[0] != errors[i] or not _same(one.values.to_pylist(), rows[i:i + 1]):
            raise Finding(f"row {i} decodes differently alone")
    for i, v in enumerate(values):
        if v is None:
            continue
        doc, why = _loads(v[5:] if framed else v)
        if why == "refused" and errors[i] is None:
            raise Finding(f"row {i}: kafkafmt decoded what json.loads refuses")
        if why is not None or errors[i] is not None:
            if target == {} and why is None:
                raise Finding(f"row {i}: json.loads reads it, kafkafmt says {errors[i]!r}")
            continue
        if target == {}:
            if (rows[i] is None) != (doc is None) or (rows[i] is not None and not _same(json.loads(rows[i]), doc)):
                raise Finding(f"row {i}: {rows[i]!r} vs json.loads' {doc!r}")
        elif target is TYPED and not _typed_ok(rows[i], doc):
            raise Finding(f"row {i}: {rows[i]!r} vs json.loads' {doc!r}")


def seeds():
    typed = [json.dumps({"i": i, "n": [None, 1.5, 2][i % 3], "s": "é\n" * i, "b": i % 2 == 0, "a": list(range(i)),
                         "o": {"x": "y", "o": {"x": "z"}}, "m": {"k": "v"}, "e": "XY"[i % 2],
                         "t": "2024-01-01T00:00:00.5+02:00", "d": "2024-02-29", "any": [i, {"q": None}]}).encode()
             for i in range(4)]
    anyj = [b'{"a": [1, 2.5e3, -0, "\\u00e9\\ud83d\\ude00"], "b": {"c": null, "d": true}}', b"NaN", b"-Infinity",
            b'"x"', b"[]", b"  {}  "]
    closed = [b'{"k": 1}', b'{"k": 1, "j": 2}', b'{}']
    arrow = [b'{"u": 255, "f": 1e40, "l": [1, -32768], "ts": "2024-01-01 10:00", "bin": "AAE="}', b'{"u": 256}']
    return [join(0, anyj + [None]), join(1, typed + [b'{"i": "x"}']), join(0x81, typed), join(2, closed),
            join(3, arrow), join(0x80, anyj)]


def main():
    run(seeds, check, ["kafkafmt.values._formats", "kafkafmt.values.json._format", "kafkafmt.values.json._plan",
                       "kafkafmt.values.json._schema"])


if __name__ == "__main__":
    main()
