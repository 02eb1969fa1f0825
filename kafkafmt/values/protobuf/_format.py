"""The ``"protobuf"`` value format: Protobuf messages in the Schema Registry's wire format to Arrow.

    dec = decode_column(recs.value, format="protobuf", registry=reg, topic="orders")
    dec = decode_column(recs.value, format="protobuf", reader_schema=orders_pb2.Order)   # no registry

**Wire format**: byte ``0x00``, the big-endian int32 schema id, the message-index array (a zigzag
varint count, then zigzag varint indexes: the message's position among the file's top-level
messages, then nested positions; the single byte ``0x00`` stands for ``[0]``), then the message.
``"protobuf-raw"`` reads values that are bare messages (no framing: producers without a registry).

**Which message a value is**: a value's message indexes name its message in the writer's file; it
is read as that message, as Java's ``KafkaProtobufDeserializer`` without a specific type reads it,
fields matched by number (unknown fields skipped; a field whose wire type does not match is an
unknown field). The column's type comes from the reader messages (`reader_messages`):

* a message named -- ``reader_schema=`` a generated message class, a message or a ``Descriptor``;
  ``{"message": "pkg.Msg", ...}`` (or a list of names) with the rest as below; a message's full name
  (``"pkg.Msg"``, a message of the topic's subject); a subject that is a message's name
  (RecordNameStrategy) -- is the column's struct, and values of any other message are per-record
  errors saying how to read them (name their message);
* otherwise, with a registry -- the reader schema None: the latest live version of ``<topic>-value``;
  an id; a subject; a version (what `kafkafmt.values._formats.reader_schema_for` finds) -- the
  messages the values name, when the reader file has several: a read scans the values' indexes
  first (`ProtobufFormat.scan_names`, each id's writer file read at them; `decode_column` its own
  column) and reads them with `ProtobufFormat.named_reader` of what it found -- one message, its
  struct (a file declaring ``Geo`` then ``Click``, ``Click`` using ``Geo``: a topic of ``Geo`` values
  is ``Geo``); several, a struct with one nullable field per message, named as the message is inside
  its package (``Created``, ``Envelope.Visit``), each value in its own message's field. Before any
  value is read (`value_type`, no value to scan, ``.proto`` text or a ``.proto`` path as the reader):
  the messages of its file no other message uses, top-level ones first
  (`ProtoSchema.record_messages`: ``Click``). Values of a message the column does not hold (a
  stream's later values) are per-record errors naming how to read them.

Without a registry, the reader file is also every id's writer schema. ``"protobuf-raw"`` values
carry no message indexes: their reader is one message.

Arrow types and presence: `kafkafmt.values.protobuf._plan`. Schemas: `kafkafmt.values.protobuf._schema`.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import re
import threading

import numpy as np

from kafkafmt._native import framing as _framing
from kafkafmt.errors import SchemaError, SchemaNotFoundError, SchemaRegistryError
from kafkafmt.values.protobuf._plan import MessagesPlan, ProtoPlan
from kafkafmt.values.protobuf._schema import compile_registered, compile_text, descriptor_of
from kafkafmt.values.registry import InlineSchemaRegistry, open_registry
from kafkafmt.values._formats import (DecodedColumn, PerRegistry, ValueFormat, column_parts, column_validity,
                                      count_errors, error_texts, frame_error_text, raise_strict, reader_schema_for,
                                      registered_writer)
from kafkafmt.values._jsontext import arrow_json
from kafkafmt.values._kernelplan import FIELD_ERROR
from kafkafmt.values.protobuf._json import protobuf_json

__all__ = ["ProtobufFormat", "RawProtobufFormat", "reader_messages", "resolve_reader", "arrow_json"]

_FRAME_NAMES = {code: name for name, code in _framing.FRAME_ERRORS.items()}
E_INDEX = _framing.FRAME_ERRORS["INDEX"]
E_NOT_PROTOBUF, E_OTHER_MESSAGE = 68, 72


def _pa():
    import pyarrow as pa
    return pa


class _Cache:
    def __init__(self):
        self.lock = threading.RLock()
        self.writers = {}       # id -> ProtoSchema, or (code, message)
        self.readers = {}       # key -> (descriptor, ProtoPlan)


_cache = PerRegistry(_Cache)


def _looks_like_proto(spec):
    return isinstance(spec, str) and "{" in spec and ("message " in spec or "syntax" in spec)


#: a fully qualified message name (``pkg.Msg``, ``pkg.Outer.Inner``; a leading dot allowed)
_MESSAGE_NAME = re.compile(r"\.?[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def _text_of(spec):
    """.proto text of a reader given as a ``.proto`` path, else ``spec`` itself."""
    if isinstance(spec, os.PathLike) or (isinstance(spec, str) and spec.endswith(".proto") and os.path.isfile(spec)):
        with open(spec, encoding="utf-8") as f:
            return f.read()
    return spec


def resolve_reader(registry, topic=None, is_key=False, reader_schema=None):
    """(registered schema, message named or None, names that may be a message's) of a reader given
    by a registry: an id, a subject, a version, ``{"message": ..., ...}``, or a fully qualified
    message name of the topic's subject (None: the TopicNameStrategy subject). Without a message
    named, the subject's name is one if it is a message's (RecordNameStrategy subjects), else
    `reader_messages` takes the messages the file holds as values.

    Raises
    ------
    SchemaNotFoundError, SchemaError
    """
    spec, message = reader_schema, None
    if isinstance(spec, dict) and "message" in spec:
        spec = dict(spec)
        message = _message_names(spec.pop("message"))
        spec = spec or None
    if registry is None:
        raise SchemaError("no schema registry to find the reader message in: give a schema registry, or "
                          "reader_schema as a generated message class or .proto text")
    try:
        rs = reader_schema_for(registry, topic, is_key, spec)
    except SchemaNotFoundError as exc:
        name = spec.strip() if isinstance(spec, str) else None
        if message is not None or name is None or not _MESSAGE_NAME.fullmatch(name):
            raise
        # not a subject: a message of the topic's own subject (as {"message": name})
        message = name.lstrip(".")
        try:
            rs = reader_schema_for(registry, topic, is_key, None)
        except (SchemaNotFoundError, SchemaError):
            raise SchemaNotFoundError(f"{exc.reason}; and {name!r} is not a message of the topic's subject "
                                      f"either (it has no live version)") from None
    if (rs.schema_type or "AVRO") != "PROTOBUF":
        raise SchemaError(f"the reader schema ({rs.subject or 'id %d' % rs.id}) is {rs.schema_type}, not PROTOBUF")
    # without a message named: a subject that is a message's name (RecordNameStrategy,
    # TopicRecordNameStrategy) names it
    names = []
    if isinstance(spec, str):
        names += [spec] + ([spec[len(topic) + 1:]] if topic and spec.startswith(f"{topic}-") else [])
    if rs.subject:
        names.append(rs.subject)
    return rs, message, [n for n in names if _MESSAGE_NAME.fullmatch(n)]


def _message_names(message):
    """A message named in ``{"message": ...}``: its full name, or a tuple of them (several)."""
    if isinstance(message, (list, tuple)):
        names = tuple(str(m).lstrip(".") for m in message)
        return names[0] if len(names) == 1 else names
    return str(message).lstrip(".")


def reader_messages(registry, topic=None, is_key=False, reader_schema=None, compile=compile_registered):
    """The reader messages (a tuple of Descriptors) a Protobuf read would use (see the module
    docstring): the message or messages named (``{"message": name or [names]}``), else the messages
    the schema's file holds as values (`ProtoSchema.record_messages`). ``compile(registry,
    registered_schema)`` compiles the registered schema it finds.

    Raises
    ------
    SchemaNotFoundError, SchemaError
        No reader schema, or a message named that it lacks.
    """
    spec = reader_schema
    d = descriptor_of(spec) if spec is not None and not isinstance(spec, (str, int, dict, os.PathLike)) else None
    if d is not None:
        return (d,)
    spec = _text_of(spec)
    if _looks_like_proto(spec):
        return tuple(compile_text(spec).record_messages())
    rs, message, names = resolve_reader(registry, topic, is_key, spec)
    ps = compile(registry, rs)
    if isinstance(message, tuple):
        return tuple(_named(ps, rs, m) for m in message)
    if message is not None:
        return (_named(ps, rs, message),)
    for name in names:
        d = ps.message_named(name)
        if d is not None:
            return (d,)
    return tuple(ps.record_messages())


def _named(ps, rs, name):
    d = ps.message_named(name)
    if d is None:
        raise SchemaNotFoundError(f"the reader schema ({rs.subject or 'id %d' % rs.id}) has no message "
                                  f"{name!r}: its messages are {', '.join(_all_names(ps))}")
    return d


def _all_names(ps):
    out = []

    def walk(descs):
        for d in descs:
            if not d.GetOptions().map_entry:
                out.append(d.full_name)
            walk(d.nested_types)
    walk(ps.file.message_types_by_name.values())
    return out


class ProtobufFormat(ValueFormat):
    """The Schema Registry wire format with Protobuf values (see the module docstring)."""
    name = "protobuf"
    summary = "Protobuf in the Schema Registry's wire format"
    schema_type = "PROTOBUF"
    needs_schema = True
    framed = True

    def _registry(self, ctx):
        """(registry, reader Descriptors or None): without a registry, one made of the reader."""
        spec = ctx.reader_schema
        if ctx.registry is not None:
            return open_registry(ctx.registry), None
        d = descriptor_of(spec) if spec is not None and not isinstance(spec, (str, int, dict, os.PathLike)) else None
        if d is not None:
            return _GeneratedRegistry.of(d), (d,)
        spec = _text_of(spec)
        if _looks_like_proto(spec):
            reg = _text_registry(spec)
            return reg, reg.readers
        raise SchemaError("no schema registry to find the reader message in: give a schema registry, or "
                          "reader_schema as a generated message class or .proto text")

    def plan(self, ctx):
        """(registry, cache, reader Descriptors, plan): a `ProtoPlan`, or a `MessagesPlan` when the
        column holds several messages; cached per registry and readers."""
        reg, ds = self._registry(ctx)
        cache = _cache(reg)
        if ds is None:
            ds = reader_messages(reg, ctx.topic, ctx.is_key, ctx.reader_schema,
                                 compile=lambda r, rs: self._compiled(r, cache, rs))
        if len(ds) > 1 and not self.framed:
            raise SchemaError(f"bare Protobuf values carry no message indexes, and the reader schema holds "
                              f"{len(ds)} messages ({', '.join(d.full_name for d in ds)}): name the message "
                              f"(reader_schema={{'message': ...}} with a registry, or a generated class)")
        shape = ctx.shape
        key = (tuple(id(d) for d in ds), shape.recursive_fields_max_depth, shape.time_unit)
        with cache.lock:
            hit = cache.readers.get(key)
            if hit is None or any(a is not b for a, b in zip(hit[0], ds)):
                args = (shape.recursive_fields_max_depth, shape.time_unit)
                hit = cache.readers[key] = (ds, ProtoPlan(ds[0], *args) if len(ds) == 1 else MessagesPlan(ds, *args))
        return reg, cache, hit[0], hit[1]

    def pinned_reader(self, ctx):
        """The schema id the reader resolves to now, with the message or messages it reads
        (``{"id": ..., "message": ...}``); None for a reader given without a registry."""
        if ctx.registry is None or _looks_like_proto(_text_of(ctx.reader_schema)) or \
                descriptor_of(ctx.reader_schema) is not None:
            return None
        rs = resolve_reader(open_registry(ctx.registry), ctx.topic, ctx.is_key, ctx.reader_schema)[0]
        if rs.id is None or rs.id < 0:
            return None
        names = tuple(d.full_name for d in self.plan(ctx)[2])
        return {"id": rs.id, "message": names[0] if len(names) == 1 else names}

    def _compiled(self, reg, cache, rs):
        """compile_registered, once per registry and schema (id and text)."""
        key = ("reader", rs.id, rs.schema_str, rs.references)
        with cache.lock:
            hit = cache.writers.get(key)
            if hit is None:
                hit = cache.writers[key] = compile_registered(reg, rs)
            return hit

    def _scanned(self, ctx):
        """(registry, cache, registered reader schema, its compiled file) when the messages of the
        column depend on what the values name -- a registry's file of several messages, none named
        (nor by a subject that is a message's name) -- else None."""
        spec = ctx.reader_schema
        if not self.framed or ctx.registry is None or _looks_like_proto(_text_of(spec)) or \
                (spec is not None and not isinstance(spec, (str, int, dict)) and descriptor_of(spec) is not None):
            return None
        reg = open_registry(ctx.registry)
        cache = _cache(reg)
        rs, message, names = resolve_reader(reg, ctx.topic, ctx.is_key, spec)
        if message is not None:
            return None
        ps = self._compiled(reg, cache, rs)
        if len(_all_names(ps)) < 2 or any(ps.message_named(n) is not None for n in names):
            return None
        return reg, cache, rs, ps

    def scan_names(self, column, ctx):
        """The full names of the messages the values' indexes name (each id's writer file read at
        them), when the reader file has several messages and none is named; else None."""
        scanned = self._scanned(ctx)
        if scanned is None:
            return None
        if column is None:
            return set()
        reg, cache = scanned[:2]
        column, offsets, data = column_parts(column)
        bits, bit_offset = column_validity(column)
        ids, _, first, count, status, at, extra = _framing.frame_protobuf(offsets, data, bits, bit_offset)
        names = set()
        for sid, indexes in _combos(ids, first, count, status == 0, at, extra):
            w = self._writer(reg, cache, sid)
            if isinstance(w, tuple):
                continue                # (an id that is not a Protobuf schema: a per-record error)
            try:
                names.add(w.message_at(list(indexes)).full_name)
            except SchemaError:
                continue                # (indexes the file lacks: a per-record error)
        return names

    def named_reader(self, names, ctx):
        """``{"id": ..., "message": ...}``: the reader file's messages among ``names``, in the file's
        order (one: that message; several: one field each); the messages its file holds as values
        (`ProtoSchema.record_messages`) when the values name none of them (no values)."""
        scanned = self._scanned(ctx)
        if scanned is None:
            return None
        _, _, rs, ps = scanned
        held = [n for n in _all_names(ps) if n in names] or [d.full_name for d in ps.record_messages()]
        message = held[0] if len(held) == 1 else tuple(held)
        if rs.id is not None and rs.id >= 0:
            return {"id": rs.id, "message": message}
        spec = ctx.reader_schema
        base = dict(spec) if isinstance(spec, dict) else {"subject": spec} if isinstance(spec, str) else {}
        return {**base, "message": message}

    def value_type(self, ctx):
        return self.plan(ctx)[3].arrow_type

    def _writer(self, reg, cache, schema_id):
        """The compiled writer schema of an id, or (code, message)."""
        with cache.lock:
            hit = cache.writers.get(schema_id)
            if hit is not None:
                return hit
            readers = getattr(reg, "readers", None)
            if readers is not None:
                hit = _FileOf(readers[0])
            else:
                hit = registered_writer(
                    reg, schema_id,
                    lambda stype: None if stype == "PROTOBUF" else
                    (E_NOT_PROTOBUF, f"schema id {schema_id} is a {stype} schema, not PROTOBUF"),
                    compile_registered, (SchemaError, SchemaNotFoundError, SchemaRegistryError))
            cache.writers[schema_id] = hit
            return hit

    def _roots(self, reg, cache, readers, offsets, data, column, is_key):
        """(starts, roots, ids, framed mask, {row: error text}) of every row; a root is the index of
        the reader message the row's message indexes name, or -1 (null) / -code (an error)."""
        bits, bit_offset = column_validity(column)
        n = len(offsets) - 1
        if not self.framed:
            roots = np.zeros(n, np.int32)
            if column.null_count:
                roots[~np.asarray(column.is_valid())] = -1
            return offsets[:-1].copy(), roots, np.zeros(n, np.int32), np.zeros(n, bool), {}
        ids, starts, first, count, status, at, extra = _framing.frame_protobuf(offsets, data, bits, bit_offset)
        roots = np.where(status == 0, 0, np.where(status < 0, -1, -status)).astype(np.int32)
        framed = status == 0
        texts = {}
        if not framed.any():
            return starts, roots, ids, framed, texts
        held = {d.full_name: k for k, d in enumerate(readers)}
        for (sid, indexes), rows in _combos(ids, first, count, framed, at, extra).items():
            w = self._writer(reg, cache, sid)
            if isinstance(w, tuple):
                code, text = w
            else:
                try:
                    msg = w.message_at(list(indexes))
                except SchemaError as exc:
                    code, text = E_INDEX, f"schema id {sid}: {exc.reason}"
                else:
                    k = held.get(msg.full_name)
                    if k is not None:
                        if k:
                            roots[np.asarray(rows, np.int64)] = k
                        continue
                    code, text = E_OTHER_MESSAGE, _other_message(sid, indexes, msg.full_name, readers, is_key)
            rows = np.asarray(rows, np.int64)
            roots[rows] = -code
            for i in rows.tolist():
                texts[i] = text
        return starts, roots, ids, framed, texts

    def decode(self, column, ctx):
        pa = _pa()
        names = self.scan_names(column, ctx)
        if names is not None:       # (a column read on its own: its values name the messages read)
            ctx = dataclasses.replace(ctx, reader_schema=self.named_reader(names, ctx))
        reg, cache, readers, plan = self.plan(ctx)
        column, offsets, data = column_parts(column)
        starts, roots, ids, framed, texts = self._roots(reg, cache, readers, offsets, data, column, ctx.is_key)
        values, (code, pos, field, detail, more) = plan.decode(offsets, data, starts, roots)
        n = len(code)
        bad = np.flatnonzero(code)
        if len(bad):
            error = error_texts(plan, (bad, code[bad], pos[bad], field[bad], detail[bad], more[bad]), n,
                                lambda c, k: texts.get(int(bad[k])) or _frame_text(c, offsets, data, int(bad[k])),
                                "message", FIELD_ERROR)
            if ctx.strict:
                i = int(bad[0])
                position = None
                if code[i] < 64:
                    position = int(starts[i] - offsets[i] + pos[i])
                raise_strict(self, ctx, i, error[i].as_py(), position)
        else:
            error = pa.nulls(n, pa.string())
        schema_id = pa.Array.from_buffers(pa.int32(), n, [None if framed.all() else pa.py_buffer(
            np.packbits(framed, bitorder="little")), pa.py_buffer(ids)])
        hard, soft = count_errors(values, error)
        return DecodedColumn(values, schema_id, error, hard, self, readers[0] if len(readers) == 1 else readers,
                             field_error_count=soft)

    def json(self, decoded):
        return protobuf_json(decoded.values, decoded.reader)


def _combos(ids, first, count, framed, at, extra):
    """{(schema id, message indexes): rows} of the framed rows (the kernel's ``frame``)."""
    simple = framed & (count == 1)
    keys = (ids.astype(np.int64) << 32) | first.astype(np.int64)
    combos = {}
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
    # nested messages (two or more indexes): rows grouped by (id, indexes), per index count
    multi = np.flatnonzero(framed & (count > 1))
    for c in np.unique(count[multi]).tolist():
        rows = multi[count[multi] == c]
        keys = np.empty((len(rows), c + 1), np.int64)
        keys[:, 0] = ids[rows]
        keys[:, 1:] = extra[at[rows][:, None] + np.arange(c)]
        uk, inv = np.unique(keys, axis=0, return_inverse=True)
        inv = inv.ravel()
        order = np.argsort(inv, kind="stable")
        bounds = np.searchsorted(inv[order], np.arange(len(uk) + 1))
        for j, key in enumerate(uk.tolist()):
            combos[(key[0], tuple(key[1:]))] = rows[order[bounds[j]:bounds[j + 1]]]
    return combos


class RawProtobufFormat(ProtobufFormat):
    """Bare Protobuf messages (no framing): ``reader_schema`` names the message."""
    name = "protobuf-raw"
    summary = "bare Protobuf messages (no framing)"
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
    """No registry: every schema id's writer is the reader messages' own file."""

    _made = {}

    def __init__(self, readers, text=""):
        super().__init__(text, schema_type="PROTOBUF",
                         source=f"reader file {readers[0].file.name} (no registry given)")
        self.readers = tuple(readers)

    @classmethod
    def of(cls, d):
        reg = cls._made.get(id(d))
        if reg is None or reg.readers[0] is not d:
            if len(cls._made) > 64:
                cls._made.clear()
            reg = cls._made[id(d)] = cls((d,))
        return reg


@functools.lru_cache(maxsize=64)
def _text_registry(text):
    return _GeneratedRegistry(compile_text(text).record_messages(), text)


def _other_message(sid, indexes, name, readers, is_key):
    """The error of a value whose message indexes name a message the column does not hold."""
    held = readers[0].full_name if len(readers) == 1 else "one of " + ", ".join(d.full_name for d in readers)
    side = "key" if is_key else "value"
    return (f"schema id {sid} message indexes {list(indexes)} name {name}, not the reader's {held}: read them "
            f"with {side}_schema={{'message': '{name}'}} (on the command line --{side}-schema {name})")


def _frame_text(code, offsets, data, i):
    head, length = data[offsets[i]:offsets[i] + 1], int(offsets[i + 1] - offsets[i])
    text = frame_error_text(_FRAME_NAMES.get(code), (head, length))
    if text is not None:
        return text
    if code == E_INDEX:
        return "the message-index array after the schema id is truncated or invalid"
    return f"error {code}"
