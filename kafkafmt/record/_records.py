"""`Records`, the result of decoding: per-record NumPy columns (offset, timestamp, the batch each record is
in), the key, value and header columns (`kafkafmt.record._columns`), the batch and control tables
(`kafkafmt.record._table`), and per-record labels (`Labels`: topic, partition, log dir). Python names are
Kafka's in snake_case; Arrow/pandas columns carry Spark's Kafka-source names (`kafkafmt.record._names`).
Immutable: ``replace()`` copies.
"""
from __future__ import annotations

import numpy as np

from kafkafmt._util.extras import import_pyarrow
from kafkafmt.record._columns import BinaryColumn, BinaryViewColumn, Headers, numeric_array
from kafkafmt.record._names import (BATCH_FIELDS, BATCH_METADATA_COLUMNS, CODEC_NAMES, LOG_DIR_COLUMN, TYPED_COLUMNS,
                                    UNTYPED_COLUMNS)
from kafkafmt.record._table import Table
from kafkafmt.record._portable import portable_table

__all__ = ["Records", "Labels", "exact_pandas"]


def exact_pandas(column, index=None):
    """A pandas Series of an Arrow column whose every value is the Arrow value (what pyarrow's
    ``to_pandas`` changes, kept): an integer column with nulls as pandas' nullable integer dtype
    (not float64); a struct, list or map column as Python objects whose integers stay ints (not
    float64 beside a null) and whose nanosecond timestamps and durations are ``pd.Timestamp`` /
    ``pd.Timedelta`` (not integers).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from kafkafmt.record import exact_pandas
    >>> t = pa.struct([("n", pa.int64()), ("at", pa.timestamp("ns", tz="UTC"))])
    >>> exact_pandas(pa.chunked_array([pa.array([{"n": 2 ** 53 + 1, "at": 1}, {"n": None, "at": None}], t)]))[0]
    {'n': 9007199254740993, 'at': Timestamp('1970-01-01 00:00:00.000000001+0000', tz='UTC')}
    >>> exact_pandas(pa.chunked_array([pa.array([2 ** 53 + 1, None])])).dtype
    Int64Dtype()
    """
    import pandas as pd

    pa = import_pyarrow()
    t = column.type
    index = index if index is not None else pd.RangeIndex(len(column))
    if pa.types.is_nested(t) and _ns_inside(t):
        return pd.Series(column.to_pylist(), index=index, dtype=object)
    options = {}
    if pa.types.is_nested(t):
        options["integer_object_nulls"] = True
    elif pa.types.is_integer(t) and column.null_count:
        name = {8: "Int8", 16: "Int16", 32: "Int32", 64: "Int64"}[t.bit_width]
        dtype = pd.api.types.pandas_dtype(("U" if pa.types.is_unsigned_integer(t) else "") + name)
        options["types_mapper"] = {t: dtype}.get
    return pa.table({"v": column}).to_pandas(**options)["v"].set_axis(index)


def _ns_inside(t):
    """Does nested type t hold nanosecond timestamps, durations or times (pyarrow makes them integers
    inside a struct or list)?"""
    pa = import_pyarrow()
    if pa.types.is_struct(t):
        return any(_ns_inside(f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _ns_inside(t.value_type)
    if pa.types.is_map(t):
        return _ns_inside(t.key_type) or _ns_inside(t.item_type)
    return (pa.types.is_timestamp(t) or pa.types.is_duration(t) or pa.types.is_time64(t)) and t.unit == "ns"


def _concat_typed(parts):
    """The typed columns of concatenated parts: a side typed in every part that has records."""
    out = {}
    for side in ("key", "value"):
        kept = [p for p in parts if len(p) or side in p._typed]
        cols = [p._typed.get(side) for p in kept]
        if cols and all(c is not None for c in cols):
            # each part named by its topics, for an error saying which topics' types clash
            names = [", ".join(str(t) for t in p._topic.names if t is not None) or "?" for p in kept]
            out[side] = type(cols[0]).concat(cols, names=names) if len(cols) > 1 else cols[0]
    return out


def _join(name, pieces):
    """One column of `Records.concat`: the pieces of ``name`` in order (a key, value or headers column kept
    only when every piece has it)."""
    if name in ("key", "value"):
        return _concat_present(BinaryColumn, pieces)
    if name == "headers":
        return _concat_present(Headers, pieces)
    return np.concatenate(pieces)


def _concat_present(kind, columns):
    """kind.concat of the columns, or None when any part lacks the column (not decoded); binary
    views stay views when every part has them."""
    if any(c is None for c in columns):
        return None
    if kind is BinaryColumn and any(isinstance(c, BinaryViewColumn) for c in columns):
        if all(isinstance(c, BinaryViewColumn) for c in columns):
            return BinaryViewColumn.concat(columns)
        columns = [c.to_contiguous() if isinstance(c, BinaryViewColumn) else c for c in columns]
    return kind.concat(columns)


class Labels:
    """A string column kept as Arrow keeps a dictionary: names, and per-record int32 codes into them
    -- or no codes when one name (or none) holds for every record. The topic and log dir of a read."""

    __slots__ = ("names", "codes")

    def __init__(self, names=(), codes=None):
        object.__setattr__(self, "names", list(names))
        object.__setattr__(self, "codes", codes)

    def __setattr__(self, name, value):
        raise AttributeError("Labels are immutable")

    @classmethod
    def of(cls, value):
        """One name for every record (None: no name), or a Labels as it is."""
        if isinstance(value, Labels):
            return value
        return cls(() if value is None else (value,))

    @property
    def known(self):
        return bool(self.names) and self.names != [None]

    def value(self):
        """The name when one holds for all, else a NumPy array with each record's name."""
        if self.codes is None:
            return self.names[0] if self.names else None
        return np.asarray(self.names, dtype=object)[self.codes]

    def select(self, rows):
        """The labels of rows (a slice or row numbers)."""
        return self if self.codes is None else Labels(self.names, self.codes[rows])

    @staticmethod
    def concat(parts):
        """The labels of parts [(Labels, record count)] one after the other."""
        names, codes = [], []
        for lab, n in parts:
            for t in lab.names or [None]:
                if t not in names:
                    names.append(t)
            remap = np.asarray([names.index(t) for t in lab.names or [None]], np.int32)
            codes.append(np.full(n, remap[0], np.int32) if lab.codes is None else remap[lab.codes])
        if names == [None]:
            return Labels()
        if len(names) == 1:
            return Labels(names)
        return Labels(names, np.concatenate(codes) if codes else np.zeros(0, np.int32))

    def to_arrow(self, n):
        pa = import_pyarrow()
        if self.codes is None and self.names and self.names[0] is not None:
            # one name for every record (a partition's read): its buffers laid out at once, with no
            # per-record codes to cast from (the cast's codes and its output were a typed read's peak)
            name = self.names[0].encode()
            if len(name) * n < 1 << 31:
                offsets = np.arange(n + 1, dtype=np.int32)
                offsets *= len(name)
                return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets),
                                                              pa.py_buffer(name * n)])
        codes = np.zeros(n, np.int32) if self.codes is None else self.codes
        laid = _laid_out(pa, self.names, codes)
        if laid is not None:
            return laid
        arr = pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), pa.array(self.names, pa.string()))
        return arr.cast(pa.string())


def _laid_out(pa, names, codes):
    """A string array of ``names[codes]`` (a None name: null) laid out from its runs of equal codes -- a read's
    records come partition by partition --, or None when the runs are short (records of several names
    interleaved) or the bytes need 64-bit offsets: a dictionary cast makes it then (`numeric_array` says what
    a cast costs)."""
    n = len(codes)
    if not n:
        return pa.Array.from_buffers(pa.string(), 0, [None, pa.py_buffer(np.zeros(1, np.int32)), pa.py_buffer(b"")])
    at = np.flatnonzero(codes[1:] != codes[:-1]) + 1
    if len(at) > 64 + n // 8:
        return None
    encoded = [b"" if t is None else t.encode() for t in names]
    sizes = np.array([len(b) for b in encoded], np.int64)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(sizes[codes], out=offsets[1:])
    if offsets[-1] >= 1 << 31:
        return None
    starts = np.concatenate(([0], at)).astype(np.int64)
    ends = np.concatenate((at, [n])).astype(np.int64)
    data = b"".join(encoded[c] * int(k) for c, k in zip(codes[starts].tolist(), (ends - starts).tolist()))
    validity, nulls = None, 0
    missing = [i for i, t in enumerate(names) if t is None]
    if missing:
        valid = ~np.isin(codes, missing)
        nulls = int(n - valid.sum())
        validity = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    return pa.Array.from_buffers(pa.string(), n, [validity, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)],
                                 null_count=nulls)


class Records:
    """Decoded records as columns: what `decode` and the readers return.

    Immutable: `replace` makes a copy with some fields changed (the columns are shared, not
    copied). Python names are Kafka's in snake_case; `to_arrow` / `to_pandas` give Spark's
    Kafka-source columns.

    Parameters
    ----------
    offset, timestamp, timestamp_type, batch_index : numpy.ndarray
        The per-record columns (see Attributes).
    key, value : BinaryColumn, BinaryViewColumn or None
        The keys and values; None: the column was not decoded (absent, not null).
    headers : Headers or None
        The headers; None: not decoded.
    batches : Table
        One row per batch.
    controls : Table
        The control records.
    topic, log_dir : str or None
        One name for every record (None: unknown), or a per-record `Labels`.
    partition : int, numpy.ndarray or None
        None, an int, or an int32 array (one per record).
    file : str, optional
        The file the records were decoded from (named in errors).
    valid_bytes, trailing_bytes : int
        Where valid data ended in the input, and the bytes after it.
    tail : {None, "truncated", "zeros"}
        What the bytes after the valid data are.
    report : list of ReportEntry, optional
        What was skipped or fell back, and why.
    typed : dict, optional
        ``{"key"|"value": DecodedColumn}``.

    Attributes
    ----------
    offset : numpy.ndarray
        int64.
    timestamp : numpy.ndarray
        int64 ms; -1 where the format has none.
    timestamp_type : numpy.ndarray
        int8: 0 CreateTime, 1 LogAppendTime, -1 none.
    batch_index : numpy.ndarray
        int32: the record's row in `batches`.
    key, value : BinaryColumn
        The keys and values (when decoded).
    headers : Headers
        The headers (when decoded).
    batches : Table
        One row per batch.
    controls : Table
        Table of control records.
    topic, partition
        When known.
    log_dir : str
        The log dir a record was read from, when known: the ``logDir`` column.
    typed : dict
        ``{"key"|"value": DecodedColumn}``: keys and values decoded by ``key_format`` /
        ``value_format``, see `kafkafmt.values._typed`.
    valid_bytes, trailing_bytes, truncated
        Where valid data ended in the input.
    report : list of ReportEntry
        What the read skipped or fell back on, and why.

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> recs = kafkafmt.read_log_dir(f"{sample_dir()}/payments-0")
    >>> recs
    <Records payments-0: 120 records in 9 batches>
    >>> recs.offset[:3], recs.timestamp_type[:3]
    (array([0, 1, 2]), array([0, 0, 0], dtype=int8))
    >>> recs.key[20], recs.value[20]
    (b'tx1-a-0', b'{"payment": "tx1-a-0", "amount": 203}')
    >>> int(recs.batches.producer_id[recs.batch_index[20]])     # the batch the record is in
    1001
    >>> recs[20:35].to_pandas()[["key", "offset", "timestamp"]].head(2)
              key  offset                timestamp
    0  b'tx1-a-0'      20  2026-01-01 00:00:01+00:00
    1  b'tx1-a-1'      21  2026-01-01 00:00:01.010000+00:00
    """

    def __init__(self, *, offset, timestamp, timestamp_type, batch_index, key, value, headers, batches,
                 controls, topic=None, partition=None, file=None, valid_bytes=0, trailing_bytes=0, tail=None,
                 log_dir=None, report=None, typed=None):
        # set once, here (the instance is immutable afterwards; see __setattr__)
        self.__dict__.update(
            offset=offset, timestamp=timestamp, timestamp_type=timestamp_type, batch_index=batch_index,
            _key=key, _value=value, _headers=headers,        # None: the column was not decoded (absent, not null)
            batches=batches, controls=controls,
            _topic=Labels.of(topic), _log_dir=Labels.of(log_dir),   # one name for all, or per record
            partition=partition,                             # None, an int, or an int32 array (one per record)
            file=file, valid_bytes=valid_bytes, trailing_bytes=trailing_bytes, tail=tail,
            report=[] if report is None else report,         # what was skipped or fell back, and why
            _typed=dict(typed) if typed else {})             # side -> DecodedColumn (kafkafmt.values._typed)

    def __setattr__(self, name, value):
        raise AttributeError(f"Records are immutable: use recs.replace({name}=...) for a copy with a new {name}")

    def _column(self, name, option):
        col = getattr(self, "_" + name)
        if col is None and name in self._typed:
            raise AttributeError(f"a typed read keeps no raw {name}s (recs.typed[{name!r}] holds them typed): read "
                                 f"with keep_bytes=True to keep them too")
        if col is None:
            raise AttributeError(f"the {name!r} column was not decoded ({option}=False, or columns=[...] without "
                                 f"it): read again with it (recs.columns lists the columns this result has)")
        return col

    def decoded(self, name):
        """The ``key``, ``value`` or ``headers`` column, or None when it was not decoded (absent,
        where the attribute raises)."""
        if name not in ("key", "value", "headers"):
            raise ValueError(f"decoded() takes key, value or headers, not {name!r}")
        return getattr(self, "_" + name)

    @property
    def key(self):
        """The keys (`BinaryColumn`), when decoded.

        Returns
        -------
        BinaryColumn
            Null where a record has no key; a `BinaryViewColumn` for ``binary="view"`` reads.

        Raises
        ------
        AttributeError
            The keys were not decoded (``keys=False``, or ``columns=[...]`` without ``"key"``):
            absent, never null.

        Examples
        --------
        >>> import kafkafmt
        >>> from kafkafmt.sample import sample_dir
        >>> recs = kafkafmt.read_log_dir(f"{sample_dir()}/clicks-0")
        >>> recs.key
        <BinaryColumn 600 values, 4335 bytes, 159 null>
        >>> recs.key[:3].to_pylist()
        [None, None, b'session-32']
        >>> kafkafmt.read_log_dir(f"{sample_dir()}/clicks-0", columns=["offset"]).key
        Traceback (most recent call last):
        ...
        AttributeError: the 'key' column was not decoded (keys=False, or columns=[...] without it): ...
        """
        return self._column("key", "keys")

    @property
    def value(self):
        """The values (`BinaryColumn`), when decoded.

        Returns
        -------
        BinaryColumn
            Null for tombstones; a `BinaryViewColumn` for ``binary="view"`` reads. Typed values
            (``value_format=``) are in `typed`; the readers keep their raw bytes here only with
            ``keep_bytes=True``.

        Raises
        ------
        AttributeError
            The values were not decoded (``values=False``, or ``columns=[...]`` without
            ``"value"``): absent, never null.

        Examples
        --------
        >>> import kafkafmt
        >>> from kafkafmt.sample import sample_dir
        >>> recs = kafkafmt.read_log_dir(f"{sample_dir()}/customers-0")
        >>> recs.value
        <BinaryColumn 600 values, 23143 bytes, 53 null>
        >>> recs.value[:3].to_pylist()
        [None, None, b'{"name": "Customer 0049", "tier": "gold"}']
        """
        return self._column("value", "values")

    @property
    def headers(self):
        """The headers (`Headers`), when decoded.

        Returns
        -------
        Headers

        Raises
        ------
        AttributeError
            The headers were not decoded (``headers=False``, or ``columns=[...]`` without
            ``"headers"``): absent, never empty.

        Examples
        --------
        >>> import kafkafmt
        >>> from kafkafmt.sample import sample_dir
        >>> recs = kafkafmt.read_log_dir(f"{sample_dir()}/orders-0")
        >>> recs.headers
        <Headers 2400 records, 922 headers>
        >>> recs.headers[2]
        [('trace-id', b'033aeece5c85c85b'), ('source', b'web')]
        """
        return self._column("headers", "headers")

    @property
    def typed(self):
        """``{"key"|"value": DecodedColumn}``: the typed keys and values (``value_format=`` /
        ``key_format=`` of the readers, `kafkafmt.values._typed.decode_values`); empty when none."""
        return dict(self._typed)

    @property
    def columns(self):
        """The Arrow/pandas column names this result has (Spark's Kafka-source names)."""
        out = [c for c, v in (("key", self._key), ("value", self._value)) if v is not None or c in self._typed]
        if self._topic.known:
            out.append("topic")
        if self.partition is not None:
            out.append("partition")
        out += ["offset", "timestamp", "timestampType"]
        if self._headers is not None:
            out.append("headers")
        for side in ("key", "value"):
            if side in self._typed:
                out += TYPED_COLUMNS[side]
                if self._typed[side].untyped is not None:
                    out.append(UNTYPED_COLUMNS[side])
        return out

    @staticmethod
    def _apply(col, fn):
        return None if col is None else fn(col)

    @property
    def topic(self):
        """The topic name (str) when all records share one, else a NumPy array of names."""
        return self._topic.value()

    @property
    def log_dir(self):
        """The log dir the records were read from (str) when all share one, else a NumPy array of
        them; None when not read from a log dir."""
        return self._log_dir.value()

    def replace(self, **changes):
        """A copy with some fields changed (the columns are shared, not copied): e.g.
        ``recs.replace(topic="orders", partition=3)``, ``recs.replace(report=entries)``."""
        return self._like(**changes)

    def _like(self, **changes):
        fields = dict(offset=self.offset, timestamp=self.timestamp, timestamp_type=self.timestamp_type,
                      batch_index=self.batch_index, key=self._key, value=self._value, headers=self._headers,
                      batches=self.batches, controls=self.controls, partition=self.partition, file=self.file,
                      valid_bytes=self.valid_bytes, trailing_bytes=self.trailing_bytes, tail=self.tail,
                      report=self.report, topic=self._topic, log_dir=self._log_dir, typed=self._typed)
        fields.update(changes)
        return Records(**fields)

    @property
    def truncated(self):
        """True when the input ended inside a batch (the partial batch is not decoded)."""
        return self.tail == "truncated"

    def __len__(self):
        return len(self.offset)

    def __repr__(self):
        where = f" {self.topic}-{self.partition}" if self._topic.codes is None and self._topic.known else ""
        return (f"<Records{where}: {len(self)} records in {len(self.batches)} batches"
                f"{', truncated tail' if self.truncated else ''}>")

    def __getitem__(self, item):
        if not isinstance(item, slice):
            raise TypeError("Records supports slicing (recs[a:b]); use the columns for single values, "
                            "take() / filter() for other selections")
        start, stop, step = item.indices(len(self))
        if step != 1:
            raise IndexError("Records slices must be contiguous")
        sl = slice(start, max(start, stop))
        changes = dict(topic=self._topic.select(sl), log_dir=self._log_dir.select(sl))
        if isinstance(self.partition, np.ndarray):
            changes["partition"] = self.partition[sl]
        return self._like(offset=self.offset[sl], timestamp=self.timestamp[sl],
                          timestamp_type=self.timestamp_type[sl], batch_index=self.batch_index[sl],
                          key=self._apply(self._key, lambda c: c[sl]), value=self._apply(self._value, lambda c: c[sl]),
                          headers=self._apply(self._headers, lambda c: c[sl]),
                          typed={k: d[sl] for k, d in self._typed.items()}, **changes)

    def take(self, rows):
        """Records at the given row numbers, in that order (copies the binary columns)."""
        rows = np.asarray(rows, np.int64)
        changes = dict(topic=self._topic.select(rows), log_dir=self._log_dir.select(rows))
        if isinstance(self.partition, np.ndarray):
            changes["partition"] = self.partition[rows]
        return self._like(offset=self.offset[rows], timestamp=self.timestamp[rows],
                          timestamp_type=self.timestamp_type[rows], batch_index=self.batch_index[rows],
                          key=self._apply(self._key, lambda c: c.take(rows)),
                          value=self._apply(self._value, lambda c: c.take(rows)),
                          headers=self._apply(self._headers, lambda c: c.take(rows)),
                          typed={k: d.take(rows) for k, d in self._typed.items()}, **changes)

    def filter(self, mask):
        """Records where the boolean mask is True (a contiguous selection is sliced, not copied)."""
        mask = np.asarray(mask, bool)
        rows = np.flatnonzero(mask)
        if len(rows) == len(self):
            return self
        if len(rows) == 0:
            return self[0:0]
        if rows[-1] - rows[0] + 1 == len(rows):
            return self[int(rows[0]):int(rows[-1]) + 1]
        return self.take(rows)

    @staticmethod
    def concat(parts, *, consume=False):
        """One Records holding the records of all parts in order, with per-record topic and
        partition; batch tables and control tables are concatenated (batch_index follows).

        ``consume=True``: ``parts`` is a list the caller gives up -- it is emptied, and each column of
        the parts is let go as soon as it is copied, so that a large read peaks at its parts and one
        column's copy, not at two copies of every column."""
        given = parts
        parts = list(parts)
        if consume:
            given.clear()
        if not parts:
            raise ValueError("nothing to concatenate")
        if len(parts) == 1:
            return parts[0]
        partitions, batches, controls, report = [], [], [], []
        # one partition's chunks keep their one number (no array of it per record); batch indexes are
        # filled into one int32 array in place (no int64 copies of them: a large read's peak memory)
        one = {p.partition for p in parts if not isinstance(p.partition, np.ndarray)}
        same = len(one) == 1 and None not in one and not any(isinstance(p.partition, np.ndarray) for p in parts)
        batch_index = np.empty(sum(len(p) for p in parts), np.int32)
        nb = at = 0
        for p in parts:
            n = len(p)
            part = p.partition
            if not same:
                partitions.append(part if isinstance(part, np.ndarray)
                                  else np.full(n, -1 if part is None else part, np.int32))
            np.add(p.batch_index, nb, out=batch_index[at:at + n], casting="unsafe")
            at += n
            b = p.batches
            if same:                               # one partition: its batches need no tag
                pass
            elif not isinstance(part, np.ndarray):   # a single partition's batches: tag them with it
                b = b.with_column("partition", np.full(len(b), -1 if part is None else part, np.int32))
            elif "partition" not in b.columns:
                b = b.with_column("partition", np.full(len(b), -1, np.int32))
            batches.append(b)
            c = p.controls
            if len(c):
                c = c.with_column("batch_index", c["batch_index"].astype(np.int64) + nb)
            controls.append(c)
            nb += len(p.batches)
            report += p.report
        if same:
            partition = next(iter(one))
        else:
            partition = np.concatenate(partitions).astype(np.int32, copy=False)
        # known when a part knows it (parts without records too: all-empty partitions keep the column)
        known = any(p.partition is not None for p in parts)
        kept = dict(batches=Table.concat(batches), controls=Table.concat(controls), batch_index=batch_index,
                    topic=Labels.concat([(p._topic, len(p)) for p in parts]),
                    log_dir=Labels.concat([(p._log_dir, len(p)) for p in parts]),
                    partition=partition if known else None, report=report, typed=_concat_typed(parts))
        pieces = {"offset": [p.offset for p in parts], "timestamp": [p.timestamp for p in parts],
                  "timestamp_type": [p.timestamp_type for p in parts], "key": [p._key for p in parts],
                  "value": [p._value for p in parts], "headers": [p._headers for p in parts]}
        del parts[:], p, batches           # (the parts' columns now held by `pieces` alone, when consumed)
        joined = {}
        for name in ("offset", "timestamp", "timestamp_type", "key", "value", "headers"):
            # each column's pieces let go once it is copied (``pop``: this loop holds them no longer)
            joined[name] = _join(name, pieces.pop(name))
        return Records(**joined, **kept)

    # --- per-record views of batch fields --------------------------------------------------------
    def batch_column(self, name):
        """A batch-table column expanded to one value per record (e.g. 'producer_id')."""
        return self.batches[name][self.batch_index]

    @property
    def stored_bytes(self):
        """How many bytes of their segments the records' batches take (each batch's size, summed): what a read
        of them went through, for progress and throughput figures."""
        if "size" not in self.batches.columns or not len(self.batches):
            return 0
        return int(np.asarray(self.batches["size"], np.int64).sum())

    @property
    def sequence(self):
        """Producer sequence number of each record (-1 when the batch has none)."""
        base = self.batch_column("base_sequence").astype(np.int64)
        delta = self.offset - self.batch_column("base_offset")
        return np.where(base >= 0, (base + delta) % (1 << 31), -1)

    # --- Arrow / pandas -------------------------------------------------------------------------
    def to_arrow(self, *, headers=True, batch_metadata=False, log_dir=False):
        """pyarrow.Table with Spark's Kafka-source columns: key, value, [topic, partition,] offset,
        timestamp (timestamp[ms, UTC]), timestampType (int32), [headers]. Binary columns, offsets
        and timestamps share memory with this object. batch_metadata=True adds producerId,
        producerEpoch, baseSequence, leaderEpoch, codec; log_dir=True adds logDir (the log dir each
        record was read from; null when unknown): two copies of one partition tell apart by it.
        Typed keys/values (``recs.typed``) replace the raw ones and add keySchemaId, keyError,
        valueSchemaId, valueError (`TYPED_COLUMNS`) after headers, and keyBytes / valueBytes
        (`UNTYPED_COLUMNS`) when topics without a schema are kept as bytes."""
        pa = import_pyarrow()
        n = len(self)
        cols = {}
        typed = self._typed
        if self._key is not None or "key" in typed:      # (a typed read keeps no raw bytes unless asked)
            cols["key"] = typed["key"].values if "key" in typed else self._key.to_arrow()
        if self._value is not None or "value" in typed:
            cols["value"] = typed["value"].values if "value" in typed else self._value.to_arrow()
        if self._topic.known:
            cols["topic"] = self._topic.to_arrow(n)
        if isinstance(self.partition, np.ndarray):
            cols["partition"] = numeric_array(self.partition.astype(np.int32, copy=False))
        elif self.partition is not None:
            cols["partition"] = numeric_array(np.full(n, self.partition, np.int32))
        cols["offset"] = numeric_array(self.offset)
        cols["timestamp"] = pa.Array.from_buffers(pa.timestamp("ms", tz="UTC"), n,
                                                  [None, pa.py_buffer(self.timestamp)])
        cols["timestampType"] = numeric_array(self.timestamp_type.astype(np.int32))
        if headers and self._headers is not None:
            cols["headers"] = self._headers.to_arrow()
        for side in ("key", "value"):
            if side in typed:
                schema_id, error = TYPED_COLUMNS[side]
                cols[schema_id], cols[error] = typed[side].schema_id, typed[side].error
                if typed[side].untyped is not None:
                    cols[UNTYPED_COLUMNS[side]] = typed[side].untyped
        if log_dir:
            cols[LOG_DIR_COLUMN] = self._log_dir.to_arrow(n) if self._log_dir.known else pa.nulls(n, pa.string())
        if batch_metadata:
            for name, field in zip(BATCH_METADATA_COLUMNS[:4], BATCH_FIELDS):
                cols[name] = numeric_array(self.batch_column(field))
            codec = self.batch_column("codec")
            cols["codec"] = pa.DictionaryArray.from_arrays(
                pa.array(codec.astype(np.int32)), pa.array([CODEC_NAMES.get(i, str(i)) for i in range(8)]))
        return pa.table(cols)

    def to_pandas(self, *, dtype_backend=None, **kwargs):
        """pandas.DataFrame with the same columns as to_arrow() (keyword arguments as to_arrow's).

        dtype_backend (as ``pd.read_parquet`` takes it): None (the default) gives NumPy columns,
        with a Python ``bytes`` object per key and value (object dtype: what most pandas code
        expects; one object per value is the cost); typed keys and values keep every value as
        Arrow has it (`exact_pandas`): a record as a dict whose integers are Python ints and whose
        nanosecond times are ``pd.Timestamp`` / ``pd.Timedelta``, an integer column with nulls as
        pandas' nullable integer dtype. ``"pyarrow"`` gives ``pd.ArrowDtype`` columns over the Arrow
        buffers -- binary (or binary_view) keys and values, timestamp, headers as list<struct> --
        with no Python object per value: pick it for large reads, for Arrow-native consumers
        (Polars, DuckDB, ``pyarrow.compute``) and when memory matters. ``"numpy_nullable"``:
        pandas' nullable integer dtypes, binary columns as objects."""
        import pandas as pd

        table = self.to_arrow(**kwargs)
        if dtype_backend is None:
            typed = [name for name in ("key", "value") if name in self._typed]
            if not typed:
                return table.to_pandas()
            df = table.drop_columns(typed).to_pandas()
            for name in typed:
                df.insert(table.column_names.index(name), name, exact_pandas(table.column(name), df.index))
            return df
        if dtype_backend == "pyarrow":
            # each Arrow column wrapped as it is (what to_pandas(types_mapper=pd.ArrowDtype) gives,
            # without its block-manager round trip: a quarter of the time)
            return pd.DataFrame({name: pd.arrays.ArrowExtensionArray(column)
                                 for name, column in zip(table.column_names, table.columns)}, copy=False)
        if dtype_backend == "numpy_nullable":
            pa = import_pyarrow()
            nullable = {pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(), pa.int32(): pd.Int32Dtype(),
                        pa.int64(): pd.Int64Dtype(), pa.string(): pd.StringDtype()}
            return table.to_pandas(types_mapper=nullable.get)
        raise ValueError(f"dtype_backend must be None, 'numpy_nullable' or 'pyarrow', not {dtype_backend!r}")

    # --- the Arrow PyCapsule interface: what to_arrow() gives, for Polars, DuckDB, pandas, pyarrow, in the
    # types every engine holds (kafkafmt.record._portable: a decimal256 as its text, an interval as a struct) ---
    def __arrow_c_stream__(self, requested_schema=None):
        """``to_arrow()`` as an Arrow C stream (no value byte copied), its columns portable
        (`kafkafmt.record.portable_table`)."""
        return portable_table(self.to_arrow()).__arrow_c_stream__(requested_schema)

    def __arrow_c_array__(self, requested_schema=None):
        """``to_arrow()`` as one Arrow C record batch (schema and struct array capsules), its columns
        portable."""
        table = portable_table(self.to_arrow())
        batches = table.to_batches()
        if len(batches) != 1:       # (to_arrow builds one chunk per column: only an empty table has none)
            batches = table.combine_chunks().to_batches() or [
                import_pyarrow().RecordBatch.from_pylist([], schema=table.schema)]
        return batches[0].__arrow_c_array__(requested_schema)

    def __arrow_c_schema__(self):
        """The Arrow C schema of ``to_arrow()``, its columns portable."""
        return portable_table(self.to_arrow().schema).__arrow_c_schema__()
