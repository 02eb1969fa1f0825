"""Arrow hand-off: a Polars scan with a time filter (``kafkafmt.polars.scan_log_dirs``, pruned by the
time index) against reading everything and then filtering.

Data (written once by kafkafmt's LogWriter, cached in the corpus directory): partition folder
``events-0``, 200 000 records over 24 hours (a sorted clock plus +-30 s of jitter, so timestamps
are not monotonic), values of 100-300 bytes, 200-record batches, lz4, 4 MiB segments with indexes
(~12 segments).

Query: the records of one hour, ``timestamp`` in [hour 20, hour 21) -- the rows Polars keeps are
the same for every contender (checked once):

* ``scan_window``: ``scan_log_dirs(root).filter(window).collect()`` -- the lower bound seeks by
  the time index (offsets-for-times), the upper bound is applied by Polars (timestamps are not
  monotonic: it cannot end the read);
* ``full_then_filter``: ``pl.DataFrame(read_log_dirs(root)).filter(window)``;
* ``duckdb_window``: DuckDB's SQL on the same LazyFrame (its filter pushed down into it).

``track_ratio_scan_window_vs_full`` = time(full_then_filter) / time(scan_window), and
``track_fetched_fraction`` = bytes the scan fetched / bytes the full read fetched, both read from
fsspec's ``memory://`` store (counted by ``kafkafmt.storage.statistics``).

``python -m benchmarks.bench_handoff`` prints the medians and the ratio without asv.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import statistics as stats

import numpy as np

from . import common, corpus
from .common import register_ratio, register_value, require_kafkafmt

T0 = 1_767_225_600_000
HOUR = 3_600_000
N_RECORDS = 200_000
SEGMENT_BYTES = 4 << 20


def handoff_root():
    """The cached log dir (root holding ``events-0``)."""
    base = corpus.cache_dir() / "logdirs"
    final = base / "handoff"
    done = base / "handoff.json"
    if done.exists() and final.is_dir():
        return str(final)
    import kafkafmt

    base.mkdir(parents=True, exist_ok=True)
    tmp = base / ("handoff.%d.tmp" % os.getpid())
    shutil.rmtree(tmp, ignore_errors=True)
    rng = np.random.default_rng(2027)
    ts = T0 + np.sort(rng.integers(0, 24 * HOUR, N_RECORDS)) + rng.integers(-30_000, 30_000, N_RECORDS)
    values = [bytes(rng.integers(97, 123, int(k), dtype=np.uint8)) for k in rng.integers(100, 300, N_RECORDS)]
    keys = [b"user-%d" % (i % 5000) for i in range(N_RECORDS)]
    w = kafkafmt.LogWriter(tmp / "events-0", segment_bytes=SEGMENT_BYTES)
    w.append(keys=keys, values=values, timestamps=ts.tolist(), compression="lz4", max_records=200)
    w.close()
    try:
        os.replace(tmp, final)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    done.write_text(json.dumps({"records": N_RECORDS}))
    return str(final)


def window():
    import polars as pl

    lo = dt.datetime.fromtimestamp((T0 + 20 * HOUR) / 1000, dt.timezone.utc)
    return (pl.col("timestamp") >= lo) & (pl.col("timestamp") < lo + dt.timedelta(hours=1))


def scan_window(root):
    import kafkafmt.polars

    pred = window()
    return lambda: kafkafmt.polars.scan_log_dirs(root).filter(pred).collect()


def full_then_filter(root):
    import polars as pl

    import kafkafmt

    pred = window()
    return lambda: pl.DataFrame(kafkafmt.read_log_dirs(root)).filter(pred)


def duckdb_window(root):
    import duckdb

    import kafkafmt.polars

    lo = dt.datetime.fromtimestamp((T0 + 20 * HOUR) / 1000, dt.timezone.utc)
    hi = lo + dt.timedelta(hours=1)

    def run():
        lf = kafkafmt.polars.scan_log_dirs(root)  # noqa: F841 (DuckDB finds it by name)
        return duckdb.sql('SELECT * FROM lf WHERE timestamp >= $lo AND timestamp < $hi ORDER BY "offset"',
                          params={"lo": lo, "hi": hi}).pl()
    return run


def _check():
    common.verified_once("handoff", "window", _check_now)


def _check_now():
    root = handoff_root()
    a, b, c = scan_window(root)(), full_then_filter(root)(), duckdb_window(root)()
    assert len(a) and a.equals(b), (len(a), len(b))
    assert c.select("offset").equals(b.select("offset"))


def fetched_fraction(_=None):
    """Bytes the windowed scan fetched / bytes the full read fetched, from ``memory://``."""
    import fsspec

    from kafkafmt.storage import statistics

    root = handoff_root()
    fs = fsspec.filesystem("memory")
    base = "/bench-handoff/logs"
    for name in os.listdir(os.path.join(root, "events-0")):
        with open(os.path.join(root, "events-0", name), "rb") as f:
            fs.pipe(f"{base}/events-0/{name}", f.read())
    try:
        url = "memory://" + base
        s0 = statistics()
        scan_window(url)()
        s1 = statistics()
        full_then_filter(url)()
        s2 = statistics()
        return round((s1 - s0).bytes_fetched / (s2 - s1).bytes_fetched, 3)
    finally:
        fs.rm("/bench-handoff", recursive=True)


register_ratio("scan_window_vs_full", "Polars scan, 1-hour window × full read + filter", ["window"],
               lambda _: (full_then_filter(handoff_root()), scan_window(handoff_root())), family="logdir",
               track="bench_handoff.HandoffRatios.track_ratio_scan_window_vs_full")
register_value("scan_window_fetched", "bytes fetched, 1-hour window scan ÷ full read (lower is better)", ["window"],
               fetched_fraction, "fraction", better="lower", family="logdir",
               track="bench_handoff.HandoffRatios.track_fetched_fraction")


class Handoff:
    """Times of the contenders."""

    timeout = 300

    def setup(self):
        require_kafkafmt()
        common.note_quick()
        _check()
        root = handoff_root()
        self.scan, self.full, self.duck = scan_window(root), full_then_filter(root), duckdb_window(root)

    def time_scan_window(self):
        self.scan()

    def time_full_then_filter(self):
        self.full()

    def time_duckdb_window(self):
        self.duck()


class HandoffRatios(Handoff):
    """* ``track_ratio_scan_window_vs_full`` = time(full read + filter) / time(Polars scan with the filter)
    * ``track_fetched_fraction`` = bytes fetched by the scan / by the full read (memory://)."""

    time_scan_window = time_full_then_filter = time_duckdb_window = None

    def track_ratio_scan_window_vs_full(self):
        return common.measure_registered("scan_window_vs_full", "window")

    track_ratio_scan_window_vs_full.unit = "ratio"

    def track_fetched_fraction(self):
        return fetched_fraction()

    track_fetched_fraction.unit = "fraction"


def _main():
    require_kafkafmt()
    _check()
    root = handoff_root()
    names = ["scan_window", "full_then_filter", "duckdb_window"]
    funcs = [scan_window(root), full_then_filter(root), duckdb_window(root)]
    samples = common.interleaved_samples(funcs, float(os.environ.get("KAFKAFMT_BENCH_BUDGET", 3.0)))
    for name, s in zip(names, samples):
        print("%-18s median %8.1f ms  (%d rounds)" % (name, 1000 * stats.median(s), len(s)))
    ratios = [f / s for s, f in zip(samples[0], samples[1])]
    print("full_then_filter / scan_window: median ratio %.2f" % stats.median(ratios))
    print("bytes fetched, scan / full read (memory://): %.3f" % fetched_fraction())


if __name__ == "__main__":
    _main()
