"""The Polars scan behind `kafkafmt.polars` (its docstring says what a collected frame reads, how
the query prunes it, and how typed keys and values are given).
"""
from __future__ import annotations

import json

from kafkafmt.read._stream import conform_table, empty_schema
from kafkafmt.log import DEFAULT_REPLICAS, find_partitions
from kafkafmt.read._options import ReadOptions
from kafkafmt.read._readers import iter_log_dir, iter_partition_chunks, scan_named
from kafkafmt.read._gather import Gathering, decoded_bytes, join_chunks
from kafkafmt.record import COLUMNS, TYPED_COLUMNS, UNTYPED_COLUMNS, portable_table
from kafkafmt.values import DEFAULT_MAX_DEPTH
from kafkafmt._util.extras import install_command

__all__ = ["scan_log_dirs", "pushdown"]

#: options of `iter_log_dir` a scan takes (the rest -- columns, report, keep_empty -- the scan decides)
_READ_OPTIONS = ("start_offset", "end_offset", "start_timestamp", "end_timestamp", "isolation", "errors",
                 "verify_crc", "include_control", "max_decompressed", "max_bytes", "threads", "binary")

# expression nodes whose value for a row depends on that row alone (no aggregation, window or
# sort): a conjunct made of them can be evaluated on the topic and partition of each partition
_ROW_WISE_OPS = {"Eq", "NotEq", "Lt", "LtEq", "Gt", "GtEq", "And", "Or", "Xor", "EqValidity", "NotEqValidity",
                 "Plus", "Minus", "Multiply", "TrueDivide", "FloorDivide", "Modulus"}
_ROW_WISE_FUNCTIONS = {("Boolean", "IsIn"), ("Boolean", "IsBetween"), ("Boolean", "Not"), ("Boolean", "IsNull"),
                       ("Boolean", "IsNotNull"), ("StringExpr", "StartsWith"), ("StringExpr", "EndsWith"),
                       ("StringExpr", "Contains")}
_FLIP = {"Lt": "Gt", "LtEq": "GtEq", "Gt": "Lt", "GtEq": "LtEq", "Eq": "Eq"}


def _pl():
    try:
        import polars as pl
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"kafkafmt.polars needs polars: {install_command('polars')}") from exc
    return pl


def _tree(expr):
    return json.loads(expr.meta.serialize(format="json"))


def _function_name(fn):
    """('Boolean', 'IsIn') of a serialized function node, or None."""
    if not isinstance(fn, dict) or len(fn) != 1:
        return None
    (group, what), = fn.items()
    name = what if isinstance(what, str) else next(iter(what)) if isinstance(what, dict) and len(what) == 1 else None
    return (group, name) if name is not None else None


def _row_wise(node):
    """Whether a serialized expression computes each row from that row alone (known nodes only)."""
    if not isinstance(node, dict) or len(node) != 1:
        return False
    (kind, body), = node.items()
    if kind == "Column":
        return True
    if kind == "Literal":
        return isinstance(body, dict) and set(body) <= {"Scalar", "Dyn"}
    if kind == "BinaryExpr":
        return body.get("op") in _ROW_WISE_OPS and _row_wise(body.get("left")) and _row_wise(body.get("right"))
    if kind == "Cast":
        return _row_wise(body.get("expr"))
    if kind == "Function":
        return _function_name(body.get("function")) in _ROW_WISE_FUNCTIONS and \
            all(_row_wise(i) for i in body.get("input", ()))
    return False


def _conjuncts(expr):
    """The expressions ANDed together at the top of `expr` (itself when it is no AND)."""
    tree = _tree(expr)
    body = tree.get("BinaryExpr")
    if body is not None and body.get("op") == "And":
        # meta.pop gives the root's inputs; which one is which does not matter for an AND
        out = []
        for part in expr.meta.pop():
            out += _conjuncts(part)
        return out
    return [expr]


def _scalar(expr):
    """The value of a column-free expression as (dtype, Series of one value), or None."""
    pl = _pl()
    if expr.meta.root_names():
        return None
    try:
        s = pl.select(expr).to_series()
    except Exception:    # not evaluable alone: no bound from it
        return None
    return s if len(s) == 1 and s.null_count() == 0 else None


def _bound_value(column, s):
    """A literal compared with `column` as an int: offsets as integers, timestamps as epoch ms
    rounded down (a lower bound rounded down keeps a superset), or None."""
    pl = _pl()
    if column == "offset" and s.dtype.is_integer():
        return int(s.item())
    if column == "timestamp" and isinstance(s.dtype, pl.Datetime) and s.dtype.time_zone is not None:
        return int(s.dt.epoch("us").item()) // 1000
    return None


def _column_of(node):
    """The column a serialized node is, also through an exact change of a timestamp's unit (what
    DuckDB's filters apply to a millisecond column), else None."""
    if not isinstance(node, dict) or len(node) != 1:
        return None
    if "Column" in node:
        return node["Column"]
    body = node.get("Function")
    if body is not None and _function_name(body.get("function")) == ("TemporalExpr", "CastTimeUnit") \
            and len(body.get("input", [])) == 1 and _column_of(body["input"][0]) == "timestamp":
        return "timestamp"
    return None


def _comparison(expr, tree):
    """(column, op, value) of ``column <op> literal`` on offset or timestamp (either side), or None."""
    body = tree.get("BinaryExpr")
    if body is None or body.get("op") not in _FLIP:
        return None
    left, right, op = body.get("left"), body.get("right"), body["op"]
    inputs = expr.meta.pop()
    if len(inputs) != 2:
        return None
    for col_node, other_node, flip in ((left, right, False), (right, left, True)):
        column = _column_of(col_node)
        if column in ("offset", "timestamp") and _column_of(other_node) is None:
            other = [e for e in inputs if not e.meta.root_names()]
            if len(other) != 1:
                return None
            s = _scalar(other[0])
            value = None if s is None else _bound_value(column, s)
            if value is None:
                return None
            return column, (_FLIP[op] if flip else op), value
    return None


def _between(expr, tree):
    """[(column, op, value), ...] of ``column.is_between(lo, hi)`` on offset or timestamp, or None."""
    body = tree.get("Function")
    if body is None or _function_name(body.get("function")) != ("Boolean", "IsBetween"):
        return None
    inputs = body.get("input", [])
    column = _column_of(inputs[0]) if len(inputs) == 3 else None
    if column not in ("offset", "timestamp"):
        return None
    closed = body["function"]["Boolean"]["IsBetween"].get("closed")
    pl = _pl()
    out = []
    for node, closed_op, open_op, side in ((inputs[1], "GtEq", "Gt", ("Both", "Left")),
                                           (inputs[2], "LtEq", "Lt", ("Both", "Right"))):
        if not isinstance(node, dict) or "Column" in node or not _row_wise(node):
            return None
        s = _scalar(pl.Expr.deserialize(json.dumps(node).encode(), format="json"))
        value = None if s is None else _bound_value(column, s)
        if value is not None:
            out.append((column, closed_op if closed in side else open_op, value))
    return out


class Pushdown:
    """What a predicate lets a scan skip: which (topic, partition) pairs can hold rows it keeps, the
    offsets [start_offset, end_offset) and the lowest timestamp (ms) a kept row can have. None:
    unbounded."""

    def __init__(self):
        self.partition_filters = []     # row-wise conjuncts on topic / partition alone
        self.start_offset = None
        self.end_offset = None
        self.start_timestamp = None

    def __repr__(self):
        return (f"<Pushdown {len(self.partition_filters)} topic/partition conjuncts, offsets "
                f"[{self.start_offset}, {self.end_offset}), timestamp >= {self.start_timestamp}>")

    @property
    def bounds_reads(self):
        """Whether it narrows what a partition's read asks for (`_partition_options`: offsets, a lowest time)."""
        return self.start_offset is not None or self.end_offset is not None or self.start_timestamp is not None

    def _lower(self, name, value):
        cur = getattr(self, name)
        setattr(self, name, value if cur is None else max(cur, value))

    def _add(self, column, op, value):
        if column == "offset":
            if op in ("GtEq", "Gt", "Eq"):
                self._lower("start_offset", value + (op == "Gt"))
            if op in ("Lt", "LtEq", "Eq"):
                end = value + (op != "Lt")
                self.end_offset = end if self.end_offset is None else min(self.end_offset, end)
        elif op in ("GtEq", "Gt", "Eq") and value >= 0:
            # timestamp: only a lower bound maps onto offsets-for-times (a superset of the rows kept)
            self._lower("start_timestamp", value)

    def keeps(self, partitions):
        """The partitions (objects with .topic and .partition) the topic/partition conjuncts allow."""
        if not self.partition_filters or not partitions:
            return list(partitions)
        pl = _pl()
        frame = pl.DataFrame({"topic": [p.topic for p in partitions], "partition": [p.partition for p in partitions]},
                             schema={"topic": pl.String, "partition": pl.Int32})
        mask = frame.select(pl.all_horizontal(self.partition_filters).fill_null(False)).to_series()
        return [p for p, keep in zip(partitions, mask.to_list()) if keep]


def pushdown(predicate):
    """The `Pushdown` of a Polars predicate (None: nothing to skip). Conjuncts that are not
    understood prune nothing; the predicate must still be applied to what is read."""
    out = Pushdown()
    if predicate is None:
        return out
    for part in _conjuncts(predicate):
        try:
            tree = _tree(part)
        except Exception:     # not serializable: prunes nothing
            continue
        roots = set(part.meta.root_names())
        if roots and roots <= {"topic", "partition"} and _row_wise(tree):
            out.partition_filters.append(part)
            continue
        if roots == {"offset"} or roots == {"timestamp"}:
            found = _comparison(part, tree)
            for column, op, value in ([found] if found else _between(part, tree) or []):
                out._add(column, op, value)
    return out


def _needed_columns(with_columns, predicate):
    """kafkafmt's ``columns=`` for a projection and a predicate (None: all); a typed side's schema id,
    error and bytes columns need the side."""
    if with_columns is None:
        return None
    names = set(with_columns) | (set(predicate.meta.root_names()) if predicate is not None else set())
    for side in ("key", "value"):
        if names & {*TYPED_COLUMNS[side], UNTYPED_COLUMNS[side]}:
            names.add(side)
    return [c for c in COLUMNS if c in names]


def _typed_for(typed, columns):
    """``typed`` without the sides a read of ``columns`` (None: all) does not use."""
    if not typed.active or columns is None:
        return typed
    import dataclasses

    return dataclasses.replace(typed, value_format=typed.value_format if "value" in columns else None,
                               key_format=typed.key_format if "key" in columns else None)


def _partition_options(part, push, options, report):
    """The read options of one partition: the user's bounds narrowed by the pushdown."""
    opts = dict(options)
    start = push.start_offset
    if start is not None:
        user = opts.get("start_offset")
        start = start if user is None else max(start, user)
        # an explicit start below the log start offset would read deleted records: never below it
        earliest = part.earliest(part.list_segments(report))
        opts["start_offset"] = start if earliest is None else max(start, earliest)
    if push.end_offset is not None:
        user = opts.get("end_offset")
        opts["end_offset"] = push.end_offset if user is None else min(push.end_offset, user)
    if push.start_timestamp is not None:
        from kafkafmt._util.times import to_millis

        user = to_millis(opts.get("start_timestamp"), "start_timestamp")
        opts["start_timestamp"] = push.start_timestamp if user is None else max(push.start_timestamp, user)
    return opts


def scan_log_dirs(roots, topics=None, partitions=None, *, storage_options=None, filesystem=None, tiered_keys=None,
                  replicas=DEFAULT_REPLICAS, topic_id=None, progress=False, value_format=None, key_format=None,
                  schema_registry=None, value_schema=None, key_schema=None, value_errors="null", untyped_topics="error",
                  recursive_fields_max_depth=DEFAULT_MAX_DEPTH, time_unit="us", additional_properties="keep", **options):
    """A Polars LazyFrame of every partition under one or several roots (as `kafkafmt.read_log_dirs`
    takes them), read when collected, with the columns of ``Records.to_arrow()`` (in the
    types Polars holds: see the module doc).

    Parameters
    ----------
    roots : str, path or list of them
        Log dirs, folders holding log dirs, partition folders, URLs.
    topics, partitions : optional
        As `kafkafmt.read_log_dirs` (a filter on the frame does the same and prunes as well).
    storage_options, filesystem, tiered_keys, replicas, topic_id
        As `kafkafmt.read_log_dirs`.
    progress : bool
        Show a progress bar (bytes of the partitions to read) on stderr while the frame is collected.
    value_format, key_format, schema_registry, value_schema, key_schema, value_errors, untyped_topics
    recursive_fields_max_depth, time_unit, additional_properties
        Typed keys and values, as `kafkafmt.read_log_dirs` takes them: the frame's ``value`` /
        ``key`` columns are the typed ones (several topics' types merged), followed by
        ``keySchemaId``, ``keyError``, ``valueSchemaId`` and ``valueError``.
    **options
        ``start_offset``, ``end_offset``, ``start_timestamp``, ``end_timestamp``, ``isolation``,
        ``errors``, ``verify_crc``, ``include_control``, ``max_decompressed``, ``max_bytes`` (the
        chunk size), ``threads``, ``binary``: as `kafkafmt.iter_log_dir`.

    Returns
    -------
    polars.LazyFrame
        Filters on ``topic``, ``partition``, ``offset`` and ``timestamp`` prune what is read (see the
        module doc); every filter is applied exactly.

    Raises
    ------
    SchemaRegistryError, SchemaNotFoundError, SchemaError
        Typed values: as `kafkafmt.read_log_dirs` raises them, when the frame is made.

    Examples
    --------
    >>> import polars as pl
    >>> import kafkafmt.polars
    >>> from kafkafmt.sample import sample_dir
    >>> lf = kafkafmt.polars.scan_log_dirs(sample_dir(), topics=["shipments"], value_format="avro")
    >>> lf.filter(pl.col("offset") >= 1998).select(pl.col("value").struct.field("carrier")).collect().to_dicts()
    [{'carrier': 'DHL'}, {'carrier': 'DHL'}]
    """
    pl = _pl()
    unknown = sorted(set(options) - set(_READ_OPTIONS))
    if unknown:
        raise TypeError(f"scan_log_dirs() got unexpected keyword arguments {', '.join(map(repr, unknown))}")
    binary = options.get("binary", "contiguous")
    typed = ReadOptions.of(locals()).open_typed(roots)
    arrow_schema = empty_schema(None, binary)
    if typed.active:
        # the schema is the typed columns of the topics there are now, read with the schema ids named now
        found = find_partitions(roots, topics, partitions, [], storage_options, filesystem, tiered_keys, replicas,
                                topic_id)
        named = sorted({p.topic for p in found})
        # (a Protobuf file of several messages, none named: the messages its values name, in what the frame reads)
        typed = scan_named(typed, found, ReadOptions(**options, storage_options=storage_options, filesystem=filesystem,
                                                     tiered_keys=tiered_keys))
        typed = typed.pin(named)
        arrow_schema = empty_schema(None, binary, typed, named)
    schema = pl.from_arrow(portable_table(arrow_schema.empty_table())).schema

    def source(with_columns, predicate, n_rows, batch_size):
        push = pushdown(predicate)
        columns = _needed_columns(with_columns, predicate)
        read_typed = _typed_for(typed, columns)
        report = []
        found = find_partitions(roots, topics, partitions, report, storage_options, filesystem, tiered_keys,
                                replicas, topic_id)
        found = push.keeps(found)
        left = n_rows
        bar = _progress_bar(found, report) if progress else None
        frames = Gathering(batch_size or FRAME_ROWS, options.get("max_bytes", ReadOptions.max_bytes))

        def frame(tables):
            # one frame of the chunks gathered: what the query wants of it (filter, columns, the rows left)
            nonlocal left
            table = _joined(tables)
            if read_typed.active:       # (conformed to the scan's schema: the topics' types merged)
                table = portable_table(conform_table(table, arrow_schema))
            df = pl.from_arrow(table)
            if predicate is not None:
                df = df.filter(predicate)
            if with_columns is not None:
                df = df.select(with_columns)
            if left is not None:
                df = df.head(left)
                left -= len(df)
            return df

        def gathered():
            # the chunks read, gathered into frames (lists of chunks); the rows still wanted read as each is added
            for recs in _chunks(found, push, options, columns, read_typed, report):
                if bar is not None:
                    bar.update(recs.stored_bytes)
                # (the chunks joined, then one table; typed ones a topic at a time, as each topic's are typed)
                yield from frames.add(recs, len(recs), decoded_bytes(recs), recs.topic if read_typed.active else None,
                                      left)
            yield from frames.rest()

        try:
            for tables in gathered():
                df = frame(tables)
                if len(df):
                    yield df
                if left is not None and left <= 0:
                    return
        finally:
            if bar is not None:
                bar.close()

    return pl.io.plugins.register_io_source(source, schema=schema, explain_name="kafkafmt log dirs")


def _chunks(found, push, options, columns, typed, report):
    """The chunks a scan reads: each partition's, as `kafkafmt.iter_log_dir` gives them with its options
    (`_partition_options`); many small partitions decoded in one pass where no bound was pushed down to them
    (`kafkafmt.read.iter_partition_chunks`: the same chunks, typed values too)."""
    if not push.bounds_reads:
        read = ReadOptions(columns=columns, **options)
        # (typed: each partition's chunks typed as its own read types them, with the names its values call for)
        yield from iter_partition_chunks(found, read, report, typed=scan_named(typed, found, read))
        return
    for part in found:
        opts = _partition_options(part, push, options, report)
        yield from iter_log_dir(part, columns=columns, report=report, value_format=typed, **opts)


#: rows of the frames a scan gives Polars when it names no batch size: the chunks of small partitions are
#: gathered up to it (a frame a chunk made Polars' own work per frame most of a scan of many small partitions)
FRAME_ROWS = 1 << 16


def _joined(chunks):
    """One Arrow table of a frame's chunks, joined (`Records.concat`: one table made, not a table a chunk)."""
    return join_chunks(chunks).to_arrow()


def _progress_bar(found, report):
    from kafkafmt._util.progress import progress_bar

    total = 0
    for part in found:
        total += sum(int(s.size) for s in part.list_segments(report))
    return progress_bar(total, label="kafkafmt scan")
