"""Offline recovery: index rebuilding speed, and a whole log dir's recovery beside reading it.

Data (written once into the corpus cache, see ``corpus.cache_dir``):

* ``recover-uncompressed/t-0/00000000000000000000.log``: one uncompressed segment of
  ``SEGMENT_MB`` MiB (64 in quick mode) made of one 16 KiB producer batch (100 records of 150-byte
  values, CreateTime) repeated with increasing base offsets (the base offset lies outside the v2
  CRC, so every copy stays valid);
* the ``cluster`` log dir of `bench_logdir` (8 partitions, lz4 and zstd, 4 segments each).

Benchmarks:

* ``rebuild_indexes(segment)`` on the uncompressed segment (page cache warm): every batch's framing
  and CRC-32C checked, offset and time index entries computed (target: >= 1 GB/s on one core);
  ``track_gb_per_second_rebuild_indexes`` reports the rate;
* ``recover(log dir)`` (a dry run: on clean data that is the whole recovery -- everything is read
  and checked, nothing needs writing) against ``read_log_dirs`` of the same log dir, on the cluster
  dir and on the uncompressed one (``track_ratio_recover_vs_read_*``: recovery time / read time).
"""

from __future__ import annotations

import json
import os

import numpy as np

from . import common, corpus
from .common import register_value, require_kafkafmt

SEGMENT_MB = 512
QUICK_SEGMENT_MB = 64
BATCH_RECORDS = 100
VALUE_BYTES = 150


def _write_uncompressed(root, mb):
    import kafkafmt

    part = root / "t-0"
    part.mkdir(parents=True)
    values = [bytes([65 + i % 26]) * VALUE_BYTES for i in range(BATCH_RECORDS)]
    batch = np.frombuffer(kafkafmt.encode(values=values, timestamps=list(range(1_700_000_000_000,
                                                                            1_700_000_000_000 + BATCH_RECORDS))),
                          np.uint8)
    n = (mb << 20) // len(batch)
    data = np.tile(batch, n).reshape(n, len(batch))
    data[:, :8] = (np.arange(n, dtype=">i8") * BATCH_RECORDS).view(np.uint8).reshape(n, 8)
    data.tofile(part / "00000000000000000000.log")
    (root / "meta.properties").write_text("version=1\nbroker.id=1\n")
    return {"bytes": int(data.size), "batches": int(n), "records": int(n * BATCH_RECORDS)}


def uncompressed_dir():
    """(log dir, segment path, metadata), written once."""
    mb = QUICK_SEGMENT_MB if common.asv_quick() else SEGMENT_MB
    base = corpus.cache_dir() / "logdirs"
    final = base / f"recover-uncompressed-{mb}"
    done = base / f"recover-uncompressed-{mb}.json"
    if not (done.exists() and final.is_dir()):
        base.mkdir(parents=True, exist_ok=True)
        tmp = base / f"recover-uncompressed-{mb}.{os.getpid()}.tmp"
        meta = _write_uncompressed(tmp, mb)
        os.replace(tmp, final)
        done.write_text(json.dumps(meta))
    meta = json.loads(done.read_text())
    return str(final), str(final / "t-0" / "00000000000000000000.log"), meta


def _warm(path):
    with open(path, "rb") as f:
        while f.read(64 << 20):
            pass


def rebuild(segment):
    from kafkafmt.recovery import rebuild_indexes

    return lambda: rebuild_indexes(segment)


def recover_dry(root):
    from kafkafmt.recovery import recover

    return lambda: recover(root)


def read_all(root):
    read = common.kafkafmt.read_log_dirs
    return lambda: read(root)


def _gb_per_second(_):
    _, seg, meta = uncompressed_dir()
    _warm(seg)
    (t,) = common.interleaved_medians([rebuild(seg)])
    return round(meta["bytes"] / t / 1e9, 2)


def _root(name):
    if name == "cluster":
        path, _ = corpus.log_dir("cluster")
        return str(path)
    return uncompressed_dir()[0]


register_value("rebuild_gbps", "rebuild_indexes GB/s (uncompressed segment, one core)", ["uncompressed"],
               _gb_per_second, "GB/s", family="recover", track="bench_recover.RebuildIndexes."
               "track_gb_per_second_rebuild_indexes")
common.register_ratio("recover_vs_read", "recover (dry run) ÷ read_log_dirs time", ["cluster", "uncompressed"],
                      lambda name: (recover_dry(_root(name)), read_all(_root(name))), better="lower",
                      family="recover", track="bench_recover.RecoverLogDir.track_ratio_recover_vs_read")


class RebuildIndexes:
    """``rebuild_indexes`` of one uncompressed segment."""

    timeout = 300

    def setup(self):
        require_kafkafmt()
        common.note_quick()
        _, self.segment, self.meta = uncompressed_dir()
        _warm(self.segment)
        self.run = rebuild(self.segment)
        r = self.run()
        assert r.scan.clean and len(r.index) == self.meta["batches"] - 1, "rebuild_indexes: unexpected result"

    def time_rebuild_indexes(self):
        self.run()

    def track_gb_per_second_rebuild_indexes(self):
        (t,) = common.interleaved_medians([self.run])
        return round(self.meta["bytes"] / t / 1e9, 2)

    track_gb_per_second_rebuild_indexes.unit = "GB/s"


class RecoverLogDir:
    """A whole log dir: ``recover`` (dry run) against ``read_log_dirs``."""

    params = ["cluster", "uncompressed"]
    param_names = ["log_dir"]
    timeout = 600

    def setup(self, name):
        require_kafkafmt()
        common.note_quick()
        self.root = _root(name)
        self.recover = recover_dry(self.root)
        self.read = read_all(self.root)
        plan = self.recover()
        assert not [a for a in plan.actions if a.kind.value in ("truncate", "cut", "delete")], plan.text()

    def time_recover(self, name):
        self.recover()

    def time_read_log_dirs(self, name):
        self.read()

    def track_ratio_recover_vs_read(self, name):
        return common.measure_registered("recover_vs_read", name)

    track_ratio_recover_vs_read.unit = "ratio"
