"""The ``"registry"`` value format: the Schema Registry's wire format, each schema id's registered
type (AVRO, PROTOBUF, JSON) deciding how its values are decoded -- one column for a topic whose
values changed format (e.g. a topic migrating from JSON Schema to Avro).

**One Arrow type**: the reader schema (``reader_schema=`` as `kafkafmt.values._formats.reader_schema_for`
takes it; None: the latest live version of ``<topic>-value``) decides the Arrow type, by its own
type's format (the format declaring that ``schema_type``: ``"avro"``, ``"protobuf"``, ``"json-schema"``). Values whose schema id has that
type are decoded as that format decodes them. Values of another type are decoded by their own
format with the latest version of the same subject that has their type (else their own writer
schema), then *matched by name* to the reader's Arrow type:

* struct fields by name (a field the value lacks is null; one the reader lacks is dropped);
  lists, maps and nested structs alike;
* scalars cast only where nothing is lost (int32 -> int64, a timestamp unit that keeps every
  value, dictionary <-> string, ...); an enum (dictionary) takes a string by its symbol;
* a value that does not fit -- a cast that would lose something, a type that cannot become the
  reader's (text where a struct is read), a missing field the reader does not allow null -- is
  null with a per-record error naming its schema id and type.

Ids whose type is unknown, and framing errors, are per-record errors as in every format.
"""
from __future__ import annotations

import numpy as np

from kafkafmt._native import framing as _framing
from kafkafmt.errors import SchemaError, SchemaNotFoundError, SchemaRegistryError
from kafkafmt.values.registry import open_registry
from kafkafmt.values._formats import (DecodedColumn, ValueFormat, column_parts, column_validity, count_errors,
                                      format_of_type, get_format, raise_strict, reader_schema_for, schema_types)

__all__ = ["RegistryFormat", "conform"]


def _pa():
    import pyarrow as pa
    return pa


def _ctx(ctx, reader, strict=False):
    """ctx with another reader schema (strict mode handled here)."""
    import dataclasses
    return dataclasses.replace(ctx, reader_schema=reader, strict=strict)


class RegistryFormat(ValueFormat):
    """The wire format, each schema id's registered type deciding (see the module docstring)."""
    name = "registry"
    summary = "the Schema Registry's wire format, each schema id's registered type deciding"
    needs_schema = True

    def _reader(self, ctx):
        """(registry, reader schema, its type, the reader as its format takes it): a Protobuf
        reader keeps the message it names (``{"message": ...}`` or a message's full name)."""
        if ctx.registry is None:
            raise SchemaError("format \"registry\" needs a schema registry")
        reg = open_registry(ctx.registry)
        spec = ctx.reader_schema
        message = isinstance(spec, dict) and "message" in spec
        try:
            rs = reader_schema_for(reg, ctx.topic, ctx.is_key,
                                   ({k: v for k, v in spec.items() if k != "message"} or None) if message else spec)
        except SchemaNotFoundError as exc:
            from kafkafmt.values.protobuf import resolve_reader
            try:
                rs = resolve_reader(reg, ctx.topic, ctx.is_key, spec)[0]      # a Protobuf message's name
            except (SchemaNotFoundError, SchemaError):
                raise exc from None
            message = True
        stype = rs.schema_type or "AVRO"
        if format_of_type(stype) is None:
            raise SchemaError(f"the reader schema has type {stype!r}: one of {schema_types()}")
        if message and stype != "PROTOBUF":
            raise SchemaError(f"reader_schema names a Protobuf message, but the reader schema "
                              f"({rs.subject or 'id %d' % rs.id}) is {stype}")
        return reg, rs, stype, spec if message else rs

    def value_type(self, ctx):
        reg, rs, stype, reader = self._reader(ctx)
        return get_format(format_of_type(stype)).value_type(_ctx(ctx, reader))

    def scan_names(self, column, ctx):
        """As the reader schema's own format scans (a Protobuf reader of several messages)."""
        reg, rs, stype, reader = self._reader(ctx)
        return get_format(format_of_type(stype)).scan_names(column, _ctx(ctx, reader))

    def named_reader(self, names, ctx):
        """As the reader schema's own format names it."""
        reg, rs, stype, reader = self._reader(ctx)
        return get_format(format_of_type(stype)).named_reader(names, _ctx(ctx, reader))

    def pinned_reader(self, ctx):
        """As the reader schema's own format pins it."""
        reg, rs, stype, reader = self._reader(ctx)
        return get_format(format_of_type(stype)).pinned_reader(_ctx(ctx, reader))

    def _other_reader(self, reg, rs, stype, sid):
        """The reader of values of type stype: the subject's latest version of that type, else the
        writer schema of id sid."""
        if rs.subject:
            try:
                for v in reversed(reg.versions(rs.subject)):
                    cand = reg.version(rs.subject, v)
                    if (cand.schema_type or "AVRO") == stype:
                        return cand
            except (SchemaNotFoundError, SchemaRegistryError):
                pass
        return reg.schema(sid)

    def decode(self, column, ctx):
        pa = _pa()
        reg, rs, rtype, reader = self._reader(ctx)
        column, offsets, data = column_parts(column)
        bits, bit_offset = column_validity(column)
        ids, slots, uniq = _framing.frame(offsets, data, bits, bit_offset)
        types = {}
        for sid in uniq.tolist():
            try:
                types[sid] = reg.schema(sid).schema_type or "AVRO"
            except (SchemaNotFoundError, SchemaRegistryError):
                types[sid] = None
        n = len(column)
        main_fmt = get_format(format_of_type(rtype))
        names = main_fmt.scan_names(column, _ctx(ctx, reader))
        if names is not None:       # (a Protobuf reader of several messages: those the values name)
            reader = main_fmt.named_reader(names, _ctx(ctx, reader))
        main = main_fmt.decode(column, _ctx(ctx, reader))
        others = {t for t in types.values() if t is not None and t != rtype and format_of_type(t) is not None}
        printed = _Printed(main_fmt)
        if not others:
            dec = DecodedColumn(main.values, main.schema_id, main.error, main.error_count, printed, main.reader,
                                main.trailing_count, field_error_count=main.field_error_count)
            self._strict(dec, ctx)
            return dec
        row_type = np.array([types.get(int(s)) if f >= 0 else None for s, f in zip(ids.tolist(), slots.tolist())],
                            dtype=object)
        pieces = [main.values.combine_chunks() if isinstance(main.values, pa.ChunkedArray) else main.values]
        source = np.arange(n, dtype=np.int64)
        errors = np.array(main.error.to_pylist(), dtype=object)
        placeholder = main_fmt.decode(pa.array([None], pa.binary()), _ctx(ctx, reader)).values
        if isinstance(placeholder, pa.ChunkedArray):
            placeholder = placeholder.combine_chunks()
        base = n
        for t in sorted(others):
            rows = np.flatnonzero(row_type == t)
            first_id = int(ids[rows[0]])
            fmt = get_format(format_of_type(t))
            try:
                reader = self._other_reader(reg, rs, t, first_id)
                dec = fmt.decode(column.take(pa.array(rows)), _ctx(ctx, reader))
                values = dec.values.combine_chunks() if isinstance(dec.values, pa.ChunkedArray) else dec.values
                fitted, bad, why = conform(values, pieces[0])
            except (SchemaError, SchemaNotFoundError, SchemaRegistryError) as exc:
                errors[rows] = f"{t} values cannot be read as the reader's {rtype} schema: {exc.reason}"
                source[rows] = -1
                continue
            own_errors = dec.error.to_pylist()
            read = np.asarray(values.is_valid()) if values.null_count else np.ones(len(values), bool)
            pieces.append(fitted)
            for j, r in enumerate(rows.tolist()):
                if own_errors[j] is not None and not read[j]:
                    errors[r] = own_errors[j]
                    source[r] = -1
                elif bad[j]:
                    errors[r] = (f"the {t} value (schema id {int(ids[r])}) does not fit the reader's {rtype} "
                                 f"schema: {why[j]}")
                    source[r] = -1
                else:
                    errors[r] = own_errors[j]         # (None, or the fields read as null)
                    source[r] = base + j
            base += len(fitted)
        pieces.append(placeholder)
        source[source < 0] = base
        values = pa.concat_arrays(pieces).take(pa.array(source))
        error = pa.array(errors, pa.string())
        hard, soft = count_errors(values, error)
        dec = DecodedColumn(values, main.schema_id, error, hard, printed, main.reader, main.trailing_count,
                            field_error_count=soft)
        self._strict(dec, ctx)
        return dec

    def _strict(self, dec, ctx):
        if ctx.strict and (dec.error_count or dec.field_error_count):
            i = next(i for i, e in enumerate(dec.error.to_pylist()) if e is not None)
            raise_strict(self, ctx, i, dec.error[i].as_py())



class _Printed(RegistryFormat):
    """The ``"registry"`` format of a column whose reader schema has ``main``'s type: its values as
    text as ``main`` prints them (Avro readers as kafka-avro-console-consumer prints them, whatever
    the type each value was written with)."""

    def __init__(self, main):
        self.main = main

    def json(self, decoded):
        return self.main.json(decoded)

    def json_array(self, decoded):
        return self.main.json_array(decoded)


# ------------------------------------------------------------------------------------------------

def conform(values, template):
    """``values`` (a pyarrow Array) matched by name to the Arrow type of ``template`` (an array of
    the reader's type: its enums' dictionaries are the ones the result uses).

    Returns
    -------
    (array of template's type, bad: bool NumPy array per element, why: list of texts, None where fine)
    """
    n = len(values)
    bad = np.zeros(n, bool)
    why = [None] * n
    out = _fit(values, template, bad, why, "")
    return out, bad, why


def _mark(bad, why, mask, text):
    for i in np.flatnonzero(mask & ~bad).tolist():
        why[i] = text
    bad |= mask


def _valid(arr):
    return np.asarray(arr.is_valid()) if arr.null_count else np.ones(len(arr), bool)


def _sub(arr, bad, why, mask_rows, parents, fn):
    """Fit a child array whose elements belong to rows ``parents`` (None: one per row)."""
    cbad = np.zeros(len(arr), bool)
    cwhy = [None] * len(arr)
    out = fn(cbad, cwhy)
    for j in np.flatnonzero(cbad).tolist():
        r = j if parents is None else int(parents[j])
        if mask_rows[r] and not bad[r]:
            bad[r] = True
            why[r] = cwhy[j]
    return out


def _fit(arr, template, bad, why, path):
    pa = _pa()
    import pyarrow.compute as pc
    t = template.type
    where = path or "the value"
    if arr.type == t and not pa.types.is_dictionary(t):
        return arr
    valid = _valid(arr)
    mask = pa.array(~valid) if not valid.all() else None
    if pa.types.is_struct(t):
        if not pa.types.is_struct(arr.type):
            _mark(bad, why, valid, f"{where}: {arr.type} cannot be read as a struct")
            return pa.nulls(len(arr), t)
        names = [arr.type.field(i).name for i in range(arr.type.num_fields)]
        children = []
        for i, f in enumerate(t):
            sub = f"{path}.{f.name}" if path else f.name
            if f.name in names:
                child = arr.field(names.index(f.name))
                fitted = _sub(child, bad, why, valid, None,
                              lambda b, w, c=child, tp=template.field(i), s=sub: _fit(c, tp, b, w, s))
            else:
                fitted = pa.nulls(len(arr), f.type)
            if not f.nullable:
                _mark(bad, why, valid & ~_valid(fitted),
                      f"{sub}: missing or null, and the reader's field is not nullable")
            children.append(fitted)
        return pa.StructArray.from_arrays(children, fields=list(t), mask=mask)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
            _mark(bad, why, valid, f"{where}: {arr.type} cannot be read as a list")
            return pa.nulls(len(arr), t)
        items = arr.flatten()
        parents = np.asarray(pc.list_parent_indices(arr)) if len(items) else np.zeros(0, np.int64)

        def fit_items(b, w):
            out = _fit(items, template.flatten(), b, w, f"{path}[]")
            if not t.value_field.nullable:
                _mark(b, w, ~_valid(out), f"{path}[]: a null item, and the reader's items are not nullable")
            return out

        fitted = _sub(items, bad, why, valid, parents, fit_items)
        offsets = pc.subtract(arr.value_offsets, arr.value_offsets[0]).cast(pa.int32())
        return pa.ListArray.from_arrays(offsets, fitted, type=t, mask=mask)
    if pa.types.is_map(t):
        if not pa.types.is_map(arr.type):
            _mark(bad, why, valid, f"{where}: {arr.type} cannot be read as a map")
            return pa.nulls(len(arr), t)
        parents = np.asarray(pc.list_parent_indices(arr)) if len(arr.keys) else np.zeros(0, np.int64)
        keys = _sub(arr.keys, bad, why, valid, parents,
                    lambda b, w: _fit(arr.keys, template.keys, b, w, f"{path}{{key}}"))
        items = _sub(arr.items, bad, why, valid, parents,
                     lambda b, w: _fit(arr.items, template.items, b, w, f"{path}{{}}"))
        offsets = pc.subtract(arr.offsets, arr.offsets[0])
        return pa.MapArray.from_arrays(offsets, keys, items, type=t, mask=mask)
    if pa.types.is_dictionary(t):
        source = arr.cast(pa.string()) if pa.types.is_dictionary(arr.type) else arr
        if not (pa.types.is_string(source.type) or pa.types.is_large_string(source.type)):
            _mark(bad, why, valid, f"{where}: {arr.type} cannot be read as an enum")
            return pa.DictionaryArray.from_arrays(pa.nulls(len(arr), pa.int32()), template.dictionary)
        idx = pc.index_in(source.cast(pa.string()), value_set=template.dictionary)
        _mark(bad, why, valid & ~_valid(idx), f"{where}: a symbol the reader's enum lacks")
        return pa.DictionaryArray.from_arrays(idx.cast(pa.int32()), template.dictionary)
    source = arr.cast(pa.string()) if pa.types.is_dictionary(arr.type) else arr
    try:
        return source.cast(t, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        text = str(exc).splitlines()[0]
    out = []
    for i in range(len(source)):                 # which values do not fit
        try:
            out.append(source[i:i + 1].cast(t, safe=True))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            if valid[i] and not bad[i]:
                bad[i] = True
                why[i] = f"{where}: {text}"
            out.append(pa.nulls(1, t))
    return pa.concat_arrays(out) if out else pa.nulls(0, t)
