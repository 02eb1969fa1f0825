"""Typed values (issue 24): JSON texts to Arrow columns.

kafkafmt's ``decode_column`` (the Cython JSON kernel, one call per column, the Arrow type known
before reading) against ``json.loads`` per value building the same Arrow column with
``pyarrow.array(dicts, type=<the same struct type>)`` (maps converted to the (key, value) lists
pyarrow takes). Two records: FLAT, 10 fields (as the Avro benchmark's, the timestamp as text);
NESTED, an order with a nested object, an array of objects, an array of strings and an object of
integers (a map). Plain JSON (``format="json"`` with the Arrow schema) and the registry's JSON
Schema wire format (``format="json-schema"``, 5-byte framing, the type from the JSON Schema).
Values are written once per process by ``json.dumps`` (compact, as confluent-kafka's
JSONSerializer writes them). kafkafmt is pinned to one thread (common.py). Targets: >= 5x
``json.loads`` (``track_ratio_*``), >= 150 MB/s of JSON (``track_mb_per_second``).
"""

from __future__ import annotations

import json

from . import common
from .common import register_ratio, require_kafkafmt

RECORDS = {"flat": 100_000, "nested": 30_000}
PARAMS = ["flat", "nested", "flat-schema", "nested-schema"]
_CACHE = {}

SCHEMAS = {
    "flat": {"type": "object", "properties": {
        "id": {"type": "integer"}, "name": {"type": "string"}, "qty": {"type": "integer"},
        "price": {"type": "number"}, "ok": {"type": "boolean"}, "ts": {"type": "string"},
        "category": {"type": "string"}, "score": {"type": "number"}, "parent": {"type": ["integer", "null"]},
        "code": {"type": "integer"}},
        "required": ["id", "name", "qty", "price", "ok", "ts", "category", "score", "code"]},
    "nested": {"type": "object", "properties": {
        "id": {"type": "integer"},
        "customer": {"type": "object", "properties": {"name": {"type": "string"},
                                                      "email": {"type": ["string", "null"]},
                                                      "tier": {"type": "integer"}}, "required": ["name", "tier"]},
        "items": {"type": "array", "items": {"type": "object", "properties": {
            "sku": {"type": "string"}, "qty": {"type": "integer"}, "price": {"type": "number"}},
            "required": ["sku", "qty", "price"]}},
        "tags": {"type": "array", "items": {"type": "string"}},
        "attrs": {"type": "object", "additionalProperties": {"type": "integer"}}},
        "required": ["id", "customer", "items", "tags", "attrs"]},
}


def _record(kind, i):
    if kind == "flat":
        return {"id": i, "name": f"name-{i % 1000}", "qty": i % 100, "price": i * 0.25, "ok": i % 2 == 0,
                "ts": f"2026-01-01T00:00:{i % 60:02d}Z", "category": "electronics", "score": 0.5,
                "parent": None if i % 3 else i - 1, "code": -i}
    return {"id": i, "customer": {"name": f"customer-{i % 500}", "email": None if i % 4 else f"c{i}@example.com",
                                  "tier": i % 3},
            "items": [{"sku": f"SKU-{(i + j) % 997}", "qty": j + 1, "price": 9.99 * (j + 1)} for j in range(i % 4 + 1)],
            "tags": ["new", "promo", "gift"][: i % 3], "attrs": {f"k{j}": i * j for j in range(i % 3 + 1)}}


def data(param):
    """(values, pyarrow binary array, reader schema, format, arrow type, JSON bytes)."""
    if param in _CACHE:
        return _CACHE[param]
    import pyarrow as pa
    from kafkafmt.values import value_type
    kind, _, framed = param.partition("-")
    header = b"\x00\x00\x00\x00\x01" if framed else b""
    texts = [json.dumps(_record(kind, i), separators=(",", ":")).encode() for i in range(RECORDS[kind])]
    values = [header + t for t in texts]
    fmt = "json-schema" if framed else "json"
    schema = SCHEMAS[kind]
    arrow_type = value_type("json-schema", reader_schema=schema)
    reader = schema if framed else pa.schema(list(arrow_type))
    if not framed:
        assert value_type("json", reader_schema=reader) == arrow_type
    _CACHE[param] = (values, pa.array(values, pa.binary()), reader, fmt, arrow_type, sum(map(len, texts)))
    return _CACHE[param]


def kafkafmt_json(param):
    from kafkafmt.values import decode_column
    values, arr, reader, fmt, arrow_type, nbytes = data(param)
    return lambda: decode_column(arr, format=fmt, reader_schema=reader).values


def json_loads(param):
    import pyarrow as pa
    values, arr, reader, fmt, arrow_type, nbytes = data(param)
    skip = 5 if fmt == "json-schema" else 0
    nested = param.startswith("nested")

    def run(values=values, loads=json.loads):
        rows = [loads(v[skip:]) for v in values]
        if nested:
            for r in rows:
                r["attrs"] = list(r["attrs"].items())
        return pa.array(rows, arrow_type)
    return run


def check_same(param, n=2000):
    from kafkafmt.values import decode_column
    values, arr, reader, fmt, arrow_type, nbytes = data(param)
    ours = decode_column(arr[:n], format=fmt, reader_schema=reader)
    assert ours.error_count == 0
    _CACHE[param] = (values[:n], arr[:n], reader, fmt, arrow_type, nbytes)
    try:
        theirs = json_loads(param)()
    finally:
        _CACHE[param] = (values, arr, reader, fmt, arrow_type, nbytes)
    assert ours.values.to_pylist() == theirs.to_pylist(), f"{param}: kafkafmt and json.loads disagree"


register_ratio("json_vs_loads", "JSON → Arrow × json.loads", PARAMS,
               lambda p: (json_loads(p), kafkafmt_json(p)), family="json",
               track="bench_json.JsonRatios.track_ratio_vs_json_loads")


def mb_per_second(param, budget_s=None):
    t, = common.interleaved_medians([kafkafmt_json(param)], budget_s)
    return round(data(param)[5] / t / 1e6, 1)


common.register_value("json_mb_s", "kafkafmt JSON MB/s (one core)", PARAMS, mb_per_second, "MB/s",
                      family="json", track="bench_json.JsonRatios.track_mb_per_second")


class Json:
    """Times of each contender."""

    params = PARAMS
    param_names = ["record"]
    timeout = 600

    def setup(self, param):
        require_kafkafmt()
        common.note_quick()
        check_same(param)
        self.kafkafmt, self.loads = kafkafmt_json(param), json_loads(param)

    def time_kafkafmt(self, param):
        self.kafkafmt()

    def time_json_loads(self, param):
        self.loads()


class JsonRatios:
    """time(json.loads) / time(kafkafmt), interleaved in one process; MB/s of JSON."""

    params = PARAMS
    param_names = ["record"]
    timeout = 600

    def setup(self, param):
        require_kafkafmt()
        common.note_quick()
        check_same(param)

    def track_ratio_vs_json_loads(self, param):
        return common.measure_registered("json_vs_loads", param)

    track_ratio_vs_json_loads.unit = "ratio"

    def track_mb_per_second(self, param):
        return mb_per_second(param)

    track_mb_per_second.unit = "MB/s"
