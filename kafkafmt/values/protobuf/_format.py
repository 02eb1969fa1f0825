"""The ``"protobuf"`` value format: Protobuf messages in the Schema Registry's wire format to Arrow.

    dec = decode_column(recs.value, format="protobuf", registry=reg, topic="orders")
    dec = decode_column(recs.value, format="protobuf", reader_schema=orders_pb2.Order)   # no registry

**Wire format**: byte ``0x00``, the big-endian int32 schema id, the message-index array (a zigzag
varint count, then zigzag varint indexes: the message's position among the file's top-level
messages, then nested positions; the single byte ``0x00`` stands for ``[0]``), then the message.
``"protobuf-raw"`` reads values that are bare messages (no framing: producers without a registry).

**Reader message**: every value is parsed with one reader message, as confluent-kafka's
``ProtobufDeserializer(message_type)`` parses every value with its generated class (fields matched
by number; unknown fields skipped; a field whose wire type does not match is an unknown field).
It is, by ``reader_schema=``: a generated message class, a message or a ``Descriptor``; ``.proto``
text or a ``.proto`` path (its first message); ``{"message": "pkg.Msg", ...}`` with the rest as
below; otherwise what `kafkafmt.values._formats.reader_schema_for` finds (None: the latest live version of
``<topic>-value``; an id; a subject; a version) -- the message of the file whose full name is the
subject's (RecordNameStrategy subjects are message names), else its first message (the registry's
name of a Protobuf schema). A value whose writer message (by schema id and message indexes) has
another full name than the reader message is a per-record error: two record types in one topic
are read once per type. Without a registry, the reader file is also every id's writer schema.

Arrow types and presence: `kafkafmt.values.protobuf._plan`. Schemas: `kafkafmt.values.protobuf._schema`.
"""
from __future__ import annotations

import base64
import datetime
import decimal
import functools
import json
import os
import threading
import weakref

import numpy as np

from kafkafmt._native import protobuf as _kernel
from kafkafmt.errors import SchemaError, SchemaNotFoundError, SchemaRegistryError
from kafkafmt.values.protobuf._plan import ProtoPlan
from kafkafmt.values.protobuf._schema import compile_registered, compile_text, descriptor_of
from kafkafmt.values.registry import InlineSchemaRegistry, open_registry
from kafkafmt.values._formats import (DecodedColumn, ValueFormat, column_parts, column_validity, raise_strict,
                             reader_schema_for, register_format)

__all__ = ["ProtobufFormat", "RawProtobufFormat", "reader_message", "arrow_json"]

E_NO_MAGIC, E_SHORT, E_GUID, E_INDEX = (_kernel.FRAME_ERRORS[k] for k in ("NO_MAGIC", "SHORT", "GUID", "INDEX"))
E_UNKNOWN_ID, E_NOT_PROTOBUF, E_BAD_SCHEMA, E_OTHER_MESSAGE = 67, 68, 70, 72


def _pa():
    import pyarrow as pa
    return pa


class _Cache:
    def __init__(self):
        self.lock = threading.RLock()
        self.writers = {}       # id -> ProtoSchema, or (code, message)
        self.readers = {}       # key -> (descriptor, ProtoPlan)


_CACHES = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def _cache(registry):
    with _CACHES_LOCK:
        c = _CACHES.get(registry)
        if c is None:
            c = _CACHES[registry] = _Cache()
        return c


def _looks_like_proto(spec):
    return isinstance(spec, str) and "{" in spec and ("message " in spec or "syntax" in spec)


def reader_message(registry, topic=None, is_key=False, reader_schema=None, compile=compile_registered):
    """The reader message Descriptor a Protobuf read would use (see the module docstring);
    ``compile(registry, registered_schema)`` compiles the registered schema it finds.

    Raises
    ------
    SchemaNotFoundError, SchemaError
    """
    spec = reader_schema
    d = descriptor_of(spec) if spec is not None and not isinstance(spec, (str, int, dict, os.PathLike)) else None
    if d is not None:
        return d
    if isinstance(spec, os.PathLike) or (isinstance(spec, str) and spec.endswith(".proto") and os.path.isfile(spec)):
        with open(spec, encoding="utf-8") as f:
            spec = f.read()
    if _looks_like_proto(spec):
        return compile_text(spec).first_message()
    message = None
    if isinstance(spec, dict) and "message" in spec:
        spec = dict(spec)
        message = spec.pop("message")
        if not spec:
            spec = None
    if registry is None:
        raise SchemaError("no schema registry to find the reader message in: give a schema registry, or "
                          "reader_schema as a generated message class or .proto text")
    rs = reader_schema_for(registry, topic, is_key, spec)
    if (rs.schema_type or "AVRO") != "PROTOBUF":
        raise SchemaError(f"the reader schema ({rs.subject or 'id %d' % rs.id}) is {rs.schema_type}, not PROTOBUF")
    ps = compile(registry, rs)
    names = [message] if message else []
    if isinstance(spec, str):
        names += [spec] + ([spec[len(topic) + 1:]] if topic and spec.startswith(f"{topic}-") else [])
    if rs.subject:
        names.append(rs.subject)
    for name in names:
        if name:
            d = ps.message_named(name)
            if d is not None:
                return d
    if message:
        raise SchemaNotFoundError(f"the reader schema ({rs.subject or 'id %d' % rs.id}) has no message {message!r}")
    return ps.first_message()


@register_format
class ProtobufFormat(ValueFormat):
    """The Schema Registry wire format with Protobuf values (see the module docstring)."""
    name = "protobuf"
    schema_type = "PROTOBUF"
    framed = True

    def _registry(self, ctx):
        """(registry, reader Descriptor or None): without a registry, one made of the reader."""
        spec = ctx.reader_schema
        if ctx.registry is not None:
            return open_registry(ctx.registry), None
        d = descriptor_of(spec) if spec is not None and not isinstance(spec, (str, int, dict, os.PathLike)) else None
        if d is not None:
            return _GeneratedRegistry.of(d), d
        if isinstance(spec, os.PathLike) or (isinstance(spec, str) and spec.endswith(".proto")
                                             and os.path.isfile(spec)):
            with open(spec, encoding="utf-8") as f:
                spec = f.read()
        if _looks_like_proto(spec):
            reg = _text_registry(spec)
            return reg, reg.reader
        raise SchemaError("no schema registry to find the reader message in: give a schema registry, or "
                          "reader_schema as a generated message class or .proto text")

    def plan(self, ctx):
        """(registry, cache, reader Descriptor, ProtoPlan), cached per registry and reader."""
        reg, d = self._registry(ctx)
        cache = _cache(reg)
        if d is None:
            d = reader_message(reg, ctx.topic, ctx.is_key, ctx.reader_schema,
                               compile=lambda r, rs: self._compiled(r, cache, rs))
        with cache.lock:
            hit = cache.readers.get(id(d))
            if hit is None or hit[0] is not d:
                hit = cache.readers[id(d)] = (d, ProtoPlan(d))
        return reg, cache, hit[0], hit[1]

    def _compiled(self, reg, cache, rs):
        """compile_registered, once per registry and schema (id and text)."""
        key = ("reader", rs.id, rs.schema_str, rs.references)
        with cache.lock:
            hit = cache.writers.get(key)
            if hit is None:
                hit = cache.writers[key] = compile_registered(reg, rs)
            return hit

    def value_type(self, ctx):
        return self.plan(ctx)[3].arrow_type

    def _writer(self, reg, cache, schema_id):
        """The compiled writer schema of an id, or (code, message)."""
        with cache.lock:
            hit = cache.writers.get(schema_id)
            if hit is not None:
                return hit
            reader = getattr(reg, "reader", None)
            if reader is not None:
                hit = _FileOf(reader)
            else:
                try:
                    rs = reg.schema(schema_id)
                except SchemaNotFoundError:
                    hit = (E_UNKNOWN_ID, f"schema id {schema_id} is not in the {reg.source}")
                else:
                    stype = rs.schema_type or "AVRO"
                    if stype != "PROTOBUF":
                        hit = (E_NOT_PROTOBUF, f"schema id {schema_id} is a {stype} schema, not PROTOBUF")
                    else:
                        try:
                            hit = compile_registered(reg, rs)
                        except (SchemaError, SchemaNotFoundError, SchemaRegistryError) as exc:
                            hit = (E_BAD_SCHEMA, f"schema id {schema_id} cannot be used: {exc.reason}")
            cache.writers[schema_id] = hit
            return hit

    def _roots(self, reg, cache, reader, offsets, data, column):
        """(starts, roots, ids, framed mask, {row: error text}) of every row."""
        bits, bit_offset = column_validity(column)
        n = len(offsets) - 1
        if not self.framed:
            roots = np.zeros(n, np.int32)
            if column.null_count:
                roots[~np.asarray(column.is_valid())] = -1
            return offsets[:-1].copy(), roots, np.zeros(n, np.int32), np.zeros(n, bool), {}
        ids, starts, first, count, status, at, extra = _kernel.frame(offsets, data, bits, bit_offset)
        roots = np.where(status == 0, 0, np.where(status < 0, -1, -status)).astype(np.int32)
        framed = status == 0
        texts = {}
        if not framed.any():
            return starts, roots, ids, framed, texts
        simple = framed & (count == 1)
        keys = (ids.astype(np.int64) << 32) | first.astype(np.int64)
        combos = {}                  # (id, indexes) -> rows
        if simple.any():
            rows = np.flatnonzero(simple)
            same = keys[rows] == keys[rows[0]]
            combos[(int(ids[rows[0]]), (int(first[rows[0]]),))] = rows[same]
            rest = rows[~same]
            if len(rest):
                uk, inv = np.unique(keys[rest], return_inverse=True)
                for j in range(len(uk)):
                    r = rest[inv == j]
                    combos[(int(ids[r[0]]), (int(first[r[0]]),))] = r
        for i in np.flatnonzero(framed & (count > 1)).tolist():
            key = (int(ids[i]), tuple(int(v) for v in extra[at[i]:at[i] + count[i]]))
            combos.setdefault(key, [])
            if isinstance(combos[key], list):
                combos[key].append(i)
            else:
                combos[key] = np.append(combos[key], i)
        for (sid, indexes), rows in combos.items():
            w = self._writer(reg, cache, sid)
            if isinstance(w, tuple):
                code, text = w
            else:
                try:
                    msg = w.message_at(list(indexes))
                except SchemaError as exc:
                    code, text = E_INDEX, f"schema id {sid}: {exc.reason}"
                else:
                    if msg.full_name == reader.full_name:
                        continue
                    code, text = E_OTHER_MESSAGE, (f"schema id {sid} message indexes {list(indexes)} name "
                                                   f"{msg.full_name}, not the reader's {reader.full_name}")
            rows = np.asarray(rows, np.int64)
            roots[rows] = -code
            for i in rows.tolist():
                texts[i] = text
        return starts, roots, ids, framed, texts

    def decode(self, column, ctx):
        pa = _pa()
        reg, cache, reader, plan = self.plan(ctx)
        column, offsets, data = column_parts(column)
        starts, roots, ids, framed, texts = self._roots(reg, cache, reader, offsets, data, column)
        values, (code, pos, field, detail) = plan.decode(offsets, data, starts, roots)
        n = len(code)
        bad = np.flatnonzero(code)
        if len(bad):
            out = np.full(n, None, dtype=object)
            for i in bad.tolist():
                c = int(code[i])
                if c >= 64:
                    out[i] = texts.get(i) or _frame_text(c, offsets, data, i)
                else:
                    out[i] = (f"{plan.error_text(c, int(field[i]), int(detail[i]))} "
                              f"(at byte {int(pos[i])} of the message)")
            error = pa.array(out, pa.string())
            if ctx.strict:
                i = int(bad[0])
                position = None
                if code[i] < 64:
                    position = int(starts[i] - offsets[i] + pos[i])
                raise_strict(self, ctx, i, out[i], position)
        else:
            error = pa.nulls(n, pa.string())
        schema_id = pa.Array.from_buffers(pa.int32(), n, [None if framed.all() else pa.py_buffer(
            np.packbits(framed, bitorder="little")), pa.py_buffer(ids)])
        return DecodedColumn(values, schema_id, error, len(bad), self, reader)

    def json(self, decoded):
        return arrow_json(decoded.values)


@register_format
class RawProtobufFormat(ProtobufFormat):
    """Bare Protobuf messages (no framing): ``reader_schema`` names the message."""
    name = "protobuf-raw"
    schema_type = None
    framed = False


class _FileOf:
    """A writer 'schema' that is the reader's own file (readers given as generated classes)."""

    def __init__(self, descriptor):
        self.d = descriptor

    def message_at(self, indexes):
        f = self.d.file
        msgs = list(f.message_types_by_name.values())
        d = None
        for depth, i in enumerate(indexes or [0]):
            if not 0 <= i < len(msgs):
                raise SchemaError(f"message index {i} out of range: {len(msgs)} message(s)")
            d = msgs[i]
            msgs = list(d.nested_types)
        return d


class _GeneratedRegistry(InlineSchemaRegistry):
    """No registry: every schema id's writer is the reader message's own file."""

    _made = {}

    def __init__(self, reader, text=""):
        super().__init__(text, schema_type="PROTOBUF", source=f"reader message {reader.full_name} (no registry given)")
        self.reader = reader

    @classmethod
    def of(cls, d):
        reg = cls._made.get(id(d))
        if reg is None or reg.reader is not d:
            if len(cls._made) > 64:
                cls._made.clear()
            reg = cls._made[id(d)] = cls(d)
        return reg


@functools.lru_cache(maxsize=64)
def _text_registry(text):
    return _GeneratedRegistry(compile_text(text).first_message(), text)


def _frame_text(code, offsets, data, i):
    length = int(offsets[i + 1] - offsets[i])
    if code == E_NO_MAGIC:
        if length == 0:
            return "empty value: no magic byte (not the Schema Registry wire format)"
        return (f"no magic byte: the value starts with 0x{int(data[offsets[i]]):02x}, not 0x00 (not the Schema "
                f"Registry wire format)")
    if code == E_SHORT:
        return f"value of {length} bytes is shorter than the 5 bytes of the wire format's header"
    if code == E_GUID:
        return "magic byte 0x01 (a schema GUID: Confluent's V1 framing) is not supported"
    if code == E_INDEX:
        return "the message-index array after the schema id is truncated or invalid"
    return f"error {code}"


# ------------------------------------------------------------------------------------------------

def _jsonable(v):
    if isinstance(v, bytes):
        return base64.b64encode(v).decode("ascii")
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:                     # a local date-time (no zone): no Z either
            return v.isoformat()
        return v.astimezone(datetime.timezone.utc).replace(tzinfo=None).isoformat() + "Z"
    if isinstance(v, datetime.timedelta):
        return f"{v.total_seconds()}s"
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, list):
        if v and all(isinstance(x, tuple) and len(x) == 2 for x in v):
            return {str(k): _jsonable(x) for k, x in v}
        return [_jsonable(x) for x in v]
    if isinstance(v, tuple):
        return [_jsonable(x) for x in v]
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return v


def arrow_json(values):
    """Each value of an Arrow array as JSON text (None where null): maps as objects, bytes as
    base64, timestamps as RFC 3339 text (as protobuf's JSON mapping prints them; a timestamp
    without a zone, a local date-time, without the ``Z``)."""
    return [None if v is None else json.dumps(_jsonable(v), ensure_ascii=False) for v in values.to_pylist()]
