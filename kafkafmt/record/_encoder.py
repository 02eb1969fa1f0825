"""The encoding facade: columns in, Kafka bytes out (the mirror of decoder.py).

1. Input is normalized to flat columns (Arrow layout): a `Records` (so decode -> encode round
   trips), a pyarrow Table / pandas DataFrame with Spark's Kafka-source column names (key, value,
   offset, timestamp, headers), or plain sequences (keys=, values=, timestamps=, headers=).
2. Records are split into batches by an estimate of their encoded size (``batch_size`` bytes,
   like a producer's batch.size) and a record limit.
3. `_native.writer` writes the batches in C (v2: header, varint records, crc32c; v0/v1: messages
   with crc32). For a compressed codec each batch's records are compressed by `kafkafmt.codecs`
   (as Kafka's Java clients write them) and re-framed.
"""
from __future__ import annotations

import struct
import threading
import time

import numpy as np

from kafkafmt._native import writer as _writer
from kafkafmt._native.scan import crc32c as _crc32c
from kafkafmt.codecs import get_codec
from kafkafmt._util.threads import resolve_threads, thread_pool
from kafkafmt.errors import EncodeError, UnsupportedCodecError
from kafkafmt.record._records import Records

__all__ = ["encode", "encode_control", "encode_empty_batch", "encode_columns", "Columns", "to_columns"]

TIMESTAMP_TYPES = {"createtime": 0, "create_time": 0, "logappendtime": 1, "log_append_time": 1, 0: 0, 1: 1}
CONTROL_KINDS = {"abort": 0, "commit": 1}
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
TIMESTAMP_TYPE_BIT = 0x08


class Binary:
    """A binary column for the writer: int64 offsets (need not start at 0), data, validity bitmap.

    Built from a list of ``bytes`` it holds no copy of them: ``pointers`` gives each element's
    bytes inside the (immutable) objects that ``keep`` holds, and ``data`` is only gathered if
    asked for."""

    __slots__ = ("offsets", "_data", "validity", "pointers", "keep")

    def __init__(self, offsets, data, validity=None, pointers=None, keep=None):
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        if data is not None:
            data = np.ascontiguousarray(data, dtype=np.uint8) if len(data) else np.zeros(1, np.uint8)
        self._data = data
        self.validity = None if validity is None else np.ascontiguousarray(validity, dtype=np.uint8)
        self.pointers = pointers
        self.keep = keep

    @classmethod
    def from_refs(cls, offsets, validity, pointers, keep):
        return cls(offsets, None, validity, pointers, keep)

    @property
    def data(self):
        if self._data is None:
            self._data = _writer.gather(self.offsets, self.pointers)
        return self._data

    def lengths(self):
        return np.diff(self.offsets)

    def as_tuple(self):
        if self.pointers is not None:
            return (self.offsets, _NO_DATA, self.validity, self.pointers)
        return (self.offsets, self._data, self.validity)

    @classmethod
    def empty(cls, n):
        return cls(np.zeros(n + 1, np.int64), np.zeros(1, np.uint8))


_NO_DATA = np.zeros(1, np.uint8)


class Columns:
    """Normalized writer input: n records as flat columns (and, from a decoded `Records`, the
    batches they came in: `batches`, used to re-encode batch by batch)."""

    batches = None

    def __init__(self, key, value, timestamp=None, offset=None, header_index=None, header_key=None,
                 header_value=None):
        self.key = key
        self.value = value
        self.n = len(key.offsets) - 1
        if len(value.offsets) - 1 != self.n:
            raise EncodeError(f"{self.n} keys but {len(value.offsets) - 1} values")
        self.timestamp = None if timestamp is None else _int64_column(timestamp, "timestamp", self.n)
        self.offset = None if offset is None else _int64_column(offset, "offset", self.n)
        if header_index is None:
            header_index = np.zeros(self.n + 1, np.int64)
            header_key = header_value = Binary.empty(0)
        self.header_index = np.ascontiguousarray(header_index, dtype=np.int64)
        self.header_key = header_key
        self.header_value = header_value

    def __len__(self):
        return self.n

    def has_headers(self):
        return bool(self.header_index[-1] > self.header_index[0])

    def headers_tuple(self):
        return (self.header_index, self.header_key.offsets, self.header_key.data,
                self.header_value.offsets, self.header_value.data, self.header_value.validity)


def _int64_column(values, name, n):
    if type(values) is list:               # the common case, in C; anything unusual below
        arr = _writer.int64_from_list(values)
        if arr is not None and arr.shape == (n,):
            return arr
    if hasattr(values, "null_count") and hasattr(values, "to_numpy"):   # a pyarrow array
        if values.null_count:
            import pyarrow.compute as pc

            first = int(pc.index(values.is_null(), True).as_py())
            raise EncodeError(f"{name} of record {first} is null")
        values = values.to_numpy(zero_copy_only=False)
    arr = np.asarray(values)
    if arr.dtype.kind == "M":  # datetime64 -> ms since the epoch
        bad = np.flatnonzero(np.isnat(arr))
        if bad.size:
            raise EncodeError(f"{name} of record {int(bad[0])} is missing (NaT)")
        arr = arr.astype("datetime64[ms]").astype(np.int64)
    elif arr.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(arr) | (arr != np.floor(arr)))
        if bad.size:
            raise EncodeError(f"{name} of record {int(bad[0])} is {arr[bad[0]]!r}, not a whole number")
        arr = arr.astype(np.int64)
    elif arr.dtype == object or arr.dtype.kind not in "iu":
        for i, x in enumerate(arr.tolist() if arr.ndim else [arr.item()]):
            if x is None or not isinstance(x, (int, np.integer)) or isinstance(x, bool):
                raise EncodeError(f"{name} of record {i} is {x!r}, not an integer")
            if not -(1 << 63) <= int(x) < (1 << 63):
                raise EncodeError(f"{name} of record {i} is {x}, beyond 64 bits")
        arr = arr.astype(np.int64)
    elif arr.dtype.kind == "u" and arr.size and arr.max() >= (1 << 63):
        raise EncodeError(f"{name} values beyond 2^63-1")
    if arr.shape != (n,):
        raise EncodeError(f"{name} has {arr.size} values for {n} records")
    return np.ascontiguousarray(arr, dtype=np.int64)


def _binary_from_sequence(items, what, transient=False):
    """transient: the column is used before any Python code runs again (encode()), so the list
    itself keeps the bytes alive; otherwise an immutable copy of it does (to_columns())."""
    if type(items) is not list:
        items = list(items)
    refs = _writer.binary_refs_from_list(items, not transient)  # bytes / None: referenced, not copied
    if refs is not None:
        return Binary.from_refs(*refs)
    packed = _writer.binary_from_list(items)    # bytes / bytearray / None, copied, in C
    if packed is not None:
        return Binary(*packed)
    n = len(items)
    lengths = np.zeros(n, np.int64)
    valid = np.ones(n, bool)
    parts = []
    for i, x in enumerate(items):
        if x is None:
            valid[i] = False
        elif isinstance(x, (bytes, bytearray, memoryview)):
            parts.append(x)
            lengths[i] = len(x)
        else:
            raise EncodeError(f"{what} {i} is {type(x).__name__}, not bytes (or None)")
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = np.frombuffer(b"".join(parts), np.uint8)
    return Binary(offsets, data, None if valid.all() else np.packbits(valid, bitorder="little"))


def _null_binary(n):
    """n null values."""
    return Binary(np.zeros(n + 1, np.int64), np.zeros(1, np.uint8), np.zeros((n + 7) // 8, np.uint8))


def _binary_from_records_column(col):
    return Binary(col.offsets.astype(np.int64, copy=False), col.data, col.validity)


def _binary_from_arrow(arr, what):
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_null(arr.type):
        return _binary_from_sequence([None] * len(arr), what)
    if not (pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type) or pa.types.is_string(arr.type)
            or pa.types.is_large_string(arr.type) or pa.types.is_binary_view(arr.type)
            or pa.types.is_string_view(arr.type)):
        raise EncodeError(f"{what} column has type {arr.type}, not binary")
    arr = arr.cast(pa.large_binary())
    _, offsets_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(offsets_buf, np.int64)[arr.offset:arr.offset + len(arr) + 1]
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.zeros(1, np.uint8)
    validity = None
    if arr.null_count:
        validity = np.packbits(~np.asarray(arr.is_null(), dtype=bool), bitorder="little")
    return Binary(offsets, data, validity)


def _headers_from_sequence(items, n):
    if type(items) is list and len(items) == n:
        packed = _writer.headers_from_list(items)   # lists of (str, bytes | None) pairs, in C
        if packed is not None:
            index, key, value = packed
            return index, Binary(*key), Binary(*value)
    index = np.zeros(n + 1, np.int64)
    keys, values = [], []
    for i, hs in enumerate(items):
        hs = hs or ()
        for h in hs:
            try:
                k, v = h
            except (TypeError, ValueError):
                raise EncodeError(f"header of record {i} must be a (key, value) pair, got {h!r}") from None
            if isinstance(k, str):
                k = k.encode("utf-8")
            if not isinstance(k, (bytes, bytearray)):
                raise EncodeError(f"header key of record {i} is {type(k).__name__}, not str")
            keys.append(bytes(k))
            values.append(v)
        index[i + 1] = len(keys)
    if len(index) != n + 1 or (items is not None and len(items) != n):
        raise EncodeError(f"headers given for {len(items)} records, not {n}")
    return index, _binary_from_sequence(keys, "header key"), _binary_from_sequence(values, "header value")


def _headers_from_arrow(arr, n):
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_null(arr.type) or ((pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type))
                                      and pa.types.is_null(arr.type.value_type)):
        if pa.types.is_null(arr.type) or len(arr.values) == 0:
            return None, None, None   # no record has a header
        raise EncodeError("headers column holds null header entries")
    if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
        raise EncodeError(f"headers column has type {arr.type}, not list<struct<key, value>>")
    if arr.null_count:  # a null list means no headers: its child range must be empty
        lengths = np.diff(np.asarray(arr.offsets, dtype=np.int64))
        if (lengths[np.asarray(arr.is_null(), dtype=bool)] > 0).any():   # rare; fill_null is slow
            arr = pc.fill_null(arr, pa.scalar([], type=arr.type))
    offsets = np.asarray(arr.offsets, dtype=np.int64)
    values = arr.values
    if offsets[0] != 0 or len(values) != offsets[-1]:
        values = values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
        offsets = offsets - offsets[0]
    if not pa.types.is_struct(values.type):
        raise EncodeError(f"headers column has type {arr.type}, not list<struct<key, value>>")
    key = _binary_from_arrow(values.field("key"), "header key")
    if key.validity is not None:
        raise EncodeError("header keys must not be null")
    return offsets, key, _binary_from_arrow(values.field("value"), "header value")


def _from_arrow_table(table):
    names = table.column_names
    missing = {"value"} - set(names)
    if missing:
        raise EncodeError(f"records need a 'value' column (Spark's Kafka names: key, value, offset, "
                          f"timestamp, headers); got {names}")
    n = table.num_rows
    key = _binary_from_arrow(table.column("key"), "key") if "key" in names else \
        _binary_from_sequence([None] * n, "key")
    value = _binary_from_arrow(table.column("value"), "value")
    ts = None
    if "timestamp" in names:
        import pyarrow as pa

        col = table.column("timestamp").combine_chunks()
        if pa.types.is_timestamp(col.type):
            col = col.cast(pa.timestamp("ms", tz=col.type.tz)).cast(pa.int64())
        ts = _int64_column(col, "timestamp", n)
    offset = _int64_column(table.column("offset").combine_chunks(), "offset", n) if "offset" in names else None
    hidx = hkey = hval = None
    if "headers" in names:
        hidx, hkey, hval = _headers_from_arrow(table.column("headers"), n)
    return Columns(key, value, ts, offset, hidx, hkey, hval)


def to_columns(records=None, *, keys=None, values=None, timestamps=None, headers=None, offsets=None) -> Columns:
    """Normalize any supported input to writer `Columns`."""
    return _to_columns(records, keys, values, timestamps, headers, offsets, False)


def _to_columns(records, keys, values, timestamps, headers, offsets, transient) -> Columns:
    if records is not None:
        if isinstance(records, Columns):
            return records
        if isinstance(records, Records):
            h = records.headers
            cols = Columns(_binary_from_records_column(records.key), _binary_from_records_column(records.value),
                           records.timestamp, records.offset, h.offsets.astype(np.int64),
                           _binary_from_records_column(h.key), _binary_from_records_column(h.value))
            cols.batches = _batches_of(records)
            return cols
        mod = type(records).__module__
        if mod.startswith("pandas"):
            import pyarrow as pa

            return _from_arrow_table(pa.Table.from_pandas(records, preserve_index=False))
        if mod.startswith("pyarrow"):
            import pyarrow as pa

            if isinstance(records, pa.RecordBatch):
                records = pa.Table.from_batches([records])
            return _from_arrow_table(records)
        if isinstance(records, dict):
            return _to_columns(None, records.get("key"), records.get("value"), records.get("timestamp"),
                               records.get("headers"), records.get("offset"), transient)
        raise EncodeError(f"cannot encode records of type {type(records).__name__}")
    if values is None:
        raise EncodeError("nothing to encode: pass records or values=")
    values = list(values) if type(values) is not list else values
    n = len(values)
    key = _binary_from_sequence(keys, "key", transient) if keys is not None else _null_binary(n)
    value = _binary_from_sequence(values, "value", transient)
    hidx = hkey = hval = None
    if headers is not None:
        headers = list(headers)
        if len(headers) != n:
            raise EncodeError(f"headers given for {len(headers)} records, not {n}")
        hidx, hkey, hval = _headers_from_sequence(headers, n)
    return Columns(key, value, timestamps, offsets, hidx, hkey, hval)


def _batches_of(records):
    """The v2 batches a decoded Records' rows came from: record bounds and the header fields to
    keep (attributes without codec bits, producer fields, leader epoch, LogAppendTime max
    timestamp). None when any came from a v0/v1 message."""
    bi = np.asarray(records.batch_index)
    if not len(bi):
        return None
    starts = np.flatnonzero(np.concatenate([[True], bi[1:] != bi[:-1]]))
    rows = bi[starts]
    b = records.batches
    if (np.asarray(b.magic)[rows] < 2).any():
        return None
    base_seq = np.asarray(b.base_sequence)[rows].astype(np.int64)
    shift = np.asarray(records.offset)[starts] - np.asarray(b.base_offset)[rows]   # a slice may start mid-batch
    seq = np.where(base_seq >= 0, (base_seq + shift) % (1 << 31), -1)
    lat = np.asarray(b.timestamp_type)[rows] == 1
    return dict(
        bounds=np.concatenate([starts, [len(bi)]]).astype(np.int64),
        attributes=(np.asarray(b.attributes)[rows] & ~0x07).astype(np.int16),
        producer_id=np.asarray(b.producer_id)[rows].astype(np.int64),
        producer_epoch=np.asarray(b.producer_epoch)[rows].astype(np.int16),
        base_sequence=seq.astype(np.int32),
        leader_epoch=np.asarray(b.partition_leader_epoch)[rows].astype(np.int32),
        max_timestamp=np.where(lat, np.asarray(b.max_timestamp)[rows], -1).astype(np.int64))


def _check_range(value, lo, hi, name):
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or not lo <= int(value) <= hi:
        raise EncodeError(f"{name} must be an integer in [{lo}, {hi}], not {value!r}")


def _split_legacy(cols: Columns, magic, batch_size, max_records):
    """Wrapper boundaries: exact message sizes (12 + 14/22 + key + value) summed greedily."""
    n = cols.n
    size = (12 + (22 if magic == 1 else 14) + np.maximum(cols.key.lengths(), 0)
            + np.maximum(cols.value.lengths(), 0))
    cum = np.concatenate([[0], np.cumsum(size)])
    bounds, i = [0], 0
    offs = cols.offset
    while i < n:
        j = max(int(np.searchsorted(cum, cum[i] + batch_size, side="right")) - 1, i + 1)
        if max_records:
            j = min(j, i + max_records)
        j = min(j, n)
        # keep a wrapper's offset span within an index's relative (int32) range
        j = min(j, i + max(1, int(np.searchsorted(offs[i:j], offs[i] + 0x7FFFFFFF, side="right"))))
        bounds.append(j)
        i = bounds[-1]
    return np.asarray(bounds, np.int64)


def _codec(compression):
    if compression is None:
        compression = 0
    try:
        return get_codec(compression)
    except UnsupportedCodecError as exc:
        raise EncodeError(f"unknown compression {compression!r} (use none, gzip, snappy, lz4 or zstd)") from exc


def _timestamp_type(timestamp_type):
    key = timestamp_type.lower() if isinstance(timestamp_type, str) else timestamp_type
    if key not in TIMESTAMP_TYPES:
        raise EncodeError(f"unknown timestamp_type {timestamp_type!r} (CreateTime or LogAppendTime)")
    return TIMESTAMP_TYPES[key]


def encode(records=None, *, keys=None, values=None, timestamps=None, headers=None, offsets=None, magic=2,
           compression=None, compression_level=None, batch_size=None, max_records=None, base_offset=0,
           timestamp_type="CreateTime", log_append_time=None, producer_id=-1, producer_epoch=-1,
           base_sequence=-1, transactional=False, partition_leader_epoch=0, keep_batches=None,
           threads=None) -> bytes:
    """Encode records as Kafka record batches (magic 2) or message sets (magic 0/1).

    Parameters
    ----------
    records : Records, pyarrow.Table, pandas.DataFrame or dict, optional
        A `Records`, a pyarrow Table / pandas DataFrame with Spark's Kafka column names
        (value required; key, offset, timestamp, headers optional), or a dict of such columns.
    keys, values, timestamps, headers, offsets : sequence, optional
        Plain sequences instead of ``records``: timestamps in ms, headers as lists of (str, bytes).
        Offsets default to base_offset, base_offset+1, ...; given offsets must increase (gaps are
        allowed, as compaction leaves them). Timestamps default to the current time.
    magic : {2, 1, 0}
        Record batches (2) or message sets (0/1).
    compression : str, optional
        none, gzip, snappy, lz4 or zstd (zstd needs magic 2), per batch, framed as
        Kafka's Java clients write it (magic-0 lz4 with KAFKA-3160's header checksum).
    compression_level : int, optional
        The codec's level.
    batch_size : int, optional
        Bytes per batch as a producer's batch.size (default 16384): records join a batch
        while its exact encoded size stays within it.
    max_records : int, optional
        Records per batch at most.
    base_offset : int
        The first offset, when ``offsets`` are not given.
    timestamp_type : {"CreateTime", "LogAppendTime"}
        CreateTime, or LogAppendTime with ``log_append_time`` (ms) as the broker sets it.
    log_append_time : int, optional
    producer_id, producer_epoch, base_sequence, transactional : optional
        The idempotent-producer fields (v2); the base sequence advances by each batch's record count.
    partition_leader_epoch : int
        Written into every v2 batch.
    keep_batches : bool, optional
        Re-encode a decoded `Records` batch by batch, keeping each batch's producer
        fields, transactional/control bits, leader epoch and timestamp type (only the codec changes:
        recompressing segments). Default: when the input is a Records, magic is 2 and no batch_size,
        max_records or producer field is given.
    threads : int, optional
        Threads compressing v2 batches (None: all cores, as decode; 1: serial); the bytes
        written are the same either way.

    Returns
    -------
    bytes
        The batches, concatenated as in a segment.

    Raises
    ------
    EncodeError
        Offsets that do not increase, zstd below magic 2, and other input Kafka would not accept.

    Examples
    --------
    A sample partition recompressed batch by batch, and a batch from plain sequences:

    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> recs = kafkafmt.read_log_dir(f"{sample_dir()}/payments-0")
    >>> data = kafkafmt.encode(recs, compression="zstd")
    >>> back = kafkafmt.decode(data)
    >>> back
    <Records: 120 records in 7 batches>
    >>> bool((back.offset == recs.offset).all()), back.value[5] == recs.value[5]
    (True, True)
    >>> data = kafkafmt.encode(keys=[b"k1", b"k2"], values=[b"v1", None],
    ...                        timestamps=[1767225600000, 1767225600001], compression="lz4")
    >>> list(kafkafmt.decode(data).value)
    [b'v1', None]
    >>> kafkafmt.encode(values=[b"a", b"b"], offsets=[5, 3])
    Traceback (most recent call last):
    ...
    kafkafmt.errors.EncodeError: offsets must increase: record 1 has offset 3 after 5
    """
    # transient: nothing runs between normalizing and writing, so lists of bytes need no copy
    cols = _to_columns(records, keys, values, timestamps, headers, offsets, True)
    return encode_columns(cols, magic=magic, compression=compression, compression_level=compression_level,
                          batch_size=batch_size, max_records=max_records, base_offset=base_offset,
                          timestamp_type=timestamp_type, log_append_time=log_append_time,
                          producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence,
                          transactional=transactional, partition_leader_epoch=partition_leader_epoch,
                          keep_batches=keep_batches, threads=threads)


def _prepare(cols: Columns, magic, base_offset, timestamp_type, log_append_time):
    n = cols.n
    if magic not in (0, 1, 2):
        raise EncodeError(f"magic must be 0, 1 or 2, not {magic!r}")
    if cols.offset is None:
        _check_range(base_offset, 0, (1 << 63) - 1 - n, "base_offset")
        cols.offset = np.arange(base_offset, base_offset + n, dtype=np.int64)
    elif n:
        if (cols.offset < 0).any():
            raise EncodeError(f"offsets must be >= 0 (record {int(np.flatnonzero(cols.offset < 0)[0])})")
        back = np.flatnonzero(np.diff(cols.offset) <= 0)
        if back.size:
            i = int(back[0]) + 1
            raise EncodeError(f"offsets must increase: record {i} has offset {cols.offset[i]} after "
                              f"{cols.offset[i - 1]}")
    if cols.timestamp is None:
        cols.timestamp = np.full(n, int(time.time() * 1000), np.int64)
    tstype = _timestamp_type(timestamp_type)
    if tstype == 1:
        if log_append_time is None:
            raise EncodeError("timestamp_type LogAppendTime needs log_append_time (ms)")
        _check_range(log_append_time, 0, (1 << 63) - 1, "log_append_time")
    if magic < 2 and cols.has_headers():
        raise EncodeError(f"magic {magic} messages cannot carry headers (headers need magic 2)")
    return tstype


def encode_columns(cols: Columns, *, magic=2, compression=None, compression_level=None, batch_size=None,
                   max_records=None, base_offset=0, timestamp_type="CreateTime", log_append_time=None,
                   producer_id=-1, producer_epoch=-1, base_sequence=-1, transactional=False,
                   partition_leader_epoch=0, attributes_extra=0, keep_batches=None, threads=None) -> bytes:
    """encode() on already-normalized `Columns`."""
    threads = resolve_threads(threads)
    tstype = _prepare(cols, magic, base_offset, timestamp_type, log_append_time)
    codec = _codec(compression)
    _check_range(producer_id, -1, (1 << 63) - 1, "producer_id")
    _check_range(producer_epoch, -1, (1 << 15) - 1, "producer_epoch")
    _check_range(base_sequence, -1, (1 << 31) - 1, "base_sequence")
    _check_range(partition_leader_epoch, -1, (1 << 31) - 1, "partition_leader_epoch")
    if max_records is not None:
        _check_range(max_records, 1, 1 << 31, "max_records")
    if batch_size is not None:
        _check_range(batch_size, 1, 1 << 31, "batch_size")
    if transactional and producer_id < 0:
        raise EncodeError("a transactional batch needs a producer_id >= 0")
    if magic < 2 and (producer_id != -1 or transactional):
        raise EncodeError(f"magic {magic} has no producer ids or transactions (they need magic 2)")
    if keep_batches is None:
        keep_batches = (cols.batches is not None and magic == 2 and batch_size is None and max_records is None
                        and producer_id == -1 and not transactional and tstype == 0)
    elif keep_batches and (cols.batches is None or magic != 2):
        raise EncodeError("keep_batches needs a decoded Records of v2 batches and magic=2")
    if cols.n == 0:
        return b""
    if keep_batches:
        kb = cols.batches
        meta = dict(attributes=kb["attributes"] | attributes_extra, leader_epoch=kb["leader_epoch"],
                    producer_id=kb["producer_id"], producer_epoch=kb["producer_epoch"],
                    base_sequence=kb["base_sequence"], max_timestamp=kb["max_timestamp"])
        return _encode_v2(cols, kb["bounds"], codec, compression_level, meta, threads)
    batch_size = 16384 if batch_size is None else batch_size
    if magic < 2:
        bounds = _split_legacy(cols, magic, batch_size, max_records)
        return _encode_legacy(cols, bounds, codec, compression_level, magic, tstype, log_append_time)
    bounds = _writer.split_v2(cols.key.as_tuple(), cols.value.as_tuple(), cols.headers_tuple(), cols.offset,
                              cols.timestamp, batch_size, max_records or (1 << 31))
    nb = len(bounds) - 1
    counts = np.diff(bounds)
    seq = ((base_sequence + np.concatenate([[0], np.cumsum(counts)[:-1]])) % (1 << 31) if base_sequence >= 0
           else np.full(nb, -1))
    attr = tstype * TIMESTAMP_TYPE_BIT | (TRANSACTIONAL_BIT if transactional else 0) | attributes_extra
    meta = dict(attributes=np.full(nb, attr, np.int16), leader_epoch=np.full(nb, partition_leader_epoch, np.int32),
                producer_id=np.full(nb, producer_id, np.int64), producer_epoch=np.full(nb, producer_epoch, np.int16),
                base_sequence=seq.astype(np.int32),
                max_timestamp=np.full(nb, log_append_time if tstype == 1 else -1, np.int64))
    return _encode_v2(cols, bounds, codec, compression_level, meta, threads)


def _compress(codec, data, level, magic):
    try:
        return codec.compress(data, level=level, magic=magic)
    except (ValueError, TypeError, OverflowError) as exc:
        if isinstance(exc, EncodeError):
            raise
        raise EncodeError(f"{codec.name} cannot compress at level {level!r}: {exc}") from None
    except Exception as exc:   # the codec libraries' own error types
        raise EncodeError(f"{codec.name} compression failed (level {level!r}): {exc}") from None


_local = threading.local()
_SCRATCH_KEEP = 64 << 20     # uncompressed batches kept for the next call up to this size


def _scratch(size):
    """A uint8 buffer of at least size bytes for the uncompressed batches of a compressed encode,
    reused call after call in a thread (fresh pages cost a page fault each: ~1/3 of the time)."""
    buf = getattr(_local, "scratch", None)
    if buf is None or len(buf) < size:
        buf = np.empty(max(size, 1), np.uint8)
        if size <= _SCRATCH_KEEP:
            _local.scratch = buf
    return buf


def _encode_v2(cols, bounds, codec, level, meta, threads=1):
    nb = len(bounds) - 1
    payload = int(cols.key.offsets[-1] - cols.key.offsets[0] + cols.value.offsets[-1] - cols.value.offsets[0]
                  + cols.header_key.offsets[-1] - cols.header_key.offsets[0]
                  + cols.header_value.offsets[-1] - cols.header_value.offsets[0])
    nh = int(cols.header_index[-1] - cols.header_index[0])
    cap = _writer.max_v2_size(cols.n, payload, nh, nb)
    if codec.id == 0:       # straight into the bytes object returned
        data, _ = _writer.encode_v2_bytes(
            cap, cols.key.as_tuple(), cols.value.as_tuple(), cols.headers_tuple(), cols.offset, cols.timestamp,
            np.asarray(bounds, np.int64), meta["attributes"], meta["leader_epoch"], meta["producer_id"],
            meta["producer_epoch"], meta["base_sequence"], meta["max_timestamp"])
        return data
    out = _scratch(cap)
    pos = _writer.encode_v2(
        out, cols.key.as_tuple(), cols.value.as_tuple(), cols.headers_tuple(), cols.offset, cols.timestamp,
        np.asarray(bounds, np.int64), meta["attributes"], meta["leader_epoch"], meta["producer_id"],
        meta["producer_epoch"], meta["base_sequence"], meta["max_timestamp"], False)
    mv = memoryview(out)
    starts = pos.tolist()
    compressed = _compress_batches(codec, [mv[starts[b] + _V2_HEADER.size:starts[b + 1]] for b in range(nb)], level,
                                   threads)
    return _writer.frame_v2_all(out, pos, compressed, codec.id)


PARALLEL_COMPRESS_BYTES = 1 << 20   # less input than this is compressed by one thread
_PARTS_PER_THREAD = 4


def _compress_batches(codec, payloads, level, threads):
    """Each batch's records compressed, in order. With threads > 1 and enough input, runs of
    batches are compressed in the pool at once (the codec libraries release the GIL while they
    compress; zstd keeps a context per thread); the first error in batch order is raised."""
    nb = len(payloads)
    if threads <= 1 or nb < 2 or sum(map(len, payloads)) < PARALLEL_COMPRESS_BYTES:
        return [_compress(codec, p, level, 2) for p in payloads]
    parts = min(nb, threads * _PARTS_PER_THREAD)
    edges = [nb * i // parts for i in range(parts + 1)]
    futures = [thread_pool(threads, "compress").submit(
        lambda lo, hi: [_compress(codec, payloads[b], level, 2) for b in range(lo, hi)], lo, hi)
        for lo, hi in zip(edges, edges[1:])]
    out = []
    for f in futures:
        out += f.result()
    return out


def _encode_legacy(cols, bounds, codec, level, magic, tstype, log_append_time):
    if codec.id == 4:
        raise EncodeError("zstd needs magic 2 (Kafka does not allow it in v0/v1 messages)")
    n = cols.n
    attr_ts = TIMESTAMP_TYPE_BIT if (magic == 1 and tstype == 1) else 0
    timestamps = cols.timestamp
    if magic == 1 and tstype == 1 and codec.id == 0:
        timestamps = np.full(n, log_append_time, np.int64)  # the broker stamps each message
    payload = int(cols.key.offsets[-1] - cols.key.offsets[0] + cols.value.offsets[-1] - cols.value.offsets[0])
    key, value = cols.key.as_tuple(), cols.value.as_tuple()
    if codec.id == 0:
        out = np.empty(_writer.max_legacy_size(n, payload), np.uint8)
        size = _writer.encode_legacy(out, key, value, cols.offset, timestamps, 0, n, magic, attr_ts)
        return out[:size].tobytes()
    parts = []
    out = np.empty(_writer.max_legacy_size(int(np.diff(bounds).max()), payload) if n else 1, np.uint8)
    for b in range(len(bounds) - 1):
        s, e = int(bounds[b]), int(bounds[b + 1])
        if magic == 1:  # inner offsets relative to the first: absolute = wrapper - last inner + inner
            inner = cols.offset - cols.offset[s]
        else:           # v0 inner offsets are absolute
            inner = cols.offset
        size = _writer.encode_legacy(out, key, value, inner, timestamps, s, e, magic, 0)
        compressed = _compress(codec, memoryview(out)[:size], level, magic)
        wrapper_ts = log_append_time if tstype == 1 else int(timestamps[s:e].max())
        parts.append(_writer.legacy_wrapper(int(cols.offset[e - 1]), magic, codec.id | attr_ts,
                                            wrapper_ts if magic == 1 else -1, compressed))
    return b"".join(parts)


def encode_control(kind, *, offset, producer_id, producer_epoch=0, coordinator_epoch=0, timestamp=None,
                   partition_leader_epoch=0) -> bytes:
    """A transaction marker batch (kind 'commit' or 'abort'), as a transaction coordinator writes it:
    a transactional control batch with one record, key = version 0 + type, value = version 0 +
    coordinator epoch.

    Parameters
    ----------
    kind : {"commit", "abort"} or int
        The marker type (0 abort, 1 commit).
    offset : int
        The marker's offset.
    producer_id : int
        The transactional producer's id (>= 0).
    producer_epoch, coordinator_epoch : int
        The producer's epoch and the transaction coordinator's.
    timestamp : int, optional
        ms (default: now).
    partition_leader_epoch : int
        Written into the batch.

    Returns
    -------
    bytes
        One control batch.

    Raises
    ------
    EncodeError
        Another kind, or no producer id.

    Examples
    --------
    The abort marker of the sample's ``payments`` topic, written again byte for byte:

    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> marker = kafkafmt.encode_control("abort", offset=70, producer_id=1002, coordinator_epoch=4,
    ...                                  timestamp=1767225605000, partition_leader_epoch=1)
    >>> kafkafmt.decode(marker).controls.to_pylist()
    [{'offset': 70, 'batch_index': 0, 'type': 0, 'version': 0, 'coordinator_epoch': 4, 'timestamp': 1767225605000}]
    >>> with open(f"{sample_dir()}/payments-0/00000000000000000045.log", "rb") as f:
    ...     segment = f.read()
    >>> segment[883:] == marker                   # the segment's last batch
    True
    """
    ctype = CONTROL_KINDS.get(str(kind).lower()) if not isinstance(kind, int) else kind
    if ctype not in (0, 1):
        raise EncodeError(f"control kind must be 'commit' or 'abort', not {kind!r}")
    if producer_id < 0:
        raise EncodeError("a transaction marker needs a producer_id >= 0")
    key = b"\x00\x00" + int(ctype).to_bytes(2, "big")
    value = b"\x00\x00" + int(coordinator_epoch).to_bytes(4, "big", signed=True)
    cols = to_columns(keys=[key], values=[value], offsets=[offset],
                      timestamps=[int(time.time() * 1000) if timestamp is None else timestamp])
    return encode_columns(cols, magic=2, producer_id=producer_id, producer_epoch=producer_epoch, transactional=True,
                          partition_leader_epoch=partition_leader_epoch, attributes_extra=CONTROL_BIT)


_V2_HEADER = struct.Struct(">qiibIhiqqqhii")  # the 61-byte v2 batch header (layout.pxd)


def encode_empty_batch(*, base_offset, last_offset=None, timestamp, producer_id=-1, producer_epoch=-1,
                       base_sequence=-1, transactional=False, partition_leader_epoch=0) -> bytes:
    """A v2 batch with no records, as Kafka's log cleaner leaves one to keep a producer's last
    offset and sequence (MemoryRecords.filterTo / DefaultRecordBatch.writeEmptyHeader)."""
    last_offset = base_offset if last_offset is None else last_offset
    if last_offset < base_offset:
        raise EncodeError("last_offset must be >= base_offset")
    attr = TRANSACTIONAL_BIT if transactional else 0
    # as DefaultRecordBatch.writeEmptyHeader: no first timestamp, the max timestamp kept
    header = bytearray(_V2_HEADER.pack(base_offset, 61 - 12, partition_leader_epoch, 2, 0, attr,
                                       last_offset - base_offset, -1, timestamp, producer_id,
                                       producer_epoch, base_sequence, 0))
    struct.pack_into(">I", header, 17, _crc32c(memoryview(header)[21:]))
    return bytes(header)
