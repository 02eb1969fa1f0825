"""Segments placed against their content: segments that hold the same offsets (a stray copy of part of
a segment), and a segment named above its first batch's base offset. Both resolved where nothing is lost,
refused where it would be (rule 2 of `kafkafmt.recovery.plan`)."""
from __future__ import annotations

import os
from dataclasses import replace

import numpy as np

from kafkafmt.log import LOG_SUFFIX, ReportEntry, ReportKind, segment_base, segment_file_name
from kafkafmt.log import INDEX_SUFFIX, TIMEINDEX_SUFFIX, TXNINDEX_SUFFIX
from kafkafmt.recovery.actions import ActionKind
from kafkafmt.recovery.indexes import scan_segment, segment_span
from kafkafmt.recovery.names import INDEX_SUFFIXES

__all__ = ["known_scan", "overlapping_segments", "misnamed_segment"]


def known_scan(path, base, opts):
    """`scan_segment` of a ``.log``, or its scan made already (``opts.known``)."""
    scan = opts.known.get(path) if opts.known else None
    return scan if scan is not None and scan.base_offset == base else scan_segment(path, base)


def _span(path, opts):
    """`segment_span` of a ``.log``, from its scan when made already (``opts.known``: whole intact files)."""
    scan = opts.known.get(path) if opts.known else None
    if scan is None:
        return segment_span(path)
    last = scan.batches["last_offset"]
    return (scan.first_offset, int(last.max()) + 1) if len(last) else None


def overlapping_segments(plan, here, logs, scans, act, opts):
    """Segments whose offsets overlap (a stray copy of part of a segment saved as its own
    ``<base>.log``): a consumer reads each offset once, Kafka each from the segment whose base
    offset is the greatest at or below it. Where the two hold the overlapping offsets byte for
    byte, the copy is dropped: a segment held whole by the other is removed, else the earlier one's
    tail is truncated where the later one begins (nothing is lost: the other still holds every
    offset). Where they differ, the plan is refused, naming both files. Returns the segments kept
    (``logs`` without the removed ones; ``scans`` of truncated ones cut to match) and the names
    of the segments in a refused overlap. Found by the segments' framing (`segment_span`); only those
    that overlap are scanned (into ``scans``)."""
    ends, spans = {}, []
    for base, n in logs:
        span = _span(here[n], opts)
        if span is not None:
            ends[n] = span[1]
            spans.append((span[0], -span[1], base, n))
    dropped, refused = set(), set()
    frontier = None                     # the kept segment reaching furthest so far

    def scanned(n, base):
        if n not in scans:
            scans[n] = known_scan(here[n], base, opts)
            ends[n] = scans[n].next_offset
        return scans[n]

    bases = {n: base for base, n in logs}
    for start, _, base, n in sorted(spans):
        if frontier is None or start >= ends[frontier]:
            frontier = n
            continue
        a, b = scanned(frontier, bases[frontier]), scanned(n, base)     # their framing overlaps: a closer look
        first = b.first_offset
        if first is None or first >= a.next_offset:     # their intact batches do not
            frontier = n if ends[n] > ends[frontier] else frontier
            continue
        hi = min(a.next_offset, b.next_offset)
        same = _same_bytes(a, b, first, hi)             # ((start, end) in a, (start, end) in b), or None
        both = f"{a.path} and {b.path}"
        contained = b.next_offset <= a.next_offset      # b goes whole, else a's tail from where b begins
        if same is not None and (same[1] != (0, b.size) if contained else same[0][1] != a.size):
            same = None                                 # other bytes (damage) would go with it: not a copy
        if same is None:
            refused |= {frontier, n}
            plan.problems.append(ReportEntry(ReportKind.CORRUPT, b.path, f"overlaps {a.path}: both hold offsets "
                                             f"{first}..{hi - 1}, not byte for byte alike", 0, None, first))
            plan.refusals.append(f"segments {both} overlap (both hold offsets {first}..{hi - 1}) and differ there: "
                                 f"compare them and move one aside by hand")
            continue
        if contained:                               # the later one is a copy of part of the earlier one
            what = (f"holds offsets {first}..{b.next_offset - 1}, every byte of it also in {a.path}: removed (each "
                    f"offset is kept once)")
            stem = n[:-len(LOG_SUFFIX)]
            act(ActionKind.DELETE, here[n], f"overlapping segment: {what}", offset=first,
                duplicate_of=a.path)
            for suffix in INDEX_SUFFIXES:
                if stem + suffix in here:
                    act(ActionKind.DELETE, here[stem + suffix], f"side file of the overlapping segment {n}: removed")
                    dropped.add(stem + suffix)
            plan.problems.append(ReportEntry(ReportKind.LEFTOVER, b.path, f"overlapping segment: {what}", 0, None,
                                             first))
            dropped.add(n)
            plan.segments += 1
            plan.bytes += b.size
        else:                                       # the earlier one's tail is the later one's head
            a_at = same[0][0]
            what = (f"offsets {first}..{hi - 1} (bytes {a_at}..{a.size}) are also in {b.path}, byte for byte: "
                    f"truncated where it begins (Kafka reads them from there: LocalLog.read)")
            act(ActionKind.TRUNCATE, a.path, f"overlapping segment: {what}", start=a_at, end=a.size, offset=first,
                duplicate_of=b.path)
            plan.problems.append(ReportEntry(ReportKind.CORRUPT, a.path, f"overlaps {b.path}: {what}", a_at, a.size,
                                             first))
            keep = a.batches["position"] < a_at
            scans[frontier] = replace(a, batches={c: v[keep] for c, v in a.batches.items()},
                                      damage=[e for e in a.damage if int(e.start) < a_at])
            frontier = n
    for name in dropped:
        here.pop(name, None)
    return [(base, n) for base, n in logs if n not in dropped], refused


def _same_bytes(a, b, lo, hi):
    """Whether scanned segments ``a`` and ``b`` hold offsets [lo, hi) in the same intact batches,
    byte for byte: their byte ranges ((start, end) in ``a``, (start, end) in ``b``), else None."""
    def run(s):
        pos, base, last = s.batches["position"], s.batches["base_offset"], s.batches["last_offset"]
        rows = np.flatnonzero((last >= lo) & (base < hi))
        if not len(rows) or int(base[rows[0]]) != lo or int(last[rows[-1]]) != hi - 1:
            return None
        start, end = int(pos[rows[0]]), int(pos[rows[-1]] + s.batches["size"][rows[-1]])
        if int(s.batches["size"][rows].sum()) != end - start:
            return None                              # not contiguous: damage between
        return start, end, rows
    ra, rb = run(a), run(b)
    if ra is None or rb is None or len(ra[2]) != len(rb[2]) or ra[1] - ra[0] != rb[1] - rb[0]:
        return None
    with open(a.path, "rb") as fa, open(b.path, "rb") as fb:
        fa.seek(ra[0])
        fb.seek(rb[0])
        left = ra[1] - ra[0]
        while left:
            n = min(left, 8 << 20)
            if fa.read(n) != fb.read(n):
                return None
            left -= n
    return ra[:2], rb[:2]


def misnamed_segment(plan, folder, here, n, true_base, previous_end, act):
    """A segment whose file name is above its first batch's base offset (files renamed by hand,
    copied under another name): Kafka cannot index such a segment (``AbstractIndex.toRelative``:
    a negative relative offset) and splits it into segments named by their batches' base offsets
    when it recovers it (``LogSegment.recover`` -> ``LogSegmentOffsetOverflowException`` ->
    ``LocalLog.splitOverflowedSegment``). Planned here: the ``.log`` (and ``.txnindex``, whose
    offsets are absolute) renamed to the first batch's base offset, the ``.index``/``.timeindex``
    (relative to the wrong base) removed and rebuilt. Refused when that name is taken or the
    previous segment reaches that offset. Returns the new (base, name), or None when refused."""
    named = segment_base(n)
    log = os.path.join(folder, n)
    new = segment_file_name(true_base, LOG_SUFFIX)
    what = (f"segment named against its content: the name says base offset {named}, its first batch starts at "
            f"offset {true_base}")
    plan.problems.append(ReportEntry(ReportKind.CORRUPT, log, what, 0, None, true_base))
    if new in here:
        plan.refusals.append(f"{log}: {what}, and {new} exists already: move one of them aside by hand")
        return None
    if previous_end is not None and true_base < previous_end:
        plan.refusals.append(f"{log}: {what}, but the previous segment holds offsets up to {previous_end - 1}: the "
                             f"segments overlap; move one of them aside by hand")
        return None
    stem, new_stem = n[:-len(LOG_SUFFIX)], new[:-len(LOG_SUFFIX)]
    act(ActionKind.RENAME, log, f"{what}: renamed to its true base offset (Kafka splits such a segment by its "
                                f"batches' base offsets: LocalLog.splitOverflowedSegment)",
        target=os.path.join(folder, new), offset=true_base)
    here[new] = here.pop(n)
    for suffix in (INDEX_SUFFIX, TIMEINDEX_SUFFIX):
        if stem + suffix in here:
            act(ActionKind.DELETE, here.pop(stem + suffix), f"entries relative to the wrong base offset {named}: "
                f"removed, rebuilt as {new_stem + suffix}")
    if stem + TXNINDEX_SUFFIX in here:
        act(ActionKind.RENAME, here[stem + TXNINDEX_SUFFIX], "absolute offsets: renamed with its segment",
            target=os.path.join(folder, new_stem + TXNINDEX_SUFFIX))
        here[new_stem + TXNINDEX_SUFFIX] = here.pop(stem + TXNINDEX_SUFFIX)
    return true_base, new
