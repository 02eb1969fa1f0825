"""Copies that each lack batches the other holds: one partition on two brokers, written without kafkafmt
(``tests/kcluster.py``, kafka-python's builders), the leader's copy thinned -- every other batch gone, as one
broker's log cleaner drops them before another's -- and the follower's copy whole but for its last batch.

* ``CopiesRead``: every record once, into Arrow -- ``read_log_dirs(root, threads=1)``: the leader's copy read, its
  gaps read from the follower's -- against kafka-python reading both copies and keeping each offset once (the
  job such a user would script); and the time per gap at 1,000 and 10,000 gaps (linear: the ratio of the two
  about 1.0).

``python -m benchmarks.bench_copies`` prints the figures without asv.
"""
from __future__ import annotations

import os

import numpy as np

from . import common, corpus
from .bench_cluster import _copy_columns, _kcluster
from .common import register_ratio, register_value, require_kafkafmt

#: records of the partition: about 1,000 and 10,000 gaps
SIZES = [20_000, 200_000]


def thinned_root(records):
    """The two brokers' log dirs (written once, cached): their root."""
    root = corpus.cache_dir() / ("thinned-%d" % records)
    if not (root / ".complete").exists():
        import shutil

        kc = _kcluster()
        tmp = root.with_name(root.name + ".%d.tmp" % os.getpid())
        shutil.rmtree(tmp, ignore_errors=True)
        c = kc.write_cluster(str(tmp), {"pay": (1, 2)}, brokers=2, seed=3, records=records, segment_bytes=1 << 20,
                             behind=0.0, empty=0.0, leader_change=0.0, spread=False)
        part = c.parts[("pay", 0)]
        leader, follower = part.replicas
        n = len(part.batches)
        kc.drop_batches(c, leader, "pay", 0, list(range(1, n - 2, 2)), 1 << 20)
        kc.drop_batches(c, follower, "pay", 0, [n - 1], 1 << 20)
        (tmp / ".complete").write_text("ok")
        shutil.rmtree(root, ignore_errors=True)
        os.replace(tmp, root)
    return str(root)


def _folders(records):
    root = thinned_root(records)
    return [os.path.join(root, b, "kafka-logs", "pay-0") for b in sorted(os.listdir(root)) if b.startswith("broker-")]


def kafkafmt_read(records):
    root = thinned_root(records)
    return lambda: common.kafkafmt.read_log_dirs(root, threads=1).to_arrow()


def peer_union(records):
    """kafka-python reading both copies, each offset kept once (the first copy's record at an offset)."""
    folders = _folders(records)

    def run():
        offs, keys, values = [], [], []
        for folder in folders:
            o, _, k, v, _ = _copy_columns(folder)
            offs.append(np.concatenate(o) if o else np.zeros(0, np.int64))
            keys += k
            values += v
        off = np.concatenate(offs)
        _, first = np.unique(off, return_index=True)
        return off[first], [keys[i] for i in first.tolist()], [values[i] for i in first.tolist()]
    return run


def _gaps(records):
    found = common.kafkafmt.log.discover(thinned_root(records))
    return sum(len(p.gaps) for p in found.partitions)


def us_per_gap(records, budget_s=None):
    """Microseconds of the read per gap of the copy read (the read of the copy itself included)."""
    t = common.interleaved_medians([kafkafmt_read(records)], budget_s=budget_s)[0]
    return t * 1e6 / _gaps(records)


def per_gap_growth(records, budget_s=None):
    """Time per gap at ``records`` ÷ at the smallest size (linear: 1.0)."""
    return us_per_gap(records, budget_s) / us_per_gap(SIZES[0], budget_s)


def _check(records):
    def now():
        t = kafkafmt_read(records)()
        off, _, values = peer_union(records)()
        assert t["offset"].to_pylist() == off.tolist(), "the read is not every offset once"
        assert t["value"].to_pylist() == values, "the values differ from kafka-python's"
    common.verified_once("thinned", str(records), now)


register_ratio("copies_gaps_vs_kafka_python", "read_log_dirs of copies thinned apart × kafka-python reading both "
               "and keeping each offset once", [SIZES[0]], lambda s: (peer_union(s), kafkafmt_read(s)),
               family="copies", track="bench_copies.CopiesRead.track_gaps_vs_kafka_python")
register_value("copies_per_gap_growth", "time per gap at 10,000 gaps ÷ at 1,000 (lower is better)", [SIZES[1]],
               per_gap_growth, "ratio", better="lower", family="copies",
               track="bench_copies.CopiesRead.track_per_gap_growth")


class CopiesRead:
    timeout = 1200

    def setup(self):
        require_kafkafmt()
        common.note_quick()
        for s in SIZES:
            _check(s)

    def time_read_thinned(self):
        kafkafmt_read(SIZES[0])()

    def track_gaps_vs_kafka_python(self):
        return common.measure_registered("copies_gaps_vs_kafka_python", SIZES[0])

    def track_per_gap_growth(self):
        return common.measure_registered("copies_per_gap_growth", SIZES[1])

    track_gaps_vs_kafka_python.unit = track_per_gap_growth.unit = "ratio"


if __name__ == "__main__":
    require_kafkafmt()
    for s in SIZES:
        _check(s)
    print(f"vs kafka-python: {common.measure_registered('copies_gaps_vs_kafka_python', SIZES[0]):.2f}x")
    print(f"us per gap: {us_per_gap(SIZES[0]):.1f} at {SIZES[0]} records, {us_per_gap(SIZES[1]):.1f} at {SIZES[1]}")
    print(f"per-gap growth: {common.measure_registered('copies_per_gap_growth', SIZES[1]):.2f}")
