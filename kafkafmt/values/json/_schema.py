"""Schemas carried as JSON -- JSON Schema (the registry's JSON type) and Kafka Connect's schemas
(``JsonConverter``'s envelope) -- as the target specs of `kafkafmt.values.json._plan`.

**JSON Schema** (drafts 4 to 2020-12, as the registry stores them):

* ``type: object`` with ``properties`` -> struct (properties in order); ``required`` names fields
  that must be present; ``additionalProperties: false`` makes other keys errors, else they are
  kept (``additional_properties="keep"``, the default) as the JSON text of an object in one more
  field, ``additionalProperties`` (`kafkafmt.values._options.EXTRAS_FIELD`; ``_`` appended while a
  property has that name), null when a value has none -- or dropped (``"drop"``); an object with
  only ``additionalProperties: {schema}`` (or ``patternProperties``) -> map<string, value>; an
  object without properties -> its JSON text (string);
* ``type: array`` with ``items: {schema}`` -> list (tuple forms -> JSON text);
* ``string`` -> string (``format: date-time`` -> timestamp[us, UTC], every date-time RFC 3339
  writes, digits below the microsecond dropped; ``time_unit="ns"``: timestamp[ns, UTC], a
  date-time beyond 1677-09-21 .. 2262-04-11 a null field; ``format: date`` -> date32;
  ``enum`` of strings -> dictionary<int32, string>), ``integer`` -> int64, ``number`` -> float64,
  ``boolean`` -> bool, ``null`` -> null;
* ``type: [T, "null"]``, ``oneOf``/``anyOf`` of T and ``{"type": "null"}`` -> T, nullable; other
  unions (several types), ``const``, ``true``/``{}`` -> the value's JSON text (string);
  ``allOf`` of objects -> their properties merged;
* ``$ref``: JSON pointers into the same document (``#/definitions/X``, ``#/$defs/X``, ``#``),
  ``$id``-relative and references to other registered schemas (by the reference's name, with an
  optional ``#/pointer``); a recursive type is unrolled to ``recursive_fields_max_depth`` (Spark's
  ``recursive.fields.max.depth``, 5 by default): a ``$ref`` is followed at most one time less than
  that on a path (at least once), the ``$ref`` past it read as JSON text.

A field is nullable unless it is required and its type excludes null. What is checked per value:
JSON syntax, the types above, ``required``, ``additionalProperties: false``, string ``enum``s --
not constraints that leave the Arrow type alone (``minimum``, ``pattern``, ``maxLength``...).

**Kafka Connect schemas** (``{"type": "struct", "fields": [{"field", "type", "optional", "name",
"parameters"...}]}``): struct, array, map (string keys; other keys -> JSON text, as JsonConverter
writes them as [key, value] pairs), int8..int64, float32/64, boolean, string, bytes (base64);
logical types ``org.apache.kafka.connect.data.Decimal`` (base64 -> decimal128), ``Date``,
``Time``, ``Timestamp`` and Debezium's ``io.debezium.time.*`` (Timestamp, MicroTimestamp,
NanoTimestamp, ZonedTimestamp, Date, MicroTime, ...) -> Arrow's temporal types. A field is nullable
when ``optional``; a required field missing or null is a per-record error, as JsonConverter refuses it.
"""
from __future__ import annotations

import json

from kafkafmt.errors import SchemaError
from kafkafmt.values._options import EXTRAS_FIELD, ValueShape

__all__ = ["spec_of_json_schema", "spec_of_connect"]

_RAW = {"kind": "raw"}


def _pointer(doc, pointer, what):
    node = doc
    if pointer in ("", "#", "#/"):
        return node
    for part in pointer.lstrip("#").lstrip("/").split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise SchemaError(f"$ref {what!r} points at nothing")
    return node


class _JsonSchema:
    def __init__(self, root, documents, shape):
        self.root = root
        self.documents = documents          # reference name (or $id) -> parsed schema
        # ($refs followed on a path: the type reached first counts once, as a record at the top does)
        self.max_recursion = shape.recursive_fields_max_depth - 1
        self.unit = shape.time_unit
        self.extras = shape.additional_properties == "keep"

    def ref(self, ref, doc):
        """(the schema a $ref names, the document it lives in)."""
        name, _, pointer = ref.partition("#")
        if not name:
            return _pointer(doc, pointer, ref), doc
        target = self.documents.get(name)
        if target is None:
            # "$id"-style URLs: match on the last path segment too
            tail = name.rsplit("/", 1)[-1]
            target = next((d for k, d in self.documents.items() if k.rsplit("/", 1)[-1] == tail), None)
        if target is None:
            raise SchemaError(f"$ref {ref!r}: no such reference")
        return _pointer(target, pointer, ref), target

    def spec(self, s, doc, stack, path):
        if s is True or s == {} or s is None:
            return dict(_RAW, null=True)
        if s is False:
            raise SchemaError(f"{path or 'the value'}: the schema false admits no value")
        if not isinstance(s, dict):
            raise SchemaError(f"{path or 'the value'}: a schema is an object, not {type(s).__name__}")
        if "$ref" in s:
            ref = s["$ref"]
            key = (id(doc), ref)
            if stack.count(key) >= max(self.max_recursion, 1):
                return dict(_RAW, null=True)
            target, tdoc = self.ref(ref, doc)
            return self.spec(target, tdoc, stack + (key,), path)
        for word in ("oneOf", "anyOf"):
            if word in s:
                branches = s[word]
                nonnull = [b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")]
                if len(nonnull) == 1:
                    inner = dict(self.spec(nonnull[0], doc, stack, path))
                    inner["null"] = inner.get("null") or len(nonnull) < len(branches)
                    return inner
                return dict(_RAW, null=True)
        if "allOf" in s:
            parts = [self._deref(b, doc, stack) for b in s["allOf"]]
            merged = {k: v for k, v in s.items() if k != "allOf"}
            props, required = dict(merged.get("properties", {})), list(merged.get("required", []))
            for p, pdoc in parts:
                if not isinstance(p, dict):
                    return dict(_RAW, null=True)
                if p.get("type") not in (None, "object") and "properties" not in p:
                    return dict(_RAW, null=True)
                props.update(p.get("properties", {}))
                required += p.get("required", [])
            merged.update(type="object", properties=props, required=required)
            return self.spec(merged, doc, stack, path)
        if "const" in s:
            return dict(_RAW, null=s["const"] is None)
        types = s.get("type")
        if types is None:
            if "properties" in s or "additionalProperties" in s:
                types = "object"
            elif "items" in s:
                types = "array"
            elif "enum" in s:
                if all(isinstance(v, str) for v in s["enum"]):
                    return dict(kind="enum", symbols=list(s["enum"]))
                return dict(_RAW, null=None in s["enum"])
            else:
                return dict(_RAW, null=True)
        if isinstance(types, str):
            types = [types]
        nonnull = [t for t in types if t != "null"]
        null = len(nonnull) < len(types)
        if len(nonnull) != 1:
            if not nonnull:
                return {"kind": "null", "null": True}
            if set(nonnull) == {"integer", "number"}:
                return {"kind": "float", "bits": 64, "null": null}
            return dict(_RAW, null=null)
        t = nonnull[0]
        out = self._typed(t, s, doc, stack, path)
        out["null"] = null
        return out

    def _deref(self, s, doc, stack):
        seen = 0
        while isinstance(s, dict) and "$ref" in s and seen < 64:
            s, doc = self.ref(s["$ref"], doc)
            seen += 1
        return s, doc

    def _typed(self, t, s, doc, stack, path):
        if t == "object":
            props = s.get("properties")
            extra = s.get("additionalProperties", True)
            if not props:
                if isinstance(extra, dict) and extra:
                    return {"kind": "map", "values": self.spec(extra, doc, stack, f"{path}{{}}")}
                pattern = s.get("patternProperties")
                if isinstance(pattern, dict) and len(pattern) == 1:
                    return {"kind": "map", "values": self.spec(next(iter(pattern.values())), doc, stack,
                                                               f"{path}{{}}")}
                return dict(_RAW)
            required = set(s.get("required", []) or [])
            fields = []
            for name, sub in props.items():
                sp = self.spec(sub, doc, stack, f"{path}.{name}" if path else name)
                fields.append((name, sp, name in required))
            out = {"kind": "object", "fields": fields, "closed": extra is False}
            if self.extras and extra is not False:
                name = EXTRAS_FIELD
                while name in props:
                    name += "_"
                out["extras"] = name
            return out
        if t == "array":
            items = s.get("items", True)
            if isinstance(items, list) or "prefixItems" in s:
                return dict(_RAW)
            return {"kind": "array", "items": self.spec(items, doc, stack, f"{path}[]")}
        if t == "string":
            if "enum" in s and all(isinstance(v, str) for v in s["enum"]):
                return {"kind": "enum", "symbols": list(s["enum"])}
            fmt = s.get("format")
            if fmt == "date-time":
                return {"kind": "timestamp", "unit": self.unit, "tz": "UTC"}
            if fmt == "date":
                return {"kind": "date"}
            return {"kind": "string"}
        if t == "integer":
            return {"kind": "int", "bits": 64}
        if t == "number":
            return {"kind": "float", "bits": 64}
        if t == "boolean":
            return {"kind": "bool"}
        raise SchemaError(f"{path or 'the value'}: unknown JSON Schema type {t!r}")


def spec_of_json_schema(schema, references=None, shape=ValueShape()):
    """The target spec of a JSON Schema.

    Parameters
    ----------
    schema : str or dict
        The schema (JSON text or parsed).
    references : dict, optional
        {reference name (or $id): schema text or parsed} of the documents ``$ref`` may name.
    shape : ValueShape
        How deep a recursive type is unrolled before it is read as JSON text, the unit of date-times,
        what becomes of properties outside an object's schema (`kafkafmt.values._options`).

    Raises
    ------
    SchemaError
        The schema is not JSON, or not a schema.
    """
    root = _load(schema, "the JSON Schema")
    docs = {}
    for name, text in (references or {}).items():
        d = _load(text, f"JSON Schema reference {name!r}")
        docs[name] = d
        if isinstance(d, dict) and isinstance(d.get("$id"), str):
            docs.setdefault(d["$id"], d)
    if isinstance(root, dict) and isinstance(root.get("$id"), str):
        docs.setdefault(root["$id"], root)
    return _JsonSchema(root, docs, shape).spec(root, root, (), "")


def _load(text, what):
    if isinstance(text, (dict, bool)):
        return text
    try:
        return json.loads(text)
    except (TypeError, ValueError) as exc:
        raise SchemaError(f"{what} is not JSON: {exc}") from None


# ------------------------------------------------------------------------------------------------
# Kafka Connect

_CONNECT_LOGICAL = {
    "org.apache.kafka.connect.data.Date": {"kind": "date"},
    "org.apache.kafka.connect.data.Time": {"kind": "time", "unit": "ms"},
    # Connect's Timestamp is an instant (java.util.Date, ms since the epoch); Debezium's Timestamp,
    # MicroTimestamp and NanoTimestamp are local date-times (a DATETIME column): no zone
    "org.apache.kafka.connect.data.Timestamp": {"kind": "timestamp", "unit": "ms", "tz": "UTC"},
    "io.debezium.time.Date": {"kind": "date"},
    "io.debezium.time.Time": {"kind": "time", "unit": "ms"},
    "io.debezium.time.MicroTime": {"kind": "time", "unit": "us"},
    "io.debezium.time.Timestamp": {"kind": "timestamp", "unit": "ms"},
    "io.debezium.time.MicroTimestamp": {"kind": "timestamp", "unit": "us"},
    "io.debezium.time.NanoTimestamp": {"kind": "timestamp", "unit": "ns"},
    "io.debezium.time.ZonedTimestamp": {"kind": "timestamp", "unit": "ns", "tz": "UTC"},
}
_CONNECT_TYPES = {"int8": ("int", 8), "int16": ("int", 16), "int32": ("int", 32), "int64": ("int", 64),
                  "float32": ("float", 32), "float64": ("float", 64)}


def spec_of_connect(schema, path=""):
    """The target spec of a Kafka Connect schema (JsonConverter's ``"schema"`` object).

    Raises
    ------
    SchemaError
        Not a Connect schema.
    """
    s = _load(schema, "the Kafka Connect schema")
    if not isinstance(s, dict) or not isinstance(s.get("type"), str):
        raise SchemaError(f"{path or 'the value'}: a Kafka Connect schema is an object with a type")
    t, name, null = s["type"], s.get("name"), bool(s.get("optional"))
    params = s.get("parameters") or {}
    if name == "org.apache.kafka.connect.data.Decimal" and t == "bytes":
        out = {"kind": "decimal", "scale": int(params.get("scale", 0)),
               "precision": int(params.get("connect.decimal.precision", 38))}
    elif name in _CONNECT_LOGICAL and t in ("int32", "int64", "string"):
        out = dict(_CONNECT_LOGICAL[name])
        if t == "string" and out["kind"] != "timestamp":
            out = {"kind": "string"}
    elif t in _CONNECT_TYPES:
        kind, bits = _CONNECT_TYPES[t]
        out = {"kind": kind, "bits": bits}
    elif t == "boolean":
        out = {"kind": "bool"}
    elif t == "string":
        out = {"kind": "string"}
    elif t == "bytes":
        out = {"kind": "base64"}
    elif t == "array":
        out = {"kind": "array", "items": spec_of_connect(s.get("items") or {}, f"{path}[]")}
    elif t == "map":
        keys = s.get("keys") or {}
        if keys.get("type") == "string":
            out = {"kind": "map", "values": spec_of_connect(s.get("values") or {}, f"{path}{{}}")}
        else:
            out = {"kind": "raw"}
    elif t == "struct":
        fields = []
        for f in s.get("fields") or []:
            fname = f.get("field")
            if not isinstance(fname, str):
                raise SchemaError(f"{path or 'the value'}: a struct field without a name")
            sp = spec_of_connect(f, f"{path}.{fname}" if path else fname)
            fields.append((fname, sp, not sp.get("null")))
        out = {"kind": "object", "fields": fields}
    else:
        raise SchemaError(f"{path or 'the value'}: unknown Kafka Connect type {t!r}")
    out["null"] = null
    return out
