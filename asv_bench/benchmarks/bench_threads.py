"""Threads, zero-copy values, the pandas Arrow backend, and peak memory against the output size.

* ``ThreadScaling``: ``decode(buf, threads=n)`` of a large record set (the corpus repeated to
  ~40 MB uncompressed, so every codec is above ``decoder.PARALLEL_MIN_BYTES``) for n = 1..cores,
  the interleaved ratio time(1 thread) / time(2 threads), minor page faults per decode
  (``resource.getrusage``), and ``read_log_dirs`` of the cluster log dir (8 partitions) with 1 vs 2
  threads.  Run these WITHOUT ``--cpu-affinity`` (pinned to one core two threads cannot help):
  ``asv run --python=same -b bench_threads``.
* ``ViewRatios``: ``decode(buf, binary="view")`` (key/value as Arrow binary_view into the input) vs
  aiokafka's columns, one thread (target >= 15x uncompressed), and
  ``to_pandas(dtype_backend="pyarrow")`` vs aiokafka's DataFrame (target >= 10x).
* ``OutputMemory``: peak resident memory a full decode adds (fresh interpreter, as bench_memory)
  divided by the size of its output arrays (target <= 1.3).
"""

from __future__ import annotations

import os
import resource

import numpy as np

from . import common, corpus
from .common import (aiokafka_columns, register_ratio, register_value, require_kafkafmt)

CORES = max(1, len(os.sched_getaffinity(0)))
THREADS = sorted({1, 2, CORES})
SCALING = ["none", "zstd", "lz4", "gzip", "zstd-small"]
TARGET_BYTES = 40 << 20


def big(name):
    """The corpus repeated to about TARGET_BYTES (a record set: offsets repeat, decode does not mind)."""
    buf, _ = corpus.load(name)
    return np.frombuffer(bytes(buf) * max(1, TARGET_BYTES // len(buf)), np.uint8)


def decode(buf, threads, **kw):
    recs = common.kafkafmt.decode(buf, threads=threads, **kw)
    recs.offset, recs.timestamp, recs.key, recs.value, recs.headers  # noqa: B018
    return recs


def minor_faults(buf, threads, repeats=5):
    decode(buf, threads)
    r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(repeats):
        decode(buf, threads)
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0) / repeats


def _threads_pair(name):
    buf = big(name)
    return (lambda: decode(buf, 1)), (lambda: decode(buf, 2))


def _view_threads_pair(name):
    buf = big(name)
    return (lambda: decode(buf, 1, binary="view")), (lambda: decode(buf, 2, binary="view"))


register_ratio("decode_view_threads_2_vs_1", "decode binary='view': 2 threads × 1 thread", ["none", "lz4"],
               _view_threads_pair, family="threads", track="bench_threads.ThreadRatios.track_ratio_view_2_threads_vs_1")
register_ratio("decode_threads_2_vs_1", "decode: 2 threads × 1 thread", SCALING, _threads_pair, family="threads",
               track="bench_threads.ThreadRatios.track_ratio_2_threads_vs_1")


class ThreadScaling:
    params = (SCALING, THREADS)
    param_names = ["corpus", "threads"]
    timeout = 600

    def setup(self, name, threads):
        require_kafkafmt()
        common.note_quick()
        self.buf = big(name)

    def time_decode(self, name, threads):
        decode(self.buf, threads)

    def track_minor_faults_per_decode(self, name, threads):
        return minor_faults(self.buf, threads)

    track_minor_faults_per_decode.unit = "faults"



class ThreadRatios:
    """Interleaved ratios time(1 thread) / time(2 threads)."""
    params = SCALING
    param_names = ["corpus"]
    timeout = 600

    def setup(self, name):
        require_kafkafmt()
        common.note_quick()

    def track_ratio_2_threads_vs_1(self, name):
        return common.measure_registered("decode_threads_2_vs_1", name)

    track_ratio_2_threads_vs_1.unit = "ratio"

    def track_ratio_view_2_threads_vs_1(self, name):
        if name not in ("none", "lz4"):
            raise common.SkipNotImplemented("measured for none and lz4")
        return common.measure_registered("decode_view_threads_2_vs_1", name)

    track_ratio_view_2_threads_vs_1.unit = "ratio"


def _logdirs_pair(_):
    root, _meta = corpus.log_dir("cluster")
    read = common.kafkafmt.read_log_dirs
    return (lambda: read(root, threads=1)), (lambda: read(root, threads=2))


register_ratio("read_log_dirs_threads_2_vs_1", "read_log_dirs (8 partitions): 2 threads × 1", ["cluster"],
               _logdirs_pair, family="threads", track="bench_threads.LogDirThreadRatio.track_ratio_2_threads_vs_1")


class LogDirThreads:
    params = THREADS
    param_names = ["threads"]
    timeout = 300

    def setup(self, threads):
        require_kafkafmt()
        common.note_quick()
        self.root, _ = corpus.log_dir("cluster")

    def time_read_log_dirs(self, threads):
        common.kafkafmt.read_log_dirs(self.root, threads=threads)


class LogDirThreadRatio:
    timeout = 300

    def setup(self):
        require_kafkafmt()
        common.note_quick()

    def track_ratio_2_threads_vs_1(self):
        return common.measure_registered("read_log_dirs_threads_2_vs_1", "cluster")

    track_ratio_2_threads_vs_1.unit = "ratio"


# --- zero-copy values and the pandas Arrow backend (one thread: the targets are one-core) --------

VIEW_PARAMS = ["none", "zstd", "lz4", "zstd-small"]


def kafkafmt_views(buf):
    return decode(buf, 1, binary="view")


def kafkafmt_pandas_arrow(buf):
    return common.kafkafmt.decode(buf, threads=1).to_pandas(dtype_backend="pyarrow")


def aiokafka_pandas(buf):
    return common.frame_from_columns(common.aiokafka_frame_columns(buf))


def _view_pair(name):
    common.peer_available("aiokafka", name)
    buf, _ = corpus.load(name)
    return (lambda: aiokafka_columns(buf)), (lambda: kafkafmt_views(buf))


def _contig_pair(name):
    common.peer_available("aiokafka", name)
    buf, _ = corpus.load(name)
    return (lambda: aiokafka_columns(buf)), (lambda: decode(buf, 1))


def _pandas_pair(name):
    common.peer_available("aiokafka", name)
    buf, _ = corpus.load(name)
    return (lambda: aiokafka_pandas(buf)), (lambda: kafkafmt_pandas_arrow(buf))


register_ratio("decode_view_vs_aiokafka", "decode binary='view' × aiokafka (1 thread)", VIEW_PARAMS, _view_pair,
               track="bench_threads.ViewRatios.track_ratio_view_vs_aiokafka")
register_ratio("decode_contiguous_1t_vs_aiokafka", "decode contiguous × aiokafka (1 thread)", VIEW_PARAMS,
               _contig_pair, track="bench_threads.ViewRatios.track_ratio_contiguous_vs_aiokafka")
register_ratio("pandas_arrow_vs_aiokafka", "to_pandas(dtype_backend='pyarrow') × aiokafka's DataFrame",
               VIEW_PARAMS, _pandas_pair, track="bench_threads.ViewRatios.track_ratio_pandas_arrow_vs_aiokafka")


class ViewRatios:
    params = VIEW_PARAMS
    param_names = ["corpus"]
    timeout = 300

    def setup(self, name):
        require_kafkafmt()
        common.note_quick()
        self.buf, _ = corpus.load(name)

    def time_decode_view(self, name):
        kafkafmt_views(self.buf)

    def time_to_pandas_arrow(self, name):
        kafkafmt_pandas_arrow(self.buf)

    def track_ratio_view_vs_aiokafka(self, name):
        return common.measure_registered("decode_view_vs_aiokafka", name)

    track_ratio_view_vs_aiokafka.unit = "ratio"

    def track_ratio_contiguous_vs_aiokafka(self, name):
        return common.measure_registered("decode_contiguous_1t_vs_aiokafka", name)

    track_ratio_contiguous_vs_aiokafka.unit = "ratio"

    def track_ratio_pandas_arrow_vs_aiokafka(self, name):
        return common.measure_registered("pandas_arrow_vs_aiokafka", name)

    track_ratio_pandas_arrow_vs_aiokafka.unit = "ratio"


# --- peak memory over output size ------------------------------------------------------------

MEMORY_PARAMS = (["none", "zstd", "zstd-small", "v1-gzip"], THREADS)


def output_bytes(recs):
    """Bytes of the arrays a Records holds (views count their 16-byte views, not the input)."""
    total = 0
    for a in (recs.offset, recs.timestamp, recs.timestamp_type, recs.batch_index):
        total += a.nbytes
    for col in (recs.key, recs.value):
        if hasattr(col, "views"):
            total += col.views.nbytes
        else:
            total += col.offsets.nbytes + col.data.nbytes
        total += 0 if col.validity is None else col.validity.nbytes
    h = recs.headers
    total += h.offsets.nbytes + sum(c.offsets.nbytes + c.data.nbytes for c in (h.key, h.value))
    total += sum(recs.batches[c].nbytes for c in recs.batches.columns)
    return total


def decode_call(name, threads):
    """For common.peak_delta_bytes: the big corpus loaded (not measured), then one full decode."""
    buf = big(name)
    return lambda: decode(buf, threads)


def _peak_over_output(param):
    name, threads = param
    peak = common.median_peak_delta("bench_threads:decode_call", name, threads)
    out = output_bytes(decode(big(name), 1))
    return round(peak / out, 3)


register_value("decode_peak_over_output", "peak memory of decode ÷ its output size",
               [(n, t) for n in MEMORY_PARAMS[0] for t in MEMORY_PARAMS[1]], _peak_over_output, "ratio",
               better="lower", family="threads", track="bench_threads.OutputMemory.track_peak_over_output")


class OutputMemory:
    params = MEMORY_PARAMS
    param_names = ["corpus", "threads"]
    timeout = 600

    def setup(self, name, threads):
        require_kafkafmt()
        common.note_quick()

    def track_peak_over_output(self, name, threads):
        return common.measure_registered("decode_peak_over_output", (name, threads))

    track_peak_over_output.unit = "ratio"

    def track_output_bytes(self, name, threads):
        return output_bytes(decode(big(name), threads))

    track_output_bytes.unit = "bytes"


OWN = ("decode_threads_2_vs_1", "decode_view_threads_2_vs_1", "read_log_dirs_threads_2_vs_1", "decode_view_vs_aiokafka",
       "decode_contiguous_1t_vs_aiokafka", "pandas_arrow_vs_aiokafka", "decode_peak_over_output")


def main(argv=None):
    """``python -m benchmarks.bench_threads [KEY[=PARAM,...]] ... [--budget S]``: this module's
    ratios measured in this process (as benchmarks.report does for the others)."""
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("keys", nargs="*", help=f"some of {', '.join(OWN)}, optionally =param,param")
    ap.add_argument("--budget", type=float, default=1.0, help="seconds per contender per ratio")
    args = ap.parse_args(argv)
    for item in args.keys or OWN:
        key, _, params = item.partition("=")
        spec = common.RATIOS[key]
        chosen = [p for p in spec["params"] if not params or str(p) in params.split(",")
                  or (isinstance(p, tuple) and ",".join(map(str, p)) in params.split(";"))]
        for p in chosen:
            try:
                value = common.measure_registered(key, p, args.budget)
            except NotImplementedError as exc:
                value = f"n/a ({exc})"
            print(f"{spec['title']:60s} {str(p):22s} {value}", flush=True)


if __name__ == "__main__":
    main()
