"""Typed values of the Protobuf and JSON formats as JSON text: what the text doors print (``dump``,
``dump --json``, ``export --format jsonl | csv``, `DecodedColumn.json`), the printer both share
(`json_texts`; Protobuf's marks: `kafkafmt.values.protobuf._json`). (Avro prints as
kafka-avro-console-consumer does: `kafkafmt.values.avro._json`.)

**Protobuf** as the proto3 JSON mapping prints a message -- ``MessageToDict(message,
preserving_proto_field_name=True, always_print_fields_with_no_presence=True)``, as Java's
``JsonFormat`` with the same settings (`protobuf_json`):

* field names as the .proto spells them; a field with presence that is not set (a message, an
  ``optional`` field, a oneof's other members) left out, the others printed with their defaults;
* 64-bit integers as strings (``"-12"``), 32-bit ones as numbers; ``float`` as the shortest decimal
  that reads back as the same float; NaN and the infinities as the strings ``"NaN"``,
  ``"Infinity"``, ``"-Infinity"``; bytes in base64;
* enums by name (a number the enum lacks as the number); maps as objects, ``{}`` when empty;
* ``Timestamp`` as RFC 3339 text in UTC with 0, 3, 6 or 9 fractional digits (``...T10:00:00.500Z``),
  ``Duration`` as seconds with 0, 3, 6 or 9 fractional digits and an ``s`` (``"-1.000000500s"``),
  every digit the column holds; ``Struct``, ``Value``, ``ListValue`` and a message kept as JSON text
  past ``recursive_fields_max_depth`` as the JSON they hold;
* a column of several messages: each value as its own message.

**JSON** (``json-schema``, ``json``, ``connect-json``) as ``json.dumps`` prints the document read
(`json_values_json`): fields in the schema's order (a field the document lacks is null), a value
kept as JSON text (``{}`` schemas, unions, a ``$ref`` past the depth) as the JSON it holds, an
object's properties outside its schema (``additionalProperties``) among its own, maps as objects,
NaN and the infinities as ``json.dumps`` writes them (``NaN``: what the producer wrote), bytes in
base64, date-times as ISO 8601 text (``Z`` when in UTC; 6 or 9 fractional digits when not zero).
"""
from __future__ import annotations

import base64
import datetime
import json
import math

import numpy as np

__all__ = ["json_texts", "json_values_json", "arrow_json", "RAW"]

#: a mark: the column holds JSON text, printed as the JSON it holds
RAW = "raw"
_EPOCH = datetime.datetime(1970, 1, 1)
_UNITS = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def _pa():
    import pyarrow as pa

    return pa


# -- the marks: which columns hold JSON text, which struct field holds other properties -----------------

def _spec_marks(spec, t):
    """The marks of a JSON target spec (`kafkafmt.values.json._plan`) over its Arrow type ``t``."""
    pa = _pa()
    if not isinstance(spec, dict):
        return None
    k = spec.get("kind")
    if k == "raw":
        return RAW
    if k == "object" and pa.types.is_struct(t):
        out = {name: _spec_marks(sub, t.field(name).type) for name, sub, _ in spec["fields"]
               if t.get_field_index(name) >= 0}
        if spec.get("extras"):
            out["*"] = spec["extras"]
        return out
    if k == "array" and (pa.types.is_list(t) or pa.types.is_large_list(t)):
        return {"[]": _spec_marks(spec["items"], t.value_type)}
    if k == "map" and pa.types.is_map(t):
        return {"{}": _spec_marks(spec["values"], t.item_type)}
    return None


# -- converters: a column's Python values (temporal types as integers) to JSON data ----------------------

def _shortest_float32(v):
    """The shortest decimal that reads back as the same float32 (protobuf's ToShortestFloat)."""
    f = np.float32(v)
    for digits in range(6, 10):
        r = float(f"{v:.{digits}g}")
        if np.float32(r) == f:
            return r
    return float(f)


def _float(proto, single):
    def conv(v):
        if math.isnan(v) or math.isinf(v):
            if proto:
                return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
            return v
        return _shortest_float32(v) if single else v
    return conv


def _fraction(ns, proto):
    """The fractional digits of a time's nanoseconds (0 <= ns < 1e9): protobuf's 0, 3, 6 or 9;
    JSON's 0, 6 or 9."""
    if ns == 0:
        return ""
    if proto and ns % 1_000_000 == 0:
        return f".{ns // 1_000_000:03d}"
    if ns % 1000 == 0:
        return f".{ns // 1000:06d}"
    return f".{ns:09d}"


def _timestamp(unit, tz, proto):
    per = _UNITS[unit]

    def conv(v):
        secs, rest = divmod(int(v), per)
        ns = rest * (1_000_000_000 // per)
        try:
            text = (_EPOCH + datetime.timedelta(seconds=secs)).isoformat()
        except OverflowError:                   # beyond year 9999 (a Timestamp past its valid range)
            text = str(np.datetime64(secs, "s"))
        return text + _fraction(ns, proto) + ("Z" if tz else "")
    return conv


def _duration(unit):
    per = _UNITS[unit]

    def conv(v):
        v = int(v)
        sign = "-" if v < 0 else ""
        secs, rest = divmod(abs(v), per)
        ns = rest * (1_000_000_000 // per)
        return f"{sign}{secs}{_fraction(ns, True)}s"
    return conv


def _time(unit):
    per = _UNITS[unit]

    def conv(v):
        secs, rest = divmod(int(v), per)
        ns = rest * (1_000_000_000 // per)
        text = (datetime.datetime.min + datetime.timedelta(seconds=secs)).time().isoformat()
        return text + _fraction(ns, False)
    return conv


def _enum(proto):
    def conv(v):
        if proto and (v[:1].isdigit() or (v[:1] == "-" and v[1:2].isdigit())):
            return int(v)                       # a number the enum lacks (an open enum)
        return v
    return conv


def _key(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, bytes):
        return base64.b64encode(v).decode("ascii")
    return str(v)


def _converter(t, mark, proto):
    """A function of one non-null Python value of Arrow type ``t`` (temporal types as integers) to its
    JSON data."""
    pa = _pa()
    if mark == RAW:
        return json.loads
    mark = mark if isinstance(mark, dict) else {}
    if pa.types.is_struct(t):
        extras = mark.get("*")
        fields = [(f.name, _converter(f.type, mark.get(f.name), proto)) for f in t if f.name != extras]

        def struct(v):
            out = {}
            for name, conv in fields:
                x = v.get(name)
                if x is not None:
                    out[name] = conv(x)
                elif not proto:                 # (protobuf: a field with presence not set is left out)
                    out[name] = None
            if extras is not None and v.get(extras) is not None:
                out.update(json.loads(v[extras]))
            return out
        return struct
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        item = _converter(t.value_type, mark.get("[]"), proto)
        return lambda v: [None if x is None else item(x) for x in v]
    if pa.types.is_map(t):
        value = _converter(t.item_type, mark.get("{}"), proto)
        return lambda v: {_key(k): None if x is None else value(x) for k, x in v}
    if pa.types.is_dictionary(t):
        return _enum(proto)
    if pa.types.is_timestamp(t):
        return _timestamp(t.unit, t.tz, proto)
    if pa.types.is_duration(t):
        return _duration(t.unit)
    if pa.types.is_time(t):
        return _time(t.unit)
    if pa.types.is_date32(t):
        return lambda v: (_EPOCH + datetime.timedelta(days=int(v))).date().isoformat()
    if pa.types.is_floating(t):
        return _float(proto, t.bit_width == 32)
    if proto and pa.types.is_integer(t) and t.bit_width == 64:
        return str                              # 64-bit integers as strings (the proto3 JSON mapping)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return lambda v: base64.b64encode(v).decode("ascii")
    if pa.types.is_decimal(t):
        return str
    if t == pa.month_day_nano_interval():
        return lambda v: {"months": v.months, "days": v.days, "nanoseconds": v.nanoseconds}
    return lambda v: v


def json_texts(values, marks, proto, top=None):
    """The JSON text of each value of an Arrow array (None where null).

    Parameters
    ----------
    values : pyarrow.Array or pyarrow.ChunkedArray
    marks : dict or None
        Where the columns holding JSON text are (`RAW`) and which struct field holds an object's other
        properties (``"*"``): a dict per struct (field name -> its mark), ``"[]"`` / ``"{}"`` for a
        list's items / a map's values.
    proto : bool
        Print as protobuf's JSON mapping (else as ``json.dumps``).
    top : callable, optional
        Wraps the value's converter (a column of several Protobuf messages: the one set).
    """
    from kafkafmt.values.avro import storage_values

    pa = _pa()
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    conv = _converter(values.type, marks, proto)
    if top is not None:
        conv = top(conv)
    dumps = json.dumps
    return [None if v is None else dumps(conv(v), ensure_ascii=False) for v in storage_values(values).to_pylist()]


def json_values_json(values, spec=None):
    """Each value of a JSON format's column as ``json.dumps`` prints the document (the module
    docstring); ``spec``: the target spec it was read with (`kafkafmt.values.json._plan`)."""
    t = values.type
    marks = _spec_marks(spec, t) if spec is not None else None
    return json_texts(values, marks, False)


def arrow_json(values):
    """Each value of an Arrow array as JSON text (None where null), as `json_values_json` prints a
    value read without a spec: maps as objects, bytes as base64, timestamps as ISO 8601 text."""
    return json_texts(values, None, False)
