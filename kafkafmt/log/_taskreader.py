"""Reading what the planner planned: `read_task` streams one `kafkafmt.log._planner.Task` in chunks of
about ``max_bytes`` of decoded data, `read_tasks` a partition's tasks in order (each batch's offsets
checked against the batch before it, across segments).

Each offset is read once, from a copy that holds it intact:

* a stretch of the segment that cannot be read intact -- a CRC mismatch, broken framing, a segment cut off
  while later segments follow -- is read from another copy of the partition (the task's ``alternates``,
  `kafkafmt.log._fill`) when one holds it intact; `ReportKind.FROM_COPY` says so, and the batch table marks
  the batches read there (its ``from_copy`` column, present only then). Without one it is damage, as ever:
  strict reads raise, salvaging reads skip and report it.
* batches of a segment that the next segment holds again (a stray copy of part of a segment saved as a
  segment of its own: the same offsets in two files) are read once, from the next segment, when both hold the
  same batches (`ReportKind.DUPLICATE`; they stay in the batch table, marked by its ``duplicate`` column --
  present only then -- with none of their records); when they differ, which records the offsets hold cannot be
  told: strict reads raise, salvaging reads report it (`ReportKind.MISMATCH`) and keep the next segment's.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from kafkafmt.record import DecodeOptions, Records, offset_sequence_error
from kafkafmt.errors import CorruptRecordError, KafkafmtError
from kafkafmt.log._fill import batch_mark_of, covered, fill, fill_batches, fill_gaps, holes_in as _holes
from kafkafmt.log._framing import entry_size_at, scan_range, whole_entries_end
from kafkafmt.log._notes import ReportEntry, ReportKind, spans_text
from kafkafmt.log._planner import plan
from kafkafmt.log._ranges import read_range
from kafkafmt.log._transactions import committed_mask

__all__ = ["read_task", "read_tasks", "task_span", "WHOLE_RANGE_RATIO"]


WHOLE_RANGE_RATIO = 64   # decoded bytes per stored byte no real batch exceeds (read_task's first chunk)


def read_task(task, report, *, options=None, errors="strict", max_bytes=64 << 20, after=None):
    """Yield the records of one task in chunks of about `max_bytes` of decoded data (the first
    chunk is one batch; later ones are sized from what the previous chunk showed). Headers are
    scanned window by window, so pages beyond the chunk are not touched; consumed pages leave
    this process's memory. `after`: the last offset read before this task (offsets must increase).
    Each chunk is (records, last offset read)."""
    options = DecodeOptions() if options is None else options
    seg = task.segment
    alternates = task.alternates or ()
    mark = None                 # the last intact batch read (base, last offset, CRC): a fill's anchor
    pending = list(task.fills)  # stretches this copy lacks, read from another: each where its offsets fall
    with seg.open() as f:
        pos, stop = task.start_pos, min(task.stop_pos, f.size)
        ratio = float("inf")
        released = 0
        while pos < stop:
            if ratio != float("inf"):
                budget = int(max_bytes / max(ratio, 1.0))
            else:   # nothing decoded yet: one batch shows the ratio, unless any ratio would fit anyway
                budget = stop - pos if max_bytes >= (stop - pos) * WHOLE_RANGE_RATIO else 0
            count, chunk_stop = whole_entries_end(f, pos, min(stop, pos + budget))
            if not count:   # the next batch alone exceeds the budget (or a tail / corruption follows)
                size = entry_size_at(f, pos) if pos + 12 <= stop else -1
                chunk_stop = pos + 12 + size if 0 < size and pos + 12 + size <= stop else stop
            if stop - chunk_stop < 12:
                chunk_stop = stop
            following = task.following if chunk_stop >= f.size else None
            # batches the next segment holds again (a stray copy of part of this segment saved as its own):
            # found by their headers before decoding, so that the next segment's name does not blame them
            nxt = _next_holds(task, f, pos, chunk_stop, after) if task.next_segment is not None else None
            if nxt is not None:
                following = None if nxt[0] else nxt[1]
            if alternates:
                own = []
                recs, resume = read_range(seg, f, pos, chunk_stop, own, options=options, errors="salvage",
                                          limit=stop, after=after, following=following)
                recs, own, filled = _mend(task, f, recs, own, after, mark, options)
                if filled and pending:          # (gaps of this copy inside a stretch read with the damage)
                    pending = _without(pending, filled)
                if errors == "strict" and any(e.kind is ReportKind.CORRUPT for e in own):
                    # damage no copy holds intact: what the strict read of the chunk raises
                    read_range(seg, f, pos, chunk_stop, None, options=options, errors="strict", limit=stop,
                               after=after, following=following)
                if report is not None:
                    report += own
            else:
                recs, resume = read_range(seg, f, pos, chunk_stop, report, options=options, errors=errors,
                                          limit=stop, after=after, following=following)
            if recs.tail == "truncated" and not task.is_last and stop == f.size and errors == "strict":
                # a cut-off tail is the end of data only at the end of the log: here segments follow
                raise CorruptRecordError("segment ends inside a batch although later segments follow "
                                         "(use errors='salvage' to read past it)", file=seg.log,
                                         position=recs.valid_bytes)
            if nxt is not None and nxt[0] and len(recs.batches):
                recs = _overlap(task, recs, nxt[2], report, errors)
            lasts = np.asarray(recs.batches.last_offset, np.int64)
            if "duplicate" in recs.batches.columns:       # (read from the next segment: not read here)
                lasts = np.where(np.asarray(recs.batches["duplicate"], bool), -1, lasts)
            if len(lasts) and lasts.max() >= 0:
                last = int(np.argmax(lasts))
                after = max(int(lasts[last]), after if after is not None else -1)
                mark = batch_mark_of(recs.batches, last)
            if pending and len(lasts):
                # stretches this copy lacks below this chunk's last batch (after and mark stay this copy's)
                top = int(lasts.max())
                due = [p for p in pending if p[1] <= top]
                if due:
                    pending = [p for p in pending if p[1] > top]
                    recs = _read_gaps(task, due, report, options, recs)
            decoded = (recs.key.nbytes if options.keys else 0) + (recs.value.nbytes if options.values else 0) \
                + 40 * len(recs)
            ratio = max(decoded / max(chunk_stop - pos, 1), 0.05)
            pos = resume if recs.tail is None else stop
            yield _select(_labelled(recs, task, report), task), after
            # once the consumer is done with the chunk (it may read values where they lie: binary="view",
            # typed values decoded from views)
            released = f.release(released, pos)
    if pending:                 # stretches after this segment's last batch read (before the next segment's)
        recs = _read_gaps(task, pending, report, options)
        if recs is not None:
            after = max(max(hi for _, _, hi in pending) - 1, after if after is not None else -1)
            yield _select(_labelled(recs, task, report), task), after


def _labelled(recs, task, report):
    """A chunk of a task as it is yielded: its batches' segment (the task's), topic, partition, log dir, report."""
    return recs.replace(batches=recs.batches.with_column(
        "segment", np.full(len(recs.batches), task.segment.base_offset, np.int64)),
        topic=task.topic, partition=task.partition, log_dir=task.log_dir, report=report)


def _read_gaps(task, fills, report, options, recs=None):
    """The records of a chunk (``recs``; None: none) with those of stretches this copy lacks (``fills``: (gap,
    first, end) of `kafkafmt.log._planner.Task.fills`) read from other copies, in offset order -- their batches
    marked ``from_copy``; one `ReportKind.GAP_FROM_COPY` per copy read from, one `ReportKind.GAP` for the
    stretches no copy gives intact now. A copy's stretches are checked and read at once (`fill_gaps`). None
    when there are no records at all."""
    where = task.segment.url
    got, missing = fill_gaps(task.alternates, fills, _read_copy(task, options, own_isolation=False))
    lacked = ("(gaps between its batches)" if len(fills) > 1
              else "(before its first batch, from its log start offset on)" if fills[0][0].before is None
              else "(a gap between two of its batches)")
    got_all = []
    for part_recs, copy, spans in got:
        part_recs = _in_spans(part_recs, spans)
        b = part_recs.batches
        got_all.append(part_recs.replace(batches=b.with_column("from_copy", np.ones(len(b), bool)),
                                         log_dir=task.log_dir))
        if report is not None:
            # (the offsets its batches cover: a copy may hold a stretch in part -- its log ends inside it)
            held = covered(np.asarray(b.base_offset, np.int64), np.asarray(b.last_offset, np.int64), spans) or spans
            report.append(ReportEntry(ReportKind.GAP_FROM_COPY, where,
                                      f"offsets {spans_text(held)} read from the copy in {copy.url} ({len(part_recs)} "
                                      f"records): this copy lacks them {lacked}", offset=held[0][0]))
    if missing and report is not None:
        report.append(ReportEntry(ReportKind.GAP, where,
                                  f"offsets {spans_text(missing)} are not in this copy, and no other copy gives them "
                                  f"intact now: another copy held them when the copies were compared",
                                  offset=missing[0][0]))
    if not got_all:
        return recs
    if recs is None:
        merged = Records.concat(got_all)
        return merged.take(np.argsort(merged.offset, kind="stable"))
    merged = Records.concat([recs] + got_all)
    order = np.argsort(merged.offset, kind="stable")
    return merged.take(order).replace(tail=recs.tail, trailing_bytes=recs.trailing_bytes,
                                      valid_bytes=recs.valid_bytes)


def _in_spans(recs, spans):
    """The records of a read of another copy whose offsets fall in the stretches (sorted [lo, hi) pairs), with
    only the batches holding offsets of them (`_own_batches`)."""
    starts = np.array([lo for lo, _ in spans], np.int64)
    ends = np.array([hi for _, hi in spans], np.int64)
    off = np.asarray(recs.offset, np.int64)
    i = np.searchsorted(starts, off, side="right") - 1
    recs = recs.filter((i >= 0) & (off < ends[np.maximum(i, 0)]))
    b = recs.batches
    base, last = np.asarray(b.base_offset, np.int64), np.asarray(b.last_offset, np.int64)
    j = np.searchsorted(starts, last, side="right") - 1       # the last stretch starting at or below its end
    keep = (j >= 0) & (base < ends[np.maximum(j, 0)])
    return _own_batches(recs, keep)


def _own_batches(recs, keep):
    """The records with only the batches ``keep`` marks in their batch table (a read of another copy decodes whole
    chunks: its other batches are not read from it); every record is in such a batch."""
    b = recs.batches
    if keep.all():
        return recs
    rows = np.flatnonzero(keep)
    remap = np.full(len(keep), -1, np.int32)
    remap[rows] = np.arange(len(rows), dtype=np.int32)
    ctl = recs.controls
    if len(ctl):
        own = keep[np.asarray(ctl["batch_index"], np.int64)]
        ctl = ctl[own]
        ctl = ctl.with_column("batch_index", remap[np.asarray(ctl["batch_index"], np.int64)])
    return recs.replace(batches=b[rows], batch_index=remap[np.asarray(recs.batch_index, np.int64)], controls=ctl)


def task_span(offsets, task):
    """``(first, end)``: the rows of ``offsets`` (a task's records as decoded, in their order) that the task's offset
    range keeps -- from the first at or above its start offset, before the first at or above its end offset (a
    binary search of each bound, as the records come); ``end`` not below ``first``."""
    first = 0 if task.start_offset is None else int(np.searchsorted(offsets, task.start_offset, side="left"))
    end = len(offsets) if task.end_offset is None else int(np.searchsorted(offsets, task.end_offset, side="left"))
    return first, max(first, end)


def _select(recs, task):
    """The records of a decoded range that the task keeps: its offset range (`task_span`), committed only."""
    lo, hi = task_span(recs.offset, task)
    recs = recs[lo:hi]
    if task.aborted is not None:
        recs = recs.filter(committed_mask(recs, task.aborted, task.lso))
    return recs


def read_tasks(tasks, report, options, errors="strict", max_bytes=64 << 20, after=None):
    """(records, last offset read) of the tasks' chunks, in order, one task after the other (`after`:
    the last offset read before the first task)."""
    for task in tasks:
        for recs, after in read_task(task, report, options=options, errors=errors, max_bytes=max_bytes,
                                     after=after):
            yield recs, after


def _read_copy(task, options, own_isolation=True):
    """``read(copy, lo, hi, salvage=False)`` for the fills of `kafkafmt.log._fill`: the records of [lo, hi) of
    another copy, planned as the task's read (its isolation; ``own_isolation`` False: every record -- a gap's
    records are kept as the task keeps its own, by the transactions of the copy read and of every stretch read
    into its gaps) and read strictly (``salvage``: its intact batches only)."""
    isolation = "read_committed" if task.aborted is not None and own_isolation else "read_uncommitted"

    def read(part, lo, hi, salvage=False):
        tasks = [t for t in (_narrowed(t, lo, hi) for t in plan(part, start_offset=lo, end_offset=hi,
                                                                isolation=isolation)) if t is not None]
        parts = [recs for recs, _ in read_tasks(tasks, None, options, "salvage" if salvage else "strict",
                                                max_bytes=1 << 62)]
        return Records.concat(parts) if parts else None
    return read


def _narrowed(task, lo, hi):
    """A task of another copy cut to the batches holding offsets of [lo, hi) (found by their headers, CRCs not
    judged): damage in that copy outside the stretch -- which the offset index's coarse positions would take
    in -- is not read. None: no batch of it holds such an offset."""
    with task.segment.open() as f:
        t, info = scan_range(f, task.start_pos, min(task.stop_pos, f.size))
    n = info["count"]
    if info["error"] is not None and n == 0:
        return task                     # damaged where it starts: the strict read says so
    base, last = np.asarray(t["base_offset"][:n], np.int64), np.asarray(t["last_offset"][:n], np.int64)
    rows = np.flatnonzero((last >= lo) & ((base < hi) if hi is not None else True))
    if not len(rows):
        return task if info["error"] is not None else None
    start = int(t["position"][rows[0]])
    stop = int(t["position"][rows[-1]]) + int(t["size"][rows[-1]])
    if info["error"] is not None and (hi is None or int(last.max()) < hi - 1):
        stop = task.stop_pos            # its framing breaks before the stretch ends: the strict read says so
    return dataclasses.replace(task, start_pos=start, stop_pos=stop)


def _mend(task, f, recs, entries, after, mark, options):
    """The records of a chunk read salvaging, each damaged stretch (`ReportKind.CORRUPT`, a cut-off tail while
    later segments follow) read from another copy where one holds it intact; returns (records, report entries:
    the fills said as `ReportKind.FROM_COPY`, the rest as they were)."""
    seg = task.segment
    out, fills, filled = [], [], []
    for e in entries:
        cut_off = e.kind is ReportKind.TRUNCATED
        if e.kind is not ReportKind.CORRUPT and not cut_off:
            out.append(e)
            continue
        b = recs.batches
        pos = np.asarray(b.position, np.int64)
        before_rows = np.flatnonzero(pos < e.start)
        after_rows = np.flatnonzero(pos >= (e.end if e.end is not None else f.size))
        if len(before_rows):
            i = int(before_rows[np.argmax(np.asarray(b.last_offset)[before_rows])])
            before = batch_mark_of(b, i)
            lo = before[1] + 1
        elif mark is not None:
            before, lo = mark, mark[1] + 1
        else:
            before = None
            lo = seg.base_offset if after is None else max(after + 1, seg.base_offset)
        after_mark, hi = _after_stretch(task, f, b, after_rows, e)
        if hi is not None and hi <= lo:
            out.append(e)
            continue
        reader = _read_copy(task, options)
        claimed, marks = _claimed(f, e, lo, hi)
        gots = []               # (records, the copy they came from)
        got, copy = fill(task.alternates, lo, hi, before, after_mark, reader)
        if got is not None:
            gots.append((got, copy))
        left = _uncovered(gots, claimed)
        if left and marks:
            # the batches the damaged headers name that no copy gave between the same batches (it lacks some of
            # them, or batches around them): from a copy holding those very batches, each run of them
            for run in _runs(marks, left):
                got, copy = fill_batches(task.alternates, run, reader)
                if got is not None:
                    gots.append((got, copy))
                if len(run) > 1:        # (what no copy gives intact of them all: each batch on its own)
                    still = _uncovered(gots, [(m[0], m[1] + 1) for m in run])
                    for m in (m for r in _runs(run, still) for m in r):
                        got, copy = fill_batches(task.alternates, [m], reader)
                        if got is not None:
                            gots.append((got, copy))
            left = _uncovered(gots, claimed)
        if not gots:
            out.append(e)
            continue
        if left:
            out.append(e)       # (offsets the damaged batches held that no copy gives intact: still damage)
        for got, copy in gots:
            b = got.batches
            gb, gl = np.asarray(b.base_offset, np.int64), np.asarray(b.last_offset, np.int64)
            got = _own_batches(got, (gl >= lo) & ((gb < hi) if hi is not None else True))
            fills.append(got.replace(batches=got.batches.with_column("from_copy", np.ones(len(got.batches), bool))))
            # (what its batches cover of the stretch: offsets of it the copy read lacks anyway, and the other copy
            # too, are still asked of the copies holding them, as gaps)
            held = covered(gb, gl, [(lo, hi if hi is not None else max(int(gl.max(initial=lo)) + 1, lo + 1))])
            filled += held
            span = spans_text(held)
            out.append(ReportEntry(ReportKind.FROM_COPY, e.file,
                                   f"offsets {span} read from the copy in {copy.url}: this copy is damaged there "
                                   f"({e.message})", e.start, e.end, lo))
        if e.kind is ReportKind.TRUNCATED and not left:
            recs = recs.replace(tail=None, trailing_bytes=0)
    if not fills:
        return recs, out, filled
    merged = Records.concat([recs] + [r.replace(log_dir=task.log_dir) for r in fills])
    order = np.argsort(merged.offset, kind="stable")
    return merged.take(order).replace(tail=recs.tail, trailing_bytes=recs.trailing_bytes,
                                      valid_bytes=recs.valid_bytes), out, filled


def _uncovered(gots, spans):
    """The stretches of ``spans`` that no batch of the records read (``gots``: (records, copy)) covers."""
    if not gots:
        return list(spans)
    base = np.concatenate([np.asarray(g.batches.base_offset, np.int64) for g, _ in gots])
    last = np.concatenate([np.asarray(g.batches.last_offset, np.int64) for g, _ in gots])
    return _holes(base, last, spans)


def _runs(marks, spans):
    """The runs of consecutive ``marks`` (base, last, CRC) lying wholly inside one of ``spans``."""
    runs, run = [], []
    for m in marks:
        if any(lo <= m[0] and m[1] < hi for lo, hi in spans):
            run.append(m)
        elif run:
            runs.append(run)
            run = []
    return runs + ([run] if run else [])


def _claimed(f, e, lo, hi):
    """What the batches of a damaged byte range (report entry ``e``) say they hold, by their headers: (the
    stretches of [lo, hi) -- the offsets a fill must give; the first offset alone when the framing gives none --,
    their marks in log order when they lie within [lo, hi) in offset order, else [])."""
    end = e.end if e.end is not None else f.size
    t, info = scan_range(f, e.start, end)
    n = info["count"]
    top = hi if hi is not None else np.iinfo(np.int64).max
    base, last = np.asarray(t["base_offset"][:n], np.int64), np.asarray(t["last_offset"][:n], np.int64)
    spans = sorted((max(lo, b), min(top, z + 1)) for b, z in zip(base.tolist(), last.tolist()) if z >= lo and b < top)
    plausible = n and base[0] >= lo and last[-1] < top and (base <= last).all() and (base[1:] > last[:-1]).all()
    return spans or [(lo, lo + 1)], [batch_mark_of(t, i) for i in range(n)] if plausible else []


def _without(pending, filled):
    """The stretches still to read of ``pending`` ((gap, first, end)) once the stretches ``filled`` ((lo, hi)) were
    read with a damaged stretch."""
    out = []
    for g, a, z in pending:
        parts = [(a, z)]
        for lo, hi in filled:
            parts = [q for x, y in parts for q in ((x, min(y, lo)), (max(x, hi), y)) if q[0] < q[1]]
        out += [(g, x, y) for x, y in parts]
    return out


def _after_stretch(task, f, b, after_rows, e):
    """(mark of the copy read's first intact batch after a damaged stretch or None, the first offset after the
    stretch or None: to the log's end)."""
    if len(after_rows):
        i = int(after_rows[np.argmin(np.asarray(b.base_offset)[after_rows])])
        m = batch_mark_of(b, i)
        return m, m[0]
    end = e.end if e.end is not None else f.size
    if end < f.size:
        t, info = scan_range(f, end, min(f.size, end + (64 << 10)))
        if info["count"]:
            m = batch_mark_of(t, 0)
            return m, m[0]
    return None, task.following


def _next_holds(task, f, start, stop, after):
    """Whether the next segment holds offsets of [start, stop) of this one again: None when no batch there
    reaches the next segment's name (the usual case: one header scan) or when one of them is out of sequence
    with the batches around it (a damaged offset field: the decode says it), else (overlap, the next segment's
    first offset, the marks of its batches) -- overlap False for a next segment named below its first batch."""
    t, info = scan_range(f, start, stop)
    n = info["count"]
    if not n or int(np.asarray(t["last_offset"][:n]).max()) < task.following:
        return None
    try:
        with task.next_segment.open() as g:
            theirs, their = scan_range(g, 0, min(g.size, max(stop - start, 1 << 16)))
    except (OSError, KafkafmtError):
        return None
    if not their["count"]:
        return None
    first = int(theirs["base_offset"][0])
    marks = {batch_mark_of(theirs, i) for i in range(their["count"])}
    base, last = np.asarray(t["base_offset"][:n], np.int64), np.asarray(t["last_offset"][:n], np.int64)
    if first > int(last.max()):
        return False, first, marks          # a next segment named below its first batch: no offset held twice
    twice = np.flatnonzero(last >= first)
    if base[twice].min() >= first and all(batch_mark_of(t, int(i)) in marks for i in twice):
        return True, first, marks           # the same batches in both files
    if offset_sequence_error(base, last, after, [first], trusted_following=True) is not None:
        return None                         # a damaged offset field, not a second file (the decode says it)
    return True, first, marks               # other batches at the same offsets


def _overlap(task, recs, theirs, report, errors):
    """A chunk of a segment whose last batches the next segment holds again (``theirs``: the marks of the next
    segment's batches): read once, from the next segment, when both hold the same batches; else damage
    (strict reads raise)."""
    b = recs.batches
    nxt = task.next_segment
    last = int(np.asarray(b.last_offset).max())
    first = min(m[0] for m in theirs)
    base = np.asarray(b.base_offset, np.int64)
    twice = np.flatnonzero(np.asarray(b.last_offset, np.int64) >= first)
    if not len(twice):
        return recs
    same = all(batch_mark_of(b, int(i)) in theirs for i in twice) and base[twice].min() >= first
    where = f"offsets {int(base[twice].min())}..{last} of {task.segment.url}"
    if same:
        entry = ReportEntry(ReportKind.DUPLICATE, task.segment.url,
                            f"{where} are also in {nxt.url} (the same batches): read once, from {nxt.url}",
                            int(b.position[twice].min()), None, int(base[twice].min()))
    else:
        msg = (f"{where} are also in {nxt.url} with other records: the segments overlap and disagree "
               f"(read from {nxt.url})")
        if errors == "strict":
            raise CorruptRecordError(msg, file=task.segment.url, position=int(b.position[twice].min()),
                                     offset=int(base[twice].min()))
        entry = ReportEntry(ReportKind.MISMATCH, task.segment.url, msg, int(b.position[twice].min()), None,
                            int(base[twice].min()))
    if report is not None:
        report.append(entry)
    # the batches stay in the batch table (they are this file's: its indexes point at them), marked, with no
    # record nor control record of theirs
    held = np.zeros(len(b), bool)
    held[twice] = True
    rows = np.flatnonzero(~held[np.asarray(recs.batch_index, np.int64)])
    kept = recs.take(rows) if len(rows) < len(recs) else recs
    ctl = recs.controls
    if len(ctl):
        ctl = ctl[~held[np.asarray(ctl["batch_index"], np.int64)]]
    return kept.replace(batches=b.with_column("duplicate", held), controls=ctl)
