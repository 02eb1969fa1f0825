"""The native layer's own figures: CRC throughput per implementation, and uncompressed small batches.

* ``CrcThroughput.track_gb_per_s``: GB/s (10^9 B) of each CRC over random data of 300 B (a typical
  v0/v1 message) and 1 MiB -- kafkafmt's crc32 (PCLMULQDQ folding when the CPU has it) and its
  table fallback (``scan.crc32_table``, what KAFKAFMT_CRC_SOFTWARE=1 selects), crc32c (SSE4.2) and
  its tables, and stdlib ``zlib.crc32`` for reference. Each is called from Python per buffer, so
  the 300-byte figures include one call's overhead (~100 ns), as for every reference.
* ``SmallUncompressed.track_ratio_vs_aiokafka``: time(aiokafka columns) / time(kafkafmt.decode) of
  the ``small`` record set (20 000 records) in uncompressed v2 batches of 1..10 records -- the
  uncompressed counterpart of the ``zstd-small`` / ``lz4-small`` corpora (same records, same batch
  sizes), built in memory from ``corpus``; checked against aiokafka once.

``python -m benchmarks.bench_native`` prints both without asv.
"""

from __future__ import annotations

import os
import zlib

from . import common, corpus
from .common import interleaved_medians, require_kafkafmt

SIZES = [300, 1 << 20]
CRCS = ["crc32", "crc32-table", "crc32c", "crc32c-table", "zlib.crc32"]


def _crc_function(name):
    if name == "zlib.crc32":
        return zlib.crc32
    from kafkafmt._native import scan

    return {"crc32": scan.crc32, "crc32-table": scan.crc32_table, "crc32c": scan.crc32c,
            "crc32c-table": scan.crc32c_table}[name]


def crc_gb_per_s(name, size, budget_s=None) -> float:
    import numpy as np

    f = _crc_function(name)
    reps = max(1, (4 << 20) // size)
    bufs = [np.frombuffer(os.urandom(size), np.uint8) for _ in range(min(reps, 256))]

    def run():
        for i in range(reps):
            f(bufs[i % len(bufs)])
    (t,) = interleaved_medians([run], budget_s)
    return round(reps * size / t / 1e9, 2)


_small = {}


def small_uncompressed():
    """The ``small`` record set in uncompressed v2 batches of 1..10 records (as ``zstd-small``)."""
    if "buf" not in _small:
        recs = corpus.records("small")
        n = len(recs["values"])
        _small["buf"] = corpus.encode_batches(recs, corpus.batch_sizes(n, (1, 10), 12), magic=2, codec="none")
        _small["records"] = n
    return _small["buf"]


def _check_small():
    buf = small_uncompressed()
    offsets, timestamps, keys, values, headers = common.aiokafka_columns(buf)
    recs = common.kafkafmt.decode(buf)
    assert recs.offset.tolist() == list(offsets) and recs.timestamp.tolist() == list(timestamps)
    assert common.binary_to_list(recs.value) == list(values)
    assert common.binary_to_list(recs.key) == list(keys)


def small_ratio_vs_aiokafka(budget_s=None) -> float:
    buf = small_uncompressed()
    return common.ratio(lambda: common.aiokafka_columns(buf), lambda: common.kafkafmt_columns(buf), budget_s)


class CrcThroughput:
    params = [CRCS, SIZES]
    param_names = ["crc", "bytes"]
    unit = "GB/s"
    timeout = 120

    def setup(self, name, size):
        require_kafkafmt()
        common.note_quick()

    def track_gb_per_s(self, name, size):
        return crc_gb_per_s(name, size)


class SmallUncompressed:
    unit = "ratio"
    timeout = 300

    def setup(self):
        require_kafkafmt()
        common.note_quick()
        common.verified_once("native-small", "none-small", _check_small)

    def track_ratio_vs_aiokafka(self):
        return small_ratio_vs_aiokafka()


if __name__ == "__main__":
    print("| crc | %s |" % " | ".join("%d B GB/s" % s for s in SIZES))
    print("|---|" + "---|" * len(SIZES))
    for name in CRCS:
        print("| %s | %s |" % (name, " | ".join("%.2f" % crc_gb_per_s(name, s) for s in SIZES)), flush=True)
    _check_small()
    print("uncompressed small batches (1..10 records), x aiokafka: %.2f" % small_ratio_vs_aiokafka())
