"""A range of offsets the copy read cannot give intact, or lacks, read from another copy of the partition that
holds it intact -- as Kafka would serve those offsets from another replica.

The task reader (`kafkafmt.log._taskreader.read_task`) asks for offsets ``lo`` .. ``hi - 1`` (``hi`` None: to
the log's end) of

* a stretch it met damaged (a CRC mismatch, broken framing, a segment cut off while later segments follow):
  `fill`, one stretch at a time, and
* `Gap` s: offsets the copy read lacks between two of its intact batches, or before its first from its log start
  offset on (a range a recovery cut from it, batches one broker's log cleaner dropped and another's not yet),
  found before reading by comparing the copies' batch headers (`kafkafmt.log._copies`); the planner gives each to
  the task whose segment its first offset falls in (`kafkafmt.log._planner.Task.fills`): `fill_gaps`, all of a
  chunk's at once.

Another copy (one of the task's ``alternates``, the same incarnation) serves them when

* its records do not differ from the copy read's below ``hi`` (a copy found to diverge from an offset --
  ``Partition.diverges_at`` -- serves only stretches below it);

* it agrees with the copy read around the stretch: its last batch below ``lo`` is ``before`` and its first batch
  from ``hi`` on is ``after``, batches (base and last offset, CRC) the copy read holds too -- so both are one
  history, not a diverged one --, and no batch of it straddles ``lo`` or ``hi`` (a batch holding offsets on both
  sides: the copies are batched apart) -- for a gap, whose copies' records were compared where both hold them
  before, such a batch is taken, its offsets in the gap only; a copy holding no such batches around a gap (it
  lacks them too, or its log ends inside the gap: a follower behind) serves it when its batches there are of the
  leader epoch of the copy read's batch after the gap (`of_epoch`);
* its own batches in between read intact (CRCs checked).

The first copy that does gives the records; none: the stretch stays damage (or missing), as with one copy.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from kafkafmt.errors import KafkafmtError
from kafkafmt.log._framing import scan_range

__all__ = ["fill", "fill_batches", "fill_gaps", "gap_stretches", "batch_mark_of", "covered", "of_epoch",
           "holes_in", "Gap"]

_SCAN_STEP = 1 << 20          # bytes of batch headers scanned at a time around a stretch


class Gap(NamedTuple):
    """Offsets ``lo`` .. ``hi - 1`` a copy lacks that another copy holds records of: ``before`` and ``after``
    are that copy's batches just outside them -- its last below ``lo`` (None: a gap before the copy's first
    batch), its first from ``hi`` on -- which the copy lacking them holds too (their marks, `batch_mark_of`).

    ``epoch``: the leader epoch of the copy's batch after the gap. A copy holding no batch of the copy lacking the
    gap around it (it lacks them too, or its log ends inside the gap) serves the gap when its batches there are of
    that epoch too (`of_epoch`): that epoch's leader wrote them, as it wrote the batch after.

    ``anchors``: ((URL of a copy holding records of the gap, its ``before``, its ``after``), ...) for every copy
    found to hold some (each copy's batches around the gap that the copy lacking it holds too may differ: one
    copy may lack a batch another has there); ``before`` and ``after`` are the first's."""
    lo: int
    hi: int
    before: tuple
    after: tuple
    epoch: int = None
    anchors: tuple = ()

    def around(self, url):
        """(before, after) of the copy at ``url`` (the first copy's when it is not among the anchors)."""
        for u, before, after in self.anchors:
            if u == url:
                return before, after
        return self.before, self.after


def batch_mark_of(table, i):
    """(base offset, last offset, CRC) of row ``i`` of a batch table: what tells one batch in two copies."""
    return int(table["base_offset"][i]), int(table["last_offset"][i]), int(table["crc"][i])


_MARK_COLUMNS = ("base_offset", "last_offset", "crc", "partition_leader_epoch")


def _mark_columns(part, first, hi):
    """The marks of a copy's batches from the one holding offset ``first`` on, up to the first batch reaching
    ``hi`` (headers only, from the segment holding ``first`` found through its offset index), in log order: four
    int64 columns (base offsets, last offsets, CRCs, leader epochs); None when it cannot be scanned."""
    segs = part.list_segments()
    if not segs:
        return None
    bases = [s.base_offset for s in segs]
    k = max(0, int(np.searchsorted(bases, max(first, 0), side="right")) - 1)
    parts = []
    try:
        for seg in segs[k:]:
            if hi is not None and seg.base_offset > hi:
                break
            with seg.open() as f:
                pos = seg.position_for_offset(f, first, []) if first > seg.base_offset else 0
                while pos < f.size:
                    t, info = scan_range(f, pos, min(f.size, pos + _SCAN_STEP))
                    n = info["count"]
                    parts.append([np.asarray(t[c][:n], np.int64) for c in _MARK_COLUMNS])
                    if info["error"] is not None or n == 0:
                        break
                    if hi is not None and int(t["last_offset"][n - 1]) >= hi:
                        break
                    pos = int(info["valid_bytes"])
    except (KafkafmtError, OSError):
        return None
    if not parts:
        return tuple(np.zeros(0, np.int64) for _ in _MARK_COLUMNS)
    return tuple(np.concatenate(cols) for cols in zip(*parts))


def _marks(part, first, hi):
    """`_mark_columns` as a list of (base offset, last offset, CRC, leader epoch), or None."""
    cols = _mark_columns(part, first, hi)
    return None if cols is None else list(zip(*(c.tolist() for c in cols)))


def of_epoch(epochs, i0, i1, epoch):
    """Whether a copy's batches ``i0`` .. ``i1 - 1`` (those holding offsets of a gap; ``epochs`` their leader
    epochs) serve a gap by their epoch alone: some, every one of the gap's ``epoch`` -- that of the copy read's
    batch after the gap: the leader of that epoch wrote them, as it wrote that batch, and it gave each offset
    once (a batch of an older epoch there may be one it truncated) --, whichever batches the copies share around
    it (None: never)."""
    return epoch is not None and i1 > i0 and bool((epochs[i0:i1] == epoch).all())


def _serving(alt, todo):
    """Which stretches of ``todo`` (`fill_gaps` 's entries: (gap, first, end, hole)) copy ``alt`` can give: its
    records do not differ from the copy read's below the gap's end, it holds the gap's ``before`` below it and its
    ``after`` from its end on (its own, `Gap.around`) -- or its batches there are of the gap's epoch
    (`of_epoch`) --, with batches holding offsets of the gap. ((base offsets, last offsets) of
    its batches around them, in offset order; the entries it can give) -- None when it gives none (not scanned,
    or its batches out of offset order: one gap at a time, `fill`)."""
    usable = [f for f in todo if alt.diverges_at is None or f[0].hi <= alt.diverges_at]
    if not usable:
        return None
    marks = [g.around(alt.url) for g, _, _, _ in usable]      # (each copy's batches around a gap)
    first = min(g.lo - 1 if b is None else b[1] for (g, _, _, _), (b, _) in zip(usable, marks))
    last = max(g.hi if z is None else z[0] for (g, _, _, _), (_, z) in zip(usable, marks))
    cols = _mark_columns(alt, first, last)
    if cols is None or not len(cols[0]):
        return None
    base, lasts, crc, epochs = cols
    if (base[1:] <= lasts[:-1]).any():
        return None
    n = len(base)
    gaps = [f[0] for f in usable]
    lo = np.array([g.lo for g in gaps], np.int64)
    hi = np.array([g.hi for g in gaps], np.int64)
    has_before = np.array([b is not None for b, _ in marks])
    has_after = np.array([z is not None for _, z in marks])
    before = np.array([b or (0, 0, 0) for b, _ in marks], np.int64).reshape(-1, 3)
    after = np.array([z or (0, 0, 0) for _, z in marks], np.int64).reshape(-1, 3)
    # its batch ``before`` (batches of other gaps may follow it), or none below a gap before the first batch
    a = np.where(has_before, np.searchsorted(lasts, before[:, 1]), np.searchsorted(lasts, lo) - 1)
    ac = np.clip(a, 0, n - 1)
    before_ok = ~has_before | ((a < n) & (base[ac] == before[:, 0]) & (lasts[ac] == before[:, 1])
                               & (crc[ac] == before[:, 2]))
    z = np.searchsorted(base, hi)                 # its first batch from the gap's end on
    holds = z > np.searchsorted(lasts, lo)        # a batch of it holds offsets of the gap
    k = np.minimum(np.searchsorted(base, after[:, 0]), n - 1)    # its batch ``after`` (gaps' batches may come first)
    # (a copy found to serve a gap by its epoch alone -- no batch named after it -- is asked its epoch again)
    after_ok = has_after & (base[k] == after[:, 0]) & (lasts[k] == after[:, 1]) & (crc[k] == after[:, 2])
    ok = before_ok & holds & (z < n) & after_ok
    # not between those batches (it lacks them, or its log ends inside the gap): by the epoch of its batches there
    i0 = np.searchsorted(lasts, lo)
    for i in np.flatnonzero(holds & ~ok).tolist():
        ok[i] = of_epoch(epochs, int(i0[i]), int(z[i]), gaps[i].epoch)
    chosen = [f for f, yes in zip(usable, ok) if yes]
    return ((base, lasts), chosen) if chosen else None


def _left(todo, done, holes):
    """What is still to read after a copy gave the stretches ``done``: the others, and the ``holes`` (gap, first,
    end, whether no copy giving it is nothing to say) it lacked of those it gave, in offset order."""
    return sorted([f for f in todo if (f[1], f[2]) not in done] + list(holes), key=lambda f: f[1])


def fill_gaps(alternates, fills, read):
    """Records of many `Gap` s' stretches at once: each alternate's batches around them scanned once and checked
    for every gap at once (as `fill` checks one, batches straddling the gap's ends taken), and one read of the
    alternate over them all, its batches kept where they hold offsets of a stretch. What a copy's batches do not
    cover of a stretch (offsets in no batch of it) is asked of the copies after it.

    Parameters
    ----------
    alternates : sequence of Partition
    fills : list of (Gap, int, int)
        Each gap with the offsets [first, end) of it to read, in offset order.
    read : callable
        ``read(partition, lo, hi)`` -> the records of [lo, hi) of a copy, read strictly (raises on damage).

    Returns
    -------
    (list of (records, Partition, list of (int, int))), list of (int, int)
        The records read from each copy with the stretches they fill, and the stretches no copy gives.
    """
    todo = [(g, lo, hi, False) for g, lo, hi in fills]      # (gap, first, end, a hole left by a copy before)
    got = []
    for k, alt in enumerate(alternates):
        if not todo:
            break
        serving = _serving(alt, todo)
        if serving is None:
            continue
        _, chosen = serving
        spans = [(f[1], f[2]) for f in chosen]
        try:
            reads = [(read(alt, spans[0][0], spans[-1][1]), spans, False)]
        except (KafkafmtError, OSError):
            # damage somewhere between: each stretch on its own (one damaged stretch loses only itself), and a
            # damaged one salvaged -- its intact batches taken, the rest asked of the copies after it
            reads = []
            for span in spans:
                recs = None
                if len(spans) > 1:
                    try:
                        recs = read(alt, *span)
                    except (KafkafmtError, OSError):
                        recs = None
                if recs is not None:
                    reads.append((recs, [span], False))
                    continue
                try:
                    reads.append((read(alt, *span, salvage=True), [span], True))
                except (KafkafmtError, OSError):
                    pass
        gap_of = {(f[1], f[2]): f[0] for f in chosen}
        done, holes = set(), []
        for recs, mine, salvaged in reads:
            if recs is not None:
                got.append((recs, alt, mine))
                done.update(mine)
                b = recs.batches
                # (what a salvaged stretch lacks is damage there: said when no copy after it gives it)
                holes += [(gap_of[span], lo, hi, not salvaged) for span, lo, hi in
                          _holes(np.asarray(b.base_offset, np.int64), np.asarray(b.last_offset, np.int64), mine)
                          if salvaged or k + 1 < len(alternates)]
        # (never said missing when no copy covers them: offsets no copy holds may be a cleaner's)
        todo = _left(todo, done, holes)
    return got, [(f_lo, f_hi) for _, f_lo, f_hi, hole in todo if not hole]


def covered(base, last, spans):
    """The runs of offsets of the spans (sorted (lo, hi) pairs) that batches (their ``base`` .. ``last`` offsets)
    cover, as (lo, hi) pairs."""
    out = []
    holes = {}
    for span, a, z in _holes(base, last, spans):
        holes.setdefault(span, []).append((a, z))
    for lo, hi in spans:
        at = lo
        for a, z in holes.get((lo, hi), ()):
            if a > at:
                out.append((at, a))
            at = z
        if at < hi:
            out.append((at, hi))
    return out


def holes_in(base, last, spans):
    """The runs of offsets (lo, hi) of the spans that no batch (``base`` .. ``last``) covers."""
    return [(a, z) for _, a, z in _holes(base, last, spans)]


def _holes(base, last, spans):
    """[(span, first, end)] of the runs of offsets of each span (lo, hi) that no batch (its ``base`` .. ``last``
    offsets; control batches and offsets a cleaner removed from a batch count as held) covers -- every span at
    once: the stretches no batch covers, cut to the spans."""
    if not spans:
        return []
    big = np.iinfo(np.int64).max
    order = np.argsort(base, kind="stable")
    base, reach = base[order], np.maximum.accumulate(last[order] + 1) if len(last) else last
    # the stretches no batch covers, [free_lo, free_hi): before the first batch, between runs, after the last
    new_run = np.flatnonzero(base[1:] > reach[:-1]) + 1 if len(base) else np.zeros(0, np.int64)
    free_lo = np.concatenate(([np.iinfo(np.int64).min], reach[new_run - 1], reach[-1:]))
    free_hi = np.concatenate((base[:1], base[new_run], [big])) if len(base) else np.array([big])
    lo = np.array([a for a, _ in spans], np.int64)
    hi = np.array([z for _, z in spans], np.int64)
    k0 = np.searchsorted(free_hi, lo, side="right")        # the first free stretch ending after the span's start
    k1 = np.searchsorted(free_lo, hi, side="left")         # those starting before its end: [k0, k1)
    count = np.maximum(k1 - k0, 0)
    j = np.repeat(np.arange(len(spans)), count)
    k = np.repeat(k0, count) + (np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count))
    a, z = np.maximum(free_lo[k], lo[j]), np.minimum(free_hi[k], hi[j])
    keep = a < z
    return [(spans[i], x, y) for i, x, y in zip(j[keep].tolist(), a[keep].tolist(), z[keep].tolist())]


def _agrees(marks, lo, hi, before, after, straddle=False):
    """Whether a copy's batches (``marks``, in log order) hold ``before`` as their last batch below ``lo``,
    ``after`` as their first from ``hi`` on (``after`` None: some batch starting at ``hi``; ``hi`` None: to
    the end), and -- unless ``straddle`` -- no batch straddling ``lo`` or ``hi``."""
    below = [m for m in marks if m[1] < lo]
    if before is not None and (not below or below[-1] != before):
        return False
    inside = [m for m in marks if m[1] >= lo and (hi is None or m[0] < hi)]
    if not inside or (not straddle and any(m[0] < lo or (hi is not None and m[1] >= hi) for m in inside)):
        return False
    if hi is None:
        return True
    above = [m for m in marks if m[0] >= hi]
    if after is not None:
        return bool(above) and above[0] == after
    return bool(above) and above[0][0] == hi


def gap_stretches(part):
    """[(segments, lo, hi)] of the other copies a read takes a partition's gaps (``part.gaps``) from, as `fill_gaps`
    takes them (what a copy's batches do not cover of a gap, from the copies after it), with only the segments
    holding offsets of [lo, hi): what a read_committed read counts as the partition's own batches there (their
    transactions' batches and markers), in offset order."""
    out = []
    todo = [(g, g.lo, g.hi, False) for g in part.gaps]
    for alt in part.alternates:
        if not todo:
            break
        serving = _serving(alt, todo)
        if serving is None:
            continue
        (base, last), chosen = serving
        spans = [(f[1], f[2]) for f in chosen]
        held = [(lo, hi) for lo, hi in spans
                if int(np.searchsorted(base, hi)) > int(np.searchsorted(last, lo))]     # a batch in it
        if held:
            segs = alt.list_segments()
            nxt = [s.base_offset for s in segs[1:]] + [None]
            out += [([s for s, n in zip(segs, nxt) if (n is None or n > lo) and s.base_offset < hi], lo, hi)
                    for lo, hi in held]
        gap_of = {(f[1], f[2]): f[0] for f in chosen}
        todo = _left(todo, set(held), [(gap_of[span], lo, hi, True) for span, lo, hi in _holes(base, last, held)])
    return sorted(out, key=lambda x: x[1])


def _usable(alt, lo, hi, before, after, straddle):
    if alt.diverges_at is not None and (hi is None or hi > alt.diverges_at):
        return False            # its records differ from the copy read's there: another history
    marks = _marks(alt, lo - 1 if before is None else before[1], hi if after is None else after[0])
    return marks is not None and _agrees([m[:3] for m in marks], lo, hi, before, after, straddle)


def fill_batches(alternates, marks, read):
    """Records of the batches a damaged stretch's headers name (``marks``: (base offset, last offset, CRC) in log
    order -- a CRC mismatch leaves the CRC field the batch's own) from the first of ``alternates`` holding exactly
    those batches there (the same marks, nothing else between) and reading them intact: the same batches, whatever
    that copy lacks around them (`_first_intact`). (records, Partition), or (None, None)."""
    lo, hi = marks[0][0], marks[-1][1] + 1
    want = [tuple(m) for m in marks]
    holding = []
    for alt in alternates:
        if alt.diverges_at is not None and hi > alt.diverges_at:
            continue
        theirs = _marks(alt, max(lo - 1, 0), hi)
        if theirs is not None and [m[:3] for m in theirs if m[1] >= lo and m[0] < hi] == want:
            holding.append(alt)
    return _first_intact(holding, lo, hi, read)


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
        Batches around the stretch that the copy read holds intact, as `batch_mark_of` gives them: the other
        copy's last batch below ``lo`` and its first from ``hi`` on must be these (None: the copy read has none
        there -- ``after`` None: the other copy must have a batch starting at ``hi``).
    read : callable
        ``read(partition, lo, hi)`` -> the records of [lo, hi) of a copy, read strictly (raises on damage).

    Returns
    -------
    (records, Partition) or (None, None)
        The records of the stretch and the copy they came from.
    """
    return _first_intact([alt for alt in alternates if _usable(alt, lo, hi, before, after, False)], lo, hi, read)


def _first_intact(alternates, lo, hi, read):
    """(records of [lo, hi) of the first of ``alternates`` reading them intact, that copy), or (None, None)."""
    for alt in alternates:
        try:
            recs = read(alt, lo, hi)
        except (KafkafmtError, OSError):
            continue
        if recs is not None:
            return recs, alt
    return None, None
