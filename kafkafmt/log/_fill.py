"""A range of offsets the copy read cannot give intact, read from another copy of the partition that holds it
intact -- as Kafka would serve those offsets from another replica.

`fill` is asked by the task reader (`kafkafmt.log._taskreader.read_task`) for a stretch it met damaged (a CRC
mismatch, broken framing, a segment cut off while later segments follow): offsets ``lo`` .. ``hi - 1`` (``hi``
None: to the log's end). Another copy (one of the task's ``alternates``, the same incarnation) serves them when

* it agrees with the copy read around the stretch: its batch ending at ``lo - 1`` is the same batch (base and
  last offset, CRC) as the copy read's last intact batch before it, and its batch starting at ``hi`` the same as
  the copy read's first intact batch after it (where the copy read has them) -- so both are one history, not a
  diverged one -- and
* its own batches in between read intact (CRCs checked).

The first copy that does gives the records; none: the stretch stays damage, as with one copy.
"""
from __future__ import annotations

import numpy as np

from kafkafmt.errors import KafkafmtError
from kafkafmt.log._framing import scan_range

__all__ = ["fill", "batch_mark_of"]

_SCAN_STEP = 1 << 20          # bytes of batch headers scanned at a time around a stretch


def batch_mark_of(table, i):
    """(base offset, last offset, CRC) of row ``i`` of a batch table: what tells one batch in two copies."""
    return int(table["base_offset"][i]), int(table["last_offset"][i]), int(table["crc"][i])


def _marks(part, lo, hi):
    """{base offset: mark} and {last offset: mark} of a copy's batches around [lo - 1, hi] (headers only, from
    the segment holding ``lo - 1`` found through its offset index), None when it cannot be scanned."""
    segs = part.list_segments()
    if not segs:
        return None
    bases = [s.base_offset for s in segs]
    k = max(0, int(np.searchsorted(bases, max(lo - 1, 0), side="right")) - 1)
    by_base, by_last = {}, {}
    try:
        for seg in segs[k:]:
            if hi is not None and seg.base_offset > hi:
                break
            with seg.open() as f:
                pos = seg.position_for_offset(f, lo - 1, []) if lo > seg.base_offset else 0
                while pos < f.size:
                    t, info = scan_range(f, pos, min(f.size, pos + _SCAN_STEP))
                    for i in range(info["count"]):
                        m = batch_mark_of(t, i)
                        by_base[m[0]], by_last[m[1]] = m, m
                    if info["error"] is not None or info["count"] == 0:
                        break
                    if hi is not None and int(t["last_offset"][info["count"] - 1]) >= hi:
                        break
                    pos = int(info["valid_bytes"])
    except (KafkafmtError, OSError):
        return None
    return by_base, by_last


def fill(alternates, lo, hi, before, after, read):
    """Records of offsets [``lo``, ``hi``) from the first of ``alternates`` that holds them intact and agrees
    with the copy read around them.

    Parameters
    ----------
    alternates : sequence of Partition
        The other copies of the partition (the same incarnation).
    lo, hi : int, int or None
        The stretch: the first offset missing, the first offset after it (None: to the log's end).
    before, after : tuple or None
        The copy read's intact batches around the stretch, as `batch_mark_of` gives them (None: it has none
        there).
    read : callable
        ``read(partition, lo, hi)`` -> the records of [lo, hi) of a copy, read strictly (raises on damage).

    Returns
    -------
    (records, Partition) or (None, None)
    """
    for alt in alternates:
        marks = _marks(alt, lo, hi)
        if marks is None:
            continue
        by_base, by_last = marks
        if before is not None and by_last.get(lo - 1) != before:
            continue
        if hi is not None:
            if after is not None and by_base.get(hi) != after:
                continue
            if after is None and hi not in by_base:
                continue
        try:
            recs = read(alt, lo, hi)
        except (KafkafmtError, OSError):
            continue
        return recs, alt
    return None, None
