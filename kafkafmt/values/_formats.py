"""Typed keys and values: one call turns a column of raw keys or values into Arrow, by format.

    dec = decode_column(recs.value, format="avro", registry=open_registry(None, roots=root), topic="orders")
    dec.values        # pyarrow StructArray typed by the reader schema (null where a value is bad or null)
    dec.schema_id     # pyarrow int32: the schema id of each framed value (null where not framed)
    dec.error         # pyarrow string: why a value is null (null where fine, and for tombstones)
    dec.error_count
    value_type("avro", registry=reg, topic="orders")   # the Arrow type, before reading anything

Formats are classes in one table, ``FORMATS[name]``: `BUILTIN_FORMATS` (name -> the module and class,
imported when first used), the ``kafkafmt.value_formats`` entry points of installed packages, and
`register_format`'s. A format declares what every door needs to know (`ValueFormat`: its summary, whether
it needs schemas, the registry type it decodes, the sides it types, its JSON text); the readers, the
command line's choices and help, Spark's options, the Arrow stream and export read the table. Here:

=============  ==========================================================================================
``None``       the bytes as they are (``"bytes"`` too): binary
``"string"``   UTF-8 text: string; invalid UTF-8 is a per-record error
``"avro"``     the Schema Registry wire format (byte 0x00, big-endian int32 schema id, Avro binary; a
               top-level ``"bytes"`` schema written raw): each id's writer schema resolved to one
               reader schema; an id whose schema is not AVRO is a per-record error
``"registry"`` the wire format, each id's registered type deciding (`kafkafmt.values._registryformat`)
=============  ==========================================================================================

(``"string"`` in `kafkafmt.values._string`, ``"avro"`` in `kafkafmt.values.avro._format`), and ``"protobuf"``, ``"protobuf-raw"`` in
`kafkafmt.values.protobuf._format`, ``"json-schema"``, ``"json"``, ``"connect-json"`` in
`kafkafmt.values.json._format`.

**Reader schema** (``reader_schema=``): None takes the latest live version of ``<topic>-value``
(``<topic>-key`` for keys): the TopicNameStrategy. Otherwise an int (a schema id), a
`RegisteredSchema`, ``{"version": v}`` / ``{"subject": s, "version": v}`` / ``{"id": i}``, an
Avro schema (JSON text, parsed JSON or a ``.avsc`` path), or a subject name: its latest live
version, else that of ``<topic>-<name>``. For topics written with the RecordNameStrategy or
TopicRecordNameStrategy (several record types per topic) name the record type:
``reader_schema="com.acme.Order"`` picks subject ``com.acme.Order`` (or ``orders-com.acme.Order``);
values of other record types do not resolve to it and are per-record errors ("names differ") --
read the topic once per record type to get each as its own table. Without a registry, a reader
schema given as a schema is also every id's writer schema.

**Bad values never crash and never pass silently**: no magic byte, a value shorter than the
framing, an unknown schema id, a truncated or corrupt body, bytes left after the value, a value
the reader schema cannot hold -> that value is null and ``error`` says why (with the byte position
inside the value). A value read whole but for a field its column cannot hold -- a decimal with more
digits than its precision, a JSON integer beyond int64, a Timestamp beyond its unit's range -- is
kept: that field is null and ``error`` names it (``field_error_count`` counts such values). Bytes left after a value are read as Confluent's deserializers (Java's
KafkaAvroDeserializer, confluent-kafka's AvroDeserializer) read them -- ignored, the value
decoded -- and counted in ``trailing_count``; ``trailing="error"`` makes such values errors.
``strict=True`` raises `ValueDecodeError` for the
first bad value instead, naming ``file``, its ``positions`` entry and its Kafka offset. Null input
values (tombstones) stay null without an error.
"""
from __future__ import annotations

import collections.abc
import dataclasses
import json
import os
import threading
import weakref

import numpy as np

from kafkafmt.errors import SchemaError, SchemaNotFoundError, ValueDecodeError
from kafkafmt.values._options import DEFAULT_MAX_DEPTH, ValueShape
from kafkafmt.values.registry import RegisteredSchema, SchemaRegistry, open_registry
from kafkafmt._util.extras import install_command

__all__ = ["decode_column", "value_type", "DecodedColumn", "ValueFormat", "FORMATS", "BUILTIN_FORMATS",
           "ENTRY_POINTS", "register_format", "get_format", "format_names", "needs_schema", "format_of_type",
           "schema_types", "KernelFormat", "reader_schema_for", "pinned_reader", "scan_names", "named_reader",
           "column_parts", "column_validity", "kernel_source", "null_array", "gather_views",
           "raise_strict", "frame_error_text", "PerRegistry", "nullable_type", "merge_types", "conform",
           "count_errors", "field_error_text", "error_texts"]



def _pa():
    try:
        import pyarrow as pa
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"typed values need pyarrow: {install_command('arrow')}") from exc
    return pa


@dataclasses.dataclass
class DecodedColumn:
    """The result of `decode_column` (and of the readers' ``value_format=`` / ``key_format=``:
    ``recs.typed``). Its fields, given to the constructor, are its attributes.

    Parameters
    ----------
    values : pyarrow.Array or pyarrow.ChunkedArray
        The decoded values (chunked only if one column would pass 2 GiB).
    schema_id : pyarrow.Int32Array
        Schema id of each framed value; null where the value is null or not framed.
    error : pyarrow.StringArray
        Why a value is null, or which of its fields is (a value read whole but for fields its columns
        cannot hold); null where it decoded (or was null to begin with).
    error_count : int
        How many values could not be read (null, with an error).
    format : ValueFormat
        The format that decoded it (``json()`` renders with it).
    reader : AvroType or None
        The reader schema (Avro formats).
    trailing_count : int
        Values decoded although bytes followed them (``trailing="ignore"``, the default).
    untyped : pyarrow.BinaryArray or None
        With ``untyped_topics="bytes"`` (`kafkafmt.values._typed`): the bytes of the values of
        topics without a schema (their ``values`` are null), null where a value is typed; None
        otherwise.
    field_error_count : int
        How many values were read with fields null because their columns cannot hold them (each
        named in ``error``).

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> recs = kafkafmt.read_log_dir(f"{sample_dir()}/shipments-0", value_format="avro")
    >>> decoded = recs.typed["value"]
    >>> len(decoded), decoded.error_count, decoded.trailing_count, decoded.reader
    (2000, 1, 0, <AvroType com.example.logistics.Shipment>)
    >>> decoded.values[0]["order_id"], decoded.schema_id[0], decoded.error[0]
    (<pyarrow.StringScalar: 'o-0002419'>, <pyarrow.Int32Scalar: 1>, <pyarrow.StringScalar: None>)
    >>> decoded.error[1234].as_py()
    'no magic byte: the value starts with 0x7b, not 0x00 (not the Schema Registry wire format)'
    >>> decoded.json()[1999]            # as kafka-avro-console-consumer prints it
    '{"order_id":"o-0003035","carrier":"DHL",...,"tracking":{"string":"TRKE1B00194CD"},"items":["sku-93"]}'
    """
    values: object
    schema_id: object
    error: object
    error_count: int
    format: object = None
    reader: object = None
    trailing_count: int = 0
    untyped: object = None
    field_error_count: int = 0
    #: rows of several topics read with different reader schemas (a concatenation): (the (format,
    #: reader) pairs that decoded them, each row's index into them as an int32 NumPy array); None when
    #: ``format`` and ``reader`` hold for all
    readers: object = dataclasses.field(default=None, repr=False)

    def __len__(self):
        return len(self.values)

    def __repr__(self):     # a summary: the columns hold a row per record
        name = getattr(self.format, "name", None)
        reader = f", reader {self.reader!r}" if self.reader is not None else ""
        return (f"<DecodedColumn{f' {name}' if name else ''}: {len(self)} values, {self.error_count} errors"
                f"{reader}>")

    def json(self):
        """Each value as JSON text (None where null): Avro as kafka-avro-console-consumer prints it
        (`kafkafmt.values.avro._json`), strings as JSON strings, bytes as ISO-8859-1 JSON strings."""
        if self.readers is None:
            return self.format.json(self)
        readers, codes = self.readers
        out = [None] * len(self)
        for i, (fmt, reader) in enumerate(readers):  # each topic's rows as the format that read them prints them
            rows = np.flatnonzero(codes == i)
            if len(rows):
                part = dataclasses.replace(self.take(rows), format=fmt, reader=reader, readers=None)
                for r, text in zip(rows.tolist(), fmt.json(part)):
                    out[r] = text
        return out

    def json_array(self):
        """`json` as a pyarrow string array (null where the value is null): what the command line
        writes, printed by the format's kernel where it has one (Avro), without a Python object per value."""
        if self.readers is None:
            return self.format.json_array(self)
        return _pa().array(self.json(), _pa().large_string())

    def _like(self, values, schema_id, error, rows):
        readers = None if self.readers is None else (self.readers[0], self.readers[1][rows])
        untyped = None if self.untyped is None else (self.untyped[rows] if isinstance(rows, slice) else
                                                     self.untyped.take(_pa().array(rows)))
        hard, soft = count_errors(values, error)
        return dataclasses.replace(self, values=values, schema_id=schema_id, error=error,
                                   error_count=hard, field_error_count=soft,
                                   trailing_count=self.trailing_count if len(values) == len(self.values) else 0,
                                   readers=readers, untyped=untyped)

    def __getitem__(self, item):
        """Rows ``item`` (a contiguous slice; zero-copy)."""
        if not isinstance(item, slice):
            raise TypeError("DecodedColumn supports slices; index .values for single values")
        return self._like(self.values[item], self.schema_id[item], self.error[item], item)

    def take(self, rows):
        """The rows at ``rows`` (int64 indices), in that order."""
        pa = _pa()
        rows = np.asarray(rows, np.int64)
        idx = pa.array(rows)
        return self._like(self.values.take(idx), self.schema_id.take(idx), self.error.take(idx), rows)

    @staticmethod
    def concat(parts, names=None):
        """One column holding the rows of ``parts`` in order (Arrow chunks of one type; several
        topics' value types are merged into one where Arrow can promote them, e.g. structs with
        different fields: missing fields are null).

        Parameters
        ----------
        parts : list of DecodedColumn
        names : list of str, optional
            What each part holds (its topic), for the error when their types clash.

        Raises
        ------
        SchemaError
            The parts' types cannot be merged into one (read the topics separately).
        """
        pa = _pa()
        parts = list(parts)
        merged = merge_types([p.values.type for p in parts], names)
        values = [conform(p.values, merged) for p in parts]
        values = pa.chunked_array([c for v in values for c in (v.chunks if isinstance(v, pa.ChunkedArray) else [v])],
                                  merged)
        first = parts[0]
        same = all(p.reader is first.reader and p.readers is None for p in parts)
        untyped = None
        if any(p.untyped is not None for p in parts):
            untyped = pa.concat_arrays([pa.nulls(len(p), pa.binary()) if p.untyped is None else _one(p.untyped)
                                        for p in parts])
        return DecodedColumn(values=values, schema_id=_concat(pa.int32(), [p.schema_id for p in parts]),
                             error=_concat(pa.string(), [p.error for p in parts]),
                             error_count=sum(p.error_count for p in parts), format=first.format,
                             reader=first.reader if same else None,
                             trailing_count=sum(p.trailing_count for p in parts), untyped=untyped,
                             readers=None if same else _reader_runs(parts),
                             field_error_count=sum(p.field_error_count for p in parts))


def count_errors(values, error):
    """(values with an error that are null: not read; values with an error that are not: read with
    fields null) of a decoded column."""
    if error.null_count == len(error):
        return 0, 0
    import pyarrow.compute as pc

    with_error = len(error) - error.null_count
    if not values.null_count:
        return 0, with_error
    read = pc.sum(pc.and_(pc.is_valid(error), pc.is_valid(values))).as_py() or 0
    return with_error - int(read), int(read)


def field_error_text(text, more=0):
    """The error of a value read whole but for fields its columns cannot hold: the first field's
    reason (``text``) and how many ``more`` fields are null alike."""
    alike = f"; {more} more field{'s' if more != 1 else ''} null alike" if more else ""
    return f"{text}: that field is null, the rest of the value is read{alike}"


def _distinct_rows(columns):
    """(distinct rows, each row's index into them) of equally long integer arrays (a row: their values
    at one index): one group when every row is the first (the common case: one field, one reason), else
    grouped by a hash of each row (one sort of n integers), checked, and by the rows themselves when two
    rows' hashes meet."""
    if all((c == c[0]).all() for c in columns):
        return np.array([[int(c[0]) for c in columns]], np.int64), np.zeros(len(columns[0]), np.int64)
    keys = np.stack([c.astype(np.int64) for c in columns], axis=1)
    with np.errstate(over="ignore"):
        mix = np.zeros(len(keys), np.uint64)
        for j in range(keys.shape[1]):
            mix = (mix ^ keys[:, j].astype(np.uint64)) * np.uint64(0x9E3779B97F4A7C15)
    _, first, inverse = np.unique(mix, return_index=True, return_inverse=True)
    uniq = keys[first]
    if (uniq[inverse] == keys).all():
        return uniq, inverse.reshape(-1)
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    return uniq, inverse.reshape(-1)


def error_texts(plan, errors, n, texts, where="value", first_field=32):
    """The ``error`` column (a pyarrow string array of ``n`` rows, null but for the rows with an
    error) of a kernel's decode, built a whole column at once: the kernel's own errors as
    ``plan.error_text(code, node, detail)`` with the byte position in the value (each distinct error's
    text made once, the rows' texts joined by Arrow); a field nulled (codes from ``first_field``) as
    `field_error_text` says, without a position (rows alike share their text: it costs a copy); framing
    and schema problems (codes >= 64) by ``texts(code, k)`` (k: the error's index).

    Parameters
    ----------
    plan : object
        Has ``error_text(code, node, detail)``.
    errors : tuple of NumPy arrays
        (row, code, position, node, detail, more) of the rows with an error.
    n : int
        Rows in the column.
    texts : callable
    where : str
        What the byte position counts in ("value", "message", "JSON text").
    first_field : int
        The first code of a field error (the kernel's ``FIELD_ERROR``).
    """
    pa = _pa()
    import pyarrow.compute as pc

    rows, code, pos, node, detail, more = errors
    if not len(rows):
        return null_array(n, pa.string())
    parts, order = [], []
    framing = np.flatnonzero(code >= 64)
    if len(framing):
        parts.append(pa.array([texts(int(code[k]), k) for k in framing.tolist()], pa.string()))
        order.append(framing)
    for fields in (True, False):
        ks = np.flatnonzero((code >= first_field) & (code < 64) if fields else code < first_field)
        if not len(ks):
            continue
        uniq, inverse = _distinct_rows([code[ks], node[ks], detail[ks], more[ks]])
        # each distinct error's text once
        said = [plan.error_text(c, nd, d) for c, nd, d, _ in uniq.tolist()]
        if fields:
            part = pa.array([field_error_text(t, m) for t, (_, _, _, m) in zip(said, uniq.tolist())],
                            pa.string()).take(pa.array(inverse))
        else:
            part = pc.binary_join_element_wise(pa.array([f"{t} (at byte " for t in said], pa.string()).take(
                pa.array(inverse)), pa.array(pos[ks]).cast(pa.string()), f" of the {where})", "")
        parts.append(part)
        order.append(ks)
    if len(parts) == 1 and len(rows) == n:          # one kind of error, in every row (rows are ascending)
        return parts[0]
    if len(parts) == 1:                             # (the rows with an error are ascending)
        order = [np.arange(len(rows))]
    texts_all = pa.concat_arrays(parts)
    k_of = np.empty(len(rows), np.int64)
    k_of[np.concatenate(order)] = np.arange(len(rows))
    at = np.full(n, -1, np.int64)
    at[np.asarray(rows, np.int64)] = k_of
    full = texts_all.take(pa.array(np.maximum(at, 0)))
    return full if len(rows) == n else pc.if_else(pa.array(at >= 0), full, pa.nulls(n, pa.string()))


def null_array(n, type):
    """``n`` nulls of Arrow ``type``: string and int32 on zeroed NumPy buffers (calloc'd, so that a
    column with no error or schema id costs no page until it is read), others as ``pa.nulls``."""
    pa = _pa()
    if type == pa.string():
        buffers = [pa.py_buffer(np.zeros(n + 1, np.int32)), pa.py_buffer(b"")]
    elif type == pa.int32():
        buffers = [pa.py_buffer(np.zeros(n, np.int32))]
    else:
        return pa.nulls(n, type)
    return pa.Array.from_buffers(type, n, [pa.py_buffer(np.zeros((n + 7) // 8, np.uint8))] + buffers, null_count=n)


def _concat(type, arrays):
    """One array of the arrays (or chunked arrays) of ``type``; all null: `null_array`; int32 on NumPy
    buffers (not Arrow's memory pool, which keeps what it frees)."""
    pa = _pa()
    if all(a.null_count == len(a) for a in arrays):
        return null_array(sum(len(a) for a in arrays), type)
    arrays = [_one(a) for a in arrays]
    if type != pa.int32():
        return pa.concat_arrays(arrays)
    n = sum(len(a) for a in arrays)
    values = np.concatenate([np.frombuffer(a.buffers()[1], np.int32)[a.offset:a.offset + len(a)] if len(a)
                             else np.zeros(0, np.int32) for a in arrays])
    validity = None
    if any(a.null_count for a in arrays):
        valid = np.concatenate([np.asarray(a.is_valid()) for a in arrays])
        validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(pa.int32(), n, [validity, pa.py_buffer(values)])


def _reader_runs(parts):
    """``DecodedColumn.readers`` of the concatenation of ``parts``."""
    readers, codes = [], []
    for p in parts:
        own, own_codes = (p.readers if p.readers is not None else
                          ([(p.format, p.reader)], np.zeros(len(p), np.int32)))
        remap = []
        for pair in own:
            if not any(pair[0] is x[0] and pair[1] is x[1] for x in readers):
                readers.append(pair)
            remap.append(next(i for i, x in enumerate(readers) if pair[0] is x[0] and pair[1] is x[1]))
        codes.append(np.asarray(remap, np.int32)[own_codes] if len(own_codes) else np.zeros(0, np.int32))
    return readers, np.concatenate(codes) if codes else np.zeros(0, np.int32)


def nullable_type(t):
    """``t`` with every nested field nullable (struct fields, list items, map values)."""
    pa = _pa()
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, nullable_type(f.type), True, f.metadata) for f in t])
    if pa.types.is_large_list(t):
        return pa.large_list(pa.field(t.value_field.name, nullable_type(t.value_type), True))
    if pa.types.is_list(t):
        return pa.list_(pa.field(t.value_field.name, nullable_type(t.value_type), True))
    if pa.types.is_map(t):
        return pa.map_(t.key_type, pa.field(t.item_field.name, nullable_type(t.item_type), True))
    return t


def merge_types(types, names=None):
    """One Arrow type holding values of every type in ``types`` (several topics' values in one
    column): the type itself when all are equal, else their fields merged, every field nullable.

    Parameters
    ----------
    types : iterable of pyarrow.DataType
    names : list of str, optional
        What holds each type (its topic), for the error.

    Raises
    ------
    SchemaError
        The types cannot be merged (e.g. a struct and a string): the message names the first two
        that clash and the first field where they differ.
    """
    pa = _pa()
    types = list(types)
    if all(t == types[0] for t in types):
        return types[0]
    try:
        return _unify(types)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        pass
    what = "the types of topics" if names is not None else "types"
    names = [repr(n) for n in names] if names is not None else [str(i + 1) for i in range(len(types))]
    for j in range(1, len(types)):           # the first type that clashes with one before it
        for i in range(j):
            if not _mergeable(types[i], types[j]):
                where, a, b = _first_clash(types[i], types[j], "")
                raise SchemaError(f"{what} {names[i]} and {names[j]} cannot be one column: "
                                  f"{'field ' + where if where else 'the value'} is {_short(a)} in {names[i]} and "
                                  f"{_short(b)} in {names[j]} (read them one topic at a time)")
    raise SchemaError(f"{what} {', '.join(names)} cannot be one column (read them one topic at a time)")


def _unify(types):
    pa = _pa()
    return pa.unify_schemas([pa.schema([("v", nullable_type(t))]) for t in types],
                            promote_options="permissive").field("v").type


def _mergeable(a, b):
    pa = _pa()
    try:
        _unify([a, b])
        return True
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return False


def _first_clash(a, b, path):
    """(field path, type in a, type in b) of the first place where a and b cannot be merged."""
    pa = _pa()
    if pa.types.is_struct(a) and pa.types.is_struct(b):
        names = {f.name for f in b}
        for f in a:
            if f.name in names and not _mergeable(f.type, b.field(f.name).type):
                return _first_clash(f.type, b.field(f.name).type, f"{path}.{f.name}" if path else f.name)
    elif (pa.types.is_list(a) or pa.types.is_large_list(a)) and (pa.types.is_list(b) or pa.types.is_large_list(b)):
        if not _mergeable(a.value_type, b.value_type):
            return _first_clash(a.value_type, b.value_type, f"{path}[]")
    elif pa.types.is_map(a) and pa.types.is_map(b):
        for part, x, y in (("{key}", a.key_type, b.key_type), ("{}", a.item_type, b.item_type)):
            if not _mergeable(x, y):
                return _first_clash(x, y, path + part)
    return path, a, b


def _short(t, limit=60):
    """An Arrow type's text, cut to ``limit`` characters (a struct's fields elided)."""
    text = str(t)
    return text if len(text) <= limit else text[:limit - 5] + "...>"


def conform(column, type):
    """``column`` as Arrow type ``type`` (one that `merge_types` made of its type and others):
    fields it lacks are null."""
    pa = _pa()
    if column.type == type:
        return column
    merged = pa.concat_tables([pa.schema([("v", type)]).empty_table(), pa.table({"v": column})],
                              promote_options="permissive")
    return merged.column("v").cast(type)


def _one(arr):
    """An Arrow array from an array or a chunked array."""
    return arr.combine_chunks() if hasattr(arr, "combine_chunks") else arr


@dataclasses.dataclass
class _Ctx:
    registry: object
    topic: object
    is_key: bool
    reader_schema: object
    strict: bool = False
    file: object = None
    offsets: object = None
    positions: object = None
    trailing: str = "ignore"
    shape: ValueShape = ValueShape()       # how values are shaped (`kafkafmt.values._options`)


class ValueFormat:
    """One format: what it needs and gives (class attributes every door reads) and how it decodes
    (subclass, set ``name``, add it to the table: `BUILTIN_FORMATS`, `register_format` or the
    ``kafkafmt.value_formats`` entry point, see `FORMATS`)."""

    #: the name readers, the command line and Spark take (``value_format=``, ``--value-format``, ``valueFormat``)
    name = None
    #: what it reads, in a few words (the command line's help)
    summary = None
    #: the registry's schemaType whose wire-format values it decodes: the ``"registry"`` format hands the values
    #: of each registered type to the format declaring it, and a subject of another type is not this format's
    #: (``untyped_topics``)
    schema_type = None
    #: it looks schemas up: a read opens a schema registry for it (by default the ``_schemas`` topic among the
    #: log dirs read); a reader schema given as a schema does without one
    needs_schema = False
    #: what it types: keys, values or both (the command line offers it to --key-format / --value-format)
    sides = ("key", "value")
    #: it reads a `BinaryViewColumn` where its values lie (`kernel_source`): the readers then decode the
    #: records with views into the segment instead of copying the raw bytes out first
    reads_views = False

    def value_type(self, ctx):
        """The Arrow type of the decoded values (before any value is read)."""
        raise NotImplementedError

    def decode(self, column, ctx):
        """Decode a pyarrow binary / large_binary array into a `DecodedColumn`."""
        raise NotImplementedError

    def scan_names(self, column, ctx):
        """None when the column's type is known from ``ctx``'s reader schema alone (every format but
        Protobuf without a message named, `kafkafmt.values.protobuf`); else the names of what the
        values of ``column`` say they are (an empty set for None) -- a read scans its values with it
        first, then reads them with `named_reader` of all it found."""
        return None

    def named_reader(self, names, ctx):
        """The reader schema (as ``reader_schema`` takes it, pinned) that reads values naming
        ``names`` (what `scan_names` found); None: keep ``ctx``'s."""
        return None

    def pinned_reader(self, ctx):
        """What ``ctx.reader_schema`` names now, to read with later whatever the registry learns
        meanwhile (a schema id, or a dict as ``reader_schema`` takes it); None: keep it as given."""
        if ctx.registry is None:
            return None
        rs = reader_schema_for(ctx.registry, ctx.topic, ctx.is_key, ctx.reader_schema)
        return rs.id if rs.id is not None and rs.id >= 0 else None

    def json_array(self, decoded):
        """`json` as a pyarrow (large) string array, null where a value is null (a format with a text
        kernel prints it without a Python object per value)."""
        return _pa().array(self.json(decoded), _pa().large_string())

    def json(self, decoded):
        """JSON texts of decoded values (the command line's JSON lines and CSV, ``DecodedColumn.json``)."""
        return [None if v is None else json.dumps(v.decode("latin-1") if isinstance(v, bytes) else v,
                                                  ensure_ascii=False)
                for v in decoded.values.to_pylist()]


#: the formats kafkafmt brings: name -> "module:class", imported when first used. A format is one module
#: (its `ValueFormat` subclass) plus one entry here; every door reads the table (`FORMATS`).
BUILTIN_FORMATS = {
    "bytes": "kafkafmt.values._formats:BytesFormat",
    "string": "kafkafmt.values._string:StringFormat",
    "avro": "kafkafmt.values.avro._format:AvroFormat",
    "registry": "kafkafmt.values._registryformat:RegistryFormat",
    "protobuf": "kafkafmt.values.protobuf._format:ProtobufFormat",
    "protobuf-raw": "kafkafmt.values.protobuf._format:RawProtobufFormat",
    "json-schema": "kafkafmt.values.json._format:JsonSchemaFormat",
    "json": "kafkafmt.values.json._format:JsonFormat",
    "connect-json": "kafkafmt.values.json._format:ConnectJsonFormat",
}
#: the entry-point group through which an installed package adds formats (``name = "module:Class"``): they
#: reach every process -- the command line, Spark's executors -- as the built-in ones do
ENTRY_POINTS = "kafkafmt.value_formats"


class _FormatTable(collections.abc.MutableMapping):
    """Format name -> `ValueFormat` subclass: `BUILTIN_FORMATS`, the ``kafkafmt.value_formats`` entry
    points and `register_format`'s, each class imported when first used."""

    def __init__(self, builtin):
        self._entries = dict(builtin)       # name -> class, or "module:class" not imported yet
        self._lock = threading.RLock()
        self._scanned = False

    def _scan(self):
        """Add the entry points' formats (again after a miss: a path added since, as Spark's addPyFile)."""
        from importlib.metadata import entry_points

        with self._lock:
            self._scanned = True
            for ep in entry_points(group=ENTRY_POINTS):
                self._entries.setdefault(ep.name, ep.value)

    def _load(self, name):
        with self._lock:
            cls = self._entries[name]
            if isinstance(cls, str):
                import importlib

                module, _, attr = cls.partition(":")
                cls = getattr(importlib.import_module(module), attr)
                if not (isinstance(cls, type) and issubclass(cls, ValueFormat)) or cls.name != name:
                    raise ValueError(f"value format {name!r} ({self._entries[name]}) is not a ValueFormat "
                                     f"named {name!r}")
                self._entries[name] = cls
            return cls

    def __getitem__(self, name):
        if name not in self._entries:
            self._scan()
        return self._load(name)

    def __contains__(self, name):
        if name not in self._entries:
            self._scan()
        return name in self._entries

    def __iter__(self):
        if not self._scanned:
            self._scan()
        return iter(list(self._entries))

    def __len__(self):
        return sum(1 for _ in self)

    def __setitem__(self, name, cls):
        with self._lock:
            self._entries[name] = cls

    def __delitem__(self, name):
        with self._lock:
            del self._entries[name]

    def __repr__(self):
        return f"FORMATS({sorted(self)})"


#: format name -> `ValueFormat` subclass: the one table of value formats every door reads
FORMATS = _FormatTable(BUILTIN_FORMATS)


def register_format(cls):
    """Add a `ValueFormat` subclass to `FORMATS` under its ``name`` in this process (a class
    decorator; the ``kafkafmt.value_formats`` entry point adds one in every process)."""
    if not (isinstance(cls, type) and issubclass(cls, ValueFormat)) or not cls.name:
        raise TypeError("register_format takes a ValueFormat subclass with a name")
    FORMATS[cls.name] = cls
    return cls


def get_format(name):
    """An instance of the format called ``name`` (None and "bytes": the raw bytes)."""
    key = "bytes" if name is None else name
    if not isinstance(key, str) or key not in FORMATS:
        raise ValueError(f"unknown value format {name!r}: one of {', '.join(format_names())}")
    return FORMATS[key]()


def format_names(side=None):
    """The names of the formats, sorted (those that type ``side``, "key" or "value", if given)."""
    return sorted(n for n in FORMATS if side is None or side in FORMATS[n].sides)


def needs_schema(name):
    """Does format ``name`` look schemas up (`ValueFormat.needs_schema`; None and "bytes" do not)?"""
    return name is not None and get_format(name).needs_schema


def format_of_type(schema_type):
    """The name of the format that decodes the registry's ``schema_type`` (``"AVRO"``, ``"PROTOBUF"``,
    ``"JSON"``: `ValueFormat.schema_type`), or None."""
    return next((n for n in sorted(FORMATS) if FORMATS[n].schema_type == schema_type), None)


def schema_types():
    """The registry schemaTypes some format decodes, sorted."""
    return sorted({FORMATS[n].schema_type for n in FORMATS} - {None})


# ------------------------------------------------------------------------------------------------
# columns in

def _parts(column):
    """(pyarrow binary / large_binary array, int64 offsets, uint8 data) of a column."""
    pa = _pa()
    from kafkafmt.record import BinaryColumn, BinaryViewColumn
    if isinstance(column, BinaryViewColumn):
        column = column.to_arrow()
    elif isinstance(column, BinaryColumn):
        column = column.to_arrow()
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if not isinstance(column, pa.Array):
        column = pa.array(column, pa.binary())
    t = column.type
    if pa.types.is_string(t):
        column = column.cast(pa.binary())
    elif pa.types.is_large_string(t):
        column = column.cast(pa.large_binary())
    elif not (pa.types.is_binary(t) or pa.types.is_large_binary(t)):
        column = column.cast(pa.large_binary())      # binary_view, string_view, fixed_size_binary
    large = pa.types.is_large_binary(column.type)
    n = len(column)
    validity, offs, data = column.buffers()[:3]
    offsets = np.frombuffer(offs, np.int64 if large else np.int32)[column.offset:column.offset + n + 1]
    offsets = offsets.astype(np.int64, copy=False)
    data = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
    return column, offsets, data


def _validity(column):
    """(validity bits as uint8, bit offset) of an Arrow array, or (None, 0) when nothing is null."""
    if not column.null_count:
        return None, 0
    return np.frombuffer(column.buffers()[0], np.uint8), column.offset


def column_parts(column):
    """(pyarrow binary / large_binary array, int64 offsets, uint8 data) of a column of raw keys or
    values (a BinaryColumn, BinaryViewColumn, pyarrow array or a list of bytes)."""
    return _parts(column)


def kernel_source(column):
    """(the Avro kernel's `Source` of a column of raw keys or values, its validity bits as uint8 or None,
    their bit offset): binary_view columns (`BinaryViewColumn`) are read where their values lie (a
    segment's memory map), not copied; anything else as `column_parts` makes it contiguous."""
    from kafkafmt._native import framing as kernel
    from kafkafmt.record import BinaryViewColumn

    if isinstance(column, BinaryViewColumn):
        return kernel.Source(views=column.views, buffers=column.buffers), column.validity, 0
    column, offsets, data = _parts(column)
    bits, bit_offset = _validity(column)
    return kernel.Source(offsets, data), bits, bit_offset


def gather_views(column):
    """(offsets, data) of a `BinaryViewColumn`'s values one after the other (int32 offsets, int64 past
    2 GiB; nulls empty): the column made contiguous, on NumPy buffers."""
    from kafkafmt._native import framing as kernel

    return kernel.gather(kernel.Source(views=column.views, buffers=column.buffers))


def column_validity(column):
    """(validity bits as uint8, bit offset) of an Arrow array, or (None, 0) when nothing is null."""
    return _validity(column)


class PerRegistry:
    """What a format keeps per schema registry (parsed schemas, compiled plans): ``cache(registry)``
    is the one object ``factory()`` made for it, kept as long as the registry lives.

    Examples
    --------
    >>> from kafkafmt.values.registry import InlineSchemaRegistry
    >>> cache, reg = PerRegistry(dict), InlineSchemaRegistry('"string"')
    >>> cache(reg) is cache(reg)
    True
    """

    def __init__(self, factory):
        self._factory = factory
        self._objects = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def __call__(self, registry):
        with self._lock:
            obj = self._objects.get(registry)
            if obj is None:
                obj = self._objects[registry] = self._factory()
            return obj


def frame_error_text(name, value):
    """The reason a value's Schema Registry wire-format header is bad, by the kernels' framing error
    name (a key of their ``FRAME_ERRORS``: ``NO_MAGIC``, ``SHORT``, ``GUID``); ``value``: its bytes (or
    their first bytes and their length, as ``(head, length)``). None for any other name."""
    head, length = value if isinstance(value, tuple) else (value, len(value))
    if name == "NO_MAGIC":
        if length == 0:
            return "empty value: no magic byte (not the Schema Registry wire format)"
        return (f"no magic byte: the value starts with 0x{int(head[0]):02x}, not 0x00 (not the Schema Registry "
                f"wire format)")
    if name == "SHORT":
        return f"value of {length} bytes is shorter than the 5 bytes of the wire format's header"
    if name == "GUID":
        return "magic byte 0x01 (a schema GUID: Confluent's V1 framing) is not supported"
    return None


def raise_strict(fmt, ctx, row, text, position=None):
    """Raise `ValueDecodeError` for bad value ``row`` (strict mode) as every format words it:
    the file, the row's Kafka offset, and ``position`` (bytes past the row's position in the file)."""
    what = "key" if ctx.is_key else "value"
    where = "" if ctx.offsets is None else f" of the record at offset {int(ctx.offsets[row])}"
    pos = None
    if ctx.positions is not None:
        pos = int(ctx.positions[row]) + (position or 0)
    raise ValueDecodeError(f"bad {fmt.name} {what}{where}: {text}", file=ctx.file, position=pos,
                           offset=None if ctx.offsets is None else int(ctx.offsets[row]))


#: row error codes of the registry formats: a schema id the registry lacks, a writer schema that cannot be used
E_UNKNOWN_ID, E_BAD_SCHEMA = 67, 70


def registered_writer(reg, schema_id, refuse, build, build_errors):
    """The writer schema of ``schema_id`` as ``build(reg, registered)`` makes it, or the
    ``(code, message)`` that makes its rows errors: `E_UNKNOWN_ID` when ``reg`` lacks the id,
    ``refuse(schema_type)`` when that is not None (the type is not the format's), `E_BAD_SCHEMA`
    when ``build`` raises one of ``build_errors``."""
    try:
        rs = reg.schema(schema_id)
    except SchemaNotFoundError:
        return E_UNKNOWN_ID, f"schema id {schema_id} is not in the {reg.source}"
    refused = refuse(rs.schema_type or "AVRO")
    if refused is not None:
        return refused
    try:
        return build(reg, rs)
    except build_errors as exc:
        return E_BAD_SCHEMA, f"schema id {schema_id} cannot be used: {exc.reason}"


def references_by_name(registry, rs, kind, max_depth=64):
    """``{reference name: schema text}`` of every schema ``rs`` references, transitively (a name
    taken by the first schema found under it, depth first; a reference without a version: the
    subject's latest).

    Raises
    ------
    SchemaError
        References nested deeper than ``max_depth`` (a cycle?); ``kind`` names the schemas.
    SchemaNotFoundError
        A referenced subject or version is missing.
    """
    texts = {}

    def visit(s, depth):
        if depth > max_depth:
            raise SchemaError(f"{kind} references nested too deeply (a cycle?)")
        for ref in s.references:
            if ref.name in texts:
                continue
            target = registry.version(ref.subject, ref.version) if ref.version >= 0 else registry.latest(ref.subject)
            texts[ref.name] = target.schema_str
            visit(target, depth + 1)

    visit(rs, 0)
    return texts


def reader_schema_for(registry, topic=None, is_key=False, reader_schema=None):
    """The reader schema (a `RegisteredSchema`) a read would use (see the module docstring).

    Raises
    ------
    SchemaNotFoundError
        The subject, version or id is not in the registry.
    SchemaError
        Nothing names a reader schema (no topic and no reader_schema).
    """
    spec = reader_schema
    subject = None if topic is None else f"{topic}-{'key' if is_key else 'value'}"
    if isinstance(spec, RegisteredSchema):
        return spec
    if isinstance(spec, os.PathLike) or (isinstance(spec, str) and spec.endswith(".avsc") and os.path.isfile(spec)):
        with open(spec, encoding="utf-8") as f:
            return RegisteredSchema(id=-1, schema_type="AVRO", schema_str=f.read())
    if isinstance(spec, list) or (isinstance(spec, dict) and "type" in spec):
        return RegisteredSchema(id=-1, schema_type="AVRO", schema_str=json.dumps(spec))
    if isinstance(spec, str) and spec.lstrip()[:1] in ("{", "[", '"'):
        return RegisteredSchema(id=-1, schema_type="AVRO", schema_str=spec)
    if registry is None:
        raise SchemaError("no schema registry to find the reader schema in: give a schema registry, or "
                          "reader_schema as an Avro schema")
    if isinstance(spec, bool):
        raise SchemaError(f"reader_schema cannot be {spec!r}")
    if isinstance(spec, int):
        return registry.schema(spec)
    if isinstance(spec, dict):
        if "id" in spec:
            return registry.schema(int(spec["id"]))
        subject = spec.get("subject", subject)
        if subject is None:
            raise SchemaError("reader_schema={'version': ...} needs a topic (or a subject)")
        version = spec.get("version", "latest")
        return registry.latest(subject) if version == "latest" else registry.version(subject, int(version))
    if isinstance(spec, str):
        try:
            return registry.latest(spec)
        except SchemaNotFoundError:
            if topic is None:
                raise
        return registry.latest(f"{topic}-{spec}")
    if spec is None:
        if subject is None:
            raise SchemaError("no reader schema: give the topic (its <topic>-value subject, TopicNameStrategy) "
                              "or reader_schema")
        try:
            return registry.latest(subject)
        except SchemaNotFoundError as exc:
            try:
                deleted = registry.latest(subject, include_deleted=True)
            except SchemaNotFoundError:
                deleted = None
            if deleted is not None and deleted.id is not None and deleted.id >= 0:
                # a soft-deleted subject: its ids still resolve (as the registry's do)
                side = "key" if is_key else "value"
                raise SchemaNotFoundError(
                    f"no reader schema for topic {topic!r}: subject {subject!r} is soft-deleted (its version "
                    f"{deleted.version} is schema id {deleted.id}, which still resolves): read with "
                    f"{side}_schema={deleted.id} (--{side}-schema {deleted.id}, Spark's {side}Schema)") from None
            raise SchemaNotFoundError(
                f"no reader schema for topic {topic!r}: {exc.reason} (the RecordNameStrategy's topics need "
                f"reader_schema='<namespace>.<Record>')"
            ) from None
    raise SchemaError(f"reader_schema cannot be a {type(spec).__name__}")


# ------------------------------------------------------------------------------------------------
# the formats

class BytesFormat(ValueFormat):
    """The raw bytes (binary), unchanged."""
    name = "bytes"
    summary = "the bytes as they are"

    def value_type(self, ctx):
        return _pa().binary()

    def decode(self, column, ctx):
        pa = _pa()
        column = _parts(column)[0]
        n = len(column)
        return DecodedColumn(column, pa.nulls(n, pa.int32()), pa.nulls(n, pa.string()), 0, self)


class KernelFormat(ValueFormat):
    """Shared by the formats the Avro kernel decodes: errors and strict mode."""

    def _finish(self, plan, values, errors, schema_id, ids, ctx, messages, trailing=0):
        """The DecodedColumn: error texts for the rows with an error (the kernel's sparse ``errors``;
        messages(code, id, row) for the codes found before decoding), or the strict error for the first."""
        pa = _pa()
        bad, code, pos, node, detail, more = errors
        n = len(values)
        if len(bad):
            error = error_texts(plan, errors, n, lambda c, k: messages(c, int(ids[bad[k]]), int(bad[k])))
            if ctx.strict:
                i = int(bad[0])
                what = "key" if ctx.is_key else "value"
                where = "" if ctx.offsets is None else f" of the record at offset {int(ctx.offsets[i])}"
                position = None
                if ctx.positions is not None:
                    position = int(ctx.positions[i]) + (int(pos[0]) if code[0] < 64 else 0)
                raise ValueDecodeError(f"bad {self.name} {what}{where}: {error[i].as_py()}", file=ctx.file,
                                       position=position,
                                       offset=None if ctx.offsets is None else int(ctx.offsets[i]))
        else:
            error = null_array(n, pa.string())
        hard, soft = count_errors(values, error)
        return DecodedColumn(values, schema_id, error, hard, self, plan.reader, trailing, field_error_count=soft)


# ------------------------------------------------------------------------------------------------

def _context(format, registry, topic, is_key, reader_schema, max_depth=DEFAULT_MAX_DEPTH, time_unit="us",
             additional_properties="keep", **kw):
    if format is not None and not isinstance(format, str):
        raise TypeError(f"format is a name, not {type(format).__name__}")
    if registry is not None and not isinstance(registry, SchemaRegistry):
        registry = open_registry(registry)
    shape = ValueShape(max_depth, time_unit, additional_properties)
    return _Ctx(registry, topic, is_key, reader_schema, shape=shape, **kw)


def value_type(format, *, registry=None, topic=None, is_key=False, reader_schema=None,
               recursive_fields_max_depth=DEFAULT_MAX_DEPTH, time_unit="us", additional_properties="keep"):
    """The Arrow type `decode_column` gives for these arguments, known before any record is read.

    Parameters
    ----------
    format : str or None
        A format name (see `decode_column`).
    registry, topic, is_key, reader_schema, recursive_fields_max_depth, time_unit, additional_properties : optional
        As `decode_column`.

    Returns
    -------
    pyarrow.DataType

    Raises
    ------
    SchemaNotFoundError, SchemaError, SchemaRegistryError
        No reader schema can be found, or it is not valid.
    ValueError
        An unknown format.

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> registry = kafkafmt.open_registry(sample_dir())     # the sample's _schemas topic
    >>> kafkafmt.value_type("avro", registry=registry, topic="shipments").names
    ['order_id', 'carrier', 'weight_kg', 'shipped_at', 'tracking', 'items']
    >>> kafkafmt.value_type("avro", registry=registry, topic="shipments", reader_schema={"version": 1}).names
    ['order_id', 'carrier', 'weight_kg', 'shipped_at']
    >>> kafkafmt.value_type("string"), kafkafmt.value_type(None)
    (DataType(string), DataType(binary))
    >>> kafkafmt.value_type("avro", registry=registry, topic="orders")
    Traceback (most recent call last):
    ...
    kafkafmt.errors.SchemaNotFoundError: no reader schema for topic 'orders': subject 'orders-value' has no live ...
    """
    return get_format(format).value_type(_context(format, registry, topic, is_key, reader_schema,
                                                  recursive_fields_max_depth, time_unit, additional_properties))


def pinned_reader(format, *, registry=None, topic=None, is_key=False, reader_schema=None,
                  recursive_fields_max_depth=DEFAULT_MAX_DEPTH, time_unit="us", additional_properties="keep"):
    """The reader schema a read planned now keeps using (`ValueFormat.pinned_reader`): the schema
    id ``reader_schema`` resolves to now (with the Protobuf message it names), or None to keep it as
    given (a schema given inline, no registry)."""
    return get_format(format).pinned_reader(_context(format, registry, topic, is_key, reader_schema,
                                                     recursive_fields_max_depth, time_unit, additional_properties))


def scan_names(format, column=None, *, registry=None, topic=None, is_key=False, reader_schema=None,
               recursive_fields_max_depth=DEFAULT_MAX_DEPTH, time_unit="us", additional_properties="keep"):
    """What the values of ``column`` name, when the type of ``format``'s column depends on it
    (`ValueFormat.scan_names`: a Protobuf file of several messages, none named): a set of names;
    None when the type is known from the reader schema alone (nothing to scan). A read scans every
    value it will read with it, then reads them with `named_reader` of all it found.

    Parameters
    ----------
    format : str or None
        A format name (see `decode_column`).
    column : optional
        Raw keys or values, as `decode_column` takes them (None: only whether a scan is needed).
    registry, topic, is_key, reader_schema : optional
        As `decode_column`.

    Returns
    -------
    set of str or None

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> print(scan_names("avro", registry=kafkafmt.open_registry(sample_dir()), topic="shipments"))
    None
    """
    return get_format(format).scan_names(column, _context(format, registry, topic, is_key, reader_schema,
                                                          recursive_fields_max_depth, time_unit,
                                                          additional_properties))


def named_reader(format, names, *, registry=None, topic=None, is_key=False, reader_schema=None,
                 recursive_fields_max_depth=DEFAULT_MAX_DEPTH, time_unit="us", additional_properties="keep"):
    """The reader schema that reads values naming ``names`` (all that `scan_names` found in what a
    read reads) as ``format`` reads them: pinned, as ``reader_schema`` takes it (for Protobuf,
    ``{"id": ..., "message": ...}``, the message or the tuple of messages the values name); None
    to keep ``reader_schema``."""
    return get_format(format).named_reader(names, _context(format, registry, topic, is_key, reader_schema,
                                                            recursive_fields_max_depth, time_unit,
                                                            additional_properties))


def decode_column(column, *, format, registry=None, topic=None, is_key=False, reader_schema=None, strict=False,
                  file=None, offsets=None, positions=None, trailing="ignore",
                  recursive_fields_max_depth=DEFAULT_MAX_DEPTH, time_unit="us",
                  additional_properties="keep") -> DecodedColumn:
    """Decode a column of keys or values in ``format`` (see the module docstring).

    Parameters
    ----------
    column : BinaryColumn, BinaryViewColumn or pyarrow binary-like array
    format : None, "bytes", "string", "avro", "registry", "protobuf", "protobuf-raw", "json-schema", "json",
        "connect-json" (any name in FORMATS)
    registry : SchemaRegistry, str or None
        Where schemas come from (`open_registry` takes the same).
    topic : str, optional
        The topic (TopicNameStrategy subjects ``<topic>-value`` / ``<topic>-key``).
    is_key : bool
        Keys: the ``-key`` subject.
    reader_schema : optional
        The schema the values are read as (see the module docstring).
    strict : bool
        Raise `ValueDecodeError` for the first bad value instead of nulling it.
    file, offsets, positions : optional
        For error texts: the file, the Kafka offset (int64 array) and byte position in the file
        (int64 array) of each row.
    trailing : "ignore" or "error"
        Bytes after the end of an Avro value: ignored as Confluent's deserializers ignore them
        (counted in ``trailing_count``), or a per-record error.
    recursive_fields_max_depth : int
        How many times a recursive record or message appears on a path from the top of a value
        (Spark's ``recursive.fields.max.depth``); the field where it would appear once more holds
        that value's JSON text (`kafkafmt.values._options`).
    time_unit : {"us", "ns"}
        The unit of Protobuf Timestamp / Duration and JSON Schema date-time columns: "us" holds
        every valid value; "ns" every nanosecond within 1677-09-21 .. 2262-04-11 (a value beyond is
        a null field, named in ``error``).
    additional_properties : {"keep", "drop"}
        A JSON Schema object's properties outside its schema: kept as the JSON text of an object in
        its field ``additionalProperties``, or dropped.

    Returns
    -------
    DecodedColumn

    Raises
    ------
    ValueDecodeError
        strict=True and a value is bad.
    SchemaNotFoundError, SchemaError
        No reader schema, or an invalid one (per-id problems are per-record errors instead).

    Examples
    --------
    The sample's shipments: Avro values in the Schema Registry wire format, written with two
    versions of the subject ``shipments-value``, one value plain JSON; the schemas come from the
    sample's ``_schemas`` topic:

    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> recs = kafkafmt.read_log_dir(f"{sample_dir()}/shipments-0")
    >>> registry = kafkafmt.open_registry(sample_dir())
    >>> decoded = kafkafmt.decode_column(recs.value, format="avro", registry=registry, topic="shipments")
    >>> decoded.values.type.names
    ['order_id', 'carrier', 'weight_kg', 'shipped_at', 'tracking', 'items']
    >>> decoded.values[1999]["tracking"], decoded.values[1999]["items"]
    (<pyarrow.StringScalar: 'TRKE1B00194CD'>, <pyarrow.ListScalar: ['sku-93']>)
    >>> decoded.schema_id[:2].to_pylist(), decoded.schema_id[1999], decoded.error_count
    ([1, 1], <pyarrow.Int32Scalar: 2>, 1)
    >>> decoded.values[1234].is_valid, decoded.error[1234].as_py()
    (False, 'no magic byte: the value starts with 0x7b, not 0x00 (not the Schema Registry wire format)')
    >>> kafkafmt.decode_column(recs.key, format="string").values[:2].to_pylist()
    ['o-0002419', 'o-0002868']

    ``strict=True`` raises for the first bad value instead, naming its Kafka offset:

    >>> kafkafmt.decode_column(recs.value, format="avro", registry=registry, topic="shipments",
    ...                        strict=True, offsets=recs.offset)
    Traceback (most recent call last):
    ...
    kafkafmt.errors.ValueDecodeError: bad avro value of the record at offset 1234: no magic byte: ...
    """
    if trailing not in ("error", "ignore"):
        raise ValueError(f"trailing is 'error' or 'ignore', not {trailing!r}")
    fmt = get_format(format)
    ctx = _context(format, registry, topic, is_key, reader_schema, recursive_fields_max_depth, time_unit,
                   additional_properties, strict=strict, file=file, offsets=offsets, positions=positions,
                   trailing=trailing)
    return fmt.decode(column, ctx)
