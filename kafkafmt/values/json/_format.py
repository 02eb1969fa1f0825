"""The JSON value formats: ``"json-schema"`` (the Schema Registry's wire format with JSON Schema),
``"json"`` (plain JSON text) and ``"connect-json"`` (Kafka Connect's JsonConverter envelope).

    decode_column(col, format="json-schema", registry=reg, topic="orders")
    decode_column(col, format="json", reader_schema=pa.schema([("id", pa.int64()), ...]))
    decode_column(col, format="json")                       # types inferred from the values
    decode_column(col, format="connect-json")               # typed by the envelope's own schema

Every value is parsed in C by one kernel call per column (`kafkafmt._native.jsontext`), straight
into the Arrow type the schema gives (`kafkafmt.values.json._schema`, `kafkafmt.values.json._plan`); a value that is
not JSON, or does not fit the type, is null with a per-record error.

* ``"json-schema"``: byte ``0x00``, the big-endian int32 schema id, then UTF-8 JSON text (as
  confluent-kafka's JSONSerializer and Java's KafkaJsonSchemaSerializer write it). The reader
  schema is ``reader_schema=`` -- a JSON Schema (dict, or text starting with ``{``), an Arrow
  schema / type, or what `kafkafmt.values._formats.reader_schema_for` finds (None: the latest live version
  of ``<topic>-value``; an id; a subject; ``{"version": v}``); its references are the documents
  ``$ref`` may name. Every value is read with the reader schema, matched by field name (JSON
  carries its names): a value whose schema id is unknown or not a JSON schema is a per-record error.
* ``"json"``: no framing, no registry. ``reader_schema=`` is an Arrow schema or type, or a JSON
  Schema; without one the type is inferred as pyarrow's JSON reader infers it, from the first
  ``INFER_ROWS`` values (fields only seen later are ignored; a field that is null in all of them
  reads as JSON text; a value that does not fit is a per-record error) -- give ``reader_schema``
  for a type known before reading (`value_type` needs it).
* ``"connect-json"``: ``{"schema": ..., "payload": ...}`` as JsonConverter writes with
  ``schemas.enable=true`` (Debezium's change events: ``before``/``after``/``source``/``op``/
  ``ts_ms``). The values are the payloads, typed by the Connect schema ``reader_schema=`` gives
  (dict or text; or an Arrow type), else by the embedded schema of the first value that has one;
  payloads are matched to it by field name.
"""
from __future__ import annotations

import functools
import io
import json

import numpy as np

from kafkafmt._native import framing as _framing
from kafkafmt.errors import SchemaError, SchemaNotFoundError, SchemaRegistryError
from kafkafmt.values.json._plan import JsonPlan, spec_of_arrow
from kafkafmt.values.json._schema import spec_of_connect, spec_of_json_schema
from kafkafmt.values._jsontext import json_values_json
from kafkafmt.values._kernelplan import FIELD_ERROR
from kafkafmt.values.registry import open_registry
from kafkafmt.values._formats import (E_BAD_SCHEMA, E_UNKNOWN_ID, DecodedColumn, ValueFormat, column_parts,
                                      column_validity, count_errors, error_texts, frame_error_text, raise_strict,
                                      reader_schema_for, references_by_name)
from kafkafmt.values._options import ValueShape

__all__ = ["JsonSchemaFormat", "JsonFormat", "ConnectJsonFormat", "INFER_ROWS", "json_schema_spec"]

#: values the plain "json" format infers types from
INFER_ROWS = 10_000
_FRAME_NAMES = {code: name for name, code in _framing.FRAME_ERRORS.items()}
E_NOT_JSON = 68
_LOOKUP_KEYS = {"id", "version", "subject"}


def _pa():
    import pyarrow as pa
    return pa


@functools.lru_cache(maxsize=256)
def _plan_of(key):
    """JsonPlan per spec (specs keyed by their JSON text)."""
    return JsonPlan(json.loads(key))


def _plan(spec):
    return _plan_of(json.dumps(spec, sort_keys=True))


def _arrow_spec(spec):
    pa = _pa()
    if isinstance(spec, (pa.Schema, pa.DataType)):
        return spec_of_arrow(spec)
    return None


def json_schema_spec(registry, rs, shape=ValueShape()):
    """The target spec of a registered JSON schema (its references resolved by name), shaped by
    ``shape`` (`kafkafmt.values._options`)."""
    return spec_of_json_schema(rs.schema_str, references_by_name(registry, rs, "JSON Schema"), shape)


class _JsonBase(ValueFormat):
    """Parsing, errors and strict mode shared by the JSON formats."""

    def _finish(self, plan, values, errors, schema_id, starts, offsets, ctx, texts):
        pa = _pa()
        code, pos, node, detail, more = errors
        n = len(code)
        bad = np.flatnonzero(code)
        if len(bad):
            error = error_texts(plan, (bad, code[bad], pos[bad], node[bad], detail[bad], more[bad]), n,
                                lambda c, k: texts(c, int(bad[k])), "JSON text", FIELD_ERROR)
            if ctx.strict:
                i = int(bad[0])
                raise_strict(self, ctx, i, error[i].as_py(),
                             int(starts[i] - offsets[i] + pos[i]) if code[i] < 64 else None)
        else:
            error = pa.nulls(n, pa.string())
        hard, soft = count_errors(values, error)
        return DecodedColumn(values, schema_id, error, hard, self, plan.spec, field_error_count=soft)

    def json(self, decoded):
        return json_values_json(decoded.values, decoded.reader)

    def _given(self, ctx):
        """The spec of ``reader_schema``: None without one, an Arrow schema or type as it is, any
        other schema as the format reads it (`_spec_of`)."""
        spec = ctx.reader_schema
        if spec is None:
            return None
        arrow = _arrow_spec(spec)
        if arrow is not None:
            return arrow
        return self._spec_of(spec, ctx)

    def _spec_of(self, spec, ctx):
        raise NotImplementedError

    def _decode_unframed(self, column, ctx, spec_of_column, envelope=False):
        """(spec, `DecodedColumn`) of a column of JSON texts without framing, typed by the reader
        schema's spec (`_given`) or else ``spec_of_column(column)``; ``envelope``: each text is a
        Connect envelope, its ``payload`` the value."""
        pa = _pa()
        column, offsets, data = column_parts(column)
        spec = self._given(ctx)
        if spec is None:
            spec = spec_of_column(column)
        plan = _plan(_envelope(spec) if envelope else spec)
        starts = offsets[:-1].copy()
        values, errors = plan.decode(offsets, data, starts, _roots_unframed(column))
        if envelope and isinstance(values, pa.ChunkedArray):
            values = pa.chunked_array([c.flatten()[0] for c in values.chunks])
        elif envelope:
            values = values.flatten()[0]
        return spec, self._finish(plan, values, errors, pa.nulls(len(column), pa.int32()), starts, offsets, ctx,
                                  lambda code, i: f"error {code}")


class JsonSchemaFormat(_JsonBase):
    """The Schema Registry wire format with JSON Schema values (see the module docstring)."""
    name = "json-schema"
    summary = "JSON in the Schema Registry's wire format (JSON Schema)"
    schema_type = "JSON"
    needs_schema = True

    def _spec(self, ctx):
        """(registry or None, target spec)."""
        spec = ctx.reader_schema
        reg = None if ctx.registry is None else open_registry(ctx.registry)
        arrow = _arrow_spec(spec)
        if arrow is not None:
            return reg, arrow
        if isinstance(spec, bool) or (isinstance(spec, dict) and (not spec or not set(spec) <= _LOOKUP_KEYS)) or \
                (isinstance(spec, str) and spec.lstrip()[:1] == "{"):
            return reg, spec_of_json_schema(spec, shape=ctx.shape)
        if reg is None:
            raise SchemaError("no schema registry to find the reader schema in: give a schema registry, or "
                              "reader_schema as a JSON Schema or an Arrow schema")
        rs = reader_schema_for(reg, ctx.topic, ctx.is_key, spec)
        if (rs.schema_type or "AVRO") != "JSON":
            raise SchemaError(f"the reader schema ({rs.subject or 'id %d' % rs.id}) is {rs.schema_type}, not JSON")
        return reg, json_schema_spec(reg, rs, ctx.shape)

    def value_type(self, ctx):
        return _plan(self._spec(ctx)[1]).arrow_type

    def decode(self, column, ctx):
        pa = _pa()
        reg, spec = self._spec(ctx)
        plan = _plan(spec)
        column, offsets, data = column_parts(column)
        bits, bit_offset = column_validity(column)
        ids, slots, uniq = _framing.frame(offsets, data, bits, bit_offset)
        problems = {}
        lut = np.zeros(len(uniq), np.int32)
        for j, sid in enumerate(uniq.tolist()):
            if reg is None:
                continue
            try:
                stype = reg.schema(sid).schema_type or "AVRO"
            except SchemaNotFoundError:
                lut[j], problems[sid] = -E_UNKNOWN_ID, f"schema id {sid} is not in the {reg.source}"
                continue
            except SchemaRegistryError as exc:
                lut[j], problems[sid] = -E_BAD_SCHEMA, f"schema id {sid} cannot be used: {exc.reason}"
                continue
            if stype != "JSON":
                lut[j], problems[sid] = -E_NOT_JSON, f"schema id {sid} is a {stype} schema, not JSON"
        framed = slots >= 0
        roots = np.where(framed, lut[np.maximum(slots, 0)] if len(lut) else 0, slots).astype(np.int32)
        starts = offsets[:-1] + 5
        values, errors = plan.decode(offsets, data, np.minimum(starts, offsets[1:]), roots)

        def texts(code, i):
            text = frame_error_text(_FRAME_NAMES.get(code), (data[offsets[i]:offsets[i] + 1],
                                                             int(offsets[i + 1] - offsets[i])))
            return text if text is not None else problems.get(int(ids[i]), f"schema id {int(ids[i])}: error {code}")

        n = len(ids)
        schema_id = pa.Array.from_buffers(pa.int32(), n, [None if framed.all() else pa.py_buffer(
            np.packbits(framed, bitorder="little")), pa.py_buffer(ids)])
        return self._finish(plan, values, errors, schema_id, starts, offsets, ctx, texts)


def _roots_unframed(column):
    roots = np.zeros(len(column), np.int32)
    if column.null_count:
        roots[~np.asarray(column.is_valid())] = -1
    return roots


class JsonFormat(_JsonBase):
    """Plain JSON text, no framing (see the module docstring)."""
    name = "json"
    summary = "plain JSON text (types given or inferred)"

    def _spec_of(self, spec, ctx):
        if isinstance(spec, (dict, bool)) or (isinstance(spec, str) and spec.lstrip()[:1] == "{"):
            return spec_of_json_schema(spec, shape=ctx.shape)
        raise SchemaError(f"reader_schema for plain JSON is an Arrow schema or type, or a JSON Schema, "
                          f"not {type(spec).__name__}")

    def value_type(self, ctx):
        spec = self._given(ctx)
        if spec is None:
            raise SchemaError("plain JSON without reader_schema has its type inferred from the values: "
                              "give reader_schema (an Arrow schema or a JSON Schema) to know it before reading")
        return _plan(spec).arrow_type

    def decode(self, column, ctx):
        return self._decode_unframed(column, ctx, infer_spec)[1]


def infer_spec(column, rows=None):
    """The spec pyarrow's JSON reader infers from the first ``rows`` (INFER_ROWS) non-null values
    (each wrapped as ``{"v": value}``; values it cannot parse are left out); fields null in all of
    them read as JSON text."""
    pa = _pa()
    import pyarrow.json as pj
    rows = INFER_ROWS if rows is None else rows
    valid = column.drop_null()[:rows] if column.null_count else column[:rows]
    texts = [v for v in valid.to_pylist() if v is not None]

    def infer(chunk, depth=0):
        if not chunk:
            return None
        buf = b"".join(b'{"v":' + t + b"}\n" for t in chunk)
        try:
            t = pj.read_json(io.BytesIO(buf), read_options=pj.ReadOptions(use_threads=False),
                             parse_options=pj.ParseOptions(newlines_in_values=True))
            if t.num_rows == len(chunk):
                return t.schema
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
        if len(chunk) == 1 or depth > 12:
            return None
        half = len(chunk) // 2
        schemas = [s for s in (infer(chunk[:half], depth + 1), infer(chunk[half:], depth + 1)) if s is not None]
        if not schemas:
            return None
        try:
            return pa.unify_schemas(schemas, promote_options="permissive")
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return schemas[0]

    schema = infer(texts)
    if schema is None or "v" not in schema.names:
        return {"kind": "raw", "null": True}
    return _nulls_as_raw(spec_of_arrow(schema.field("v").type))


def _nulls_as_raw(spec):
    if spec.get("kind") == "null":
        return {"kind": "raw", "null": True}
    out = dict(spec)
    if "fields" in out:
        out["fields"] = [(n, _nulls_as_raw(s), r) for n, s, r in out["fields"]]
    for k in ("items", "values"):
        if k in out:
            out[k] = _nulls_as_raw(out[k])
    return out


class ConnectJsonFormat(_JsonBase):
    """Kafka Connect's JsonConverter envelope (see the module docstring)."""
    name = "connect-json"
    summary = "Kafka Connect's JsonConverter envelope (typed by its schema)"

    def _spec_of(self, spec, ctx):
        return spec_of_connect(spec)

    def value_type(self, ctx):
        spec = self._given(ctx)
        if spec is None:
            raise SchemaError("connect-json without reader_schema is typed by the first value's embedded schema: "
                              "give reader_schema (the Connect schema) to know the type before reading")
        return _plan(_envelope(spec)).arrow_type.field("payload").type

    def decode(self, column, ctx):
        spec, dec = self._decode_unframed(column, ctx, embedded_schema, envelope=True)
        dec.reader = spec
        return dec


def _envelope(spec):
    return {"kind": "object", "fields": [("payload", spec, False)]}


def embedded_schema(column, tries=64):
    """The Connect schema spec of the first value with an embedded ``"schema"`` (of the first
    ``tries`` non-null values).

    Raises
    ------
    SchemaError
        None of them carries a schema.
    """
    for v in column.drop_null()[:tries].to_pylist() if column.null_count else column[:tries].to_pylist():
        try:
            doc = json.loads(v)
        except ValueError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get("schema"), dict):
            return spec_of_connect(doc["schema"])
    raise SchemaError("no value carries a Kafka Connect schema ({\"schema\": ..., \"payload\": ...}): give "
                      "reader_schema, or read the values as plain JSON (format=\"json\")")

