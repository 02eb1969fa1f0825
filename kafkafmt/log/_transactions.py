"""Transactions of a partition, as a read_committed consumer sees them: the aborted ranges and the
last stable offset (`transactions`), and which records it keeps (`committed_mask`)."""
from __future__ import annotations

import numpy as np

from kafkafmt.log import sidefiles
from kafkafmt.record import decode
from kafkafmt.log._fill import gap_stretches
from kafkafmt.log._framing import scan_range, window

__all__ = ["transactions", "gap_transactions", "committed_mask"]


def transactions(segments, report, use_txnindex=None, extra=()):
    """Aborted ranges {producer_id: [(first, last), ...]} and the last stable offset (or None) of
    a partition's segments: from ``.txnindex`` files when the partition has them (use_txnindex
    None: decide by their presence), else from ABORT markers found by a header scan.

    ``extra``: stretches of other copies read into this copy's gaps, ``[(segments, lo, hi)]`` (the segments
    holding them: `kafkafmt.log.gap_stretches`) -- their batches
    holding offsets in [lo, hi) count as this copy's, in offset order (their markers decoded: no txnindex), so
    that a marker only another copy holds closes its transaction."""
    if use_txnindex is None:
        use_txnindex = any(s.has("txnindex") for s in segments)
    aborted = {}
    if use_txnindex:
        for seg in segments:
            data = seg.side_bytes("txnindex")
            if data is not None:
                for e in sidefiles.read_txnindex(data):
                    aborted.setdefault(int(e["producer_id"]), []).append((int(e["first_offset"]), int(e["last_offset"])))
    events = _events(segments, extra, use_txnindex)
    if extra:
        events = _in_offset_order(events)
    open_txns = {}
    for base, pid, is_marker, abort, last in events:
        if not is_marker:
            open_txns.setdefault(pid, base)
            continue
        first = open_txns.pop(pid, None)
        if abort and first is not None:
            aborted.setdefault(pid, []).append((first, last))
    lso = min(open_txns.values()) if open_txns else None
    return aborted, lso


def gap_transactions(part):
    """The transactional batches of the stretches a read takes from other copies into a partition's gaps
    (`kafkafmt.log.gap_stretches`), as `transactions` counts them -- (base offset, producer id, is a marker, an
    ABORT, last offset), each batch once, in offset order --: what a stream applies as it passes them. [] for a
    partition without gaps."""
    return _in_offset_order(_events((), gap_stretches(part), False)) if part.gaps else []


def _in_offset_order(events):
    """Events of this copy's batches and of stretches of other copies in offset order: a stretch one copy lacked
    in part was read from the next, so their batches interleave (each batch once)."""
    return sorted(set(events), key=lambda e: e[0])


def _events(segments, extra, use_txnindex):
    """(base offset, producer id, is a marker, an ABORT, last offset) of each transactional batch of the pieces
    (`_pieces`), in their order, one at a time (a partition may hold millions); a marker's type is decoded where
    no txnindex says which transactions were aborted (and always in another copy's stretch)."""
    for seg, lo, hi, other in _pieces(segments, extra):
        with seg.open() as f:
            t, _ = scan_range(f, 0, f.size)
            txn = t["is_transactional"]
            ctl = t["is_control"]
            rows = np.flatnonzero(txn)
            if lo is not None:          # a piece of a segment: its batches holding offsets in [lo, hi)
                rows = rows[np.asarray(t["last_offset"])[rows] >= lo]
            if hi is not None:
                rows = rows[np.asarray(t["base_offset"])[rows] < hi]
            for b in rows.tolist():
                abort = False
                if ctl[b] and (other or not use_txnindex):
                    p, s = int(t["position"][b]), int(t["size"][b])
                    buf, base = window(f, p, p + s)
                    marker = decode(buf, start=p - base, stop=p + s - base, include_control=True,
                                    verify_crc=None).controls
                    abort = bool(len(marker)) and int(marker.type[0]) == 0
                yield (int(t["base_offset"][b]), int(t["producer_id"][b]), bool(ctl[b]), abort,
                       int(t["last_offset"][b]))


def _pieces(segments, extra):
    """(segment, lo, hi, from another copy) in offset order: this copy's segments, cut where a stretch of
    ``extra`` begins inside one, and the other copies' segments holding those stretches (lo, hi None: whole)."""
    if not extra:
        return [(seg, None, None, False) for seg in segments]
    starts = sorted(lo for _, lo, _ in extra)
    out = []
    for k, seg in enumerate(segments):
        nxt = segments[k + 1].base_offset if k + 1 < len(segments) else None
        cuts = [c for c in starts if c > seg.base_offset and (nxt is None or c < nxt)]
        for a, b in zip([None] + cuts, cuts + [None]):
            out.append((seg, a, b, False))
    out += [(seg, lo, hi, True) for segs, lo, hi in extra for seg in segs]
    # (a stretch before the piece of this copy that starts where it does: that piece holds what follows it)
    return sorted(out, key=lambda x: (x[0].base_offset if x[1] is None else x[1], not x[3]))


def committed_mask(recs, aborted, lso):
    """Records a read_committed consumer keeps: below the last stable offset, not in an aborted
    transaction of their producer."""
    keep = np.ones(len(recs), bool)
    if lso is not None:
        keep &= recs.offset < lso
    if aborted and len(recs):
        txn = recs.batch_column("is_transactional")
        pid = recs.batch_column("producer_id")
        for producer, ranges in aborted.items():
            mine = txn & (pid == producer)
            if not mine.any():
                continue
            for first, last in ranges:
                keep &= ~(mine & (recs.offset >= first) & (recs.offset <= last))
    return keep
