"""The Avro text kernel (`avro_json_array`, what dump and export print) gives exactly the texts of the Python
printer (`avro_json`, kafka-avro-console-consumer's): random values of every type it prints -- strings with
quotes, control characters and characters beyond the BMP, bytes, fixed, enums, maps, nested records, unions
of null and a type, floats and doubles of any bit pattern, ints and longs at their limits -- and the types it
leaves to the Python printer (decimals, unions of several types)."""
import io
import json
import struct

import fastavro
import numpy as np
import pyarrow as pa
import pytest

from kafkafmt.values import decode_column
from kafkafmt.values.avro import avro_json, avro_json_array, parse_schema
from kafkafmt.values.registry import InlineSchemaRegistry

ITEM = {"type": "record", "name": "Item", "fields": [{"name": "sku", "type": "string"},
                                                     {"name": "price", "type": ["null", "double"]}]}
EVERY = {"type": "record", "name": "Every", "namespace": "t", "fields": [
    {"name": "i", "type": "int"}, {"name": "l", "type": "long"}, {"name": "f", "type": "float"},
    {"name": "d", "type": "double"}, {"name": "b", "type": "boolean"}, {"name": "s", "type": "string"},
    {"name": "by", "type": "bytes"}, {"name": "fx", "type": {"type": "fixed", "name": "F4", "size": 4}},
    {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B_b", "C"]}},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "items", "type": {"type": "array", "items": ITEM}},
    {"name": "m", "type": {"type": "map", "values": ["null", "long"]}},
    {"name": "opt", "type": ["null", "string"]}, {"name": "nested", "type": ["null", {
        "type": "record", "name": "N", "fields": [{"name": "x", "type": {"type": "array", "items": "float"}}]}]}]}
TEXTS = ["", "plain", 'quo"te', "back\\slash", "tab\there", "nl\n", "\x00\x01\x1f\x7f", "é ü ß", "😀 and 𝄞",
         "\u2028", "mixed \"😀\"\n"]


def _random(rng, i):
    f32 = np.array([rng.integers(0, 2 ** 32)], np.uint32).view(np.float32)[0]
    f64 = np.array([rng.integers(0, 2 ** 63)], np.int64).view(np.float64)[0]
    if f32 != f32:
        f32 = np.float32(0.1)
    if f64 != f64 or abs(f64) == np.inf:
        f64 = 1e300 if i % 2 else -1e-300
    return {"i": int(rng.integers(-2 ** 31, 2 ** 31)), "l": int(rng.integers(-2 ** 63, 2 ** 63 - 1)),
            "f": float(f32) if i % 3 else [0.5, -0.0, 1e-40, 3.4e38][i % 4], "d": float(f64) if i % 3 else
            [0.1, 1e23, 5e-324, 1e7, 0.001][i % 5], "b": bool(i % 2), "s": TEXTS[i % len(TEXTS)],
            "by": bytes(rng.integers(0, 256, i % 7, dtype=np.uint8)), "fx": struct.pack("<i", i * 7919),
            "e": ["A", "B_b", "C"][i % 3], "ts": int(rng.integers(-2 ** 40, 2 ** 40)), "day": i - 500,
            "items": [{"sku": TEXTS[(i + j) % len(TEXTS)], "price": None if j % 2 else round(i * 0.37 + j, 2)}
                      for j in range(i % 4)],
            "m": {TEXTS[(i + j) % len(TEXTS)] + str(j): (None if j == 1 else j * i) for j in range(i % 3)},
            "opt": None if i % 2 else TEXTS[i % len(TEXTS)], "nested": None if i % 5 == 0 else
            {"x": [float(np.float32(i / 7)), 1e-3, 123456789.0][: i % 4]}}


def _decoded(schema, records):
    parsed = fastavro.parse_schema(schema)
    values = []
    for r in records:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, r)
        values.append(b"\x00\x00\x00\x00\x01" + out.getvalue())
    values.append(None)
    reg = InlineSchemaRegistry({1: json.dumps(schema)})
    dec = decode_column(pa.array(values, pa.binary()), format="avro", registry=reg, reader_schema=1)
    assert dec.error_count == 0
    return dec


def test_the_kernel_prints_what_the_python_printer_prints():
    rng = np.random.default_rng(36)
    dec = _decoded(EVERY, [_random(rng, i) for i in range(3000)])
    want = avro_json(dec.values, dec.reader)
    got = avro_json_array(dec.values, dec.reader)
    assert got.to_pylist() == want and got.null_count == 1
    assert dec.json() == want                            # the format prints through the kernel
    sliced = dec.values.slice(1000, 700)                  # an offset into every buffer
    assert avro_json_array(sliced, dec.reader).to_pylist() == want[1000:1700]


@pytest.mark.parametrize("field", [
    {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
    {"name": "u", "type": ["null", "string", "long"]}])
def test_types_the_kernel_leaves_to_python_print_alike(field):
    schema = {"type": "record", "name": "R", "fields": [field, {"name": "n", "type": "long"}]}
    import decimal
    records = [{"dec": decimal.Decimal(f"{i}.{i % 100:02d}"), "u": [None, "x", i][i % 3], "n": i}
               for i in range(50)]
    dec = _decoded(schema, [{k: r[k] for k in ("n", field["name"])} for r in records])
    assert avro_json_array(dec.values, dec.reader).to_pylist() == avro_json(dec.values, dec.reader)
    assert parse_schema(schema).kind == "record"
