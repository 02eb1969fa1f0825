"""Avro schemas as the columnar decoder needs them: parsing (names, namespaces, references),
logical types, defaults as Avro binary, and the matching rules of schema resolution.

Follows the Avro specification (1.12): a named type is resolved relative to the enclosing
namespace; a union holds no union and at most one branch per unnamed type; a logical type that
is unknown or invalid for its base type (e.g. ``date`` on a long, a decimal whose scale exceeds its
precision) is ignored and the value reads as the base type, as Java's ``LogicalTypes`` does.

    t = parse_schema('{"type": "record", "name": "A", "fields": [{"name": "x", "type": "int"}]}')
    t.kind, t.fullname, t.fields[0].type.kind          # ('record', 'A', 'int')
"""
from __future__ import annotations

import json
import math
import re
import struct

from kafkafmt.errors import SchemaError

__all__ = ["AvroType", "Field", "parse_schema", "parse_registered", "encode_default", "names_match", "can_promote",
           "PRIMITIVES", "zigzag", "field_aliases"]

PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
NAMED = ("record", "enum", "fixed")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: logical type -> base kinds it may annotate (decimal and duration have further checks)
LOGICAL_BASES = {
    "decimal": ("bytes", "fixed"), "uuid": ("string", "fixed"), "date": ("int",), "time-millis": ("int",),
    "time-micros": ("long",), "timestamp-millis": ("long",), "timestamp-micros": ("long",),
    "timestamp-nanos": ("long",), "local-timestamp-millis": ("long",), "local-timestamp-micros": ("long",),
    "local-timestamp-nanos": ("long",), "duration": ("fixed",),
}


class Field:
    """A record field: name, type, default (``has_default``), aliases."""

    __slots__ = ("name", "type", "has_default", "default", "aliases")

    def __init__(self, name, type, has_default, default, aliases):
        self.name, self.type, self.has_default, self.default, self.aliases = name, type, has_default, default, aliases

    def __repr__(self):
        return f"<Field {self.name}: {self.type!r}>"


class AvroType:
    """One Avro type. ``kind`` is a primitive name, ``record``, ``enum``, ``array``, ``map``,
    ``fixed`` or ``union``; named types have ``fullname`` and ``aliases`` (full names); ``logical``
    is the logical type when valid for the base type (``precision``/``scale`` for decimals)."""

    __slots__ = ("kind", "fullname", "aliases", "fields", "symbols", "default", "items", "values", "size",
                 "branches", "logical", "precision", "scale")

    def __init__(self, kind, fullname=None):
        self.kind = kind
        self.fullname = fullname
        self.aliases = ()
        self.fields = None
        self.symbols = None
        self.default = None        # enum default symbol
        self.items = self.values = None
        self.size = None
        self.branches = None
        self.logical = None
        self.precision = self.scale = None

    @property
    def name(self):
        """The unqualified name of a named type (None otherwise)."""
        return None if self.fullname is None else self.fullname.rsplit(".", 1)[-1]

    @property
    def type_name(self):
        """What Avro's JSON encoding calls this type as a union branch: the full name of a named
        type, else the kind."""
        return self.fullname or self.kind

    def __repr__(self):
        return f"<AvroType {self.fullname or self.kind}{' ' + self.logical if self.logical else ''}>"


def _fullname(name, namespace):
    if not isinstance(name, str) or not name:
        raise SchemaError(f"a named type needs a non-empty string name, not {name!r}")
    if "." in name:
        full = name
    else:
        full = f"{namespace}.{name}" if namespace else name
    for part in full.split("."):
        if not _NAME.match(part):
            raise SchemaError(f"invalid name {full!r}")
    return full


def _named_fullname(s, namespace):
    """The full name of a named type's definition: a dotted name is full; else its own
    ``namespace`` (an empty one is the null namespace), else the enclosing one."""
    ns = s.get("namespace")
    return _fullname(s.get("name"), namespace if ns is None else ns)


def _namespace_of(fullname):
    return fullname.rsplit(".", 1)[0] if "." in fullname else ""


class _Parser:
    def __init__(self, named):
        self.named = named if named is not None else {}

    def lookup(self, name, namespace):
        if "." not in name and namespace:
            hit = self.named.get(f"{namespace}.{name}")
            if hit is not None:
                return hit
        hit = self.named.get(name)
        if hit is None:
            raise SchemaError(f"unknown type name {name!r}")
        return hit

    def define(self, t, aliases, namespace):
        if t.fullname in PRIMITIVES:
            raise SchemaError(f"a named type cannot be called {t.fullname!r}")
        if t.fullname in self.named:
            raise SchemaError(f"type {t.fullname!r} is defined twice")
        self.named[t.fullname] = t
        if aliases is not None:
            if not isinstance(aliases, list):
                raise SchemaError(f"aliases of {t.fullname} must be a list")
            t.aliases = tuple(_fullname(a, namespace) for a in aliases)

    def parse(self, s, namespace):
        if isinstance(s, str):
            if s in PRIMITIVES:
                return AvroType(s)
            return self.lookup(s, namespace)
        if isinstance(s, list):
            return self.union(s, namespace)
        if not isinstance(s, dict):
            raise SchemaError(f"not an Avro schema: {s!r}")
        kind = s.get("type")
        if isinstance(kind, (dict, list)):
            return self.parse(kind, namespace)
        if kind in PRIMITIVES:
            t = AvroType(kind)
        elif kind in ("record", "error"):
            t = self.record(s, namespace)
        elif kind == "enum":
            t = self.enum(s, namespace)
        elif kind == "fixed":
            t = AvroType("fixed", _named_fullname(s, namespace))
            size = s.get("size")
            if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                raise SchemaError(f"fixed {t.fullname} needs a non-negative integer size")
            t.size = size
            self.define(t, s.get("aliases"), _namespace_of(t.fullname))
        elif kind == "array":
            if "items" not in s:
                raise SchemaError("an array needs items")
            t = AvroType("array")
            t.items = self.parse(s["items"], namespace)
        elif kind == "map":
            if "values" not in s:
                raise SchemaError("a map needs values")
            t = AvroType("map")
            t.values = self.parse(s["values"], namespace)
        elif isinstance(kind, str):
            t = self.lookup(kind, namespace)
            return t
        else:
            raise SchemaError(f"not an Avro schema (no type): {s!r}")
        logical = s.get("logicalType")
        if isinstance(logical, str):
            _set_logical(t, logical, s)
        return t

    def union(self, branches, namespace):
        t = AvroType("union")
        t.branches = [self.parse(b, namespace) for b in branches]
        seen = set()
        for b in t.branches:
            if b.kind == "union":
                raise SchemaError("a union cannot hold a union")
            key = b.fullname if b.fullname else b.kind
            if key in seen:
                raise SchemaError(f"union holds {key!r} twice")
            seen.add(key)
        return t

    def record(self, s, namespace):
        t = AvroType("record", _named_fullname(s, namespace))
        self.define(t, s.get("aliases"), _namespace_of(t.fullname))
        fields = s.get("fields")
        if not isinstance(fields, list):
            raise SchemaError(f"record {t.fullname} needs a list of fields")
        inner = _namespace_of(t.fullname)
        t.fields = []
        names = set()
        for f in fields:
            if not isinstance(f, dict) or not isinstance(f.get("name"), str) or "type" not in f:
                raise SchemaError(f"record {t.fullname}: a field needs a name and a type")
            fname = f["name"]
            if not _NAME.match(fname):
                raise SchemaError(f"record {t.fullname}: invalid field name {fname!r}")
            if fname in names:
                raise SchemaError(f"record {t.fullname}: field {fname!r} twice")
            names.add(fname)
            aliases = f.get("aliases") or ()
            if not isinstance(aliases, (list, tuple)) or not all(isinstance(a, str) for a in aliases):
                raise SchemaError(f"record {t.fullname}: aliases of field {fname!r} must be a list of names")
            t.fields.append(Field(fname, self.parse(f["type"], inner), "default" in f, f.get("default"),
                                  tuple(aliases)))
        return t

    def enum(self, s, namespace):
        t = AvroType("enum", _named_fullname(s, namespace))
        symbols = s.get("symbols")
        if not isinstance(symbols, list) or not all(isinstance(x, str) and _NAME.match(x) for x in symbols):
            raise SchemaError(f"enum {t.fullname} needs a list of symbols (names)")
        if len(set(symbols)) != len(symbols):
            raise SchemaError(f"enum {t.fullname} has a symbol twice")
        t.symbols = list(symbols)
        default = s.get("default")
        if default is not None:
            if default not in t.symbols:
                raise SchemaError(f"enum {t.fullname}: default {default!r} is not a symbol")
            t.default = default
        self.define(t, s.get("aliases"), _namespace_of(t.fullname))
        return t


def _max_decimal_digits(size):
    if size <= 0:
        return 0
    return int(math.floor(math.log10(2 ** (8 * size - 1) - 1)))


def _set_logical(t, logical, s):
    """Set t.logical when the logical type is known and valid for its base type (else ignore it)."""
    if t.kind not in LOGICAL_BASES.get(logical, ()):
        return
    if logical == "decimal":
        p, sc = s.get("precision"), s.get("scale", 0)
        if not isinstance(p, int) or isinstance(p, bool) or not isinstance(sc, int) or isinstance(sc, bool):
            return
        if p <= 0 or sc < 0 or sc > p:
            return
        if t.kind == "fixed" and p > _max_decimal_digits(t.size):
            return
        t.precision, t.scale = p, sc
    elif logical == "duration" and t.size != 12:
        return
    elif logical == "uuid" and t.kind == "fixed" and t.size != 16:
        return
    t.logical = logical


def parse_schema(schema, named=None):
    """Parse an Avro schema (JSON text or parsed JSON) into an `AvroType`.

    Parameters
    ----------
    schema : str, dict or list
    named : dict, optional
        Full name -> `AvroType` of the named types already defined (by referenced schemas);
        the new ones are added to it.

    Raises
    ------
    SchemaError
        The schema is not valid Avro.
    """
    if isinstance(schema, (bytes, bytearray)):
        schema = schema.decode("utf-8")
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except ValueError:
            # a bare primitive or type name ("string"), as Avro's parsers take it
            if _NAME.match(schema.replace(".", "_")):
                pass
            else:
                raise SchemaError(f"an Avro schema is JSON: {schema[:80]!r}") from None
    return _Parser(named).parse(schema, "")


def parse_registered(registry, schema):
    """Parse a `RegisteredSchema` with its references (fetched from ``registry``), as
    confluent-kafka and the registry do: the referenced schemas' named types are defined first."""
    named = {}
    for ref in registry.resolve_references(schema) if schema.references else ():
        if ref.schema_type not in (None, "AVRO"):
            raise SchemaError(f"schema id {schema.id} references a {ref.schema_type} schema")
        try:
            parse_schema(ref.schema_str, named)
        except SchemaError as exc:
            raise SchemaError(f"referenced schema {ref.subject!r} version {ref.version}: {exc.reason}") from None
    return parse_schema(schema.schema_str, named)


# ------------------------------------------------------------------------------------------------
# resolution rules

def field_aliases(t, max_depth):
    """(path, field name, its aliases) of every record field with ``aliases`` in reader type ``t``,
    the path as the field's struct sits in the Arrow column (struct fields by name, ``element`` of an
    array, ``value`` of a map, ``member<i>`` of a union of several types), records unrolled as the
    plan unrolls them (``max_depth``)."""
    out = []

    def walk(t, path, stack):
        k = t.kind
        if k == "union":
            nonnull = [b for b in t.branches if b.kind != "null"]
            for i, b in enumerate(nonnull):
                walk(b, path if len(nonnull) == 1 else path + (f"member{i}",), stack)
        elif k == "record" and stack.count(t.fullname) < max_depth:
            for f in t.fields:
                if f.aliases:
                    out.append((path, f.name, f.aliases))
                walk(f.type, path + (f.name,), stack + (t.fullname,))
        elif k == "array":
            walk(t.items, path + ("element",), stack)
        elif k == "map":
            walk(t.values, path + ("value",), stack)

    walk(t, (), ())
    return out


def names_match(writer, reader):
    """Named types match on the unqualified name, or a reader alias (unqualified)."""
    wn = writer.name
    if wn == reader.name:
        return True
    return any(a.rsplit(".", 1)[-1] == wn for a in reader.aliases)


_PROMOTIONS = {("int", "long"), ("int", "float"), ("int", "double"), ("long", "float"), ("long", "double"),
               ("float", "double"), ("string", "bytes"), ("bytes", "string")}


def can_promote(w, r):
    return (w, r) in _PROMOTIONS


def _decimal_clash(w, r):
    """Both decimals with different precision or scale (the spec forbids resolving those)."""
    return (w.logical == "decimal" and r.logical == "decimal"
            and (w.precision, w.scale) != (r.precision, r.scale))


def matches(w, r):
    """Whether writer type w can be read as reader type r at all (the top-level check of the spec;
    nested mismatches are found when resolving further)."""
    if r.kind == "union":
        return any(matches(w, b) for b in r.branches)
    if w.kind == "union":
        return any(matches(b, r) for b in w.branches)
    if w.kind == r.kind:
        if w.kind in NAMED:
            if not names_match(w, r):
                return False
            if w.kind == "fixed" and w.size != r.size:
                return False
        return not _decimal_clash(w, r)
    return can_promote(w.kind, r.kind)


def best_branch(w, branches):
    """Index of the reader union branch a (non-union) writer type w resolves to, or None: an exact
    match first (same kind; for named types the same full name), then same unqualified name or
    alias, then a promotion -- as Java's ResolvingGrammarGenerator.bestBranch."""
    for j, b in enumerate(branches):
        if b.kind == w.kind and (w.kind not in NAMED or b.fullname == w.fullname) and matches(w, b):
            return j
    for j, b in enumerate(branches):
        if b.kind == w.kind and w.kind in NAMED and matches(w, b):
            return j
    for j, b in enumerate(branches):
        if can_promote(w.kind, b.kind):
            return j
    return None


# ------------------------------------------------------------------------------------------------
# default values -> Avro binary

def zigzag(v: int) -> bytes:
    """Avro's varint encoding of a long."""
    u = ((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def _latin1(value, what):
    if not isinstance(value, str):
        raise SchemaError(f"a {what} default is a JSON string, not {value!r}")
    try:
        return value.encode("latin-1")
    except UnicodeEncodeError:
        raise SchemaError(f"a {what} default holds code points above 255") from None


def _number(value, what):
    if isinstance(value, bool):
        raise SchemaError(f"a {what} default is a number, not {value!r}")
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str) and value in ("NaN", "Infinity", "-Infinity"):
        return float(value.replace("Infinity", "inf"))
    raise SchemaError(f"a {what} default is a number, not {value!r}")


def _integer(value, what, bits):
    v = _number(value, what)
    if isinstance(v, float):
        if not v.is_integer():
            raise SchemaError(f"an {what} default is an integer, not {value!r}")
        v = int(v)
    if not -(1 << (bits - 1)) <= v < (1 << (bits - 1)):
        raise SchemaError(f"{what} default {v} is out of range")
    return v


def encode_default(value, t, depth=0):
    """The Avro binary encoding of a field default (JSON) for type t.

    Bytes and fixed defaults are JSON strings whose code points 0-255 are the bytes; a union
    default matches the first branch (other branches are tried after it, as Avro 1.12 allows);
    a record default takes its fields' own defaults for fields it leaves out.

    Raises
    ------
    SchemaError
        The default does not match the type.
    """
    if depth > 100:
        raise SchemaError("default nested too deeply")
    k = t.kind
    if k == "null":
        if value is not None:
            raise SchemaError(f"a null default is null, not {value!r}")
        return b""
    if k == "boolean":
        if not isinstance(value, bool):
            raise SchemaError(f"a boolean default is true or false, not {value!r}")
        return b"\x01" if value else b"\x00"
    if k == "int":
        return zigzag(_integer(value, "int", 32))
    if k == "long":
        return zigzag(_integer(value, "long", 64))
    if k == "float":
        return struct.pack("<f", float(_number(value, "float")))
    if k == "double":
        return struct.pack("<d", float(_number(value, "double")))
    if k == "bytes":
        b = _latin1(value, "bytes")
        return zigzag(len(b)) + b
    if k == "string":
        if not isinstance(value, str):
            raise SchemaError(f"a string default is a JSON string, not {value!r}")
        b = value.encode("utf-8", "surrogatepass")
        return zigzag(len(b)) + b
    if k == "fixed":
        b = _latin1(value, "fixed")
        if len(b) != t.size:
            raise SchemaError(f"a default of fixed {t.fullname} has {len(b)} bytes, not {t.size}")
        return b
    if k == "enum":
        if value not in t.symbols:
            raise SchemaError(f"{value!r} is not a symbol of enum {t.fullname}")
        return zigzag(t.symbols.index(value))
    if k == "array":
        if not isinstance(value, list):
            raise SchemaError(f"an array default is a JSON array, not {value!r}")
        if not value:
            return b"\x00"
        return zigzag(len(value)) + b"".join(encode_default(v, t.items, depth + 1) for v in value) + b"\x00"
    if k == "map":
        if not isinstance(value, dict):
            raise SchemaError(f"a map default is a JSON object, not {value!r}")
        if not value:
            return b"\x00"
        out = [zigzag(len(value))]
        for key, v in value.items():
            kb = key.encode("utf-8", "surrogatepass")
            out.append(zigzag(len(kb)) + kb + encode_default(v, t.values, depth + 1))
        return b"".join(out) + b"\x00"
    if k == "record":
        if not isinstance(value, dict):
            raise SchemaError(f"a record default is a JSON object, not {value!r}")
        out = []
        for f in t.fields:
            if f.name in value:
                out.append(encode_default(value[f.name], f.type, depth + 1))
            elif f.has_default:
                out.append(encode_default(f.default, f.type, depth + 1))
            else:
                raise SchemaError(f"record default lacks field {f.name!r} (which has no default)")
        return b"".join(out)
    if k == "union":
        first = None
        for j, b in enumerate(t.branches):
            try:
                return zigzag(j) + encode_default(value, b, depth + 1)
            except SchemaError as exc:
                first = first or exc
        raise SchemaError(f"union default {value!r} matches no branch ({first.reason})")
    raise SchemaError(f"no default for type {k}")  # pragma: no cover
