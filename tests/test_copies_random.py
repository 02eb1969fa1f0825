"""Random clusters of one partition: two or three brokers' copies of one log (written by tests/kcluster.py with
kafka-python's builders, one leader epoch), each lacking random batches (cleaned or cut apart), one of them behind
or holding a damaged batch, or several holding some. A read gives every record some copy holds intact, each once, in offset order -- the
rules of tests/test_copy_gaps.py asked of many layouts at once (each found a layout that lost or doubled records).
"""
from __future__ import annotations

import os
import random

import pytest

import kafkafmt
import kcluster

SEEDS = range(120)


def _layout(root, seed, mode):
    """Write a random cluster; returns (the offsets some copy holds intact, whether a batch is held only damaged)."""
    rnd = random.Random(seed)
    brokers = rnd.choice([2, 3])
    c = kcluster.write_cluster(root, {"pay": (1, brokers)}, brokers=brokers, seed=seed,
                               records=rnd.choice([60, 120, 200]), segment_bytes=rnd.choice([800, 1500, 4000]),
                               behind=0.0, empty=0.0, leader_change=0.0, spread=False)
    part = c.parts[("pay", 0)]
    n = len(part.batches)
    lacks = {}
    for b in part.replicas:         # (never the first batch: a copy lacking it starts later, a rule of its own)
        lacks[b] = set(rnd.sample(range(1, n), min(rnd.choice([0, 1, 2, 3, n // 3]), n - 1)))
        if lacks[b]:
            kcluster.drop_batches(c, b, "pay", 0, sorted(lacks[b]), segment_bytes=1500)
    damaged = set()
    b = rnd.choice(part.replicas)
    if mode == "behind":
        keep = rnd.randrange(2, n)
        kcluster.truncate_copy(c.folder(b, "pay", 0), len([i for i in range(keep) if i not in lacks[b]]))
        lacks[b] |= set(range(keep, n))
    elif mode in ("damage", "several damaged"):
        for _ in range(1 if mode == "damage" else 4):
            folder = c.folder(b, "pay", 0)
            segments = kcluster.segment_files(folder)
            s = rnd.randrange(len(segments))
            rows = kcluster.batch_positions(os.path.join(folder, segments[s]))
            i = rnd.randrange(len(rows))
            flipped = {k for k, x in enumerate(part.batches) if x.base == rows[i][2]}
            if not flipped & lacks[b]:          # (not a batch already flipped)
                kcluster.flip_byte(folder, batch=i, segment=s)
                damaged |= flipped
                lacks[b] |= flipped
            b = rnd.choice(part.replicas)
    held = set(range(n)) - set.intersection(*lacks.values())
    return [r.offset for k, x in enumerate(part.batches) if k in held for r in x.records], bool(damaged - held)


@pytest.mark.parametrize("mode", ["lacking", "behind", "damage", "several damaged"])
def test_every_record_some_copy_holds_intact_once(tmp_path, mode):
    wrong = []
    for seed in SEEDS:
        root = tmp_path / str(seed)
        want, lost = _layout(root, seed, mode)
        got = kafkafmt.read_log_dirs(str(root), errors="salvage" if lost else "strict").to_arrow()
        if got.column("offset").to_pylist() != want:
            wrong.append(seed)
    assert not wrong, f"seeds {wrong}"
