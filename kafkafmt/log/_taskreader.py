"""Reading what the planner planned: `read_task` streams one `kafkafmt.log._planner.Task` in chunks of
about ``max_bytes`` of decoded data, `read_tasks` a partition's tasks in order (each batch's offsets
checked against the batch before it, across segments).
"""
from __future__ import annotations

import numpy as np

from kafkafmt.record import DecodeOptions
from kafkafmt.errors import CorruptRecordError
from kafkafmt.log._framing import entry_size_at, whole_entries_end
from kafkafmt.log._ranges import read_range
from kafkafmt.log._transactions import committed_mask

__all__ = ["read_task", "read_tasks", "WHOLE_RANGE_RATIO"]


WHOLE_RANGE_RATIO = 64   # decoded bytes per stored byte no real batch exceeds (read_task's first chunk)


def read_task(task, report, *, options=None, errors="strict", max_bytes=64 << 20, after=None):
    """Yield the records of one task in chunks of about `max_bytes` of decoded data (the first
    chunk is one batch; later ones are sized from what the previous chunk showed). Headers are
    scanned window by window, so pages beyond the chunk are not touched; consumed pages leave
    this process's memory. `after`: the last offset read before this task (offsets must increase).
    Each chunk is (records, last offset read)."""
    options = DecodeOptions() if options is None else options
    seg = task.segment
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
            recs, resume = read_range(seg, f, pos, chunk_stop, report, options=options, errors=errors, limit=stop,
                                      after=after, following=task.following if chunk_stop >= f.size else None)
            if recs.tail == "truncated" and not task.is_last and stop == f.size and errors == "strict":
                # a cut-off tail is the end of data only at the end of the log: here segments follow
                raise CorruptRecordError("segment ends inside a batch although later segments follow "
                                         "(use errors='salvage' to read past it)", file=seg.log,
                                         position=recs.valid_bytes)
            if len(recs.batches):
                after = max(int(recs.batches.last_offset[-1]), after if after is not None else -1)
            decoded = (recs.key.nbytes if options.keys else 0) + (recs.value.nbytes if options.values else 0) \
                + 40 * len(recs)
            ratio = max(decoded / max(chunk_stop - pos, 1), 0.05)
            pos = resume if recs.tail is None else stop
            recs = recs.replace(batches=recs.batches.with_column(
                "segment", np.full(len(recs.batches), seg.base_offset, np.int64)),
                topic=task.topic, partition=task.partition, log_dir=task.log_dir, report=report)
            yield _select(recs, task), after
            # once the consumer is done with the chunk (it may read values where they lie: binary="view",
            # typed values decoded from views)
            released = f.release(released, pos)


def _select(recs, task):
    """The records of a decoded range that the task keeps: its offset range, committed only."""
    lo = 0 if task.start_offset is None else int(np.searchsorted(recs.offset, task.start_offset, side="left"))
    hi = len(recs) if task.end_offset is None else int(np.searchsorted(recs.offset, task.end_offset, side="left"))
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
