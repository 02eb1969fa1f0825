r"""Decoded Avro values as JSON text, exactly as ``kafka-avro-console-consumer`` prints them.

The console consumer (Confluent's ``AvroMessageFormatter``) deserializes each value to a generic
Avro object without logical-type conversions and writes it with ``AvroSchemaUtils.toJson``: Avro's
``JsonEncoder`` (compact, Jackson's generator) with the value's own schema. Hence:

* a union value other than null is an object ``{"<branch>": value}`` (the full name of a named
  type, else the type's name: ``"string"``, ``"long"``, ``"array"``...) -- except at the top level,
  where the value is printed as its branch (the formatter takes the schema from the value);
* logical types print as their base type: timestamps (local or not), dates and times as their
  numbers, decimals and durations as their bytes; bytes and fixed are strings whose code points
  0-255 are the bytes; enums are their symbols; maps are objects;
* strings as Jackson 2 escapes them (control characters as ``\u00XX``, upper-case hex;
  characters beyond the Basic Multilingual Plane as two ``\uXXXX`` surrogates; others as
  UTF-8); floats and doubles as Java's ``Float.toString`` / ``Double.toString`` (``1.0E10``,
  ``1.0E-5``, ``0.1``; `java_number`), NaN and the infinities as the strings
  ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` (Jackson's default).

Where kafkafmt's text can differ, on purpose or by the Java stack's version:

* kafkafmt renders the value as decoded, i.e. with the **reader** schema; the console consumer
  prints with the writer schema. The two agree when the value was written with the reader schema
  (fields a newer reader adds appear with their defaults).
* Map entries keep the order they were written in; the console consumer prints a Java
  ``HashMap``'s order (which depends on the Avro version).
* Numbers follow Java 19 and later (shortest round trip); Java 17 prints some large floats
  (about one in ten random bit patterns, beyond 1e7) with one more digit. Avro 1.12.0 and 1.12.1
  print a float as the double it widens to (``0.10000000149011612``); Avro 1.11 and later
  releases print it as a float (``0.1``), as here.

    from kafkafmt.values.avro._json import avro_json
    avro_json(dec.values, dec.reader)     # ['{"id":1,"name":{"string":"x"}}', None, ...]
"""
from __future__ import annotations

import json
import math
import re
import struct
from decimal import ROUND_FLOOR, Decimal, localcontext

import numpy as np

from kafkafmt.values.avro._schema import AvroType

__all__ = ["avro_json", "avro_json_array", "to_json_data", "storage_values", "json_string", "java_number"]


def _storage_type(t):
    """The Arrow type with every temporal type replaced by its integer storage (a cast target)."""
    import pyarrow as pa
    if pa.types.is_timestamp(t) or pa.types.is_time64(t) or pa.types.is_duration(t):
        return pa.int64()
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return pa.int32()
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _storage_type(f.type), f.nullable) for f in t])
    if pa.types.is_map(t):
        return pa.map_(t.key_field, pa.field(t.item_field.name, _storage_type(t.item_type), t.item_field.nullable))
    if pa.types.is_list(t):
        return pa.list_(pa.field(t.value_field.name, _storage_type(t.value_type), t.value_field.nullable))
    return t


def storage_values(values):
    """An Arrow array with its temporal types (timestamps, dates, times, durations, at any depth) as their
    integers. (Not a plain cast: pyarrow 26 casts a struct holding a null-type child, or a list of
    nulls, to a broken array.)"""
    import pyarrow as pa
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    t = values.type
    target = _storage_type(t)
    if target == t:
        return values
    mask = values.is_null() if values.null_count else None
    if pa.types.is_struct(t):
        children = [storage_values(values.field(i)) for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if pa.types.is_map(t):
        return pa.MapArray.from_arrays(values.offsets, storage_values(values.keys), storage_values(values.items),
                                       type=target, mask=mask)
    if pa.types.is_list(t):
        return pa.ListArray.from_arrays(values.offsets, storage_values(values.values), type=target, mask=mask)
    return values.cast(target)


def _unscaled(d, scale, size=None):
    """A Decimal's unscaled value as big-endian two's complement (minimal, or `size` bytes)."""
    with localcontext() as ctx:
        ctx.prec = 100               # every digit of a decimal256 (76), not the default context's 28
        n = int(d.scaleb(scale).to_integral_value())
    if size is None:
        size = max(1, (n.bit_length() + 8) // 8)
    return n.to_bytes(size, "big", signed=True)


def to_json_data(v, t):
    """A decoded Python value (as pyarrow's to_pylist gives it, temporal types as integers) as the
    JSON data of Avro's JSON encoding for Avro type t."""
    if v is None:
        return None
    k = t.kind
    if k == "union":
        nonnull = [b for b in t.branches if b.kind != "null"]
        if len(nonnull) == 1:
            return {nonnull[0].type_name: to_json_data(v, nonnull[0])}
        for i, b in enumerate(nonnull):
            m = v.get(f"member{i}")
            if m is not None:
                return {b.type_name: to_json_data(m, b)}
        return None
    if k == "record" and isinstance(v, str):    # a record past the reader's depth: its JSON text
        return json.loads(v)
    if k == "record":
        return {f.name: to_json_data(v.get(f.name), f.type) for f in t.fields}
    if k == "array":
        return [to_json_data(x, t.items) for x in v]
    if k == "map":
        return {key: to_json_data(x, t.values) for key, x in v}
    if k in ("bytes", "fixed"):
        return _bytes_of(v, t).decode("latin-1")
    return v


def _bytes_of(v, t):
    """The bytes Avro's JSON encoding prints for a bytes or fixed value (a decimal's unscaled
    two's complement, a duration's 12 bytes)."""
    if t.logical == "decimal" and t.precision <= 76:
        v = _unscaled(v, t.scale, t.size if t.kind == "fixed" else None)
    elif t.logical == "duration":
        v = struct.pack("<III", v.months, v.days, v.nanoseconds // 1_000_000)
    return bytes(v)


# -- Jackson's text: strings as its JsonGenerator escapes them, numbers as Java prints them ----------

#: Jackson's escapes: its short ones, every other control character as \u00XX (upper-case hex)
_ESCAPES = {**{chr(c): "\\u%04X" % c for c in range(32)},
            '"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\f": "\\f", "\n": "\\n", "\r": "\\r"}
_TO_ESCAPE = re.compile('[\x00-\x1f"\\\\\U00010000-\U0010ffff]')


def _escape(m):
    c = m.group()
    if c in _ESCAPES:
        return _ESCAPES[c]
    n = ord(c) - 0x10000                      # beyond the BMP: Jackson 2 writes the UTF-16 surrogates
    return "\\u%04X\\u%04X" % (0xD800 + (n >> 10), 0xDC00 + (n & 0x3FF))


def json_string(text):
    """``text`` as a JSON string the way Jackson 2's UTF-8 generator writes it: quotes,
    backslashes and control characters escaped (\\u00XX in upper case), characters beyond the
    Basic Multilingual Plane as their two UTF-16 surrogates (\\uD83D\\uDE00), the rest as UTF-8."""
    return '"' + _TO_ESCAPE.sub(_escape, text) + '"'


def java_number(v, single=False):
    """A float or double as Java's ``Float.toString`` / ``Double.toString`` print it (Java 19 and
    later: the shortest decimal that reads back as the same value, at least two digits when one
    would do; plain for magnitudes in [1e-3, 1e7), else ``d.dddE±n``); NaN and the infinities as
    the names Jackson writes as strings (``"NaN"``, ``"Infinity"``, ``"-Infinity"``)."""
    if v != v:
        return '"NaN"'
    if v in (math.inf, -math.inf):
        return '"Infinity"' if v > 0 else '"-Infinity"'
    if v == 0:
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    sign, digits, e = _java_digits(v, single)
    if -3 <= e < 7:
        if e >= 0:
            whole = digits[:e + 1].ljust(e + 1, "0")
            text = f"{whole}.{digits[e + 1:] or '0'}"
        else:
            text = "0." + "0" * (-e - 1) + digits
    else:
        text = f"{digits[0]}.{digits[1:] or '0'}E{e}"
    return sign + text


def _java_digits(v, single):
    """(sign, significant digits, exponent of the first digit) of the decimal Java prints for v."""
    import numpy as np

    x = np.float32(v) if single else float(v)
    shortest = Decimal(np.format_float_scientific(x, unique=True) if single else repr(x))
    sign, digits, exp = shortest.normalize().as_tuple()
    if len(digits) == 1:
        # one digit: Java takes the decimal of one or two digits closest to the value
        digits, exp = _two_digits(x, single, digits, exp)
    text = "".join(map(str, digits)).rstrip("0") or "0"
    return "-" if sign else "", text, exp + len(digits) - 1


def _two_digits(x, single, digits, exp):
    """The digits and exponent of the decimal of at most two digits closest to x among those
    that read back as x (ties: the even one); ``digits``, ``exp`` (the shortest) if none."""
    import numpy as np

    with localcontext() as ctx:
        ctx.prec = 1200
        exact = abs(Decimal(float(x)))
        step = Decimal(1).scaleb(exact.adjusted() - 1)     # two digits in the exact value's decade
        low = (exact / step).to_integral_value(ROUND_FLOOR) * step
        cands = [low, low + step]
        kind = np.float32 if single else np.float64
        ax = abs(kind(x))
        below = Decimal(float(np.nextafter(ax, kind(0))))
        above = Decimal(float(np.nextafter(ax, kind(np.inf))))
        lo, hi = (below + exact) / 2, (exact + above) / 2
        even = int(ax.view(np.uint32 if single else np.uint64)) % 2 == 0
        ok = [c for c in cands if lo < c < hi or (even and c in (lo, hi))]
        if not ok:
            return digits, exp
        best = min(ok, key=lambda c: (abs(c - exact), int(c / step) % 2))
        _, d, e = best.normalize().as_tuple()
        return d, e


def _text(v, t, out):
    """Append the Avro JSON text of value v (pylist form, temporal types as integers) of type t."""
    if v is None:
        out.append("null")
        return
    k = t.kind
    if k == "union":
        branch, v = _branch(v, t)
        if branch is None:
            out.append("null")
            return
        out.append("{" + json_string(branch.type_name) + ":")
        _text(v, branch, out)
        out.append("}")
    elif k == "record" and isinstance(v, str):    # a record past the reader's depth: its JSON text
        out.append(v)
    elif k == "record":
        out.append("{")
        for i, f in enumerate(t.fields):
            out.append(("," if i else "") + json_string(f.name) + ":")
            _text(v.get(f.name), f.type, out)
        out.append("}")
    elif k == "array":
        out.append("[")
        for i, x in enumerate(v):
            if i:
                out.append(",")
            _text(x, t.items, out)
        out.append("]")
    elif k == "map":
        out.append("{")
        for i, (key, x) in enumerate(v):
            out.append(("," if i else "") + json_string(key) + ":")
            _text(x, t.values, out)
        out.append("}")
    elif k in ("string", "enum"):
        out.append(json_string(v))
    elif k in ("bytes", "fixed"):
        out.append(json_string(_bytes_of(v, t).decode("latin-1")))
    elif k == "boolean":
        out.append("true" if v else "false")
    elif k in ("float", "double"):
        out.append(java_number(v, single=k == "float"))
    else:                                        # int, long (dates, times, timestamps as their numbers)
        out.append(str(int(v)))


def _branch(v, t):
    """(branch type, its value) of a union value; (None, None) for null."""
    nonnull = [b for b in t.branches if b.kind != "null"]
    if len(nonnull) == 1:
        return nonnull[0], v
    for i, b in enumerate(nonnull):
        m = v.get(f"member{i}")
        if m is not None:
            return b, m
    return None, None


def _text_plan(t, arr, nodes, children, key=None):
    """Append the kernel's text nodes of Avro type t over Arrow array arr (`_native.avro.avro_text`);
    returns the node's index, or raises _Unsupported (the Python path prints it)."""
    import pyarrow as pa
    from kafkafmt._native import avrotext as kernel

    K = kernel.TEXT_KINDS
    at = arr.type
    bufs = arr.buffers()
    valid = bufs[0] if arr.null_count else None
    k = t.kind
    index = len(nodes)
    node = [None, 0, 0, 0, valid, arr.offset, None, None, key, None, None]
    nodes.append(node)
    if k == "union":
        nonnull = [b for b in t.branches if b.kind != "null"]
        if len(nonnull) != 1:
            raise _Unsupported()
        node[0] = K["T_WRAP"]
        node[9] = ("{" + json_string(nonnull[0].type_name) + ":").encode()
        node[1], node[2] = len(children), 1
        slot = len(children)
        children.append(-1)
        children[slot] = _text_plan(nonnull[0], arr, nodes, children)
        return index
    if k == "record" and at == pa.string():       # a record past the reader's depth: its JSON text
        node[0], node[6], node[7] = K["T_RAW"], bufs[2] if bufs[2] is not None else b"", bufs[1]
        return index
    if k == "record" and pa.types.is_struct(at):
        node[0] = K["T_REC"]
        slots = list(range(len(children), len(children) + len(t.fields)))
        children.extend([-1] * len(t.fields))
        node[1], node[2] = slots[0] if slots else 0, len(slots)
        for slot, f in zip(slots, t.fields):
            children[slot] = _text_plan(f.type, arr.field(at.get_field_index(f.name)), nodes, children,
                                        (json_string(f.name) + ":").encode())
        return index
    if k == "array" and pa.types.is_list(at):
        node[0], node[7] = K["T_ARR"], bufs[1]
        node[1], node[2] = len(children), 1
        slot = len(children)
        children.append(-1)
        children[slot] = _text_plan(t.items, arr.values, nodes, children)
        return index
    if k == "map" and pa.types.is_map(at):
        node[0], node[7] = K["T_MAP"], bufs[1]
        entries = arr.values
        node[1], node[2] = len(children), 2
        slot = len(children)
        children.extend([-1, -1])
        keys = entries.field(0)
        if keys.type != pa.string():
            raise _Unsupported()
        children[slot] = _text_plan(_STRING, keys, nodes, children)
        children[slot + 1] = _text_plan(t.values, entries.field(1), nodes, children)
        return index
    if t.logical in ("decimal", "duration"):
        raise _Unsupported()
    if k == "enum" and pa.types.is_dictionary(at):
        texts = [json_string(str(x)).encode() for x in arr.dictionary.to_pylist()]
        node[0], node[6] = K["T_ENUM"], arr.indices.buffers()[1]
        node[5] = arr.indices.offset
        node[9] = b"".join(texts)
        node[10] = np.cumsum([0] + [len(x) for x in texts]).astype(np.int64)
        return index
    if k == "string" and at == pa.string():
        node[0], node[6], node[7] = K["T_STR"], bufs[2] if bufs[2] is not None else b"", bufs[1]
        return index
    if k in ("bytes", "fixed") and (at == pa.binary() or pa.types.is_fixed_size_binary(at)):
        if pa.types.is_fixed_size_binary(at):
            node[0], node[3], node[6] = K["T_BYTES"], at.byte_width, bufs[1]
        else:
            node[0], node[6], node[7] = K["T_BYTES"], bufs[2] if bufs[2] is not None else b"", bufs[1]
        return index
    if k == "boolean" and pa.types.is_boolean(at):
        node[0], node[6] = K["T_BOOL"], bufs[1]
        return index
    if k in ("float", "double") and (pa.types.is_float32(at) or pa.types.is_float64(at)):
        node[0], node[6] = K["T_F32" if pa.types.is_float32(at) else "T_F64"], bufs[1]
        return index
    if k in ("int", "long") and (pa.types.is_integer(at) or pa.types.is_temporal(at)):
        width = at.bit_width
        if width not in (32, 64) or pa.types.is_unsigned_integer(at):
            raise _Unsupported()
        node[0], node[6] = K["T_I32" if width == 32 else "T_I64"], bufs[1]
        return index
    if k == "null":
        node[0] = K["T_NULL"]
        return index
    raise _Unsupported()


_STRING = AvroType("string")


class _Unsupported(Exception):
    """A type the text kernel does not print (decimals, durations, unions of several types): the
    Python path prints it."""


def avro_json_array(values, reader):
    """`avro_json` as a pyarrow string array (null where the value is null), printed by the kernel
    (`_native.avro.avro_text`) for the types it prints -- all but decimals, durations and unions of
    several types, for which the Python path's texts are taken."""
    import pyarrow as pa
    from kafkafmt._native import avrotext as kernel

    if isinstance(values, pa.ChunkedArray):
        chunks = [avro_json_array(c, reader) for c in values.chunks]
        return pa.concat_arrays(chunks) if chunks else pa.array([], pa.string())
    t = reader
    if t.kind == "union":                        # a top-level union: the branch's value as it is
        nonnull = [b for b in t.branches if b.kind != "null"]
        if len(nonnull) == 1:
            t = nonnull[0]
    try:
        nodes, children = [], []
        top = _text_plan(t, values, nodes, children)
    except _Unsupported:
        return pa.array(avro_json(values, reader), pa.string())
    offsets, data = kernel.avro_text(nodes, np.asarray(children, np.int32), top, len(values))
    validity = values.buffers()[0] if values.null_count else None
    if validity is not None and values.offset:
        validity = pa.py_buffer(np.packbits(np.asarray(values.is_valid()), bitorder="little"))
    typ = pa.large_string()
    return pa.Array.from_buffers(typ, len(values), [validity, pa.py_buffer(offsets), pa.py_buffer(data)],
                                 null_count=values.null_count)


def avro_json(values, reader):
    """JSON texts of each value of a decoded Arrow array (None where the value is null), as
    kafka-avro-console-consumer prints them (see the module docstring).

    Parameters
    ----------
    values : pyarrow.Array or ChunkedArray
        ``DecodedColumn.values`` of an Avro format.
    reader : AvroType
        ``DecodedColumn.reader``.
    """
    out = []
    for v in storage_values(values).to_pylist():
        if v is None:
            out.append(None)
            continue
        t = reader
        if t.kind == "union":                    # a top-level union: the branch's value as it is
            t, v = _branch(v, t)
            if t is None:
                out.append(None)
                continue
        parts = []
        _text(v, t, parts)
        out.append("".join(parts))
    return out
