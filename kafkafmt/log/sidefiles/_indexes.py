"""The segment indexes: ``.index``, ``.timeindex`` and ``.txnindex`` read, written, built from a
segment's batches as a broker builds them, and checked against the log.

Offset index ``<base>.index`` (OffsetIndex.java, AbstractIndex.java)
    8-byte entries ``int32 relative_offset, int32 position``: absolute offset = base offset (from the
    file name, the part before the first ``.``) + relative offset; position = byte position of a
    batch start in the ``.log``. Sparse: one entry every ``index.interval.bytes`` (default 4096).
    The active segment's file is preallocated to ``segment.index.bytes`` (default 10 MiB) of zeros
    and trimmed to ``8 * entries`` bytes when the segment is rolled or closed
    (``AbstractIndex.trimToValidSize``). Kafka itself counts entries from the file length (the file
    is trimmed on a clean close); a file copied from a running broker has a zero-filled tail, which
    ``kafka-dump-log`` (DumpLogSegments.scala) stops at: an entry with relative offset 0 after the
    first. ``OffsetIndex.sanityCheck``: length a multiple of 8; last offset >= base offset.
    ``OffsetIndex.append`` requires strictly increasing offsets.

Time index ``<base>.timeindex`` (TimeIndex.java)
    12-byte entries ``int64 timestamp, int32 relative_offset``. An entry (T, O) means: the largest
    timestamp seen up to offset O is T. ``maybeAppend`` writes only when T > last timestamp (the
    initial "last" is -1, so batches without timestamps never produce entries) and requires
    O >= last offset. ``isFull`` keeps the last slot free for the roll entry.
    ``TimeIndex.sanityCheck``: length a multiple of 12; last timestamp >= first; last offset >= base.

When a broker adds index entries (LogSegment.java ``append``/``recover``, LogSegment.scala)
    Per append: ``physicalPosition`` = current log size; the segment's max timestamp so far is
    updated (strictly greater only, so the *first* batch with the maximum wins); then, if
    ``bytesSinceLastIndexEntry > indexIntervalBytes``, an offset index entry (largest offset of the
    append, physicalPosition) and a time index entry ``maybeAppend(maxTimestampSoFar,
    offsetOfMaxTimestampSoFar)`` are added and the counter is reset; finally the counter grows by
    the appended size. ``recover`` (rebuild after an unclean shutdown) does the same per batch with
    ``validBytes - lastIndexEntry`` and takes batch last offsets for the time index. The counter
    starts at 0 whenever a LogSegment object is created, i.e. also after every broker restart.
    The final time index entry ``maybeAppend(maxTimestampSoFar, offsetOfMaxTimestampSoFar,
    skipFullCheck=true)`` is written by ``onBecomeInactiveSegment`` (segment rolled, also for the
    cleaner's output segments), by ``close()`` (clean broker shutdown: so a cleanly stopped broker's
    *active* segment has it too) and at the end of ``recover``. It is skipped when the timestamp is
    not greater than the last entry's.
    Version differences, all invisible for one single-batch append per batch whose max timestamp is
    carried by its last record:
      * before KAFKA-16310 (PR #15621, 2024) a leader appending an uncompressed CreateTime batch
        (LogValidator ``assignOffsetsNonCompressed``) used the offset of the *record* with the max
        timestamp, not the batch's last offset; followers, recovery and the cleaner always used the
        batch's last offset ("shallow" offset); since KAFKA-16310 every path uses the shallow one;
      * before KAFKA-806 (PR #18012, 2025) an append of several batches (a follower's fetched chunk,
        the cleaner's copy buffer) added at most one index entry, for the whole append; since then
        the rule is applied per batch inside each append.

Transaction index ``<base>.txnindex`` (TransactionIndex.java, AbortedTxn.java)
    34-byte entries ``int16 version (0), int64 producer_id, int64 first_offset, int64 last_offset,
    int64 last_stable_offset``; one per aborted transaction whose ABORT marker is in the segment.
    Not preallocated; a trailing partial entry is ignored by Kafka's iterator; ``append`` requires
    strictly increasing last offsets. (``AbortedTxn.version()`` reads one byte only, the high byte
    of the int16; Kafka rejects versions > 0.)
"""
from __future__ import annotations

import numpy as np

from kafkafmt._native import indexcheck
from kafkafmt._util.durable import write_atomic
from kafkafmt.errors import CorruptRecordError, EncodeError
from kafkafmt.log.sidefiles._common import (INDEX_DISK, INDEX_DTYPE, INT32_MAX, INT64_MAX, NO_TIMESTAMP,
                                            PRODUCER_DISK, TIMEINDEX_DISK, TIMEINDEX_DTYPE, TXN_INDEX_VERSION,
                                            TXNINDEX_DISK, TXNINDEX_DTYPE, as_struct, base_offset_of, check_range,
                                            load_source, source_doc, offset_from_file_name, table_column, used_entries)

__all__ = ["read_index", "read_timeindex", "read_txnindex", "encode_index", "encode_timeindex", "encode_txnindex",
           "write_index", "write_timeindex", "write_txnindex", "build_index_entries",
           "record_offsets_of_max_timestamp", "IndexProblem", "index_sanity_problem", "read_index_file",
           "check_index", "check_timeindex", "sound_index_entries"]

assert (INDEX_DISK.itemsize, TIMEINDEX_DISK.itemsize, TXNINDEX_DISK.itemsize,
        PRODUCER_DISK.itemsize) == (8, 12, 34, 46)


@source_doc
def read_index(src, base_offset=None, *, trim_zeros=True) -> np.ndarray:
    """Entries of an offset index (``.index``) as a structured array (offset int64 absolute,
    position int32).

    Parameters
    ----------
    %(src)s
    %(base_offset)s
    trim_zeros : bool
        Cut the zero-filled tail of a preallocated (active-segment) file at the first all-zero
        entry, including a first entry (Kafka never indexes position 0: the first batch of a
        segment can never have crossed the index interval).

    Returns
    -------
    numpy.ndarray
        Structured, fields ``offset`` and ``position``.

    Raises
    ------
    CorruptRecordError
        A length that is not a multiple of 8 (Kafka's ``OffsetIndex.sanityCheck``).

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> kafkafmt.read_index(f"{sample_dir()}/orders-0/00000000000000000885.index")[:3]
    array([( 992,  5427), (1079, 10812), (1166, 16115)],
          dtype=[('offset', '<i8'), ('position', '<i4')])
    """
    raw, base = _read_relative(src, base_offset, INDEX_DISK, "offset index", "position", trim_zeros)
    out = np.empty(len(raw), INDEX_DTYPE)
    out["offset"] = raw["rel"].astype(np.int64) + base
    out["position"] = raw["position"]
    return out


@source_doc
def read_timeindex(src, base_offset=None, *, trim_zeros=True) -> np.ndarray:
    """Entries of a time index (``.timeindex``) as a structured array (timestamp int64, offset int64
    absolute).

    Same conventions as :func:`read_index`; the zero-filled tail starts at the first entry with
    timestamp 0 and relative offset 0 (a real first entry can only look like that if a record at
    the base offset is stamped exactly 1970-01-01T00:00:00.000Z; pass ``trim_zeros=False`` to read
    by file length as Kafka does).

    Parameters
    ----------
    %(src)s
    %(base_offset)s
    trim_zeros : bool
        Cut the zero-filled tail of a preallocated file.

    Returns
    -------
    numpy.ndarray
        Structured, fields ``timestamp`` and ``offset``.

    Raises
    ------
    CorruptRecordError
        A length that is not a multiple of 12.

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> kafkafmt.read_timeindex(f"{sample_dir()}/payments-0/00000000000000000000.timeindex")
    array([(1767225602090, 44)], dtype=[('timestamp', '<i8'), ('offset', '<i8')])
    """
    raw, base = _read_relative(src, base_offset, TIMEINDEX_DISK, "time index", "timestamp", trim_zeros)
    out = np.empty(len(raw), TIMEINDEX_DTYPE)
    out["timestamp"] = raw["timestamp"]
    out["offset"] = raw["rel"].astype(np.int64) + base
    return out


def _read_relative(src, base_offset, disk, what, other, trim_zeros):
    """(on-disk entries, base offset) of an offset or time index: ``disk`` entries holding a relative
    offset ``rel`` and one ``other`` field; a length not a multiple of the entry size raises; with
    ``trim_zeros`` the entries stop at the first all-zero one (a preallocated file's tail)."""
    data, name = load_source(src)
    base = base_offset_of(base_offset, name)
    n, rem = divmod(len(data), disk.itemsize)
    if rem:
        raise CorruptRecordError(f"{what} is {len(data)} bytes, not a multiple of {disk.itemsize}",
                                 file=name, position=n * disk.itemsize)
    raw = np.frombuffer(data, disk, count=n)
    if trim_zeros:
        n = used_entries((raw["rel"] == 0) & (raw[other] == 0))
    return raw[:n], base


@source_doc
def read_txnindex(src) -> np.ndarray:
    """Entries of a transaction index (``.txnindex``): structured array (version int16, producer_id,
    first_offset, last_offset, last_stable_offset int64). A trailing partial entry (Kafka's reader
    silently ignores it; it can only come from a torn write) or a version other than 0 raises
    ``CorruptRecordError``.

    Parameters
    ----------
    %(src)s

    Returns
    -------
    numpy.ndarray
        Structured, one entry per aborted transaction.

    Raises
    ------
    CorruptRecordError
        A trailing partial entry or an unknown version.

    Examples
    --------
    The transaction the sample's ``payments`` topic aborts:

    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> kafkafmt.read_txnindex(f"{sample_dir()}/payments-0/00000000000000000045.txnindex")
    array([(0, 1002, 35, 70, 20)],
          dtype=[('version', '<i2'), ('producer_id', '<i8'), ('first_offset', '<i8'), ('last_offset', '<i8'),
                 ('last_stable_offset', '<i8')])
    """
    data, name = load_source(src)
    n, rem = divmod(len(data), TXNINDEX_DISK.itemsize)
    if rem:
        raise CorruptRecordError(f"transaction index is {len(data)} bytes, not a multiple of 34 "
                                 f"(partial entry at the end)", file=name,
                                 position=n * TXNINDEX_DISK.itemsize)
    raw = np.frombuffer(data, TXNINDEX_DISK, count=n)
    bad = np.flatnonzero(raw["version"] != TXN_INDEX_VERSION)
    if bad.size:
        i = int(bad[0])
        raise CorruptRecordError(f"aborted transaction entry {i} has version {int(raw['version'][i])}, "
                                 f"only {TXN_INDEX_VERSION} exists", file=name,
                                 position=i * TXNINDEX_DISK.itemsize)
    return raw.astype(TXNINDEX_DTYPE)


def encode_index(entries, base_offset: int) -> bytes:
    """Bytes of an offset index holding ``entries`` (absolute offsets), trimmed as after a roll."""
    arr = as_struct(entries, INDEX_DTYPE, "offset index")
    rel = arr["offset"].astype(np.int64) - int(base_offset)
    check_range(rel, 0, INT32_MAX, f"offset index: offset - base offset {base_offset} =")
    check_range(arr["position"], 0, INT32_MAX, "offset index: position")
    if len(arr) > 1 and np.any(np.diff(arr["offset"]) <= 0):
        i = int(np.flatnonzero(np.diff(arr["offset"]) <= 0)[0]) + 1
        raise EncodeError(f"offset index: offset {int(arr['offset'][i])} (entry {i}) is not greater "
                          f"than the previous one (OffsetIndex.append requires increasing offsets)")
    out = np.empty(len(arr), INDEX_DISK)
    out["rel"] = rel
    out["position"] = arr["position"]
    return out.tobytes()


def encode_timeindex(entries, base_offset: int) -> bytes:
    """Bytes of a time index holding ``entries`` (timestamp, absolute offset)."""
    arr = as_struct(entries, TIMEINDEX_DTYPE, "time index")
    rel = arr["offset"].astype(np.int64) - int(base_offset)
    check_range(rel, 0, INT32_MAX, f"time index: offset - base offset {base_offset} =")
    check_range(arr["timestamp"], 0, INT64_MAX, "time index: timestamp")
    if len(arr) > 1:
        if np.any(np.diff(arr["timestamp"]) <= 0):
            i = int(np.flatnonzero(np.diff(arr["timestamp"]) <= 0)[0]) + 1
            raise EncodeError(f"time index: timestamp {int(arr['timestamp'][i])} (entry {i}) is not greater "
                              f"than the previous one (TimeIndex.maybeAppend only appends larger ones)")
        if np.any(np.diff(arr["offset"]) < 0):
            i = int(np.flatnonzero(np.diff(arr["offset"]) < 0)[0]) + 1
            raise EncodeError(f"time index: offset {int(arr['offset'][i])} (entry {i}) is below the previous one")
    out = np.empty(len(arr), TIMEINDEX_DISK)
    out["timestamp"] = arr["timestamp"]
    out["rel"] = rel
    return out.tobytes()


def encode_txnindex(aborted) -> bytes:
    """Bytes of a transaction index: ``aborted`` holds (producer_id, first_offset, last_offset,
    last_stable_offset) per aborted transaction, as tuples, dicts or a structured array."""
    fields = [f for f in TXNINDEX_DTYPE.descr if f[0] != "version"]
    arr = as_struct(aborted, np.dtype(fields), "transaction index")
    if len(arr) > 1 and np.any(np.diff(arr["last_offset"]) <= 0):
        i = int(np.flatnonzero(np.diff(arr["last_offset"]) <= 0)[0]) + 1
        raise EncodeError(f"transaction index: last offset {int(arr['last_offset'][i])} (entry {i}) is not "
                          f"greater than the previous one (TransactionIndex.append)")
    out = np.zeros(len(arr), TXNINDEX_DISK)
    for f, _ in fields:
        out[f] = arr[f]
    out["version"] = TXN_INDEX_VERSION
    return out.tobytes()


def _pad(data: bytes, preallocate, entry_size) -> bytes:
    if preallocate is None:
        return data
    size = (int(preallocate) // entry_size) * entry_size          # AbstractIndex.roundDownToExactMultiple
    if size < len(data):
        raise EncodeError(f"preallocate={preallocate} is smaller than the {len(data)} bytes of entries")
    return data + bytes(size - len(data))


def write_index(path, entries, base_offset=None, *, preallocate=None) -> None:
    """Write an offset index. ``base_offset`` defaults to the number in the file name.
    ``preallocate`` (bytes, e.g. 10485760) zero-fills the file as for an active segment."""
    base = offset_from_file_name(path) if base_offset is None else base_offset
    write_atomic(path, _pad(encode_index(entries, base), preallocate, INDEX_DISK.itemsize))


def write_timeindex(path, entries, base_offset=None, *, preallocate=None) -> None:
    """Write a time index; see :func:`write_index`."""
    base = offset_from_file_name(path) if base_offset is None else base_offset
    write_atomic(path, _pad(encode_timeindex(entries, base), preallocate, TIMEINDEX_DISK.itemsize))


def write_txnindex(path, aborted) -> None:
    """Write a transaction index (Kafka creates the file only when there is an entry)."""
    write_atomic(path, encode_txnindex(aborted))


def build_index_entries(batches, index_interval_bytes=4096, rolled=True, *, time_offsets=None,
                        append_ids=None):
    """The offset index and time index entries a broker writes for a segment holding ``batches``.

    ``batches`` is ``Records.batches`` of the segment (or any table with ``size``,
    ``last_offset``, ``max_timestamp`` and optionally ``position`` columns; without ``position``
    the batches are taken to be contiguous from 0). Returns ``(index_entries, timeindex_entries)``
    with ``INDEX_DTYPE`` / ``TIMEINDEX_DTYPE``.

    Assumption: the segment was written by one broker process, one batch per append (a leader
    appending produce requests: a v2 produce request carries exactly one batch per partition, as a
    producer with linger sends it), or rebuilt by ``LogSegment.recover``; both give the same
    entries. ``append_ids`` (one id per batch, equal for consecutive batches appended together)
    models multi-batch appends of brokers before KAFKA-806 (followers, the cleaner). An index
    entry is (last offset, start position) of the first batch that starts more than
    ``index_interval_bytes`` after the previous entry's batch (after position 0 for the first); a
    time index entry (max timestamp so far, last offset of the first batch that has it) is tried
    with each and kept when its timestamp grew. ``rolled`` adds the final time index entry that
    Kafka writes when the segment is rolled, when the broker closes it on a clean shutdown, and at
    the end of a recovery; only a segment that is still open (a running broker, or a crash not yet
    recovered) lacks it.

    ``time_offsets`` (one per batch) replaces the batch's last offset as "the offset of its max
    timestamp": a leader before KAFKA-16310 used, for uncompressed CreateTime batches, the offset
    of the record carrying the max timestamp (see :func:`record_offsets_of_max_timestamp`).

    Not modelled: a broker restart in the middle of the segment resets the byte counter to 0 at
    the restart position (entries shift), and the index is cut short if it ever fills up.
    """
    if index_interval_bytes < 0:
        raise ValueError("index_interval_bytes must be >= 0")
    size = table_column(batches, "size").astype(np.int64)
    n = len(size)
    last = table_column(batches, "last_offset").astype(np.int64)
    ts = table_column(batches, "max_timestamp").astype(np.int64)
    pos = table_column(batches, "position", required=False)
    starts = np.concatenate(([0], np.cumsum(size)[:-1])) if n else np.zeros(0, np.int64)
    pos = starts if pos is None else pos.astype(np.int64)
    toff = last if time_offsets is None else np.asarray(time_offsets, np.int64)
    if len(pos) != n or len(last) != n or len(ts) != n or len(toff) != n:
        raise ValueError("batch columns differ in length")
    if n == 0:
        return np.empty(0, INDEX_DTYPE), np.empty(0, TIMEINDEX_DTYPE)

    # collapse into appends
    if append_ids is None:
        a_pos, a_bytes_before, a_last, a_ts, a_toff = pos, starts, last, ts, toff
    else:
        ids = np.asarray(append_ids)
        if len(ids) != n:
            raise ValueError("append_ids must have one id per batch")
        first = np.flatnonzero(np.concatenate(([True], ids[1:] != ids[:-1])))
        ends = np.concatenate((first[1:], [n])) - 1
        a_pos, a_bytes_before, a_last = pos[first], starts[first], last[ends]
        a_ts = np.maximum.reduceat(ts, first)
        group = np.repeat(np.arange(len(first)), np.diff(np.concatenate((first, [n]))))
        hit = np.flatnonzero(ts == a_ts[group])                    # first batch holding the max
        _, where = np.unique(group[hit], return_index=True)
        a_toff = toff[hit[where]]

    # offset index: bytes since the last entry's append start > interval
    chosen = []
    mark = 0
    i = int(np.searchsorted(a_bytes_before, mark + index_interval_bytes, side="right"))
    while i < len(a_pos):
        chosen.append(i)
        mark = int(a_bytes_before[i])
        i = int(np.searchsorted(a_bytes_before, mark + index_interval_bytes, side="right"))
    chosen = np.asarray(chosen, np.int64)
    index = np.empty(len(chosen), INDEX_DTYPE)
    index["offset"] = a_last[chosen]
    index["position"] = a_pos[chosen]

    # max timestamp so far (initially NO_TIMESTAMP) and the offset that first reached it
    so_far = np.maximum(np.maximum.accumulate(a_ts), NO_TIMESTAMP)
    before = np.concatenate(([NO_TIMESTAMP], so_far[:-1]))
    holder = np.maximum.accumulate(np.where(a_ts > before, np.arange(len(a_ts)), -1))
    cand = list(chosen) + ([len(a_ts) - 1] if rolled else [])
    cand = np.asarray(cand, np.int64)
    c_ts = so_far[cand]
    keep = c_ts > np.concatenate(([NO_TIMESTAMP], c_ts[:-1]))      # maybeAppend: timestamp must grow
    cand = cand[keep]
    tindex = np.empty(len(cand), TIMEINDEX_DTYPE)
    tindex["timestamp"] = so_far[cand]
    tindex["offset"] = a_toff[holder[cand]]
    return index, tindex


def record_offsets_of_max_timestamp(records) -> np.ndarray:
    """Per batch of ``records`` (a ``Records``), the offset of the first record whose timestamp is
    the batch's largest: the time index offset a pre-KAFKA-16310 leader wrote for uncompressed
    CreateTime batches. Batches without records (emptied by compaction) give their last offset."""
    nb = len(records.batches)
    out = np.asarray(records.batches.last_offset, np.int64).copy()
    if len(records) == 0 or nb == 0:
        return out
    bi = np.asarray(records.batch_index, np.int64)
    t = np.asarray(records.timestamp, np.int64)
    off = np.asarray(records.offset, np.int64)
    bmax = np.full(nb, np.iinfo(np.int64).min, np.int64)
    np.maximum.at(bmax, bi, t)
    hit = np.flatnonzero(t == bmax[bi])
    first_b, where = np.unique(bi[hit], return_index=True)
    out[first_b] = off[hit[where]]
    return out


class IndexProblem(str):
    """A problem found in an index file: the message, ``entry``, the index of the entry at fault
    (its byte position is entry * entry size), and ``cause``, what is wrong in words shared by every
    entry wrong the same way (so many entries wrong for one reason can be said once)."""

    def __new__(cls, entry, message, cause=None):
        self = super().__new__(cls, message)
        self.entry = int(entry)
        self.cause = cause or message
        return self


@source_doc
def index_sanity_problem(src, suffix, base_offset=None):
    """What Kafka's own sanity check says of an ``.index`` or ``.timeindex`` file, read by its length
    as the broker reads it (a zero-filled preallocated tail counts as entries): ``None`` when it
    passes, else the reason. A broker that finds one of these rebuilds the segment's indexes at
    start-up (``LogLoader.loadSegmentFiles``: ``CorruptIndexException`` -> ``recoverSegment``).

    ``OffsetIndex.sanityCheck``: the length is a multiple of 8; the last entry's offset is not below
    the base offset. ``TimeIndex.sanityCheck``: the length is a multiple of 12; the last entry's
    timestamp is not below the first's (a zero-filled tail ends in timestamp 0: the broker stopped
    without trimming the file, as after a crash); the last offset is not below the base offset.

    Parameters
    ----------
    %(src)s
    suffix : {".index", ".timeindex"}
        Which index it is.
    %(base_offset)s

    Returns
    -------
    str or None

    Examples
    --------
    A time index preallocated and never trimmed (two entries, then zeros):

    >>> from kafkafmt.log import sidefiles
    >>> import numpy as np
    >>> entries = np.array([(1700000000000, 5), (1700000000900, 9)], sidefiles.TIMEINDEX_DTYPE)
    >>> data = sidefiles.encode_timeindex(entries, 0)
    >>> sidefiles.index_sanity_problem(data, ".timeindex") is None
    True
    >>> print(sidefiles.index_sanity_problem(data + bytes(120), ".timeindex"))
    zero-filled tail of 120 bytes after 2 entries (preallocated, not trimmed: the broker did not shut down cleanly); Kafka's TimeIndex.sanityCheck fails: the last timestamp 0 is below the first 1700000000000
    """
    return read_index_file(src, suffix, base_offset)[1]


def read_index_file(src, suffix, base_offset=None):
    """An ``.index`` or ``.timeindex`` file read as the checks read it, in one pass over its bytes:
    ``(entries, sanity problem)`` -- its entries as `read_index` / `read_timeindex` give them (whole entries
    only, the zero-filled tail cut), and what `index_sanity_problem` says of it (None when it passes).

    Parameters
    ----------
    src, suffix, base_offset
        As `index_sanity_problem`'s: the file or its bytes, ".index" or ".timeindex", the base offset.

    Returns
    -------
    tuple

    Examples
    --------
    >>> from kafkafmt.log import sidefiles
    >>> import numpy as np
    >>> entries = np.array([(1700000000000, 5), (1700000000900, 9)], sidefiles.TIMEINDEX_DTYPE)
    >>> data = sidefiles.encode_timeindex(entries, 0) + bytes(24)
    >>> got, why = sidefiles.read_index_file(data, ".timeindex")
    >>> got.tolist(), why[:27]
    ([(1700000000000, 5), (1700000000900, 9)], 'zero-filled tail of 24 byte')
    """
    data, name = load_source(src)
    base = base_offset_of(base_offset, name)
    time = suffix == ".timeindex"
    disk = TIMEINDEX_DISK if time else INDEX_DISK
    n = len(data) // disk.itemsize
    raw = np.frombuffer(data, disk, count=n)
    zero = (raw["rel"] == 0) & ((raw["timestamp"] if time else raw["position"]) == 0)
    used = used_entries(zero)
    why = _sanity(raw if not len(data) % disk.itemsize else None, zero, used, len(data), time, base)
    raw = raw[:used]
    out = np.empty(used, TIMEINDEX_DTYPE if time else INDEX_DTYPE)
    if time:
        out["timestamp"] = raw["timestamp"]
    else:
        out["position"] = raw["position"]
    out["offset"] = raw["rel"].astype(np.int64) + base
    return out, why


def _sanity(raw, zero, used, length, time, base):
    """`index_sanity_problem` of a file of ``length`` bytes: ``raw`` its whole entries (None when the length
    is not a multiple of the entry size), ``zero`` which are all zeros, ``used`` how many come before them."""
    disk = TIMEINDEX_DISK if time else INDEX_DISK
    check = "TimeIndex.sanityCheck" if time else "OffsetIndex.sanityCheck"
    if raw is None:
        return f"{length} bytes, not a multiple of {disk.itemsize} (Kafka's {check} fails)"
    n = len(raw)
    if not n:
        return None
    tail = ""
    if used < n and bool(zero[used:].all()):
        tail = (f"zero-filled tail of {(n - used) * disk.itemsize} bytes after {used} entries (preallocated, not "
                f"trimmed: the broker did not shut down cleanly); ")
    last_offset = int(raw["rel"][-1]) + base
    if time and int(raw["timestamp"][-1]) < int(raw["timestamp"][0]):
        return (f"{tail}Kafka's {check} fails: the last timestamp {int(raw['timestamp'][-1])} is below the first "
                f"{int(raw['timestamp'][0])}")
    if last_offset < base:
        return f"{tail}Kafka's {check} fails: the last offset {last_offset} is below the base offset {base}"
    return None


def _base_problems(offsets, base_offset, what):
    problems = []
    if base_offset is None:
        return problems
    for i in np.flatnonzero(offsets < base_offset):
        problems.append(IndexProblem(i, f"{what} entry {i}: offset {int(offsets[i])} is below the segment base offset {base_offset}",
                                     "offset below the segment's base offset"))
    for i in np.flatnonzero(offsets - base_offset > INT32_MAX):
        problems.append(IndexProblem(i, f"{what} entry {i}: offset {int(offsets[i])} is more than 2^31-1 past the base offset "
                        f"{base_offset}", "offset more than 2^31-1 past the segment's base offset"))
    return problems


def check_index(entries, batches, base_offset=None) -> list:
    """Problems of offset index ``entries`` against the segment's ``batches`` (``Records.batches``):
    every entry must point at a batch start whose last offset is the entry's offset (as
    ``kafka-dump-log --verify-index-only`` checks), offsets and positions must strictly increase,
    offsets must lie in ``[base_offset, base_offset + 2^31-1]``. Returns a list of strings."""
    off = np.asarray(entries["offset"], np.int64)
    p = np.asarray(entries["position"], np.int64)
    bpos = table_column(batches, "position").astype(np.int64, copy=False)
    blast = table_column(batches, "last_offset").astype(np.int64, copy=False)
    if _index_sound(off, p, bpos, blast, base_offset):
        return []
    problems = []
    problems += _base_problems(off, base_offset, "index")
    for i in np.flatnonzero(np.diff(off) <= 0) + 1:
        problems.append(IndexProblem(i, f"index entry {i}: offset {int(off[i])} is not greater than entry {i - 1}'s "
                        f"offset {int(off[i - 1])}", "offsets not increasing"))
    for i in np.flatnonzero(np.diff(p) <= 0) + 1:
        problems.append(IndexProblem(i, f"index entry {i}: position {int(p[i])} is not greater than entry {i - 1}'s "
                        f"position {int(p[i - 1])}", "positions not increasing"))
    order = np.argsort(bpos, kind="stable")
    bpos, blast = bpos[order], blast[order]
    if len(bpos) == 0:
        return problems + [IndexProblem(i, f"index entry {i} (offset {int(off[i])}, position {int(p[i])}): the "
                                           f"segment has no batches", "the segment has no batches")
                           for i in range(len(off))]
    at = np.searchsorted(bpos, p)
    for i in range(len(off)):
        j = int(at[i])
        if j >= len(bpos) or bpos[j] != p[i]:
            problems.append(IndexProblem(i, f"index entry {i} (offset {int(off[i])}, position {int(p[i])}): no batch starts "
                            f"at position {int(p[i])}", "no batch starts at the entry's position"))
        elif blast[j] != off[i]:
            problems.append(IndexProblem(i, f"index entry {i} (offset {int(off[i])}, position {int(p[i])}): the batch at that "
                            f"position has last offset {int(blast[j])}", "the batch at the entry's position ends at "
                            "another offset"))
    return problems


def sound_index_entries(data, suffix, base_offset, batches):
    """The entries of an ``.index`` / ``.timeindex`` file when it is plainly sound, told in one native pass:
    what `read_index_file` gives when it finds no sanity problem and `check_index` / `check_timeindex` then find
    nothing against ``batches``; None when that is not plain (the checks say what is wrong) or ``data`` is not
    the file's bytes.

    Parameters
    ----------
    data : bytes-like
        The file's bytes.
    suffix : {".index", ".timeindex"}
    base_offset : int
        The segment's base offset.
    batches : mapping
        The segment's batch table (``position``, ``base_offset``, ``last_offset``, ``max_timestamp``).

    Returns
    -------
    numpy.ndarray or None
        `INDEX_DTYPE` / `TIMEINDEX_DTYPE` entries.

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.log import sidefiles
    >>> from kafkafmt.sample import sample_dir
    >>> folder = f"{sample_dir()}/orders-0"
    >>> batches = kafkafmt.read_segment(f"{folder}/00000000000000000000.log").batches
    >>> data = open(f"{folder}/00000000000000000000.index", "rb").read()
    >>> sound = sidefiles.sound_index_entries(data, ".index", 0, batches)
    >>> len(sound), bool((sound == sidefiles.read_index(data, 0)).all()), sidefiles.check_index(sound, batches, 0)
    (9, True, [])
    >>> sidefiles.sound_index_entries(data[:-1], ".index", 0, batches) is None     # not whole entries
    True
    """
    if base_offset is None or not isinstance(data, (bytes, bytearray)):
        return None

    def col(name):
        return np.ascontiguousarray(table_column(batches, name), np.int64)

    if suffix == ".index":
        return indexcheck.sound_offset_index(data, base_offset, col("position"), col("last_offset"), INDEX_DTYPE)
    return indexcheck.sound_time_index(data, base_offset, col("base_offset"), col("last_offset"),
                                       col("max_timestamp"), TIMEINDEX_DTYPE)


def _increasing(x, strictly=True):
    return len(x) < 2 or bool((x[1:] > x[:-1]).all() if strictly else (x[1:] >= x[:-1]).all())


def _within_base(off, base_offset):
    """Sorted offsets all in [base offset, base offset + 2^31-1] (or no base offset given)."""
    return base_offset is None or (int(off[0]) >= base_offset and int(off[-1]) - base_offset <= INT32_MAX)


def _index_sound(off, p, bpos, blast, base_offset):
    """Whether `check_index` finds nothing, told at once (most indexes are sound): True only when it does not."""
    if not len(off):
        return True
    if not len(bpos) or not (_increasing(off) and _increasing(p) and _increasing(bpos)) \
            or not _within_base(off, base_offset):
        return False
    at = np.searchsorted(bpos, p)
    return int(at[-1]) < len(bpos) and bool((bpos[at] == p).all() and (blast[at] == off).all())


def _timeindex_sound(t, off, bbase, blast, bts, base_offset):
    """Whether `check_timeindex` finds nothing, told at once: True only when it does not."""
    if not len(t):
        return True
    if not len(blast) or not (_increasing(t) and _increasing(off, strictly=False)) or not _within_base(off, base_offset) \
            or int(off[-1]) > int(blast.max()):
        return False
    at = np.searchsorted(blast, off, side="left")
    if int(at.max()) >= len(blast):
        return False
    before_max = np.concatenate(([NO_TIMESTAMP], np.maximum.accumulate(bts)[:-1]))
    return bool((bbase[at] <= off).all() and (bts[at] == t).all() and (before_max[at] <= t).all())


def check_timeindex(entries, batches, base_offset=None) -> list:
    """Problems of time index ``entries`` against the segment's ``batches``: timestamps strictly
    increasing (``TimeIndex.maybeAppend``), offsets not decreasing, every offset inside the segment
    and inside a batch, the entry's timestamp equal to that batch's max timestamp and not below the
    max timestamp of any earlier batch. (The offset need not be the batch's *last* offset: leaders
    before KAFKA-16310 wrote record offsets.) Returns a list of strings."""
    t = np.asarray(entries["timestamp"], np.int64)
    off = np.asarray(entries["offset"], np.int64)
    bbase = table_column(batches, "base_offset").astype(np.int64, copy=False)
    blast = table_column(batches, "last_offset").astype(np.int64, copy=False)
    bts = table_column(batches, "max_timestamp").astype(np.int64, copy=False)
    if _timeindex_sound(t, off, bbase, blast, bts, base_offset):
        return []
    problems = []
    problems += _base_problems(off, base_offset, "time index")
    for i in np.flatnonzero(np.diff(t) <= 0) + 1:
        problems.append(IndexProblem(i, f"time index entry {i}: timestamp {int(t[i])} is not greater than entry {i - 1}'s "
                        f"timestamp {int(t[i - 1])}", "timestamps not increasing"))
    for i in np.flatnonzero(np.diff(off) < 0) + 1:
        problems.append(IndexProblem(i, f"time index entry {i}: offset {int(off[i])} is below entry {i - 1}'s offset {int(off[i - 1])}",
                                    "offsets decreasing"))
    if len(blast) == 0:
        return problems + [IndexProblem(i, f"time index entry {i} (timestamp {int(t[i])}, offset {int(off[i])}): "
                                           f"the segment has no batches", "the segment has no batches")
                           for i in range(len(t))]
    seg_last = int(blast.max())
    before_max = np.concatenate(([NO_TIMESTAMP], np.maximum.accumulate(bts)[:-1]))
    at = np.searchsorted(blast, off, side="left")
    for i in range(len(t)):
        label = f"time index entry {i} (timestamp {int(t[i])}, offset {int(off[i])})"
        j = int(at[i])
        if off[i] > seg_last:
            problems.append(IndexProblem(i, f"{label}: offset is past the segment's last offset {seg_last}",
                                            f"offset past the segment's last offset {seg_last}"))
        elif j >= len(blast) or bbase[j] > off[i]:
            problems.append(IndexProblem(i, f"{label}: offset is in no batch of the segment",
                                            "offset in no batch of the segment"))
        elif bts[j] != t[i]:
            problems.append(IndexProblem(i, f"{label}: the batch holding the offset has max timestamp {int(bts[j])}",
                                            "the batch holding the offset has another max timestamp"))
        elif before_max[j] > t[i]:
            problems.append(IndexProblem(i, f"{label}: an earlier batch already has the larger timestamp {int(before_max[j])}",
                                            "an earlier batch has a larger timestamp"))
    return problems
