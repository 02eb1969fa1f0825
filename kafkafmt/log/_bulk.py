"""Many small partitions at the core's speed: `read_units` reads the planned tasks of many partitions (or of
many Spark tasks) without a Python `Records`, a map or a decode call per partition or segment.

* Units -- one partition's tasks (the library), or one task (a Spark input partition) -- whose segments are
  local, small and read whole are read together: their files are read into one buffer (one open and one
  read each, no memory map), scanned by one native call (`kafkafmt.record.scan_ranges`, each file its own
  sequence of entries) and decoded by one kernel pass per buffer into one set of outputs shared by every
  buffer of a piece (`kafkafmt.record.RangeDecoder`): no per-partition result is made or concatenated.
* A piece is exactly what ``Records.concat`` of its units' reads gives (`kafkafmt.log._taskreader`): the same
  records, per-record topic, partition and log dir, the batch table with its ``segment`` and ``partition``
  columns, the control records.
* Anything but clean whole segments -- a corrupt, cut-off or zero-filled stretch, batches out of offset
  sequence with their neighbours or with the segments around them, a file that changed since it was listed,
  a record the kernel refuses -- makes that unit a *fallback*: yielded in its place for the caller to read
  the usual way, so its errors, salvage and report entries are exactly the usual ones.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kafkafmt.errors import KafkafmtError
from kafkafmt.log._names import segment_base
from kafkafmt.log._taskreader import WHOLE_RANGE_RATIO, task_span
from kafkafmt.record import Labels, RangeDecoder, Table, scan_ranges

__all__ = ["Unit", "read_units", "BulkPiece", "UnitChunks", "SMALL_UNIT_BYTES", "GROUP_BYTES"]

#: a unit with more segment bytes than this is read on its own (its decode dwarfs a unit's fixed cost)
SMALL_UNIT_BYTES = 4 << 20
#: segment bytes read into one buffer and scanned by one call (the buffer is reused: memory stays bounded)
GROUP_BYTES = 1 << 20


@dataclass
class Unit:
    """What `read_units` reads as one: ``tasks`` (`kafkafmt.log._planner.Task` s in log order; none for an
    empty partition), the topic, partition and log dir its records are labelled with, and ``report``
    (what its planning reported; a fallback read appends to it). ``tasks`` None: a unit the caller reads
    itself (``error``: why its planning failed, for the caller to raise in its turn). ``after``: the last
    offset read before its first task (a run of a partition's segments read after the runs before it), as
    `kafkafmt.log._taskreader.read_tasks` takes it; None: its first segment's base offset bounds it alone."""
    tasks: list
    topic: object
    partition: object
    log_dir: object
    report: list = field(default_factory=list)
    error: object = None
    after: object = None


def _bulk_bytes(unit, options, chunk_bytes=None):
    """The segment bytes of a unit read in bulk, or None when it must be read on its own: a tiered upload, a
    stretch of a segment in an object store that is not the whole object (its own read asks for that stretch
    alone; a local file is read from and up to any byte), read_committed, binary views (they would point into a
    reused buffer), or more than `SMALL_UNIT_BYTES`.
    Offset bounds are taken: each task's records are selected once decoded, as
    `kafkafmt.log._taskreader.read_task` selects them (`_selected`). ``chunk_bytes``: only stretches `read_task`
    reads in one chunk of that many bytes. (A segment in an object store is read in one request, or from what the
    store fetched ahead: `kafkafmt.log._ahead.announce`.)"""
    if unit.tasks is None or options.binary != "contiguous":
        return None
    total = 0
    for t in unit.tasks:
        seg = t.segment
        size = t.stop_pos - t.start_pos
        if seg.remote is not None or t.aborted is not None or t.lso is not None or t.fills \
                or (not seg.storage.is_local and (t.start_pos != 0 or t.stop_pos != seg.size)) \
                or t.start_pos < 0 or size <= 0 \
                or t.stop_pos > seg.size or segment_base(seg.log) is None \
                or (chunk_bytes is not None and size * WHOLE_RANGE_RATIO > chunk_bytes):
            return None
        total += size
        if total > SMALL_UNIT_BYTES:
            return None
    return total


def read_units(units, options, *, chain=True, max_bytes=None, group_bytes=GROUP_BYTES, expected_bytes=None,
               per_unit=False, chunk_bytes=None):
    """Read units (`Unit`) in order; yields ``("records", records, unit indices)`` for pieces read in bulk
    and ``("fallback", index, None)`` for a unit the caller reads itself (on its own, the usual way), in
    unit order. ``per_unit``: each unit of a piece yielded as ``("chunks", UnitChunks, index)`` instead
    (`UnitChunks`: an iterator of the records of each task, sharing the piece's `BulkPiece`), the chunks as
    `kafkafmt.log._taskreader.read_task` yields a small task's one chunk (with ``max_bytes=chunk_bytes``: a
    unit with a segment it would read in several chunks falls back).

    Parameters
    ----------
    units : iterable of Unit
        In order (a generator is consumed as the reading goes: a unit is planned just before it is read).
    options : DecodeOptions
        What to decode (as the usual read's).
    chain : bool
        The batch before a unit's next task is its previous task's last (a partition read in order, as
        `read_tasks`); False: each task is checked on its own (Spark's tasks, `read_task` without
        ``after``).
    max_bytes : int, optional
        A piece ends once it holds about this many segment bytes (None: one piece between fallbacks).
    group_bytes : int
        Segment bytes read and scanned at once.
    expected_bytes : int, optional
        About how many segment bytes the units hold (the outputs are sized once for them).
    """
    seen = []                   # the units so far (units may be a generator: planned as they come)
    piece = _Piece(seen, options, expected_bytes, max_bytes, per_unit)
    group, gbytes = [], 0
    buf = _Buffer()
    for i, unit in enumerate(units):
        seen.append(unit)
        nbytes = _bulk_bytes(unit, options, chunk_bytes=chunk_bytes)
        if nbytes is None:
            yield from _group(seen, group, piece, buf, options, chain)
            group, gbytes = [], 0
            yield from piece.finish()
            yield ("fallback", i, None)
            continue
        group.append(i)
        gbytes += nbytes
        if gbytes >= group_bytes:
            yield from _group(seen, group, piece, buf, options, chain)
            group, gbytes = [], 0
            if max_bytes is not None and piece.nbytes >= max_bytes:
                yield from piece.finish()
    yield from _group(seen, group, piece, buf, options, chain)
    yield from piece.finish()


class _Buffer:
    """One reused input buffer (grown as groups need)."""

    def __init__(self):
        self.array = np.empty(0, np.uint8)

    def get(self, n):
        if len(self.array) < n:
            self.array = np.empty(max(n, 2 * len(self.array)), np.uint8)
        return self.array[:n]


def _group(units, idx, piece, holder, options, chain):
    """Read, scan, check and decode the units ``idx`` (in order) into the piece; yields what
    `read_units` yields for units that fail (and the pieces they cut)."""
    if not idx:
        return
    tasks = [(i, t) for i in idx for t in units[i].tasks]
    k = len(tasks)
    offsets = np.fromiter((t.start_pos for _, t in tasks), np.int64, k)
    sizes = np.fromiter((t.stop_pos for _, t in tasks), np.int64, k) - offsets
    starts = np.zeros(k + 1, np.int64)
    np.cumsum(sizes, out=starts[1:])
    buf = holder.get(int(starts[-1]))
    failed = set()
    if tasks and all(t.segment.storage.is_local for _, t in tasks):     # (any local storage reads them all at once)
        got = tasks[0][1].segment.storage.read_many([t.segment.log for _, t in tasks], buf, starts,
                                                    offsets=offsets if offsets.any() else None)
        # gone, unreadable (-1), or shorter than listed (changed since): the usual read says so
        failed.update(tasks[r][0] for r in np.flatnonzero(got != sizes).tolist())
    else:
        mv = memoryview(buf)
        for r, (i, t) in enumerate(tasks):
            if i in failed:
                continue
            try:
                got = t.segment.storage.read_into(t.segment.log, mv[starts[r]:starts[r + 1]],
                                                  version=t.segment.version)
            except KafkafmtError:           # gone, unreadable: the usual read says so
                got = -1
            if got != sizes[r]:             # shorter than listed: changed since
                failed.add(i)
    table, rng = scan_ranges(buf, starts[:-1], starts[1:], verify_crc=options.verify_crc,
                             max_batch_bytes=options.max_batch_bytes)
    unit_of = np.fromiter((i for i, _ in tasks), np.int64, k)
    bad = _unclean(table, rng, starts, tasks, unit_of, chain, [units[i].after for i in idx if units[i].tasks])
    failed.update(unit_of[bad].tolist())
    first, count = rng["first"], rng["count"]
    run = []
    for i in idx:
        if i in failed:
            yield from _add_run(run, piece, buf, table, first, count, starts, tasks, unit_of, units)
            run = []
            yield from piece.finish()
            yield ("fallback", i, None)
        else:
            run.append(i)
    yield from _add_run(run, piece, buf, table, first, count, starts, tasks, unit_of, units)


def _unclean(table, rng, starts, tasks, unit_of, chain, afters=None):
    """Which ranges are not clean whole segments whose batch offsets are in sequence (bool per range):
    as `decode` checks them against the batch before (the segment's base offset - 1, the previous
    segment's last batch, or for a unit's first segment the offset its `Unit.after` says was read before it)
    and the next segment's base offset (`kafkafmt.record.offset_sequence_error`). ``afters``: the ``after`` of
    each unit holding a range, in order."""
    first, count = rng["first"], rng["count"]
    bad = (rng["error"] != 0) | (rng["tail"] != 0) | (rng["valid_end"] != starts[1:]) | (count == 0)
    base, last = table["base_offset"], table["last_offset"]
    if len(base) > 1:
        row_range = np.repeat(np.arange(len(count)), count)
        pairs = np.flatnonzero((base[1:] <= last[:-1]) & (row_range[1:] == row_range[:-1]))
        bad[row_range[pairs]] = True
    has = count > 0
    lo = np.where(has, first, 0)
    hi = np.where(has, first + count - 1, 0)
    after = np.fromiter((t.segment.base_offset - 1 for _, t in tasks), np.int64, len(tasks))
    if afters is not None and any(a is not None for a in afters):
        opening = np.flatnonzero(np.concatenate(([True], unit_of[1:] != unit_of[:-1])))   # (each unit's first)
        for r, a in zip(opening.tolist(), afters):
            if a is not None:
                after[r] = max(int(after[r]), a)
    if chain and len(tasks) > 1:
        # the batch before a partition's next segment: the largest last offset of its segments before
        # (only the ranges following one of their own partition have one)
        carried, prev = None, None
        for r in (np.flatnonzero(unit_of[1:] == unit_of[:-1]) + 1).tolist():
            if prev != r - 1:         # the partition's first segment
                carried = int(last[hi[r - 1]]) if has[r - 1] else None
            if carried is not None:
                after[r] = max(after[r], carried)
            if has[r]:
                end = int(last[hi[r]])
                carried = end if carried is None else max(carried, end)
            prev = r
    top = np.iinfo(np.int64).max
    follows = np.fromiter((top if t.following is None else t.following for _, t in tasks), np.int64, len(tasks))
    if len(base):
        bad |= has & ((base[lo] <= after) | (last[hi] >= follows))
    return bad


def _add_run(run, piece, buf, table, first, count, starts, tasks, unit_of, units):
    """Decode the units of ``run`` (consecutive, all clean) into the piece; a unit whose records the
    kernel refuses cuts the run: the units before it stay in the piece, it falls back, the rest go on."""
    if not run:
        return
    ranges = np.flatnonzero(np.isin(unit_of, run))
    try:
        piece.add(buf, table, ranges, first, count, starts, tasks, run)
        return
    except KafkafmtError as exc:
        at = getattr(exc, "batch_position", None)
        if at is None:
            raise
        r = int(np.searchsorted(starts, at, side="right")) - 1
        culprit = int(unit_of[r])
    k = run.index(culprit)
    yield from _add_run(run[:k], piece, buf, table, first, count, starts, tasks, unit_of, units)
    yield from piece.finish()
    yield ("fallback", culprit, None)
    yield from _add_run(run[k + 1:], piece, buf, table, first, count, starts, tasks, unit_of, units)


class _Piece:
    """The units decoded into one set of outputs since the last cut, and what labels their records."""

    def __init__(self, units, options, expected_bytes=None, max_bytes=None, per_unit=False):
        self.all_units = units
        self.per_unit = per_unit
        self.options = options
        self.expected = expected_bytes
        self.max_bytes = max_bytes
        self.done = 0            # bytes of every piece so far (the expected bytes still to come)
        self._reset()

    def _reset(self):
        # the bytes this piece will hold, about: what is expected still, at most max_bytes (sizes its outputs)
        rest = None if self.expected is None else max(self.expected - self.done, 1)
        if self.max_bytes is not None:
            rest = self.max_bytes if rest is None else min(rest, self.max_bytes)
        self.decoder = RangeDecoder(self.options, expected_bytes=rest)
        self.units = []          # unit indices, in order
        self.table = _TableBuffer(rest)   # the batch table (positions in their files), the unit and
        self.nbytes = 0                   # segment of each batch

    def add(self, buf, table, ranges, first, count, starts, tasks, run):
        """Decode the rows of ``ranges`` (all of the run's units' tasks) of a group's table."""
        n_all = len(table["position"])
        rows_count = count[ranges]
        if len(ranges) == len(count) and len(ranges) and int(rows_count.sum()) == n_all:
            sub = table
        else:
            rows = np.concatenate([np.arange(first[r], first[r] + count[r]) for r in ranges]) if len(ranges) \
                else np.zeros(0, np.int64)
            sub = {name: col[rows] for name, col in table.items()}
        mark = self.decoder.mark()
        try:
            self.decoder.add(buf, sub)
        except BaseException:
            self.decoder.rewind(mark)
            raise
        local = {u: len(self.units) + j for j, u in enumerate(run)}
        self.units += run
        nbytes = int(starts[ranges + 1].sum() - starts[ranges].sum()) if len(ranges) else 0
        # (positions in their files: a stretch read from a byte of its file on counts from there)
        at = starts[ranges] - np.fromiter((tasks[r][1].start_pos for r in ranges), np.int64, len(ranges))
        self.table.add(sub, nbytes, position=sub["position"] - np.repeat(at, rows_count),
                       unit=np.repeat(np.fromiter((local[tasks[r][0]] for r in ranges), np.int64, len(ranges)),
                                      rows_count),
                       segment=np.repeat(np.fromiter((tasks[r][1].segment.base_offset for r in ranges), np.int64,
                                                     len(ranges)), rows_count))
        self.nbytes += nbytes
        self.done += nbytes

    def finish(self):
        """Yield the piece (as `read_units` yields it) when it holds any unit, and start a new one."""
        if not self.units:
            return
        units = [self.all_units[i] for i in self.units]
        indices = self.units
        table = self.table.columns()
        batch_unit, segment = table.pop("unit"), table.pop("segment")
        recs = _selected(self.decoder.finish(table), units, batch_unit, segment)
        self._reset()
        if self.per_unit:
            piece = BulkPiece(recs, units, batch_unit, segment)
            for j, i in enumerate(indices):
                yield ("chunks", UnitChunks(piece, j), i)
            return
        yield ("records", _labelled(recs, units, batch_unit, segment), indices)


def _task_edges(batch_unit, segment):
    """Where each task's batches start in a piece (a task: a run of batches of one unit and one segment), and the
    end."""
    nb = len(batch_unit)
    if not nb:
        return np.zeros(1, np.int64)
    return np.concatenate(([0], np.flatnonzero((batch_unit[1:] != batch_unit[:-1])
                                               | (segment[1:] != segment[:-1])) + 1, [nb])).astype(np.int64)


def _selected(recs, units, batch_unit, segment):
    """A piece's records without those its tasks' offset bounds leave out, as `kafkafmt.log._taskreader.read_task`
    selects a chunk's (`kafkafmt.log._taskreader.task_span` of each task's records as decoded); its batches and
    control records all kept, as there. ``recs`` itself when no bound leaves a record out. (A task whose records all lie
    within its bounds -- the usual one: a start offset of 0 or at its segment's base -- is told so at once, with
    every other, by their least and greatest offsets.)"""
    tasks = [t for u in units for t in u.tasks]
    if all(t.start_offset is None and t.end_offset is None for t in tasks) or not len(recs):
        return recs
    k = len(tasks)
    low = np.fromiter((_INT64_MIN if t.start_offset is None else t.start_offset for t in tasks), np.int64, k)
    high = np.fromiter((_INT64_MAX if t.end_offset is None else t.end_offset for t in tasks), np.int64, k)
    edges = np.searchsorted(recs.batch_index, _task_edges(batch_unit, segment))
    offset = np.asarray(recs.offset, np.int64)
    used = np.flatnonzero(edges[1:] > edges[:-1])         # (the tasks holding records; they cover them all)
    least, most = np.zeros(k, np.int64), np.zeros(k, np.int64)
    least[used] = np.minimum.reduceat(offset, edges[used])
    most[used] = np.maximum.reduceat(offset, edges[used])
    keep = None
    for j in used[(least[used] < low[used]) | (most[used] >= high[used])].tolist():
        lo, hi = int(edges[j]), int(edges[j + 1])
        first, end = task_span(offset[lo:hi], tasks[j])
        if first or end < hi - lo:
            if keep is None:
                keep = np.ones(len(offset), bool)
            keep[lo:lo + first] = False
            keep[lo + end:hi] = False
    return recs if keep is None else recs.filter(keep)


_INT64_MIN, _INT64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)


class _TableBuffer:
    """The batch table of a piece, filled group by group into columns sized once from the first
    group's batches per byte and the bytes expected (grown if more come): no concatenation at the
    end (which would hold the table twice)."""

    _SLACK = 1.05

    def __init__(self, expected_bytes):
        self.expected = expected_bytes
        self.cols = None
        self.n = 0

    def add(self, table, nbytes, **replace):
        rows = len(table["position"])
        if not rows:
            return
        # (the payload columns are the kernel's, not the result's)
        cols = {name: col for name, col in dict(table, **replace).items() if not name.startswith("payload_")}
        if self.cols is None:
            cap = rows
            if self.expected is not None and nbytes:
                cap = max(rows, int(rows * self.expected / nbytes * self._SLACK) + 16)
            self.cols = {name: np.empty(cap, col.dtype) for name, col in cols.items()}
        cap = len(self.cols["position"])
        if self.n + rows > cap:
            cap = max(self.n + rows, cap * 3 // 2)
            for name, col in self.cols.items():
                grown = np.empty(cap, col.dtype)
                grown[:self.n] = col[:self.n]
                self.cols[name] = grown
        for name, col in cols.items():
            self.cols[name][self.n:self.n + rows] = col
        self.n += rows

    def columns(self):
        """The filled columns (with the unit and segment of each batch)."""
        if self.cols is None:
            table = _empty_table()
            table.update(unit=np.zeros(0, np.int64), segment=np.zeros(0, np.int64))
            return table
        return {name: col[:self.n] for name, col in self.cols.items()}


def _empty_table():
    table, _ = scan_ranges(np.zeros(0, np.uint8), [], [])
    return table


def _labelled(recs, units, batch_unit, segment):
    """The piece's Records as ``Records.concat`` of its units' reads labels them: per-record partition,
    topic and log dir; batch table with ``segment`` and ``partition``; control records' batch numbers
    as int64."""
    partitions = np.fromiter((-1 if u.partition is None else u.partition for u in units), np.int32, len(units))
    rec_unit = batch_unit[recs.batch_index]
    partition = partitions[rec_unit]
    cols = {name: recs.batches[name] for name in recs.batches.columns}
    tagged = {"segment": segment, "partition": partitions[batch_unit]}
    # (an empty partition's read has no segment column: the first unit's read decides their order)
    order = ("partition", "segment") if not units[0].tasks else ("segment", "partition")
    for name in order:
        if name == "partition" or any(u.tasks for u in units):
            cols[name] = tagged[name]
    controls = recs.controls
    if len(controls):
        controls = controls.with_column("batch_index", controls["batch_index"].astype(np.int64))
    report = [e for u in units for e in u.report]
    return recs.replace(topic=_labels([u.topic for u in units], rec_unit),
                        log_dir=_labels([u.log_dir for u in units], rec_unit),
                        partition=None if len(partition) and (partition == -1).all() else partition, batches=Table(cols),
                        controls=controls, report=report)


class BulkPiece:
    """The records of a piece read in bulk, unlabelled (``records``: every unit's, in order), with what tells
    its units' tasks apart, shared by the `UnitChunks` of its units. A task is a run of batches of one unit and
    one segment (a unit's tasks are its segments, in order, each holding a batch at least).

    Attributes
    ----------
    records : Records
        The piece's records and batches, as the kernel gave them (no labels).
    units : list of Unit
        The piece's units, in order.
    segment : numpy.ndarray
        The base offset of each batch's segment.
    task_edges, record_edges : numpy.ndarray
        Where each task's batches (records) start in the piece, and the end (one more than the tasks).
    task_unit : numpy.ndarray
        The unit of each task (its index in ``units``).
    unit_edges : numpy.ndarray
        Where each unit's tasks start, and the end (one more than the units).
    memo : dict
        What a consumer works out once for the whole piece (`kafkafmt.report.figures`: its figures).
    """

    def __init__(self, records, units, batch_unit, segment):
        self.records = records
        self.units = units
        self.segment = segment
        self.memo = {}
        self._cols = None
        self.task_edges = _task_edges(batch_unit, segment)
        self.task_unit = np.asarray(batch_unit, np.int64)[self.task_edges[:-1]]
        self.record_edges = np.searchsorted(records.batch_index, self.task_edges).astype(np.int64)
        self.unit_edges = np.searchsorted(self.task_unit, np.arange(len(units) + 1)).astype(np.int64)

    def _columns(self):
        """The piece's batch columns and its records' key, value and headers columns (each unit's chunks slice
        them), looked up once for all its units."""
        if self._cols is None:
            recs = self.records
            self._cols = ({name: recs.batches[name] for name in recs.batches.columns},
                          {name: recs.decoded(name) for name in ("key", "value", "headers")})
        return self._cols

    def chunks(self, j):
        """The chunks of unit ``j``: one `Records` per task (segment) as `kafkafmt.log._taskreader.read_task`
        yields it -- the task's batches (with their ``segment``), its records and control records numbered
        within it, labelled with the unit's topic, partition and log dir, its file and valid bytes (the whole
        segment), ``report`` the unit's."""
        recs, unit = self.records, self.units[j]
        first, end = int(self.unit_edges[j]), int(self.unit_edges[j + 1])
        edges = self.task_edges[first:end + 1].tolist()
        rec_edges = self.record_edges[first:end + 1].tolist()
        controls = recs.controls
        ctl_edges = np.searchsorted(controls["batch_index"], edges).tolist() if len(controls) else None
        bidx = recs.batch_index
        columns, sides = self._columns()
        out = []
        for k, task in enumerate(unit.tasks):
            lo, hi, r_lo, r_hi = edges[k], edges[k + 1], rec_edges[k], rec_edges[k + 1]
            batches = {name: col[lo:hi] for name, col in columns.items()}
            batches["segment"] = self.segment[lo:hi]
            ctl = controls
            if ctl_edges is not None:
                ctl = Table({name: controls[name][ctl_edges[k]:ctl_edges[k + 1]] for name in controls.columns})
                ctl = ctl.with_column("batch_index", ctl["batch_index"] - np.int32(lo))
            out.append(recs.replace(
                offset=recs.offset[r_lo:r_hi], timestamp=recs.timestamp[r_lo:r_hi],
                timestamp_type=recs.timestamp_type[r_lo:r_hi], batch_index=(bidx[r_lo:r_hi] - lo).astype(np.int32),
                **{name: None if col is None else col[r_lo:r_hi] for name, col in sides.items()},
                batches=Table(batches), controls=ctl, topic=unit.topic, partition=unit.partition,
                log_dir=unit.log_dir, report=unit.report, file=task.segment.url, valid_bytes=task.stop_pos,
                trailing_bytes=0, tail=None))
        return out

    def unit_records(self, j):
        """The records of unit ``j`` as one `Records`: what ``Records.concat`` of its `chunks` gives (without a
        Records made per task), with the end of its log as its last chunk says it (its file and valid bytes);
        None when it has no task. Its ``report`` is the unit's."""
        first, end = int(self.unit_edges[j]), int(self.unit_edges[j + 1])
        if end - first <= 1:
            return self.chunks(j)[0] if end > first else None
        recs, unit = self.records, self.units[j]
        lo, hi = int(self.task_edges[first]), int(self.task_edges[end])
        r_lo, r_hi = int(self.record_edges[first]), int(self.record_edges[end])
        columns, sides = self._columns()
        batches = {name: col[lo:hi].copy() for name, col in columns.items()}
        batches["segment"] = self.segment[lo:hi].copy()
        controls = recs.controls
        if len(controls):
            c_lo, c_hi = np.searchsorted(controls["batch_index"], [lo, hi]).tolist()
            controls = Table({name: controls[name][c_lo:c_hi] for name in controls.columns})
            if len(controls):       # (as Records.concat numbers them: int64, from the unit's first batch)
                controls = controls.with_column("batch_index", controls["batch_index"].astype(np.int64) - lo)
        batch_index = np.empty(r_hi - r_lo, np.int32)
        np.subtract(recs.batch_index[r_lo:r_hi], lo, out=batch_index, casting="unsafe")
        last = unit.tasks[-1]
        return recs.replace(
            offset=recs.offset[r_lo:r_hi].copy(), timestamp=recs.timestamp[r_lo:r_hi].copy(),
            timestamp_type=recs.timestamp_type[r_lo:r_hi].copy(), batch_index=batch_index,
            **{name: None if col is None else type(col).concat([col[r_lo:r_hi]]) for name, col in sides.items()},
            batches=Table(batches), controls=controls, topic=unit.topic, partition=unit.partition,
            log_dir=unit.log_dir, report=unit.report, file=last.segment.url, valid_bytes=last.stop_pos,
            trailing_bytes=0, tail=None)


class UnitChunks:
    """The chunks of one unit of a `BulkPiece` (an iterator, as a read's generator; the `Records` are made
    when first asked for): ``piece`` and ``index`` (the unit's in the piece) let a consumer that works on the
    whole piece at once (`kafkafmt.report.figures`) take the unit's share of it without them."""

    __slots__ = ("piece", "index", "_it")

    def __init__(self, piece, index):
        self.piece = piece
        self.index = index
        self._it = None

    @property
    def started(self):
        """Whether a chunk was asked for."""
        return self._it is not None

    def __iter__(self):
        return self

    def __next__(self):
        if self._it is None:
            self._it = iter(self.piece.chunks(self.index))
        return next(self._it)


def _labels(names_of_units, rec_unit):
    """`Labels` of records whose units are named ``names_of_units``, as `Labels.concat` makes them (names in
    order of first appearance; one name: no codes)."""
    names, codes_of = [], {}
    unit_code = np.empty(len(names_of_units), np.int32)
    for j, name in enumerate(names_of_units):
        code = codes_of.get(name)
        if code is None:
            code = codes_of[name] = len(names)
            names.append(name)
        unit_code[j] = code
    if names == [None]:
        return Labels()
    if len(names) == 1:
        return Labels(names)
    return Labels(names, unit_code[rec_unit])
