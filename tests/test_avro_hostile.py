"""Hostile and corrupt Avro values: every one is a per-record error (never a crash, an over-read, a
hang or unbounded memory), the rows around it decode as fastavro decodes them, and what kafkafmt
accepts fastavro accepts too, with the same value.
"""
import io
import json
import os
import random
import struct
import time

import fastavro
import pyarrow as pa
import pytest

from kafkafmt.values.avro import ZERO_ITEMS_CAP
from kafkafmt.values.avro import parse_schema, zigzag
from kafkafmt.errors import ValueDecodeError
from kafkafmt.values.registry import InlineSchemaRegistry
from kafkafmt.values import decode_column

from avro_support import expected_pylist, fastavro_read, plain, same
from test_avro import EVERYTHING, everything

HEADER = b"\x00\x00\x00\x00\x01"


def decode(schema, bodies, **kw):
    reg = InlineSchemaRegistry({1: json.dumps(schema)})
    framed = [None if b is None else HEADER + b for b in bodies]
    return decode_column(pa.array(framed, pa.binary()), format="avro", registry=reg, reader_schema=1, **kw)


def rec(*fields):
    return {"type": "record", "name": "R", "fields": [{"name": f"f{i}", "type": t} for i, t in enumerate(fields)]}


def fastavro_fails(schema, body):
    try:
        fastavro_read(body, schema)
    except Exception:  # noqa: BLE001 - fastavro raises EOFError, IndexError, UnicodeDecodeError...
        return True
    return False


# (name, schema, body, words the error names, fastavro rejects it too)
CASES = [
    ("huge count of nulls", rec({"type": "array", "items": "null"}), zigzag(2 ** 62), "zero-byte", None),
    ("huge count of longs", rec({"type": "array", "items": "long"}), zigzag(2 ** 62) + b"\x02", "block count", True),
    ("huge negative count", rec({"type": "array", "items": "long"}), zigzag(-(2 ** 63)) + b"\x00", "block count", None),
    ("huge map", rec({"type": "map", "values": "null"}), zigzag(2 ** 40) + b"\x02a", "block count", True),
    ("string past the end", rec("string"), zigzag(2 ** 62) + b"abc", "past the end", True),
    ("short string past the end", rec("string"), zigzag(5) + b"abc", "past the end", True),
    ("short item past the end", rec({"type": "array", "items": "string"}), zigzag(1) + zigzag(3) + b"ab",
     "past the end", True),
    ("item beyond 32 bits", rec({"type": "array", "items": "int"}), zigzag(1) + zigzag(2 ** 31), "32-bit", None),
    ("truncated float", rec("float"), b"\x00" * 3, "ends inside", True),
    ("boolean item 2", rec({"type": "array", "items": "boolean"}), zigzag(1) + b"\x02", "boolean", None),
    ("bytes past the end", rec("bytes"), zigzag(4) + b"abc", "past the end", True),
    ("negative length", rec("string"), zigzag(-3) + b"abc", "negative length", None),
    ("varint of 11 bytes", rec("long"), b"\xff" * 10 + b"\x01", "varint", None),
    ("varint beyond 64 bits", rec("long"), b"\xff" * 9 + b"\x7f", "varint", None),
    ("int beyond 32 bits", rec("int"), zigzag(2 ** 40), "32-bit", None),
    ("truncated varint", rec("long"), b"\xff\xff", "ends inside", True),
    ("truncated double", rec("double"), b"\x00" * 7, "ends inside", True),
    ("truncated fixed", rec({"type": "fixed", "name": "F", "size": 8}), b"\x00" * 7, "past the end", True),
    ("union index out of range", rec(["null", "int"]), zigzag(2), "union branch index 2", True),
    ("negative union index", rec(["null", "int"]), zigzag(-1), "union branch index -1", True),
    ("enum index out of range", rec({"type": "enum", "name": "E", "symbols": ["A", "B"]}), zigzag(5), "enum index 5",
     True),
    ("boolean byte 2", rec("boolean"), b"\x02", "boolean", None),
    ("time-millis past midnight", rec({"type": "int", "logicalType": "time-millis"}), zigzag(86_400_000), "one day",
     True),
    ("negative time-micros", rec({"type": "long", "logicalType": "time-micros"}), zigzag(-1), "one day", None),
    ("invalid UTF-8", rec("string"), zigzag(2) + b"\xc3\x28", "UTF-8", True),
    ("malformed uuid", rec({"type": "string", "logicalType": "uuid"}), zigzag(3) + b"abc", "uuid", True),
    ("uuid without hyphens", rec({"type": "string", "logicalType": "uuid"}), zigzag(32) + b"0" * 32, "uuid", None),
    ("surrogate in UTF-8", rec("string"), zigzag(3) + b"\xed\xa0\x80", "UTF-8", True),
    ("invalid UTF-8 map key", rec({"type": "map", "values": "int"}), zigzag(1) + zigzag(1) + b"\xff\x00\x00", "UTF-8",
     True),
    ("duration months above 2^31", rec({"type": "fixed", "name": "D", "size": 12, "logicalType": "duration"}),
     struct.pack("<III", 2 ** 31, 0, 0), "duration", None),
    ("trailing bytes", rec("int"), zigzag(5) + b"\x00\x00", "2 bytes after the end", False),
    ("skipped field past the end", rec("int"), b"", "ends inside", True),
]


@pytest.mark.parametrize("name,schema,body,words,fastavro_too", CASES, ids=[c[0] for c in CASES])
def test_hostile_value_is_a_per_record_error(name, schema, body, words, fastavro_too):
    good = everything_like(schema)
    t0 = time.monotonic()
    dec = decode(schema, [good, body, None, good], trailing="error")
    assert time.monotonic() - t0 < 5
    errors = dec.error.to_pylist()
    assert errors[0] is None and errors[2] is None and errors[3] is None
    assert errors[1] is not None and words in errors[1], errors[1]
    assert dec.values.null_count == 2 and dec.error_count == 1
    expected = expected_pylist([fastavro_read(good, schema)] * 2, parse_schema(json.dumps(schema)))
    assert same(plain(dec.values)[::3], expected)
    dec.values.validate(full=True)
    if fastavro_too is not None:
        assert fastavro_fails(schema, body) == fastavro_too
    with pytest.raises(ValueDecodeError) as exc:
        decode(schema, [good, body], strict=True, file="x.log", offsets=[10, 11], positions=[100, 200],
               trailing="error")
    assert exc.value.offset == 11 and exc.value.file == "x.log" and exc.value.position >= 200
    assert words in str(exc.value)


def everything_like(schema):
    """A valid body for the small schemas above (written by fastavro)."""
    t = schema["fields"][0]["type"]
    sample = {"array": [], "map": {}, "string": "ok", "bytes": b"ok", "long": 7, "int": 7, "double": 1.0, "float": 1.0,
              "boolean": True, "fixed": bytes(t.get("size", 0)) if isinstance(t, dict) else None,
              "enum": "A"}
    kind = t if isinstance(t, str) else ("union" if isinstance(t, list) else t["type"])
    if kind == "union":
        value = 3
    elif isinstance(t, dict) and t.get("logicalType") == "uuid":
        value = "12345678-9abc-def0-1234-56789abcdef0"
    elif isinstance(t, dict) and t.get("logicalType") == "decimal":
        value = __import__("decimal").Decimal("1")
    else:
        value = sample[kind]
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), {"f0": value})
    return out.getvalue()


def test_trailing_bytes_are_ignored_as_confluent_does_and_counted():
    schema = rec("int")
    body = zigzag(5) + b"\x00\x00"
    for dec in (decode(schema, [body, zigzag(6)]), decode(schema, [body, zigzag(6)], trailing="ignore")):
        assert dec.error_count == 0 and dec.trailing_count == 1
        assert dec.values.to_pylist() == [fastavro_read(body, schema), fastavro_read(zigzag(6), schema)]
    strict = decode(schema, [body, zigzag(6)], trailing="error")
    assert strict.error_count == 1 and strict.trailing_count == 0


def test_framing_errors():
    reg = InlineSchemaRegistry({1: json.dumps(rec("int"))})
    values = [b"", b"\x00\x00\x01", b"{\"json\": 1}", b"\x01" + bytes(16) + b"\x02", b"\x00\x00\x00\x00\x09\x02",
              None, b"\x00\x00\x00\x00\x01"]
    dec = decode_column(pa.array(values, pa.binary()), format="avro", registry=reg, reader_schema=1)
    e = dec.error.to_pylist()
    assert "empty value" in e[0] and "shorter than the 5 bytes" in e[1] and "0x7b" in e[2]
    assert "V1 framing" in e[3] and "schema id 9 is not in" in e[4] and e[5] is None
    assert "ends inside" in e[6]
    assert dec.schema_id.to_pylist() == [None, None, None, None, 9, None, 1]


def test_recursion_depth_is_capped():
    """A linked list: unrolled to recursive_fields_max_depth in the Arrow type, what lies deeper kept as
    its JSON text, up to the kernel's nesting limit; a writer-only recursive field is skipped up to that
    limit."""
    node = {"type": "record", "name": "Node", "fields": [
        {"name": "v", "type": "int"}, {"name": "next", "type": ["null", "Node"]}]}

    def chain(n):
        value = None
        for i in range(n):
            value = {"v": i, "next": value}
        return value

    bodies = []
    for n in (1, 3, 5, 6, 20, 200):
        out = io.BytesIO()
        fastavro.schemaless_writer(out, fastavro.parse_schema(node), chain(n))
        bodies.append(out.getvalue())
    dec = decode(node, bodies)
    errors = dec.error.to_pylist()
    assert errors[:5] == [None] * 5 and "nesting deeper than" in errors[5]
    assert plain(dec.values)[2] == fastavro_read(bodies[2], node)
    # the same chains in a field the reader does not have: skipped, up to the nesting limit
    outer_w = {"type": "record", "name": "Outer", "fields": [{"name": "n", "type": node}, {"name": "x", "type": "int"}]}
    outer_r = {"type": "record", "name": "Outer", "fields": [{"name": "x", "type": "int"}]}
    framed = [HEADER + b + zigzag(7) for b in bodies]
    reg = InlineSchemaRegistry({1: json.dumps(outer_w), 2: json.dumps(outer_r)})
    dec = decode_column(pa.array(framed, pa.binary()), format="avro", registry=reg, reader_schema=2)
    errors = dec.error.to_pylist()
    assert errors[:5] == [None] * 5 and "nesting deeper than" in errors[5]
    assert dec.values.to_pylist()[:5] == [{"x": 7}] * 5


def test_zero_byte_items_cap_and_time():
    schema = rec({"type": "array", "items": {"type": "record", "name": "Empty", "fields": []}})
    ok = zigzag(ZERO_ITEMS_CAP) + b"\x00"
    over = zigzag(ZERO_ITEMS_CAP) + zigzag(1) + b"\x00"
    t0 = time.monotonic()
    dec = decode(schema, [ok, over] + [zigzag(2 ** 62)] * 2000)
    assert time.monotonic() - t0 < 5
    e = dec.error.to_pylist()
    assert e[0] is None and len(dec.values.to_pylist()[0]["f0"]) == ZERO_ITEMS_CAP
    assert all(x is not None and "zero-byte" in x for x in e[1:])


def test_negative_block_counts_with_sizes():
    """Blocks written with a negative count and a byte size: read, and skipped by size."""
    schema_w = rec({"type": "array", "items": "long"}, "int")
    schema_r = {"type": "record", "name": "R", "fields": [{"name": "f1", "type": "int"}]}
    items = zigzag(1) + zigzag(2)
    body = zigzag(-2) + zigzag(len(items)) + items + b"\x00" + zigzag(9)
    reg = InlineSchemaRegistry({1: json.dumps(schema_w), 2: json.dumps(schema_r)})
    both = decode_column(pa.array([HEADER + body], pa.binary()), format="avro", registry=reg, reader_schema=1)
    assert both.values.to_pylist() == [fastavro_read(body, schema_w)]
    skipped = decode_column(pa.array([HEADER + body], pa.binary()), format="avro", registry=reg, reader_schema=2)
    assert skipped.values.to_pylist() == [fastavro_read(body, schema_w, schema_r)]
    lying = zigzag(-2) + zigzag(1000) + items + b"\x00" + zigzag(9)
    bad = decode_column(pa.array([HEADER + lying], pa.binary()), format="avro", registry=reg, reader_schema=2)
    assert "block size 1000" in bad.error.to_pylist()[0]


def _without_logical_types(schema):
    if isinstance(schema, dict):
        return {k: _without_logical_types(v) for k, v in schema.items() if k not in ("logicalType",)}
    if isinstance(schema, list):
        return [_without_logical_types(x) for x in schema]
    return schema


def _mutations(body, rng, n):
    for _ in range(n):
        b = bytearray(body)
        k = rng.randrange(5)
        if k == 0 and b:
            b[rng.randrange(len(b))] = rng.randrange(256)
        elif k == 1:
            b = b[:rng.randrange(len(b) + 1)]
        elif k == 2 and b:
            i = rng.randrange(len(b))
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4)))
        elif k == 3 and b:
            i = rng.randrange(len(b))
            del b[i:i + rng.randrange(1, 8)]
        else:
            i = rng.randrange(len(b) + 1)
            b[i:i] = rng.choice([b"\xff" * 10, zigzag(2 ** 62), zigzag(-1), b"\x80" * 11])
        yield bytes(b)


# errors where kafkafmt is stricter than fastavro (documented in kafkafmt.values._formats / the kernel)
STRICTER = ("boolean byte", "32-bit", "precision", "duration", "varint", "negative length", "zero-byte",
            "block count", "bytes after the end", "one day", "uuid",
            "enum index -", "union branch index -")      # fastavro indexes Python lists with negative indexes


def test_mutated_values_against_fastavro():
    """Bytes mutated at random: kafkafmt never raises, and a value it decodes is fastavro's."""
    rng = random.Random(20261124)
    schema = json.loads(json.dumps(EVERYTHING))
    parsed = fastavro.parse_schema(schema)
    bodies = []
    for i in range(10):
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, everything(i))
        bodies.append(out.getvalue())
    mutated = [m for b in bodies for m in _mutations(b, rng, int(os.environ.get("AVRO_MUTATIONS", "150")))]
    dec = decode(schema, mutated, trailing="ignore")
    dec.values.validate(full=True)
    ours = plain(dec.values)
    errors = dec.error.to_pylist()
    reader = parse_schema(json.dumps(schema))
    stripped = _without_logical_types(schema)
    agreed = 0
    for body, got, err in zip(mutated, ours, errors):
        try:
            theirs = fastavro_read(body, schema)
        except (OverflowError, ValueError):
            # valid Avro that fastavro cannot turn into Python objects (a timestamp past year 9999,
            # a uuid string in another form): the value must read without logical types
            theirs = None
            try:
                fastavro_read(body, stripped)
            except Exception:  # noqa: BLE001
                assert err is not None, f"kafkafmt accepted what fastavro rejects: {body!r}"
            else:
                assert err is None or any(w in err for w in STRICTER), err
            continue
        except Exception:  # noqa: BLE001
            theirs = None
        if err is None:
            assert theirs is not None, f"kafkafmt accepted what fastavro rejects: {body!r}"
            got["uid"] = got["uid"].lower()      # kept as written; fastavro's UUID objects print lower case
            assert same(got, expected_pylist([theirs], reader)[0])
            agreed += 1
        elif theirs is not None:
            assert any(w in err for w in STRICTER), err
    assert agreed > 50


def test_leaves_decoded_inline_at_their_limits_equal_fastavro():
    """Fields, items and map values are decoded without a call to the kernel's run when they are
    leaves (strings, numbers, booleans); at the limits of a one-byte varint and of 32 bits, and
    beside the values decoded through run, they equal fastavro's."""
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "s", "type": "string"}, {"name": "i", "type": "int"}, {"name": "l", "type": "long"},
        {"name": "d", "type": "double"}, {"name": "o", "type": ["null", "string"]},
        {"name": "b", "type": "boolean"}, {"name": "f", "type": "float"}, {"name": "big", "type": "int"},
        {"name": "t", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "a", "type": {"type": "array", "items": "string"}},
        {"name": "m", "type": {"type": "map", "values": "long"}},
        {"name": "n", "type": {"type": "array", "items": {"type": "record", "name": "N", "fields": [
            {"name": "x", "type": "int"}, {"name": "y", "type": "double"}]}}}]}
    parsed = fastavro.parse_schema(schema)
    bodies = []
    for k, n in enumerate([-65, -64, -63, -1, 0, 1, 62, 63, 64, 65, 127, 128]):
        text = "é" * (abs(n) // 2) + "x" * (abs(n) % 2)
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, {
            "s": text, "i": n, "l": n * (1 << 40) if k % 3 == 0 else n, "d": n / 7, "o": None if k % 2 else text,
            "b": k % 2 == 0, "f": n / 4, "big": -(2 ** 31) if k % 2 else 2 ** 31 - 1,
            "t": abs(n), "a": [text, "", "x" * abs(n)], "m": {text: n, "k" * abs(n): -n},
            "n": [{"x": n, "y": float(n)}, {"x": -n, "y": -0.5}]})
        bodies.append(out.getvalue())
    dec = decode(schema, bodies, trailing="error")
    assert dec.error_count == 0
    expected = expected_pylist([fastavro_read(b, schema) for b in bodies], parse_schema(json.dumps(schema)))
    assert same(plain(dec.values), expected)
    dec.values.validate(full=True)


def test_resolved_leaves_decoded_inline_equal_fastavro():
    """A writer resolved to a newer reader: an int read as long, enums mapped to the reader's symbols
    (in a field, an array, a union), and the reader's fields the writer lacks filled from their
    defaults -- the inline paths and `run` give fastavro's values."""
    writer = {"type": "record", "name": "R", "fields": [
        {"name": "id", "type": "int"},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}},
        {"name": "es", "type": {"type": "array", "items": "E"}},
        {"name": "u", "type": ["null", "E", "int"]}]}
    reader = {"type": "record", "name": "R", "fields": [
        {"name": "id", "type": "long"},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["C", "B", "A", "D"], "default": "D"}},
        {"name": "es", "type": {"type": "array", "items": "E"}},
        {"name": "u", "type": ["null", "E", "long"]},
        {"name": "country", "type": "string", "default": "NL"},
        {"name": "placed", "type": "long", "default": -5},
        {"name": "big", "type": "long", "default": 1 << 40},
        {"name": "ch", "type": "E", "default": "B"},
        {"name": "note", "type": ["null", "string"], "default": None}]}
    parsed = fastavro.parse_schema(writer)
    bodies = []
    for n in (-65, -64, -1, 0, 63, 64, 1 << 20):
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, {"id": n, "e": "ABC"[n % 3], "es": ["C", "A", "B"][: n % 4],
                                                 "u": [None, "B", n][n % 3]})
        bodies.append(out.getvalue())
    reg = InlineSchemaRegistry({1: json.dumps(writer), 2: json.dumps(reader)})
    framed = [HEADER + b for b in bodies]
    dec = decode_column(pa.array(framed, pa.binary()), format="avro", registry=reg, reader_schema=2)
    assert dec.error_count == 0
    theirs = [fastavro_read(b, writer, reader) for b in bodies]
    assert same(plain(dec.values), expected_pylist(theirs, parse_schema(json.dumps(reader))))
    dec.values.validate(full=True)
