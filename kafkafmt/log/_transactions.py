"""Transactions of a partition, as a read_committed consumer sees them: the aborted ranges and the
last stable offset (`transactions`), and which records it keeps (`committed_mask`)."""
from __future__ import annotations

import numpy as np

from kafkafmt.log import sidefiles
from kafkafmt.record import decode
from kafkafmt.log._framing import scan_range, window

__all__ = ["transactions", "committed_mask"]


def transactions(segments, report, use_txnindex=None):
    """Aborted ranges {producer_id: [(first, last), ...]} and the last stable offset (or None) of
    a partition's segments: from ``.txnindex`` files when the partition has them (use_txnindex
    None: decide by their presence), else from ABORT markers found by a header scan."""
    if use_txnindex is None:
        use_txnindex = any(s.has("txnindex") for s in segments)
    aborted = {}
    if use_txnindex:
        for seg in segments:
            data = seg.side_bytes("txnindex")
            if data is not None:
                for e in sidefiles.read_txnindex(data):
                    aborted.setdefault(int(e["producer_id"]), []).append((int(e["first_offset"]), int(e["last_offset"])))
    open_txns = {}
    for seg in segments:
        with seg.open() as f:
            t, _ = scan_range(f, 0, f.size)
            txn = t["is_transactional"]
            ctl = t["is_control"]
            for b in np.flatnonzero(txn).tolist():
                pid = int(t["producer_id"][b])
                if not ctl[b]:
                    open_txns.setdefault(pid, int(t["base_offset"][b]))
                    continue
                first = open_txns.pop(pid, None)
                if not use_txnindex and first is not None:
                    p, s = int(t["position"][b]), int(t["size"][b])
                    buf, base = window(f, p, p + s)
                    marker = decode(buf, start=p - base, stop=p + s - base, include_control=True,
                                    verify_crc=None).controls
                    if len(marker) and int(marker.type[0]) == 0:  # ABORT
                        aborted.setdefault(pid, []).append((first, int(t["last_offset"][b])))
    lso = min(open_txns.values()) if open_txns else None
    return aborted, lso


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
