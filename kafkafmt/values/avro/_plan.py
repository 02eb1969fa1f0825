"""Avro reader schemas as Arrow columns, and writer schemas resolved to them as decode plans.

An `AvroPlan` holds one reader schema: its Arrow type (known before any value is read) and the
output columns the kernel (``kafkafmt._native.avro``) fills. Each writer schema is compiled once
(`AvroPlan.add_writer`) into plan nodes -- Avro's schema resolution worked out ahead of time: fields
matched by name or reader alias, writer-only fields skipped, reader-only fields filled from their
defaults (pre-encoded as Avro binary), promotions, enum symbol maps, union branch maps. A pair that
cannot be resolved is not refused: the part that does not match becomes an error node, so only the
values that reach it fail (as Java's resolving decoder does), each with a message naming the field.

Arrow types of the reader schema:

==============================  ====================================================================
Avro                            Arrow
==============================  ====================================================================
null / boolean                  null / bool
int, long, float, double        int32, int64, float32, float64
bytes, string                   binary, string (int32 offsets; a column past 2 GiB: a ChunkedArray)
fixed(n)                        fixed_size_binary(n)
enum                            dictionary<int32, string> (the reader's symbols)
array / map                     list<item> / map<string, value>
record                          struct (fields in reader order)
["null", T] / [T, "null"]       T, nullable
other unions                    struct<member0, member1, ...>: one nullable member per non-null
                                branch, in the reader's order (as Spark's from_avro); the branch
                                read is the one member that is set; null when the null branch is
decimal (bytes or fixed)        decimal128(p, s); decimal256 when p > 38; p > 76: the base type; a
                                value with more digits than p (which Java and fastavro read) is
                                null, ``valueError`` naming the field: the rest of the value is read
uuid (string / fixed(16))       string (8-4-4-4-12 hex digits, else a per-record error, as Java's and
                                fastavro's UUID conversions fail) / fixed_size_binary(16)
date, time-millis, time-micros  date32, time32[ms], time64[us] (a time outside one day: a per-record error)
timestamp-millis/-micros/-nanos timestamp[ms/us/ns, tz=UTC]
local-timestamp-*               timestamp[ms/us/ns] (no zone)
duration (fixed(12))            month_day_nano_interval (milliseconds as nanoseconds)
==============================  ====================================================================

Fields are nullable when their Avro type can be null (null, or a union with null); the column as a
whole is nullable (a bad value, a tombstone). Where a value is null, its non-nullable children hold
zeros, empty strings and empty lists (Arrow's Parquet writer refuses nulls in a required field).

A recursive reader type (a record that holds itself through a union, array or map) cannot be an
Arrow type: it is unrolled to ``max_depth`` (Spark's ``recursive.fields.max.depth``, 5 by default,
`kafkafmt.values._options`): a record appears at most that many times on a path from the top; the
field where it would appear once more is a string holding that record's JSON text as
kafka-avro-console-consumer prints it (`kafkafmt.values.avro._json`), so nothing nested deeper is lost.
A reader schema needing more than ``MAX_COLUMNS`` columns, or a plan of more than ``MAX_NODES``
nodes, is refused (`SchemaError`).
"""
from __future__ import annotations

import threading

import numpy as np

from kafkafmt._native import avro as _kernel
from kafkafmt._native import framing as _framing
from kafkafmt.values.avro._schema import NAMED, best_branch, encode_default, matches, names_match
from kafkafmt.errors import SchemaError
from kafkafmt.values._kernelplan import KINDS as _K, Column as _Column, KernelPlan, error_entry
from kafkafmt.values._options import DEFAULT_MAX_DEPTH, ValueShape
from kafkafmt._util.extras import import_pyarrow

__all__ = ["AvroPlan", "MAX_COLUMNS", "MAX_NODES", "ZERO_ITEMS_CAP", "Column"]

#: Arrow columns one reader schema may need
MAX_COLUMNS = KernelPlan.max_columns
#: plan nodes one reader schema may collect (all writer schemas together)
MAX_NODES = 1 << 20
#: items of zero-byte types (null, empty record, fixed(0)) one value may hold
ZERO_ITEMS_CAP = 1 << 16

_O = _kernel.OPS


def _pa():
    return import_pyarrow("typed values")


def _describe(t):
    if t.kind in NAMED:
        return f"{t.kind} {t.fullname}"
    if t.kind == "union":
        return "[" + ", ".join(b.type_name for b in t.branches) + "]"
    return t.kind + (f" ({t.logical})" if t.logical else "")


class Column(_Column):
    """One output column (one Arrow array) of the reader schema: the Avro type it stands for."""

    __slots__ = ("avro", "union", "general", "members", "path", "cutoff", "symbols", "decimal", "ancestor")

    def __init__(self, index, kind, arrow, avro, path, width=0, nullable=False):
        super().__init__(index, kind, arrow, width, nullable)
        self.avro, self.path = avro, path
        self.union = None          # the reader union this column stands for (nullable T or general)
        self.general = False       # a general union: struct of members
        self.members = ()          # its non-null branches
        self.cutoff = False        # a recursive record past the depth: its JSON text
        self.ancestor = None       # (cutoff) the column of that record up the path
        self.symbols = None        # enum symbols (dictionary)
        self.decimal = None        # (precision, scale)


class AvroPlan(KernelPlan):
    """A reader schema's Arrow columns and the decode plans of the writer schemas resolved to it.

    Parameters
    ----------
    reader : AvroType
        The reader schema (`kafkafmt.values.avro._schema.parse_schema`).
    max_depth : int
        How many times a recursive record appears on a path (Spark's ``recursive.fields.max.depth``).

    Raises
    ------
    SchemaError
        The reader schema needs more than MAX_COLUMNS columns.
    """

    def __init__(self, reader, max_depth=DEFAULT_MAX_DEPTH):
        ValueShape(max_depth)                       # (checked)
        self.reader = reader
        self.max_depth = max_depth
        self.columns = []
        self._open = {}             # record name -> its columns on the path being built (innermost last)
        self.cuts = []              # (writer type, reader record) of each OP_CUT's values
        self._subs = {}             # reader record name -> the AvroPlan printing its cut-off values
        self.top = self._column(reader, "", ())
        self.top.nullable = True
        self.arrow_type = self.top.arrow
        self.nodes, self.paths, self.table, self.messages = [], [], [], []
        self.consts, self.bounds = bytearray(), bytearray()
        self._bound_at = {}
        self._memo, self._skips, self._defaults = {}, {}, {}
        self.roots = {}
        self._writers = []          # the writer types compiled (the memo keys are their ids: kept alive)
        self._program = None
        self._lock = threading.RLock()

    # ---- columns -------------------------------------------------------------------------------
    def _new(self, kind, arrow, avro, path, width=0, nullable=False):
        return self._add(Column(len(self.columns), kind, arrow, avro, path, width, nullable), "the reader schema",
                         f" (a recursive type unrolled to depth {self.max_depth}?): lower recursive_fields_max_depth")

    def _column(self, t, path, stack):
        pa = _pa()
        k = t.kind
        if k == "union":
            nonnull = [b for b in t.branches if b.kind != "null"]
            has_null = len(nonnull) < len(t.branches)
            if not nonnull:
                col = self._new(_K["K_NULL"], pa.null(), t, path, nullable=True)
            elif len(nonnull) == 1:
                col = self._column(nonnull[0], path, stack)
                col.nullable = col.nullable or has_null
            else:
                col = self._new(_K["K_STRUCT"], None, t, path, nullable=has_null)
                col.general = True
                col.members = nonnull
                col.children = [self._column(b, f"{path}.member{i}", stack) for i, b in enumerate(nonnull)]
                for c in col.children:
                    c.nullable = True
                col.arrow = pa.struct([pa.field(f"member{i}", c.arrow, True) for i, c in enumerate(col.children)])
            col.union = t
            return col
        if k == "record":
            if stack.count(t.fullname) >= self.max_depth:
                # once more than max_depth: the record's JSON text (its bytes, checked with its column up the path)
                col = self._new(_K["K_VAR"], pa.string(), t, path)
                col.cutoff = True
                col.ancestor = self._open[t.fullname][-1]
                return col
            col = self._new(_K["K_STRUCT"], None, t, path)
            inner = stack + (t.fullname,)
            self._open.setdefault(t.fullname, []).append(col)
            col.children = [self._column(f.type, f"{path}.{f.name}" if path else f.name, inner) for f in t.fields]
            self._open[t.fullname].pop()
            col.arrow = pa.struct([pa.field(f.name, c.arrow, c.nullable) for f, c in zip(t.fields, col.children)])
            return col
        if k == "array":
            col = self._new(_K["K_LIST"], None, t, path)
            item = self._column(t.items, f"{path}[]", stack)
            col.children = [item]
            col.arrow = pa.list_(pa.field("item", item.arrow, item.nullable))
            return col
        if k == "map":
            col = self._new(_K["K_MAP"], None, t, path)
            entries = self._new(_K["K_STRUCT"], None, t, path)
            key = self._new(_K["K_VAR"], pa.string(), None, f"{path}{{key}}")
            value = self._column(t.values, f"{path}{{}}", stack)
            entries.children = [key, value]
            kf, vf = pa.field("key", pa.string(), False), pa.field("value", value.arrow, value.nullable)
            entries.arrow = pa.struct([kf, vf])
            col.children = [entries]
            col.arrow = pa.map_(kf, vf)
            return col
        if k == "enum":
            col = self._new(_K["K_FIXED"], pa.dictionary(pa.int32(), pa.string()), t, path, width=4,
                            nullable=not t.symbols)
            col.symbols = list(t.symbols)
            return col
        if k == "null":
            return self._new(_K["K_NULL"], pa.null(), t, path, nullable=True)
        if k == "boolean":
            return self._new(_K["K_BOOL"], pa.bool_(), t, path)
        if t.logical == "decimal" and t.precision <= 76:
            # (nullable: a value with more digits than the precision is null, its field named in valueError)
            col = self._new(_K["K_FIXED"], pa.decimal128(t.precision, t.scale) if t.precision <= 38
                            else pa.decimal256(t.precision, t.scale), t, path, width=16 if t.precision <= 38 else 32,
                            nullable=True)
            col.decimal = (t.precision, t.scale)
            return col
        if k in ("int", "long"):
            arrow = _LOGICAL_ARROW.get(t.logical) if t.logical else None
            arrow = arrow() if arrow else (pa.int32() if k == "int" else pa.int64())
            return self._new(_K["K_FIXED"], arrow, t, path, width=4 if k == "int" else 8)
        if k == "float":
            return self._new(_K["K_FIXED"], pa.float32(), t, path, width=4)
        if k == "double":
            return self._new(_K["K_FIXED"], pa.float64(), t, path, width=8)
        if k == "bytes":
            return self._new(_K["K_VAR"], pa.binary(), t, path)
        if k == "string":
            return self._new(_K["K_VAR"], pa.string(), t, path)
        if k == "fixed":
            if t.logical == "duration":
                return self._new(_K["K_FIXED"], pa.month_day_nano_interval(), t, path, width=16)
            return self._new(_K["K_FIXED"], pa.binary(t.size), t, path, width=t.size)
        raise SchemaError(f"unknown Avro type {k!r}")  # pragma: no cover

    # ---- plan nodes ----------------------------------------------------------------------------
    def _node(self, op, col=-1, a=0, b=0, c=0, min_size=0, path=""):
        if len(self.nodes) >= MAX_NODES:
            raise SchemaError(f"the decode plan needs more than {MAX_NODES} nodes")
        self.nodes.append([_O[op], col, a, b, c, min_size])
        self.paths.append(path)
        return len(self.nodes) - 1

    def _set(self, idx, op, col=-1, a=0, b=0, c=0, min_size=0):
        self.nodes[idx] = [_O[op], col, a, b, c, min_size]

    def _table(self, items):
        off = len(self.table)
        self.table.extend(items)
        return off

    def _min(self, node):
        return self.nodes[node][5]

    def _error(self, message, path):
        self.messages.append(message)
        return self._node("OP_ERROR", a=len(self.messages) - 1, path=path)

    def _bound(self, col):
        """Offset of 10^precision (little-endian, the column's width) in the bounds blob."""
        key = (col.decimal[0], col.width)
        if key not in self._bound_at:
            self._bound_at[key] = len(self.bounds)
            self.bounds += (10 ** col.decimal[0]).to_bytes(col.width, "little")
        return self._bound_at[key]

    def add_writer(self, key, writer):
        """The root node of writer schema ``writer`` (compiled on first use; ``key`` names it, e.g.
        its schema id). A top-level ``"bytes"`` writer schema reads the value's bytes raw, as
        Confluent's serializers write it."""
        with self._lock:
            root = self.roots.get(key)
            if root is None:
                self._writers.append(writer)
                if writer.kind == "bytes":
                    root = self._raw(writer, self.top)
                else:
                    root = self._resolve(writer, self.top, "", True)
                self.roots[key] = root
                self._program = None
            return root

    def _resolve(self, w, col, path, top):
        key = (id(w), col.index, top)
        node = self._memo.get(key)
        if node is None:
            if col.kind == _K["K_STRUCT"] and not col.general and col.avro is not None and col.avro.kind == "record":
                # known before its fields are: a record cut off below checks its values with this node
                node = self._memo[key] = self._node("OP_NULL", path=path)
                real = self._resolve_new(w, col, path, top)
                self.nodes[node], self.paths[node] = list(self.nodes[real]), self.paths[real]
            else:
                node = self._memo[key] = self._resolve_new(w, col, path, top)
        return node

    def _resolve_new(self, w, col, path, top):
        where = path or "the value"
        if top and col.union is not None:
            if w.kind == "union":
                branches = [self._resolve(b, col, path, True) for b in w.branches]
                return self._node("OP_UNION", a=self._table(branches), b=len(branches), min_size=1, path=path)
            j = best_branch(w, col.union.branches)
            if j is None:
                return self._error(f"{where}: the writer's {_describe(w)} matches no branch of the reader's union "
                                   f"{_describe(col.union)}", path)
            rb = col.union.branches[j]
            if rb.kind == "null":
                return self._node("OP_NULL", col.index, path=path)
            if not col.general:
                return self._resolve(w, col, path, False)
            m = next(i for i, b in enumerate(col.members) if b is rb)
            child = self._resolve(w, col.children[m], f"{path}.member{m}", True)
            return self._node("OP_MEMBER", col.index, a=m, b=child, min_size=self._min(child), path=path)
        if col.cutoff:
            if w.kind == "null":
                return self._node("OP_NULL", col.index, path=path)
            # checked as the record up the path reads it, kept as its bytes behind the index of (w, record)
            check = self._resolve(w, col.ancestor, path, False)
            self.cuts.append((w, col.avro))
            return self._node("OP_CUT", col.index, a=check, b=len(self.cuts) - 1, min_size=_least_bytes(w),
                              path=path)
        r = col.avro
        if w.kind == "union":
            branches = []
            for b in w.branches:
                if matches(b, r):
                    branches.append(self._resolve(b, col, path, False))
                else:
                    branches.append(self._error(f"{where}: the writer's union branch {_describe(b)} cannot be read as "
                                                f"{_describe(r)}", path))
            return self._node("OP_UNION", a=self._table(branches), b=len(branches), min_size=1, path=path)
        return self._plain(w, col, path, where)

    def _plain(self, w, col, path, where):
        r, ci = col.avro, col.index
        wk, rk = w.kind, r.kind
        mismatch = f"{where}: the writer's {_describe(w)} cannot be read as {_describe(r)}"
        if wk in NAMED and wk == rk and not names_match(w, r):
            return self._error(mismatch + " (names differ)", path)
        if w.logical == "decimal" and col.decimal and (w.precision, w.scale) != col.decimal:
            return self._error(mismatch + " (precision or scale differ)", path)
        simple = {("null", "null"): ("OP_NULL", 0), ("boolean", "boolean"): ("OP_BOOL", 1),
                  ("int", "int"): ("OP_INT", 1), ("int", "long"): ("OP_INT_LONG", 1),
                  ("long", "long"): ("OP_LONG", 1), ("int", "float"): ("OP_INT_FLOAT", 1),
                  ("long", "float"): ("OP_LONG_FLOAT", 1), ("float", "float"): ("OP_FLOAT", 4),
                  ("int", "double"): ("OP_INT_DOUBLE", 1), ("long", "double"): ("OP_LONG_DOUBLE", 1),
                  ("float", "double"): ("OP_FLOAT_DOUBLE", 4), ("double", "double"): ("OP_DOUBLE", 8),
                  ("string", "string"): ("OP_STRING", 1), ("bytes", "string"): ("OP_STRING", 1)}
        if (wk, rk) in simple:
            op, size = simple[(wk, rk)]
            # Arrow's time types hold one day: other values are per-record errors
            day = {"time-millis": 86_400_000, "time-micros": 86_400_000_000}.get(r.logical, 0)
            check = day if op in ("OP_INT", "OP_INT_LONG", "OP_LONG") else 0
            if op == "OP_STRING" and r.logical == "uuid":
                check = 1                   # the canonical 8-4-4-4-12 form
            return self._node(op, ci, c=check, min_size=size, path=path)
        if rk == "bytes" and wk in ("bytes", "string"):
            if col.decimal:
                return self._node("OP_DEC_BYTES", ci, a=self._bound(col), min_size=1, path=path)
            return self._node("OP_BYTES", ci, min_size=1, path=path)
        if rk == "fixed" and wk == "fixed":
            if w.size != r.size:
                return self._error(mismatch + " (sizes differ)", path)
            if col.decimal:
                return self._node("OP_DEC_FIXED", ci, a=self._bound(col), c=w.size, min_size=w.size, path=path)
            if r.logical == "duration":
                return self._node("OP_DURATION", ci, c=12, min_size=12, path=path)
            return self._node("OP_FIXED", ci, c=w.size, min_size=w.size, path=path)
        if rk == "enum" and wk == "enum":
            default = r.symbols.index(r.default) if r.default is not None else -1
            mapping = [r.symbols.index(s) if s in r.symbols else default for s in w.symbols]
            return self._node("OP_ENUM", ci, a=self._table(mapping), b=len(mapping), min_size=1, path=path)
        if rk == "record" and wk == "record":
            return self._record(w, col, path, where)
        if rk == "array" and wk == "array":
            item = self._resolve(w.items, col.children[0], f"{path}[]", True)
            return self._node("OP_ARRAY", ci, a=item, min_size=1, path=path)
        if rk == "map" and wk == "map":
            value = self._resolve(w.values, col.children[0].children[1], f"{path}{{}}", True)
            return self._node("OP_MAP", ci, a=value, min_size=1, path=path)
        return self._error(mismatch, path)

    def _record(self, w, col, path, where):
        r = col.avro
        by_name = {}
        for i, f in enumerate(r.fields):
            by_name.setdefault(f.name, i)
        for i, f in enumerate(r.fields):
            for a in f.aliases:
                by_name.setdefault(a, i)
        children, used = [], set()
        for wf in w.fields:
            i = by_name.get(wf.name)
            sub = f"{path}.{wf.name}" if path else wf.name
            if i is None or i in used:
                children.append(self._skip(wf.type, sub))
            else:
                used.add(i)
                children.append(self._resolve(wf.type, col.children[i], col.children[i].path, True))
        for i, rf in enumerate(r.fields):
            if i in used:
                continue
            sub = col.children[i].path
            if rf.has_default:
                children.append(self._default(rf, col.children[i]))
            else:
                children.append(self._error(f"{sub}: the reader's field has no default and the writer "
                                            f"({w.fullname}) lacks it", sub))
        return self._node("OP_RECORD", col.index, a=self._table(children), b=len(children),
                          min_size=sum(self._min(c) for c in children), path=path)

    def _default(self, rf, col):
        key = (id(rf), col.index)
        node = self._defaults.get(key)
        if node is not None:
            return node
        try:
            data = encode_default(rf.default, rf.type)
        except SchemaError as exc:
            node = self._error(f"{col.path}: invalid default for the reader's field: {exc.reason}", col.path)
        else:
            ident = self._resolve(rf.type, col, col.path, True)
            off = len(self.consts)
            self.consts += data
            node = self._node("OP_DEFAULT", col.index, a=off, b=len(data), c=ident, path=col.path)
        self._defaults[key] = node
        return node

    def _skip(self, w, path):
        node = self._skips.get(id(w))
        if node is not None:
            return node
        k = w.kind
        sizes = {"null": 0, "boolean": 1, "float": 4, "double": 8}
        if k in sizes:
            node = self._node("SK_NONE" if k == "null" else "SK_FIXED", c=sizes[k], min_size=sizes[k], path=path)
        elif k == "fixed":
            node = self._node("SK_FIXED", c=w.size, min_size=w.size, path=path)
        elif k in ("int", "long", "enum"):
            node = self._node("SK_VARINT", min_size=1, path=path)
        elif k in ("bytes", "string"):
            node = self._node("SK_BYTES", min_size=1, path=path)
        else:
            # containers: the node exists before its children, so recursive types point back at it
            node = self._node("SK_NONE", path=path)
            self._skips[id(w)] = node
            if k == "record":
                kids = [self._skip(f.type, f"{path}.{f.name}") for f in w.fields]
                self._set(node, "SK_RECORD", a=self._table(kids), b=len(kids), min_size=sum(self._min(c) for c in kids))
            elif k == "array":
                self._set(node, "SK_ARRAY", a=self._skip(w.items, f"{path}[]"), min_size=1)
            elif k == "map":
                self._set(node, "SK_MAP", a=self._skip(w.values, f"{path}{{}}"), min_size=1)
            else:
                kids = [self._skip(b, path) for b in w.branches]
                self._set(node, "SK_UNION", a=self._table(kids), b=len(kids), min_size=1)
        self._skips[id(w)] = node
        return node

    def _raw(self, w, col):
        """A top-level "bytes" writer schema: the value's bytes, raw."""
        if col.union is not None:
            j = best_branch(w, col.union.branches)
            if j is not None and col.general:
                rb = col.union.branches[j]
                m = next(i for i, b in enumerate(col.members) if b is rb)
                child = self._raw_plain(w, col.children[m])
                return self._node("OP_MEMBER", col.index, a=m, b=child)
            if j is None:
                return self._error(f"the writer's bytes matches no branch of the reader's union "
                                   f"{_describe(col.union)}", "")
        return self._raw_plain(w, col)

    def _raw_plain(self, w, col):
        r = col.avro
        if r.kind == "bytes":
            if col.decimal:
                return self._node("OP_RAW", col.index, a=self._bound(col), b=2)
            return self._node("OP_RAW", col.index, b=0)
        if r.kind == "string":
            return self._node("OP_RAW", col.index, b=1)
        return self._error(f"the value: the writer's bytes cannot be read as {_describe(r)}", "")

    # ---- the kernel ----------------------------------------------------------------------------
    def _compile(self, columns, children):
        return _kernel.Program(np.array(self.nodes, np.int64).reshape(-1, 6), np.array(self.table, np.int32),
                               bytes(self.consts), bytes(self.bounds), columns, children, self.top.index)

    def decode(self, offsets, data, roots, skip=5, trailing_error=True, zero_cap=ZERO_ITEMS_CAP):
        """`decode_rows` of a contiguous binary column (int64 offsets, uint8 data)."""
        return self.decode_rows(_framing.Source(offsets, data), roots, skip, trailing_error, zero_cap)

    def decode_rows(self, source, roots, skip=5, trailing_error=True, zero_cap=ZERO_ITEMS_CAP):
        """Decode a binary column (a `kafkafmt._native.framing.Source`: contiguous or binary_view) with
        per-row root nodes.

        Returns
        -------
        values : pyarrow.Array or pyarrow.ChunkedArray
            Of `arrow_type` (chunked only when a column would pass 2 GiB).
        errors : tuple of NumPy arrays
            The rows with an error: (row int64, code uint8, position int64, node int32, detail int64,
            more int32).
        trailing : int
            Rows decoded with bytes left after the value (trailing_error=False).
        """
        prog = self.program()
        values, rests = self._run(lambda start: prog.decode_rows(source, roots, start, skip, trailing_error,
                                                                 zero_cap), self.top)
        return values, self._errors([errs for errs, _ in rests]), sum(extra for _, extra in rests)

    def _shaped(self, col, length, nulls, vb, data, offs):
        if col.symbols is not None and col.kind == _K["K_FIXED"]:
            return self._dictionary(length, nulls, vb, data, col.symbols)
        if col.cutoff and col.kind == _K["K_VAR"]:
            return self._cut_texts(col.avro, self._binary(length, nulls, vb, data, offs))
        return None

    def _cut_texts(self, record, raw):
        """The JSON texts of a cut-off record's values (each its writer type's index, then its bytes,
        checked by the kernel): decoded with a plan of that record, printed as the console consumer does."""
        from kafkafmt.values._formats import column_parts
        from kafkafmt.values.avro._json import avro_json_array

        pa = _pa()
        n = len(raw)
        if raw.null_count == n:
            return pa.nulls(n, pa.string())
        raw, offsets, data = column_parts(raw)
        valid = np.asarray(raw.is_valid()) if raw.null_count else np.ones(n, bool)
        which = np.full(n, -1, np.int64)
        heads = offsets[:-1][valid]
        which[valid] = (data[heads].astype(np.int64) | data[heads + 1].astype(np.int64) << 8 |
                        data[heads + 2].astype(np.int64) << 16 | data[heads + 3].astype(np.int64) << 24)
        with self._lock:
            sub = self if record is self.reader else self._subs.get(record.fullname)
            if sub is None:
                sub = self._subs[record.fullname] = AvroPlan(record, self.max_depth)
        texts = np.full(n, None, dtype=object)
        for b in np.unique(which[valid]).tolist():
            rows = np.flatnonzero(which == b)
            w, _ = self.cuts[b]
            root = sub.add_writer(("cut", id(w)), w)
            part = raw.take(pa.array(rows))
            values, _, _ = sub.decode(column_parts(part)[1], column_parts(part)[2],
                                      np.full(len(rows), root, np.int32), skip=4)
            texts[rows] = avro_json_array(values, record).to_pylist()
        return pa.array(texts, pa.string())

    def error_text(self, code, node, detail, zero_cap=ZERO_ITEMS_CAP):
        """The message of a kernel error (code, node, detail as `decode` returns them; a field nulled in a
        value read: its own code + FIELD_ERROR)."""
        (name, text), _ = error_entry(_kernel.ERROR_INFO, code)
        if name == "RESOLVE":
            return self.messages[detail] if 0 <= detail < len(self.messages) else "internal plan error"
        msg = text.format(detail=detail, depth=_kernel.MAX_DEPTH, cap=zero_cap, message="")
        path = self.paths[node] if 0 <= node < len(self.paths) else ""
        return f"{msg} (in {path})" if path else msg


def _least_bytes(w):
    """The fewest bytes a value of writer type w takes (a union, array or map: its first byte)."""
    if w.kind == "record":
        return sum(_least_bytes(f.type) for f in w.fields)
    return {"null": 0, "float": 4, "double": 8, "fixed": w.size or 0}.get(w.kind, 1)


def _logical_arrow():
    pa = _pa()
    return {
        "date": pa.date32, "time-millis": lambda: pa.time32("ms"), "time-micros": lambda: pa.time64("us"),
        "timestamp-millis": lambda: pa.timestamp("ms", tz="UTC"),
        "timestamp-micros": lambda: pa.timestamp("us", tz="UTC"),
        "timestamp-nanos": lambda: pa.timestamp("ns", tz="UTC"), "local-timestamp-millis": lambda: pa.timestamp("ms"),
        "local-timestamp-micros": lambda: pa.timestamp("us"), "local-timestamp-nanos": lambda: pa.timestamp("ns"),
    }


class _LazyLogical(dict):
    def get(self, key, default=None):
        if not self:
            self.update(_logical_arrow())
        return dict.get(self, key, default)


_LOGICAL_ARROW = _LazyLogical()
