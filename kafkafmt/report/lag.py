"""Consumer-group lag as of a log dir's last write, offline: each group's committed offset per
partition (replayed from ``__consumer_offsets`` as the group coordinator loads it) against the
partition's log end offset (the next offset it would have written: ``lastOffset + 1`` of `stats`).

The replay, per ``__consumer_offsets`` partition, in log order: an offset commit sets the group's
offset for its topic-partition, a tombstone removes it. Commits written inside a transaction
(``TxnOffsetCommit``) count only once their producer's COMMIT marker follows, at the marker's place;
aborted ones, and ones whose transaction is still open at the end of the log, do not count -- as
the coordinator materializes them.
"""
from __future__ import annotations

import numpy as np

from kafkafmt.read import read_log_dir

__all__ = ["CONSUMER_OFFSETS", "committed_offsets", "consumer_lag", "group_lag"]

CONSUMER_OFFSETS = "__consumer_offsets"


def _effective_positions(recs):
    """Per record: where its commit takes effect (its own offset; a transactional record's COMMIT
    marker offset), -1 for records that never take effect (aborted, open, control records)."""
    n = len(recs)
    if not n:
        return np.zeros(0, np.int64)
    offs = np.asarray(recs.offset, np.int64)
    is_ctl = np.asarray(recs.batch_column("is_control"), bool)
    txn = np.asarray(recs.batch_column("is_transactional"), bool)
    eff = np.where(is_ctl, -1, offs).astype(np.int64)
    if not txn.any():
        return eff
    pid = np.asarray(recs.batch_column("producer_id"), np.int64)
    c = recs.controls
    marker = {}       # batch index -> control type
    if len(c):
        for bi, t in zip(np.asarray(c["batch_index"], np.int64).tolist(), np.asarray(c["type"]).tolist()):
            marker.setdefault(bi, t)
    bidx = np.asarray(recs.batch_index, np.int64)
    pending = {}      # producer id -> rows waiting for their marker
    for i in np.flatnonzero(txn).tolist():
        p = int(pid[i])
        if not is_ctl[i]:
            pending.setdefault(p, []).append(i)
            eff[i] = -1
            continue
        rows = pending.pop(p, [])
        if marker.get(int(bidx[i])) == 1:             # COMMIT
            eff[rows] = offs[i]
    return eff


def committed_offsets(partitions):
    """The committed offsets the ``__consumer_offsets`` partitions among ``partitions`` hold at the end
    of their logs: a pandas DataFrame ``group, topic, partition, committed_offset, commit_timestamp,
    coordinator`` (the ``__consumer_offsets`` partition), one row per group and topic-partition."""
    import pandas as pd
    from kafkafmt.internal import consumer_offsets

    frames = []
    for part in partitions:
        if part.topic != CONSUMER_OFFSETS:
            continue
        recs = read_log_dir(part, errors="salvage", include_control=True)
        if not len(recs):
            continue
        eff = _effective_positions(recs)
        keep = eff >= 0
        if not keep.any():
            continue
        table = consumer_offsets(recs.take(np.flatnonzero(keep)))
        df = pd.DataFrame({
            "kind": table.column("kind").to_pylist(),
            "group": table.column("group").to_pylist(),
            "topic": table.column("topic").to_pylist(),
            "partition": table.column("partition").to_numpy(zero_copy_only=False),
            "committed_offset": table.column("committed_offset").to_pandas(),
            "commit_timestamp": table.column("commit_timestamp").to_pandas(),
            "tombstone": table.column("tombstone").to_numpy(zero_copy_only=False),
            "effective": eff[keep],
        })
        df = df[df["kind"] == "offset_commit"]
        df = df.sort_values("effective", kind="stable").drop_duplicates(["group", "topic", "partition"], keep="last")
        df = df[~df["tombstone"].astype(bool)]
        df["coordinator"] = part.partition
        frames.append(df)
    cols = ["group", "topic", "partition", "committed_offset", "commit_timestamp", "coordinator"]
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in zip(cols, ["object", "object", "int64", "int64",
                                                                          "datetime64[ms, UTC]", "int64"])})
    out = pd.concat(frames, ignore_index=True)[cols]
    # copies of a __consumer_offsets partition (replicas="all") hold the same commits: one row each,
    # the latest commit where the copies differ
    out = out.sort_values("commit_timestamp", kind="stable", na_position="first").drop_duplicates(["group", "topic", "partition"],
                                                                              keep="last")
    out["partition"] = out["partition"].astype("int64")
    out["committed_offset"] = out["committed_offset"].astype("int64")
    return out.sort_values(["group", "topic", "partition"], kind="stable").reset_index(drop=True)


def consumer_lag(committed, log_end_offsets):
    """Lag per group and topic-partition: ``committed`` (`committed_offsets`) joined with
    ``log_end_offsets`` ({(topic, partition): log end offset}, the partitions on disk).

    Adds ``log_end_offset`` (None when unknown: the partition is not on disk, or no segment holds
    records and no checkpoint file gives it) and ``lag`` = log end offset - committed offset (None
    without a log end offset: unknown, not 0; negative when the group committed beyond the end of
    the log on disk -- records the disk lost, or a copy behind the leader's: not lag, and not
    added to a group's total, `total_lag`)."""
    out = committed.copy()
    leo = [log_end_offsets.get((t, int(p))) for t, p in zip(out["topic"], out["partition"])]
    out["log_end_offset"] = [None if v is None else int(v) for v in leo]
    out["lag"] = [None if v is None else int(v) - int(c) for v, c in zip(leo, out["committed_offset"])]
    out["log_end_offset"] = out["log_end_offset"].astype("Int64")
    out["lag"] = out["lag"].astype("Int64")
    return out


def group_lag(rows):
    """Per consumer group, from lag rows (dicts with ``group`` and ``lag``, as `kafkafmt.report.build`
    tables them): ``{group: {"partitions", "total", "largest", "beyond", "unknown"}}`` -- ``total``
    and ``largest`` over the known lags that are not negative; ``beyond`` counts the partitions
    whose committed offset lies beyond the log end on disk (a negative difference: not lag),
    ``unknown`` those whose log end is unknown (lag None)."""
    out = {}
    for r in rows:
        g = out.setdefault(r["group"], {"partitions": 0, "total": 0, "largest": None, "beyond": 0, "unknown": 0})
        g["partitions"] += 1
        lag = r["lag"]
        if lag is None:
            g["unknown"] += 1
        elif lag < 0:
            g["beyond"] += 1
        else:
            g["total"] += lag
            g["largest"] = lag if g["largest"] is None else max(g["largest"], lag)
    return out
