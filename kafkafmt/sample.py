"""A small, realistic Kafka log directory, generated deterministically by kafkafmt's own writer.

`sample_dir()` returns its path, generating it on first use (into ``$KAFKAFMT_SAMPLE_DIR`` or the
user cache folder). It holds:

* ``orders-0``, ``orders-1`` -- JSON order events keyed by customer, several segments per partition,
  the codec changing every 400 records (lz4, zstd, snappy, gzip, none), trace headers on a fifth of
  the records, timestamps with jitter, producer ids and sequences (idempotent producer).
* ``payments-0`` -- a transactional topic: two producers interleave; one transaction commits, one
  aborts, and plain records surround them (so read_committed differs from read_uncommitted).
* ``customers-0`` -- a compacted topic: offsets with gaps, tombstones (null values), an empty batch
  left behind by the cleaner.
* ``clicks-0`` -- an old topic: a legacy v1 segment (gzip wrappers, relative inner offsets)
  followed by v2 segments after the upgrade.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import tempfile

import numpy as np

from kafkafmt.logwriter import LogWriter

SAMPLE_VERSION = 2
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z, in ms


def _default_root():
    root = os.environ.get("KAFKAFMT_SAMPLE_DIR")
    if root:
        return root
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "kafkafmt", f"sample-v{SAMPLE_VERSION}")


def sample_dir(create=True) -> str:
    """Path of the sample log directory (a Kafka ``log.dirs`` entry), generated if missing."""
    root = _default_root()
    if create and not os.path.exists(os.path.join(root, ".complete")):
        parent = os.path.dirname(os.path.abspath(root))
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".sample-", dir=parent)
        try:
            generate(tmp)
            open(os.path.join(tmp, ".complete"), "w").close()
            if os.path.exists(root):
                shutil.rmtree(root)
            os.replace(tmp, root)
        finally:
            if os.path.exists(tmp):
                shutil.rmtree(tmp)
    return root


def _order(rnd, i, customer):
    return json.dumps({
        "order_id": f"o-{i:07d}", "customer": customer, "amount": round(rnd.uniform(3, 400), 2),
        "currency": rnd.choice(["EUR", "USD", "GBP"]), "items": rnd.randint(1, 9),
        "status": rnd.choice(["created", "paid", "shipped", "delivered"]),
        "note": "x" * rnd.randint(0, 60),
    }, separators=(",", ":")).encode()


def _orders(root, partition, rnd):
    path = os.path.join(root, f"orders-{partition}")
    with LogWriter(path, segment_bytes=48 * 1024, index_interval_bytes=4096, leader_epoch=3) as w:
        ts = T0 + partition * 1000
        for seg, codec in enumerate(["lz4", "zstd", "snappy", "gzip", "none", "lz4"]):
            n = 400
            customers = [f"customer-{rnd.randint(1, 200):04d}" for _ in range(n)]
            keys = [c.encode() for c in customers]
            values = [_order(rnd, seg * n + i, c) for i, c in enumerate(customers)]
            stamps = [ts + i * 250 + rnd.randint(-400, 400) for i in range(n)]  # jitter: not monotonic
            headers = [[("trace-id", f"{rnd.getrandbits(64):016x}".encode()), ("source", b"web")]
                       if rnd.random() < 0.2 else [] for _ in range(n)]
            w.append(keys=keys, values=values, timestamps=stamps, headers=headers, compression=codec,
                     batch_size=4096, producer_id=500 + partition, producer_epoch=0)
            ts = stamps[-1] + 1000


def _payments(root, rnd):
    path = os.path.join(root, "payments-0")

    def batch(n, start, tag):
        values = [json.dumps({"payment": f"{tag}-{i}", "amount": rnd.randint(1, 999)}).encode() for i in range(n)]
        return dict(keys=[f"{tag}-{i}".encode() for i in range(n)], values=values,
                    timestamps=[T0 + start + 10 * i for i in range(n)])

    with LogWriter(path, segment_bytes=1200, index_interval_bytes=512, leader_epoch=1) as w:
        w.append(**batch(20, 0, "plain-a"), compression="zstd")
        w.append(**batch(15, 1_000, "tx1-a"), producer_id=1001, transactional=True, compression="zstd")
        w.append(**batch(10, 2_000, "tx2-a"), producer_id=1002, transactional=True, compression="lz4")
        w.append(**batch(15, 3_000, "tx1-b"), producer_id=1001, transactional=True, compression="zstd")
        w.append(**batch(10, 4_000, "tx2-b"), producer_id=1002, transactional=True)
        w.append_control("abort", producer_id=1002, coordinator_epoch=4, timestamp=T0 + 5_000)
        w.append(**batch(20, 6_000, "plain-b"), compression="zstd")
        w.append_control("commit", producer_id=1001, coordinator_epoch=4, timestamp=T0 + 7_000)
        w.append(**batch(30, 8_000, "plain-c"), compression="snappy")


def _customers(root, rnd):
    path = os.path.join(root, "customers-0")
    # what a compacted topic looks like: survivors of the cleaner, with offset gaps
    n = 600
    offsets = np.cumsum(np.array([rnd.randint(1, 6) for _ in range(n)])) + 1000
    keys = [f"customer-{rnd.randint(1, 250):04d}".encode() for _ in range(n)]
    values = [None if rnd.random() < 0.08 else json.dumps({"name": f"Customer {k.decode()[-4:]}",
                                                            "tier": rnd.choice(["gold", "silver", "bronze"])}).encode()
              for k in keys]
    stamps = [T0 + 60_000 * int(o) for o in offsets]
    with LogWriter(path, segment_bytes=16 * 1024, index_interval_bytes=4096, base_offset=1000) as w:
        w.append(keys=keys[:300], values=values[:300], timestamps=stamps[:300], offsets=offsets[:300],
                 compression="gzip", batch_size=2048)
        w.append_empty_batch(last_offset=int(offsets[300]) - 1, timestamp=stamps[299] + 1)
        w.append(keys=keys[300:], values=values[300:], timestamps=stamps[300:], offsets=offsets[300:],
                 compression="none", batch_size=2048)


def _clicks(root, rnd):
    path = os.path.join(root, "clicks-0")
    pages = ["/", "/search", "/cart", "/checkout", "/product/1", "/product/2"]

    def clicks(n, start):
        return dict(keys=[None if rnd.random() < 0.3 else f"session-{rnd.randint(1, 50)}".encode() for _ in range(n)],
                    values=[json.dumps({"page": rnd.choice(pages), "ms": rnd.randint(5, 900)}).encode()
                            for _ in range(n)],
                    timestamps=[T0 + start + 100 * i for i in range(n)])

    with LogWriter(path, segment_bytes=12 * 1024, index_interval_bytes=2048) as w:
        w.append(**clicks(300, 0), magic=1, compression="gzip", max_records=25)   # before the upgrade
        w.append(**clicks(300, 60_000), magic=2, compression="lz4")               # after it


def generate(root):
    """Write the sample log directory into `root` (deterministic: same bytes every time)."""
    rnd = random.Random(20260101)
    os.makedirs(root, exist_ok=True)
    for p in (0, 1):
        _orders(root, p, rnd)
    _payments(root, rnd)
    _customers(root, rnd)
    _clicks(root, rnd)
    with open(os.path.join(root, "meta.properties"), "w") as f:
        f.write("#kafkafmt sample\nversion=1\nbroker.id=0\ncluster.id=kafkafmt-sample\n")
    return root
