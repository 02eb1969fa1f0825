"""The Arrow PyCapsule interface (``__arrow_c_stream__``, ``__arrow_c_array__``, ``__arrow_c_schema__``)
of kafkafmt's results: how Polars, DuckDB, pandas, pyarrow and narwhals take them without a copy.

* `Records` and `Table` (in `kafkafmt.record`) export what their ``to_arrow()`` gives (the same
  buffers: no value byte copied), in the types every engine holds (`kafkafmt.record.portable_table`: a
  decimal of more than 38 digits as its exact text, an Avro duration as a struct of its fields -- DuckDB
  refuses a decimal256 and Polars panics on both).
* `RecordStream` is what ``iter_log_dir(s)`` return: iterable chunk by chunk exactly as before, and an
  Arrow stream of the same chunks (``pl.from_arrow(stream)``, ``duckdb.sql("SELECT ... FROM stream")``,
  ``pa.RecordBatchReader.from_stream(stream)``) pulling one chunk at a time, so memory stays bounded
  by the chunk size over a whole log dir. Its schema is known before anything is read: that of an
  empty read with the same options (`empty_schema`), handed over as `Records` hands theirs (portable).

A stream is consumed once, as the iterator it wraps: a second Arrow consumer is refused (it would
see nothing) rather than given an empty table.
"""
from __future__ import annotations

from kafkafmt.record import DecodeOptions, cast_table, decode, portable_table
from kafkafmt._util.extras import install_command

__all__ = ["conform_table", "RecordStream", "empty_schema"]


def _pa():
    try:
        import pyarrow as pa
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"the Arrow interface needs pyarrow: {install_command('arrow')}") from exc
    return pa


def conform_table(table, schema):
    """``table`` (a chunk's ``to_arrow()``) with its key and value columns as ``schema`` has them: offsets
    past 2 GiB in one chunk (large_binary), or a typed column of one topic among the merged type of several
    (`kafkafmt.values.conform`); the other columns as they are."""
    if table.schema.equals(schema):
        return table
    from kafkafmt.values import conform

    for f in schema:
        if f.name in ("key", "value") and f.name in table.column_names and table.schema.field(f.name).type != f.type:
            table = table.set_column(table.schema.get_field_index(f.name), f.name,
                                     conform(table.column(f.name), f.type))
    return table


def empty_schema(columns=None, binary="contiguous", typed=None, topics=()):
    """The pyarrow schema of ``to_arrow()`` of a log-dir read with these options (topic and
    partition known): what an empty read gives, so it is the one ``Records.to_arrow`` builds.
    ``typed`` (a `kafkafmt.values._typed.TypedOptions`) and ``topics``: typed keys / values of those
    topics, their types merged (`kafkafmt.values._typed.TypedOptions.merged_type`), and their schema id
    and error columns (and the bytes of those kept as bytes)."""
    pa = _pa()
    options = DecodeOptions.for_columns(columns, binary=binary)
    empty = decode(b"", **options.decode_kwargs()).replace(topic="", partition=0)
    schema = empty.to_arrow().schema
    if typed is None or not typed.active:
        return schema
    for side, _, _ in typed.sides():
        if side not in schema.names:
            continue
        schema = schema.set(schema.get_field_index(side), pa.field(side, typed.merged_type(side, topics)))
        for field in typed.extra_fields(side):
            schema = schema.append(field)
    return schema


class RecordStream:
    """The chunks (`Records`) of ``iter_log_dir(s)``: iterate it as the generator it wraps, or hand it
    to any Arrow consumer (``__arrow_c_stream__``), which pulls one chunk at a time.

    Parameters
    ----------
    chunks : iterator of Records
        The chunks, read lazily.
    columns, binary : as the readers take them
        They decide the Arrow schema (`empty_schema`), known before anything is read.
    typed : kafkafmt.values._typed.TypedOptions, optional
        Typed keys / values (``value_format=``): their types, merged over ``topics``.
    topics : list of str
        The topics the stream reads (for the typed columns' types).
    """

    def __init__(self, chunks, *, columns=None, binary="contiguous", typed=None, topics=()):
        self._chunks = iter(chunks)
        self._columns = columns
        self._binary = binary
        self._typed = typed
        self._topics = tuple(topics)
        self._schema = None
        self._exported = False

    # -- the iterator, as before -------------------------------------------------------------------
    def __iter__(self):
        return self

    def __next__(self):
        return next(self._chunks)

    def close(self):
        """Stop the read (the generator's close: open segments are released)."""
        close = getattr(self._chunks, "close", None)
        if close is not None:
            close()

    def __repr__(self):
        return f"<RecordStream of {', '.join(self.schema.names)}>"

    # -- Arrow ---------------------------------------------------------------------------------------
    @property
    def schema(self):
        """The pyarrow schema every chunk's ``to_arrow()`` has."""
        if self._schema is None:
            self._schema = empty_schema(self._columns, self._binary, self._typed, self._topics)
        return self._schema

    def _conform(self, table):
        return cast_table(conform_table(table, self.schema), self.schema)

    def record_batches(self):
        """The chunks as pyarrow record batches (on the chunks' buffers), one chunk at a time."""
        for recs in self:
            yield from self._conform(recs.to_arrow()).to_batches()

    def to_reader(self):
        """A ``pyarrow.RecordBatchReader`` over the remaining chunks."""
        return _pa().RecordBatchReader.from_batches(self.schema, self.record_batches())

    def to_arrow(self):
        """The remaining chunks as one pyarrow Table (every chunk in memory at once)."""
        return self.to_reader().read_all()

    def __arrow_c_stream__(self, requested_schema=None):
        # one consumer: a second one (a query naming the stream twice) would silently see nothing
        if self._exported:
            raise ValueError("this stream of chunks was already handed to an Arrow consumer (it is read once): "
                             "call iter_log_dir(s) again, or use read_log_dir(s) for data read several times")
        self._exported = True
        reader = self.to_reader()
        schema = portable_table(self.schema)
        if schema is not self.schema:           # (the stream keeps its schema object)      # a decimal256 or an interval: handed over as every engine holds them
            reader = _pa().RecordBatchReader.from_batches(schema, (portable_table(b) for b in reader))
        return reader.__arrow_c_stream__(requested_schema)

    def __arrow_c_schema__(self):
        return portable_table(self.schema).__arrow_c_schema__()
