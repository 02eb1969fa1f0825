"""A Protobuf reader message as Arrow columns and as the flat tables the kernel
(``kafkafmt._native.protobuf``) reads values with.

Arrow types, as ``MessageToDict(m, preserving_proto_field_name=True,
always_print_fields_with_no_presence=True)`` shows the values:

==================================  ===========================================================================
Protobuf                            Arrow
==================================  ===========================================================================
message                             struct, fields in declaration order, named as the .proto spells them
int32, sint32, sfixed32             int32
int64, sint64, sfixed64             int64
uint32, fixed32 / uint64, fixed64   uint32 / uint64
float, double, bool                 float32, float64, bool
string, bytes                       string (UTF-8 checked), binary
enum                                dictionary<int32, string> of the value names (the first name of an
                                    aliased number); a number the enum lacks (open enums) reads as its
                                    decimal text, as MessageToDict prints it as a number
repeated T                          list<T> (never null: empty when absent)
map<K, V>                           map<K, V> (never null; a key seen twice keeps its last entry)
oneof o { ... }                     its members, as fields of the message in declaration order, each
                                    nullable: the member set is the one not null (all null: none is set) --
                                    as the protobuf runtime, ``MessageToDict`` and Spark's from_protobuf show
                                    a oneof (the name ``o`` is not a column)
google.protobuf.Timestamp           timestamp[us, UTC]: every valid Timestamp (years 1 to 9999 and
                                    beyond), nanoseconds below the microsecond dropped (as Spark,
                                    BigQuery, Delta and Iceberg hold them); ``time_unit="ns"``:
                                    timestamp[ns, UTC], every nanosecond, 1677-09-21 .. 2262-04-11
google.protobuf.Duration            duration[us] (``time_unit="ns"``: duration[ns], about +-292 years);
                                    nanoseconds below the unit dropped toward zero
google.protobuf.*Value (wrappers)   the wrapped scalar, nullable
google.protobuf.Struct/Value/       string: the JSON text ``json.dumps(MessageToDict(v))`` gives (keys sorted)
ListValue
proto2 groups                       left out (their bytes are skipped)
==================================  ===========================================================================

Presence: a field without presence (proto3 scalars, repeated, maps) reads as its default when
absent (0, "", false, empty); a field with presence (``optional``, proto2 fields, oneof members,
messages) is null when absent -- a proto2 ``required`` field too (the runtime's ``ParseFromString``
accepts a value without it).

A Timestamp or Duration its column cannot hold (beyond the unit's range, or nanos out of range) is
null, and ``valueError`` names the field: the rest of the value is read.

A recursive message is unrolled to ``max_depth`` (`kafkafmt.values._options`: Spark's
``recursive.fields.max.depth``, 5 by default): a message appears at most that many times on a path from the top;
the field where it would appear once more is a string column holding that message's JSON text (as the
text doors print it, `kafkafmt.values._jsontext`), so nothing nested deeper is lost.
"""
from __future__ import annotations

import json
import threading

import numpy as np

from kafkafmt._native import protobuf as _kernel
from kafkafmt.errors import SchemaError
from kafkafmt.values._kernelplan import (KINDS as _K, Column as _Column, KernelPlan, StartsPlan, error_entry,
                                         is_field_error)
from kafkafmt.values._options import DEFAULT_MAX_DEPTH, ValueShape
from kafkafmt.values.protobuf._wkt import JSON_TYPES, WRAPPERS, message_field_name
from kafkafmt._util.extras import import_pyarrow

__all__ = ["ProtoPlan", "MessagesPlan", "MAX_COLUMNS", "is_field_error"]
#: Arrow columns one reader message may need
MAX_COLUMNS = KernelPlan.max_columns

_O = _kernel.OPS
_F = _kernel.FLAGS

#: FieldDescriptor.type -> op
_SCALAR_OPS = {5: "P_INT32", 3: "P_INT64", 13: "P_UINT32", 4: "P_UINT64", 17: "P_SINT32", 18: "P_SINT64",
               8: "P_BOOL", 14: "P_ENUM", 7: "P_FIXED32", 15: "P_SFIXED32", 2: "P_FLOAT", 6: "P_FIXED64",
               16: "P_SFIXED64", 1: "P_DOUBLE", 9: "P_STRING", 12: "P_BYTES"}
#: nanoseconds per unit of a Timestamp / Duration column
_UNIT_NS = {"ns": 1, "us": 1000}


def _pa():
    return import_pyarrow("typed values")


def _arrow_of(op):
    pa = _pa()
    return {"P_INT32": pa.int32(), "P_SINT32": pa.int32(), "P_SFIXED32": pa.int32(), "P_INT64": pa.int64(),
            "P_SINT64": pa.int64(), "P_SFIXED64": pa.int64(), "P_UINT32": pa.uint32(), "P_FIXED32": pa.uint32(),
            "P_UINT64": pa.uint64(), "P_FIXED64": pa.uint64(), "P_FLOAT": pa.float32(), "P_DOUBLE": pa.float64(),
            "P_BOOL": pa.bool_(), "P_STRING": pa.string(), "P_BYTES": pa.binary(),
            "P_ENUM": pa.dictionary(pa.int32(), pa.string())}[op]


def _kind_of(op):
    if op in ("P_STRING", "P_BYTES"):
        return _K["K_VAR"], 0
    if op == "P_BOOL":
        return _K["K_BOOL"], 0
    wide = op in ("P_INT64", "P_SINT64", "P_SFIXED64", "P_UINT64", "P_FIXED64", "P_DOUBLE")
    return _K["K_FIXED"], 8 if wide else 4


class Column(_Column):
    """One output column (one Arrow array), and how the plan shapes it."""

    __slots__ = ("enum", "which", "json", "layout", "cut", "soft")

    def __init__(self, index, kind, arrow, width=0, nullable=False):
        super().__init__(index, kind, arrow, width, nullable)
        self.layout = None     # a message with oneofs: per Arrow field, (child, member of that oneof child or None)
        self.enum = None       # (sorted numbers, their names)
        self.which = None      # oneof member names (the indices are written directly)
        self.json = None       # a Struct / Value / ListValue written raw: its full name
        self.cut = None        # a message past the plan's depth: its Descriptor (its bytes, printed as JSON text)
        self.soft = False      # may be null where its value does not fit (a Timestamp, a Duration)


def _repeated(f):
    """FieldDescriptor.is_repeated (protobuf >= 5.29), else its label."""
    r = getattr(f, "is_repeated", None)
    return bool(r) if r is not None else f.label == f.LABEL_REPEATED


def _closed(enum_desc):
    closed = getattr(enum_desc, "is_closed", None)
    if closed is not None:
        return bool(closed)
    return getattr(enum_desc.file, "syntax", "proto3") == "proto2"


class ProtoPlan(StartsPlan):
    """A reader message's Arrow type and the kernel's tables.

    Parameters
    ----------
    descriptor : google.protobuf.descriptor.Descriptor
        The reader message.
    max_depth : int
        How many times a recursive message appears on a path (Spark's ``recursive.fields.max.depth``).
    time_unit : {"us", "ns"}
        The unit of Timestamp and Duration columns.

    Raises
    ------
    SchemaError
        The message needs more than MAX_COLUMNS columns.
    """

    def __init__(self, descriptor, max_depth=DEFAULT_MAX_DEPTH, time_unit="us"):
        ValueShape(max_depth, time_unit)            # (checked)
        self.descriptor = descriptor
        self.max_depth, self.time_unit = max_depth, time_unit
        self.columns = []
        self.fields, self.msgs, self.oneofs, self.table = [], [], [], []
        self.paths = []                 # per field: its path (error texts)
        self._open = {}                 # message name -> its nodes on the path being built (innermost last)
        self._subs = {}                 # cut-off message name -> the ProtoPlan printing its values
        self.top = self._message(descriptor, "", ())
        self.top_col = self.columns[self.msgs[self.top][6]]
        self.top_col.nullable = True
        self.arrow_type = self.top_col.arrow
        self._program = None
        self._lock = threading.Lock()

    # ---- columns -------------------------------------------------------------------------------
    def _new(self, kind, arrow, width=0, nullable=False):
        return self._add(Column(len(self.columns), kind, arrow, width, nullable), "the reader message",
                         f" (a recursive message unrolled to depth {self.max_depth}?): lower "
                         f"recursive_fields_max_depth")

    def _message(self, d, path, stack):
        """Message node of descriptor d (its struct column built too); returns the node index."""
        pa = _pa()
        from google.protobuf import descriptor_pb2
        proto = descriptor_pb2.DescriptorProto()
        d.CopyToProto(proto)
        synthetic = {f.name for f in proto.field if f.proto3_optional}
        fields = [f for f in d.fields if f.type != 10]         # groups: skipped as unknown fields
        mi = len(self.msgs)
        self.msgs.append(None)
        self._open.setdefault(d.full_name, []).append(mi)
        first = len(self.fields)
        self.fields.extend([None] * len(fields))
        self.paths.extend([""] * len(fields))
        struct = self._new(_K["K_STRUCT"], None)
        inner = stack + (d.full_name,)
        arrow_fields, children, layout = [], [], []
        oneof_rows, seen_oneofs = [], {}
        for i, f in enumerate(fields):
            fpath = f"{path}.{f.name}" if path else f.name
            oneof = f.containing_oneof
            real = oneof is not None and not (len(oneof.fields) == 1 and f.name in synthetic)
            row, col = self._field(f, fpath, inner, member=real)
            if real:
                k = seen_oneofs.get(oneof.name)
                if k is None:
                    k = seen_oneofs[oneof.name] = len(oneof_rows)
                    oneof_rows.append((oneof, []))
                    children.append(("oneof", k))
                oneof_rows[k][1].append((first + i, f, col))
                row[6] = k                     # the message's k-th oneof (made global below)
                row[7] = len(oneof_rows[k][1]) - 1
                # a member is a field of the message (the kernel writes the oneof as one child)
                layout.append((children.index(("oneof", k)), row[7]))
                arrow_fields.append(pa.field(f.name, col.arrow, True))
            else:
                layout.append((len(children), None))
                arrow_fields.append(pa.field(f.name, col.arrow, col.nullable))
                children.append(col)
            self.fields[first + i] = row
            self.paths[first + i] = fpath
        first_oneof = len(self.oneofs)
        for k, (oneof, members) in enumerate(oneof_rows):
            names = [m[1].name for m in members]
            which_name = "which"
            while which_name in names:
                which_name += "_"
            which = self._new(_K["K_FIXED"], pa.dictionary(pa.int32(), pa.string()), width=4)
            which.which = names
            ocol = self._new(_K["K_STRUCT"], None, nullable=True)
            ocol.children = [m[2] for m in members] + [which]
            ocol.arrow = pa.struct([pa.field(m[1].name, m[2].arrow, True) for m in members]
                                   + [pa.field(which_name, which.arrow, False)])
            off = len(self.table)
            self.table.extend(m[0] for m in members)
            self.oneofs.append([ocol.index, which.index, off, len(members)])
            for gi, _, _ in members:
                self.fields[gi][6] = first_oneof + k
            children[children.index(("oneof", k))] = ocol
        struct.children = children
        struct.arrow = pa.struct(arrow_fields)
        if oneof_rows:
            struct.layout = layout
        # the field-number lookup: dense for small numbers, sorted pairs for the rest
        numbers = [f.number for f in fields]
        dense_len = min(max(numbers, default=-1) + 1, 8 * len(numbers) + 64)
        dense_off = len(self.table)
        dense = [-1] * dense_len
        sparse = []
        for i, num in enumerate(numbers):
            if num < dense_len:
                dense[num] = i
            else:
                sparse.append((num, i))
        self.table.extend(dense)
        sorted_off = len(self.table)
        for num, i in sorted(sparse):
            self.table.extend((num, i))
        self.msgs[mi] = [first, len(fields), dense_off, dense_len, sorted_off, len(sparse), struct.index,
                         first_oneof, len(oneof_rows)]
        self._open[d.full_name].pop()
        return mi

    def _field(self, f, path, stack, member):
        """(the kernel's row for field f, its Arrow column) -- oneof members: their own column."""
        pa = _pa()
        repeated = _repeated(f)
        flags = 0
        if f.has_presence and not repeated:
            flags |= _F["FL_PRESENCE"]
        row = [f.number, 0, -1, -1, -1, flags, -1, 0, 0, 0, 0]
        mt = f.message_type
        if repeated and mt is not None and mt.GetOptions().map_entry:
            entry_mi = self._entry(mt, path, stack)
            entries = self.columns[self.msgs[entry_mi][6]]
            kcol, vcol = entries.children
            mcol = self._new(_K["K_MAP"], pa.map_(pa.field("key", kcol.arrow, False),
                                                  pa.field("value", vcol.arrow, vcol.nullable)))
            mcol.children = [entries]
            row[1], row[2], row[3], row[4], row[10] = _O["P_MAP"], entries.index, mcol.index, entry_mi, 2
            row[5] |= _F["FL_REPEATED"]
            return row, mcol
        item_nullable = not repeated and bool(flags & _F["FL_PRESENCE"])
        col = self._value(f, row, path, stack, item_nullable or member)
        if repeated:
            lcol = self._new(_K["K_LIST"], pa.list_(pa.field("item", col.arrow, col.kind == _K["K_NULL"] or col.soft)))
            lcol.children = [col]
            row[3] = lcol.index
            row[5] |= _F["FL_REPEATED"]
            if f.type not in (9, 12, 11, 10):
                row[5] |= _F["FL_PACKABLE"]
            return row, lcol
        return row, col

    def _value(self, f, row, path, stack, nullable):
        """The column of one value of field f (an item of a repeated field); fills op/col/child."""
        pa = _pa()
        mt = f.message_type
        if mt is not None:
            name = mt.full_name
            row[10] = 2
            if name == "google.protobuf.Timestamp" or name == "google.protobuf.Duration":
                unit = self.time_unit
                arrow = pa.timestamp(unit, tz="UTC") if name.endswith("Timestamp") else pa.duration(unit)
                col = self._new(_K["K_FIXED"], arrow, width=8, nullable=True)
                col.soft = True                 # null where a value does not fit the unit
                row[1] = _O["P_TIMESTAMP" if name.endswith("Timestamp") else "P_DURATION"]
                row[8] = _UNIT_NS[unit]
            elif name in WRAPPERS:
                op = WRAPPERS[name]
                kind, width = _kind_of(op)
                col = self._new(kind, _arrow_of(op), width=width, nullable=nullable)
                row[1], row[8] = _O["P_WRAPPER"], _O[op]
            elif name in JSON_TYPES:
                col = self._new(_K["K_VAR"], pa.string(), nullable=nullable)
                col.json = name
                row[1], row[8] = _O["P_RAW"], JSON_TYPES.index(name)
            elif stack.count(name) >= self.max_depth:
                # once more than max_depth: the message's bytes (checked with its node up the path), printed
                # as JSON text
                col = self._new(_K["K_VAR"], pa.string(), nullable=nullable)
                col.cut = mt
                row[1], row[4] = _O["P_CUTOFF"], self._open[name][-1]
            else:
                child = self._message(mt, path + ("[]" if _repeated(f) else ""), stack)
                col = self.columns[self.msgs[child][6]]
                col.nullable = nullable
                row[1], row[4] = _O["P_MESSAGE"], child
            row[2] = col.index
            return col
        op = _SCALAR_OPS.get(f.type)
        if op is None:                                # pragma: no cover - groups are filtered out before
            raise SchemaError(f"{path}: unsupported field type {f.type}")
        kind, width = _kind_of(op)
        col = self._new(kind, _arrow_of(op), width=width, nullable=nullable)
        row[1], row[2], row[10] = _O[op], col.index, {"P_FIXED32": 5, "P_SFIXED32": 5, "P_FLOAT": 5,
                                                      "P_FIXED64": 1, "P_SFIXED64": 1, "P_DOUBLE": 1,
                                                      "P_STRING": 2, "P_BYTES": 2}.get(op, 0)
        if op == "P_ENUM":
            by_number = {}
            for v in f.enum_type.values:
                by_number.setdefault(v.number, v.name)
            nums = sorted(by_number)
            col.enum = (np.array(nums, np.int32), [by_number[n] for n in nums])
            if _closed(f.enum_type):
                row[5] |= _F["FL_CLOSED"]
                row[8] = len(self.table)
                row[9] = len(nums)
                self.table.extend(nums)
        return col

    def _entry(self, mt, path, stack):
        """The node of a map entry message: key and value without presence (an absent message
        value reads as its defaults, as the runtime's map does)."""
        mi = self._message(mt, path + "{}", stack)
        first, n = self.msgs[mi][0], self.msgs[mi][1]
        for i in range(first, first + n):
            self.fields[i][5] &= ~_F["FL_PRESENCE"]
        entries = self.columns[self.msgs[mi][6]]
        for c in entries.children:
            c.nullable = c.soft                 # (a Timestamp value may be null: beyond its unit)
        names = [self.paths[i].rsplit(".", 1)[-1] for i in range(first, first + n)]
        if names != ["key", "value"]:
            raise SchemaError(f"{path}: a map entry has fields key and value, not {names}")
        entries.arrow = _pa().struct([_pa().field("key", entries.children[0].arrow, False),
                                      _pa().field("value", entries.children[1].arrow, entries.children[1].nullable)])
        return mi

    # ---- the kernel ----------------------------------------------------------------------------
    def _compile(self, columns, children):
        return _kernel.Program(
            np.array(self.fields, np.int64).reshape(-1, 11), np.array(self.msgs, np.int64).reshape(-1, 9),
            np.array(self.oneofs, np.int64).reshape(-1, 4), np.array(self.table, np.int32), columns, children,
            self.top)

    def _shaped(self, col, length, nulls, vb, data, offs):
        if col.enum is not None or col.which is not None:
            return _dictionary(col, length, nulls, vb, data)
        if col.kind == _K["K_VAR"] and (col.json is not None or col.cut is not None):
            raw = self._binary(length, nulls, vb, data, offs)
            return _json_texts(raw, col.json) if col.cut is None else self._cut_texts(col.cut, raw)
        return None

    def _children(self, col, children):
        if col.layout is not None:          # oneof members: fields of the message
            flat = {j: children[j].flatten() for j, m in col.layout if m is not None}   # (null where unset)
            children = [children[j] if m is None else flat[j][m] for j, m in col.layout]
        return children

    def _cut_texts(self, descriptor, raw):
        """The JSON texts of a cut-off message's values (its bytes, checked by the kernel): decoded
        with a plan of that message, printed as the text doors print them."""
        from kafkafmt.values.protobuf._json import protobuf_json

        if raw.null_count == len(raw):
            return _pa().nulls(len(raw), _pa().string())
        with self._lock:
            sub = self if descriptor is self.descriptor else self._subs.get(descriptor.full_name)
            if sub is None:
                sub = self._subs[descriptor.full_name] = ProtoPlan(descriptor, self.max_depth, self.time_unit)
        values = sub.decode_bare(raw)[0]
        return _pa().array(protobuf_json(values, descriptor), _pa().string())

    def decode_bare(self, raw):
        """`decode` of a binary array of bare messages (nulls stay null)."""
        from kafkafmt.values._formats import column_parts

        raw, offsets, data = column_parts(raw)
        roots = np.zeros(len(raw), np.int32)
        if raw.null_count:
            roots[~np.asarray(raw.is_valid())] = -1
        return self.decode(offsets, data, offsets[:-1].copy(), roots)

    def error_text(self, code, field, detail):
        """The message of a kernel error (code, field, detail as `decode` returns them)."""
        return _error_text(code, self.paths[field] if 0 <= field < len(self.paths) else "", detail)


class MessagesPlan:
    """Several reader messages in one column (a file whose values may be any of several messages):
    a struct with one nullable field per message, named as the message is inside its package
    (``Click``, ``Envelope.Click``); each value fills its own message's field.

    Parameters
    ----------
    descriptors : sequence of google.protobuf.descriptor.Descriptor
    max_depth, time_unit :
        As `ProtoPlan`.
    """

    def __init__(self, descriptors, max_depth=DEFAULT_MAX_DEPTH, time_unit="us"):
        pa = _pa()
        self.descriptors = tuple(descriptors)
        self.plans = [ProtoPlan(d, max_depth, time_unit) for d in self.descriptors]
        self.names = [message_field_name(d) for d in self.descriptors]
        self.arrow_type = pa.struct([pa.field(name, p.arrow_type, True) for name, p in zip(self.names, self.plans)])
        self.paths, self._bases = [], []
        for name, p in zip(self.names, self.plans):
            self._bases.append(len(self.paths))
            self.paths += [f"{name}.{path}" for path in p.paths]

    def decode(self, offsets, data, starts, roots):
        """As `ProtoPlan.decode`; ``roots[i]`` is the index of row i's message (or -1 / -code)."""
        n = len(roots)
        code, pos, field, detail, more = (np.zeros(n, np.uint8), np.zeros(n, np.int64), np.full(n, -1, np.int32),
                                          np.zeros(n, np.int64), np.zeros(n, np.int32))
        valid = np.zeros(n, bool)
        children = []
        for k, (plan, base) in enumerate(zip(self.plans, self._bases)):
            mine = roots == k
            # rows of other messages are null here; an error found before decoding is kept once (message 0)
            rk = np.where(mine, 0, np.where(roots < -1, roots, -1) if k == 0 else -1).astype(np.int32)
            values, (c, p, f, d, m) = plan.decode(offsets, data, starts, rk)
            children.append(values)
            hit = c != 0
            code[hit], pos[hit], detail[hit], more[hit] = c[hit], p[hit], d[hit], m[hit]
            field[hit] = np.where(f[hit] >= 0, f[hit] + base, -1)
            valid |= mine & ((c == 0) | is_field_error(c))
        return self._struct(children, valid), (code, pos, field, detail, more)

    def _struct(self, children, valid):
        """One struct column of per-message columns (chunked where a child is)."""
        pa = _pa()
        cuts = {0, len(valid)}
        for c in children:
            if isinstance(c, pa.ChunkedArray):
                at = 0
                for chunk in c.chunks:
                    at += len(chunk)
                    cuts.add(at)
        cuts = sorted(cuts)
        pieces = []
        for a, b in zip(cuts[:-1], cuts[1:]):
            parts = []
            for c in children:
                part = c.slice(a, b - a)
                parts.append(part.combine_chunks() if isinstance(part, pa.ChunkedArray) else part)
            pieces.append(pa.StructArray.from_arrays(parts, fields=list(self.arrow_type),
                                                     mask=pa.array(~valid[a:b])))
        return pieces[0] if len(pieces) == 1 else pa.chunked_array(pieces, self.arrow_type)

    def error_text(self, code, field, detail):
        """The message of a kernel error (``field`` numbered across the messages)."""
        return _error_text(code, self.paths[field] if 0 <= field < len(self.paths) else "", detail)


def _error_text(code, path, detail):
    (name, text), _ = error_entry(_kernel.ERROR_INFO, code)
    unit = {1: "ns", 1000: "us"}.get(int(detail), "") if name in ("TIMESTAMP", "DURATION") else ""
    msg = text.format(detail=detail, depth=_kernel.MAX_DEPTH, unit=unit)
    return f"{msg} (in {path})" if path else msg


def _dictionary(col, length, nulls, vb, data):
    """An enum (raw numbers) or oneof-member (indices) column as dictionary<int32, string>."""
    raw = np.frombuffer(data, np.int32, length) if length else np.zeros(0, np.int32)
    if col.which is not None:
        names, idx = col.which, raw
    else:
        nums, names = col.enum
        idx = np.searchsorted(nums, raw).astype(np.int32)
        np.minimum(idx, max(len(nums) - 1, 0), out=idx)
        match = nums[idx] == raw if len(nums) else np.zeros(length, bool)
        if nulls:
            valid = np.unpackbits(np.frombuffer(vb, np.uint8), bitorder="little", count=length).astype(bool)
            match |= ~valid
            idx = np.where(valid, idx, 0).astype(np.int32)
        if not match.all():
            unknown = np.unique(raw[~match])
            names = list(names) + [str(int(u)) for u in unknown]
            idx = idx.copy()
            idx[~match] = len(nums) + np.searchsorted(unknown, raw[~match])
    return KernelPlan._dictionary(length, nulls, vb, np.ascontiguousarray(idx, np.int32), names)


def _json_value(v):
    """A parsed google.protobuf.Value as Python data (no kind set: None)."""
    kind = v.WhichOneof("kind")
    if kind == "struct_value":
        return {k: _json_value(x) for k, x in v.struct_value.fields.items()}
    if kind == "list_value":
        return [_json_value(x) for x in v.list_value.values]
    if kind is None or kind == "null_value":
        return None
    return getattr(v, kind)


def _json_texts(raw, full_name):
    """google.protobuf.Struct / Value / ListValue bytes (checked by the kernel) as JSON text:
    what MessageToDict gives, with a Value that sets no kind as null (MessageToDict refuses it)."""
    pa = _pa()
    from google.protobuf import struct_pb2
    cls = getattr(struct_pb2, full_name.rsplit(".", 1)[1])
    out = []
    for b in raw.to_pylist():
        if b is None:
            out.append(None)
            continue
        m = cls.FromString(b)
        if full_name.endswith("Struct"):
            data = {k: _json_value(x) for k, x in m.fields.items()}
        elif full_name.endswith("ListValue"):
            data = [_json_value(x) for x in m.values]
        else:
            data = _json_value(m)
        # keys sorted: a Struct is a protobuf map, whose iteration order differs between processes
        out.append(json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=True, sort_keys=True))
    return pa.array(out, pa.string())
