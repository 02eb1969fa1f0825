"""A target Arrow type for JSON texts, as the plan the JSON kernel (``kafkafmt._native.jsontext``)
parses a column with.

The target is a *spec*, a small tree of dicts that the schema front-ends produce
(`kafkafmt.values.json._schema` for JSON Schema and Kafka Connect schemas, `spec_of_arrow` for an Arrow
type given as the reader schema):

=====================================================  ===========================================
spec                                                   Arrow, and what the JSON value must be
=====================================================  ===========================================
``{"kind": "object", "fields": [(name, spec,            struct (fields in order); unknown keys are
required)], "closed": bool, "extras": name}``           skipped (an error when closed; with
                                                        ``extras``, kept as the JSON text of an object
                                                        in one more string field of that name); a field
                                                        not seen is null (an error when required)
``{"kind": "array", "items": spec}``                    list
``{"kind": "map", "values": spec}``                     map<string, value> (an object, any keys)
``{"kind": "string"}``, ``"base64"``                    string, binary (base64 text)
``{"kind": "int", "bits": 8..64}``, ``"uint"``          int8..int64, uint8..uint64 (integral numbers:
                                                        1.0 and 1e2 too, as JSON Schema's integer)
``{"kind": "float", "bits": 32 | 64}``                  float32 / float64 (NaN, Infinity accepted)
``{"kind": "bool"}``, ``{"kind": "null"}``              bool, null
``{"kind": "timestamp", "unit": u, "tz": tz}``          timestamp[u, tz]: RFC 3339 text (or a number
                                                        in the unit)
``{"kind": "date"}``                                    date32: YYYY-MM-DD (or a number of days)
``{"kind": "time", "unit": "ms" | "us"}``               time32[ms] / time64[us]: a number
``{"kind": "enum", "symbols": [...]}``                  dictionary<int32, string>: one of the strings
``{"kind": "decimal", "precision": p, "scale": s}``     decimal128: base64 big-endian (Kafka Connect)
``{"kind": "raw"}``                                     string: the value's JSON text, as it is
=====================================================  ===========================================

Every spec may carry ``"null": True``: a JSON null reads as null (else it is a per-record error).
The top value is nullable as a whole (a bad value, a tombstone). Integers, timestamps, dates and
decimals are nullable whatever the spec says: a value its column cannot hold (an integer beyond its
bits, a date-time beyond its unit's range) is null, the row's error naming the field, and the rest of
the value is read.
"""
from __future__ import annotations

import threading

import numpy as np

from kafkafmt._native import jsontext as _kernel
from kafkafmt.errors import SchemaError
from kafkafmt.values._kernelplan import KINDS as _K, Column as _Column, KernelPlan, StartsPlan, error_entry
from kafkafmt._util.extras import import_pyarrow

__all__ = ["JsonPlan", "spec_of_arrow", "MAX_COLUMNS"]

#: Arrow columns one target type may need
MAX_COLUMNS = KernelPlan.max_columns

_J = _kernel.KINDS
#: spec kinds whose columns hold null where a value does not fit them
_FIELD_NULLS = ("int", "uint", "timestamp", "date", "decimal")
_UNITS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1000, "ns": 1}


def _pa():
    return import_pyarrow("typed values")


class Column(_Column):
    """One output column (one Arrow array); an enum's: its symbols."""

    __slots__ = ("symbols",)

    def __init__(self, index, kind, arrow, width=0, nullable=False):
        super().__init__(index, kind, arrow, width, nullable)
        self.symbols = None


class JsonPlan(StartsPlan):
    """A spec's Arrow type and the kernel's tables.

    Parameters
    ----------
    spec : dict
        The target (see the module docstring).

    Raises
    ------
    SchemaError
        An unknown spec, or more than MAX_COLUMNS columns.
    """

    def __init__(self, spec):
        self.spec = spec
        self.columns = []
        self.nodes, self.fields, self.table = [], [], []
        self.names = bytearray()
        self.paths = []
        self.top = self._node(spec, "", nullable=True)
        self.top_col = self.columns[self.nodes[self.top][1]]
        self.arrow_type = self.top_col.arrow
        self._program = None
        self._lock = threading.Lock()

    def _col(self, kind, arrow, width=0, nullable=False):
        return self._add(Column(len(self.columns), kind, arrow, width, nullable), "the target type")

    def _name(self, text):
        raw = text.encode("utf-8")
        off = len(self.names)
        self.names += raw
        return off, len(raw)

    def _node(self, spec, path, nullable):
        """Node index of spec (its column built); ``nullable``: the column may hold nulls."""
        pa = _pa()
        k = spec.get("kind")
        null_ok = bool(spec.get("null"))
        # (a number or date-time its column cannot hold is a null field: such columns are nullable)
        nullable = nullable or null_ok or k in _FIELD_NULLS
        ni = len(self.nodes)
        self.nodes.append(None)
        self.paths.append(path or "the value")
        row = [0, -1, 0, 0, 0, 1 if null_ok else 0, 0, 0, -1]
        if k == "object":
            fields = spec["fields"]
            col = self._col(_K["K_STRUCT"], None, nullable=nullable)
            first = len(self.fields)
            self.fields.extend([None] * len(fields))
            arrow_fields = []
            for i, (name, sub, required) in enumerate(fields):
                child_nullable = not required
                sn = self._node(sub, f"{path}.{name}" if path else name, child_nullable)
                cc = self.columns[self.nodes[sn][1]]
                col.children.append(cc)
                arrow_fields.append(pa.field(name, cc.arrow, cc.nullable))
                off, ln = self._name(name)
                self.fields[first + i] = [off, ln, sn, 1 if required else 0]
            extras = -1
            if spec.get("extras"):          # the keys outside the fields: an object's JSON text
                ec = self._col(_K["K_VAR"], pa.string(), nullable=True)
                col.children.append(ec)
                arrow_fields.append(pa.field(spec["extras"], pa.string(), True))
                extras = ec.index
            col.arrow = pa.struct(arrow_fields)
            size = 0
            if fields:
                size = 4
                while size < 2 * len(fields) + 1:
                    size *= 2
            table = [-1] * size
            for i, (name, _, _) in enumerate(fields):
                h = _fnv(name.encode("utf-8")) & (size - 1)
                while table[h] >= 0:
                    h = (h + 1) & (size - 1)
                table[h] = i
            hoff = len(self.table)
            self.table.extend(table)
            row = [_J["J_OBJECT"], col.index, first, len(fields), 1 if spec.get("closed") else 0, row[5], hoff, size,
                   extras]
        elif k == "array":
            col = self._col(_K["K_LIST"], None, nullable=nullable)
            item = self._node(spec["items"], f"{path}[]", False)
            ic = self.columns[self.nodes[item][1]]
            col.children = [ic]
            col.arrow = pa.list_(pa.field("item", ic.arrow, ic.nullable))
            row[0], row[1], row[2] = _J["J_ARRAY"], col.index, item
        elif k == "map":
            col = self._col(_K["K_MAP"], None, nullable=nullable)
            entries = self._col(_K["K_STRUCT"], None)
            key = self._col(_K["K_VAR"], pa.string())
            value = self._node(spec["values"], f"{path}{{}}", False)
            vc = self.columns[self.nodes[value][1]]
            entries.children = [key, vc]
            kf, vf = pa.field("key", pa.string(), False), pa.field("value", vc.arrow, vc.nullable)
            entries.arrow = pa.struct([kf, vf])
            col.children = [entries]
            col.arrow = pa.map_(kf, vf)
            row[0], row[1], row[2] = _J["J_MAP"], col.index, value
        elif k in ("string", "raw", "base64"):
            col = self._col(_K["K_VAR"], pa.binary() if k == "base64" else pa.string(), nullable=nullable)
            row[0], row[1] = _J[{"string": "J_STRING", "raw": "J_RAW", "base64": "J_BASE64"}[k]], col.index
        elif k in ("int", "uint"):
            bits = int(spec.get("bits", 64))
            if bits not in (8, 16, 32, 64):
                raise SchemaError(f"{path or 'the value'}: integers of {bits} bits")
            arrow = getattr(pa, f"{k}{bits}")()
            col = self._col(_K["K_FIXED"], arrow, width=bits // 8, nullable=nullable)
            row[0], row[1], row[4] = _J["J_INT" if k == "int" else "J_UINT"], col.index, bits
        elif k == "time":
            unit = spec.get("unit", "ms")
            bits = 32 if unit in ("s", "ms") else 64
            col = self._col(_K["K_FIXED"], pa.time32(unit) if bits == 32 else pa.time64(unit), width=bits // 8,
                            nullable=nullable)
            row[0], row[1], row[4] = _J["J_INT"], col.index, bits
        elif k == "float":
            bits = int(spec.get("bits", 64))
            if bits not in (32, 64):
                raise SchemaError(f"{path or 'the value'}: floats of {bits} bits")
            col = self._col(_K["K_FIXED"], pa.float32() if bits == 32 else pa.float64(), width=bits // 8,
                            nullable=nullable)
            row[0], row[1] = _J["J_FLOAT"], col.index
        elif k == "bool":
            col = self._col(_K["K_BOOL"], pa.bool_(), nullable=nullable)
            row[0], row[1] = _J["J_BOOL"], col.index
        elif k == "null":
            col = self._col(_K["K_NULL"], pa.null(), nullable=True)
            row[0], row[1], row[5] = _J["J_NULL"], col.index, 1
        elif k == "timestamp":
            unit = spec.get("unit", "ns")
            if unit not in _UNITS:
                raise SchemaError(f"{path or 'the value'}: timestamp unit {unit!r}")
            col = self._col(_K["K_FIXED"], pa.timestamp(unit, tz=spec.get("tz")), width=8, nullable=nullable)
            row[0], row[1], row[4] = _J["J_TIMESTAMP"], col.index, _UNITS[unit]
        elif k == "date":
            col = self._col(_K["K_FIXED"], pa.date32(), width=4, nullable=nullable)
            row[0], row[1] = _J["J_DATE"], col.index
        elif k == "enum":
            symbols = [str(s) for s in spec["symbols"]]
            col = self._col(_K["K_FIXED"], pa.dictionary(pa.int32(), pa.string()), width=4, nullable=nullable)
            col.symbols = symbols
            first = len(self.fields)
            for s in symbols:
                off, ln = self._name(s)
                self.fields.append([off, ln, -1, 0])
            row[0], row[1], row[2], row[3] = _J["J_ENUM"], col.index, first, len(symbols)
        elif k == "decimal":
            p, s = int(spec.get("precision", 38)), int(spec.get("scale", 0))
            if not 1 <= p <= 38:
                p = 38
            col = self._col(_K["K_FIXED"], pa.decimal128(p, s), width=16, nullable=nullable)
            row[0], row[1], row[4] = _J["J_DECIMAL"], col.index, p
        else:
            raise SchemaError(f"{path or 'the value'}: unknown JSON target {k!r}")
        self.nodes[ni] = row
        return ni

    # ---- the kernel ----------------------------------------------------------------------------
    def _compile(self, columns, children):
        return _kernel.Program(np.array(self.nodes, np.int64).reshape(-1, 9),
                               np.array(self.fields, np.int64).reshape(-1, 4), np.array(self.table, np.int32),
                               bytes(self.names), columns, children, self.top)

    def _shaped(self, col, length, nulls, vb, data, offs):
        if col.symbols is not None:
            return self._dictionary(length, nulls, vb, data, col.symbols)
        return None

    def error_text(self, code, node, detail):
        """The message of a kernel error (code, node, detail as `decode` returns them)."""
        (name, text), _ = error_entry(_kernel.ERROR_INFO, code)
        expected = self._describe(node)
        if name == "TYPE":
            got = _kernel.VALUE_TYPES[int(detail)] if 0 <= detail < len(_kernel.VALUE_TYPES) else "a value"
            msg = text.format(detail=got, expected=expected, depth=_kernel.MAX_DEPTH)
        elif name == "REQUIRED" and 0 <= node < len(self.nodes):
            msg = "required field missing"
        else:
            msg = text.format(detail=detail, expected=expected, depth=_kernel.MAX_DEPTH)
        path = self.paths[node] if 0 <= node < len(self.paths) else ""
        return f"{msg} (in {path})" if path else msg

    def _describe(self, node):
        if not 0 <= node < len(self.nodes):
            return "another type"
        kind = {v: k for k, v in _J.items()}.get(self.nodes[node][0], "?")
        col = self.columns[self.nodes[node][1]]
        return {"J_OBJECT": "an object", "J_ARRAY": "an array", "J_MAP": "an object", "J_STRING": "a string",
                "J_ENUM": "a string", "J_BOOL": "true/false", "J_NULL": "null"}.get(kind, str(col.arrow))


def _fnv(raw):
    """The kernel's field-name hash (64-bit FNV-1a)."""
    h = 1469598103934665603
    for b in raw:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def spec_of_arrow(t, nullable=True):
    """The spec that reads JSON into Arrow type ``t`` (a reader schema given as Arrow): nullable
    fields may be absent or null, non-nullable ones must be there and not null.

    Raises
    ------
    SchemaError
        A type the JSON kernel cannot produce.
    """
    pa = _pa()
    if isinstance(t, pa.Schema):
        t = pa.struct(list(t))
    null = {"null": True} if nullable else {}
    if pa.types.is_struct(t):
        return dict(kind="object", fields=[(f.name, spec_of_arrow(f.type, f.nullable), not f.nullable) for f in t],
                    **null)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return dict(kind="array", items=spec_of_arrow(t.value_type, t.value_field.nullable), **null)
    if pa.types.is_map(t):
        if not pa.types.is_string(t.key_type):
            raise SchemaError(f"JSON objects have string keys, not {t.key_type}")
        return dict(kind="map", values=spec_of_arrow(t.item_type, t.item_field.nullable), **null)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return dict(kind="string", **null)
    if pa.types.is_binary(t):
        return dict(kind="base64", **null)
    if pa.types.is_boolean(t):
        return dict(kind="bool", **null)
    if pa.types.is_integer(t):
        return dict(kind="int" if pa.types.is_signed_integer(t) else "uint", bits=t.bit_width, **null)
    if pa.types.is_floating(t) and t.bit_width in (32, 64):
        return dict(kind="float", bits=t.bit_width, **null)
    if pa.types.is_timestamp(t):
        return dict(kind="timestamp", unit=t.unit, tz=t.tz, **null)
    if pa.types.is_date32(t):
        return dict(kind="date", **null)
    if pa.types.is_time(t):
        return dict(kind="time", unit=t.unit, **null)
    if pa.types.is_decimal128(t):
        return dict(kind="decimal", precision=t.precision, scale=t.scale, **null)
    if pa.types.is_null(t):
        return dict(kind="null", null=True)
    if pa.types.is_dictionary(t):
        return dict(kind="string", **null)
    raise SchemaError(f"JSON values cannot be read as {t}")
