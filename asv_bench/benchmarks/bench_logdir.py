"""Log directories: index seeks against full scans, a whole broker log dir, bounded streaming.

Data (``corpus.log_dir``, written once by kafkafmt's LogWriter and cached):

* ``seek``: partition folder ``events-0``, 200 000 records (offsets 5 000 000 000 ...), lz4,
  500-record batches, ~50 segments with ``.index`` / ``.timeindex``;
* ``cluster``: a log dir with ``orders-0..3`` (lz4) and ``clicks-0..3`` (zstd), 20 000 records per
  partition in 4 segments each, plus ``meta.properties`` and checkpoint files.

Seeks start ``SEEK_BACK`` = 2 000 records before the end (inside the last segment):

* ``read_log_dir(start_offset=S)`` / ``read_log_dir(start_timestamp=T)`` (T = the timestamp of
  record S) -- the segment is chosen by file name, the position by ``.index`` / ``.timeindex``;
* against reading everything (``read_log_dir()``) and keeping offsets >= S with ``Records.filter``;
* and against aiokafka doing the best it can without an index reader: choose the segment by its
  file name, read it whole, decode with aiokafka, keep offsets >= S.

Directory read: ``read_log_dirs(root)`` (every partition, with topic/partition columns) against
aiokafka reading every ``.log`` file of every partition folder in order into the same lists.

Streaming: ``iter_log_dir(folder, max_bytes=STREAM_MAX_BYTES)`` consuming chunk after chunk
against ``read_log_dir(folder)``: ``peakmem_`` (asv: the whole process's peak RSS, imports
included) and the peak the call itself adds, measured in a fresh interpreter
(``common.peak_delta_bytes``).
"""

from __future__ import annotations

import bisect
import os

import numpy as np

from . import common, corpus
from .common import aiokafka_columns, register_ratio, register_value, require_kafkafmt

SEEK_BACK = 2_000
STREAM_MAX_BYTES = 4 << 20


# --- the seek log dir ----------------------------------------------------------------------------

def seek_dir():
    path, meta = corpus.log_dir("seek")
    return str(path), meta


def seek_targets():
    """(start offset S, timestamp of record S) for the seek benchmarks."""
    _, meta = seek_dir()
    rec = corpus.records(corpus.SEEK_DIR[1])
    i = meta["records"] - SEEK_BACK
    return meta["first_offset"] + i, rec["timestamps"][i]


def touch(recs):
    recs.offset, recs.timestamp, recs.key, recs.value, recs.headers  # noqa: B018
    return recs


def kafkafmt_seek(kind):
    folder, _ = seek_dir()
    start, ts = seek_targets()
    read = common.kafkafmt.read_log_dir
    if kind == "offset":
        return lambda: touch(read(folder, start_offset=start))
    return lambda: touch(read(folder, start_timestamp=ts))


def kafkafmt_full_filter(kind):
    """Read everything, then keep what the seek would have returned."""
    folder, _ = seek_dir()
    start, ts = seek_targets()
    read = common.kafkafmt.read_log_dir
    if kind == "offset":
        return lambda: touch((lambda r: r.filter(np.asarray(r.offset) >= start))(read(folder)))

    def by_time():
        r = read(folder)
        hit = np.flatnonzero(np.asarray(r.timestamp) >= ts)       # Kafka: first record with ts >= T ...
        return touch(r.filter(np.asarray(r.offset) >= (r.offset[hit[0]] if hit.size else 1 << 62)))
    return by_time


def _segment_files(folder):
    logs = sorted(f for f in os.listdir(folder) if f.endswith(".log"))
    return [os.path.join(folder, f) for f in logs], [int(f[:-4]) for f in logs]


def aiokafka_seek(kind):
    """aiokafka has no index reader: choose the segment by file name, scan it, filter."""
    if kind != "offset":
        raise NotImplementedError("aiokafka has no time index reader")
    folder, _ = seek_dir()
    start, _ = seek_targets()

    def run():
        files, bases = _segment_files(folder)
        k = max(bisect.bisect_right(bases, start) - 1, 0)
        out = [[], [], [], [], []]
        for path in files[k:]:
            with open(path, "rb") as f:
                cols = aiokafka_columns(f.read())
            for acc, col in zip(out, cols):
                acc.extend(col.tolist() if isinstance(col, np.ndarray) else col)
        offsets = np.array(out[0], np.int64)
        keep = int(np.searchsorted(offsets, start))
        return offsets[keep:], np.array(out[1][keep:], np.int64), out[2][keep:], out[3][keep:], out[4][keep:]
    return run


def _check_seek(kind):
    common.verified_once("seek", kind, lambda: _check_seek_now(kind))


def _check_seek_now(kind):
    a, b = kafkafmt_seek(kind)(), kafkafmt_full_filter(kind)()
    assert len(a) and len(a) == len(b), (len(a), len(b))
    np.testing.assert_array_equal(np.asarray(a.offset), np.asarray(b.offset))
    if kind == "offset":
        c = aiokafka_seek(kind)()
        np.testing.assert_array_equal(np.asarray(a.offset), c[0])
        assert len(a) == SEEK_BACK


register_ratio("seek_speedup", "seek × full scan + filter", ["offset", "timestamp"],
               lambda kind: (kafkafmt_full_filter(kind), kafkafmt_seek(kind)), family="logdir",
               track="bench_logdir.SeekRatios.track_ratio_seek_vs_full_scan")
register_ratio("seek_vs_aiokafka", "seek × aiokafka (segment by name + scan)", ["offset"],
               lambda kind: (aiokafka_seek(kind), kafkafmt_seek(kind)), family="logdir",
               track="bench_logdir.SeekRatios.track_ratio_seek_vs_aiokafka")


class Seek:
    """Times of the seek contenders; ``kind`` is offset (``start_offset``) or timestamp."""

    params = ["offset", "timestamp"]
    param_names = ["seek"]
    timeout = 300

    def setup(self, kind):
        require_kafkafmt()
        common.note_quick()
        _check_seek(kind)
        self.seek = kafkafmt_seek(kind)
        self.full = kafkafmt_full_filter(kind)
        self.kind = kind

    def time_kafkafmt_seek(self, kind):
        self.seek()

    def time_kafkafmt_full_scan_filter(self, kind):
        self.full()

    def time_aiokafka_segment_scan(self, kind):
        if kind != "offset":
            raise common.SkipNotImplemented("aiokafka has no time index reader")
        aiokafka_seek(kind)()


class SeekRatios(Seek):
    """* ``track_ratio_seek_vs_full_scan`` = time(read everything + filter) / time(indexed seek)
    * ``track_ratio_seek_vs_aiokafka``   = time(aiokafka: segment by file name + scan + filter) /
      time(indexed seek) (offset seeks only)."""

    unit = "ratio"
    time_kafkafmt_seek = time_kafkafmt_full_scan_filter = time_aiokafka_segment_scan = None

    def track_ratio_seek_vs_full_scan(self, kind):
        return common.measure_registered("seek_speedup", kind)

    def track_ratio_seek_vs_aiokafka(self, kind):
        if kind != "offset":
            raise common.SkipNotImplemented("aiokafka has no time index reader")
        return common.measure_registered("seek_vs_aiokafka", kind)


# --- the multi-partition log dir -------------------------------------------------------------------

def cluster_root():
    path, meta = corpus.log_dir("cluster")
    return str(path), meta


def kafkafmt_read_dirs(columns=None):
    root, _ = cluster_root()
    read = common.kafkafmt.read_log_dirs
    if columns is None:
        return lambda: touch(read(root))
    return lambda: (lambda r: (r.offset, r.timestamp))(read(root, columns=columns))


def aiokafka_read_dirs():
    """Every partition folder (``<topic>-<partition>``), every ``.log`` in order, decoded by aiokafka
    into one set of lists with topic and partition per record."""
    root, _ = cluster_root()

    def run():
        out = [[], [], [], [], [], [], []]   # offset, timestamp, key, value, headers, topic, partition
        for name in sorted(os.listdir(root)):
            folder = os.path.join(root, name)
            topic, _, part = name.rpartition("-")
            if not (os.path.isdir(folder) and topic and part.isdigit()):
                continue
            p = int(part)
            for path in _segment_files(folder)[0]:
                with open(path, "rb") as f:
                    cols = aiokafka_columns(f.read())
                n = len(cols[0])
                out[0].append(cols[0])
                out[1].append(cols[1])
                out[2].extend(cols[2])
                out[3].extend(cols[3])
                out[4].extend(cols[4])
                out[5].extend([topic] * n)
                out[6].extend([p] * n)
        out[0], out[1] = np.concatenate(out[0]), np.concatenate(out[1])
        return out
    return run


def _check_dirs():
    common.verified_once("dirs", "cluster", _check_dirs_now)


def _check_dirs_now():
    a, b = kafkafmt_read_dirs()(), aiokafka_read_dirs()()
    _, meta = cluster_root()
    assert len(a) == len(b[0]) == meta["records"], (len(a), len(b[0]), meta["records"])
    assert sorted(np.asarray(a.offset).tolist()) == sorted(b[0].tolist())


register_ratio("dirs_vs_aiokafka", "read_log_dirs × aiokafka", ["cluster"],
               lambda _: (aiokafka_read_dirs(), kafkafmt_read_dirs()), family="logdir",
               track="bench_logdir.LogDirs.track_ratio_read_log_dirs_vs_aiokafka")


class LogDirs:
    """A whole log dir: 8 partitions, 160 000 records, 32 segments."""

    timeout = 300

    def setup(self):
        require_kafkafmt()
        common.note_quick()
        _check_dirs()
        self.mine = kafkafmt_read_dirs()
        self.meta_only = kafkafmt_read_dirs(["offset", "timestamp"])
        self.peer = aiokafka_read_dirs()

    def time_kafkafmt_read_log_dirs(self):
        self.mine()

    def time_kafkafmt_read_log_dirs_offsets_timestamps(self):
        self.meta_only()

    def time_aiokafka_read_files(self):
        self.peer()

    def track_ratio_read_log_dirs_vs_aiokafka(self):
        return common.measure_registered("dirs_vs_aiokafka", "cluster")

    track_ratio_read_log_dirs_vs_aiokafka.unit = "ratio"

    def track_records_per_second_read_log_dirs(self):
        (t,) = common.interleaved_medians([self.mine])
        return int(cluster_root()[1]["records"] / t)

    track_records_per_second_read_log_dirs.unit = "records/s"


# --- streaming ---------------------------------------------------------------------------------------

def stream_seek_dir(max_bytes=STREAM_MAX_BYTES):
    folder, _ = seek_dir()
    it = common.kafkafmt.iter_log_dir

    def run():
        n = 0
        for chunk in it(folder, max_bytes=max_bytes):
            touch(chunk)
            n += len(chunk)
        return n
    return run


def full_seek_dir():
    folder, _ = seek_dir()
    read = common.kafkafmt.read_log_dir
    return lambda: touch(read(folder))


def _peak_ratio(_):
    return round(common.median_peak_delta("bench_logdir:full_seek_dir")
                 / common.median_peak_delta("bench_logdir:stream_seek_dir"), 2)


register_ratio("stream_time", "iter_log_dir ÷ read_log_dir time", ["seek"],
               lambda _: (stream_seek_dir(), full_seek_dir()), better="lower", family="logdir",
               track="bench_logdir.Streaming.track_ratio_stream_vs_full_time")
register_value("stream_peak", "read_log_dir ÷ iter_log_dir peak memory", ["seek"], _peak_ratio, "ratio",
               family="logdir", track="bench_logdir.Streaming.track_ratio_full_vs_stream_peak_memory")


class Streaming:
    """``iter_log_dir(max_bytes=4 MiB)`` over the 200 000-record partition against ``read_log_dir``."""

    timeout = 300

    def setup(self):
        require_kafkafmt()
        common.note_quick()
        self.stream = stream_seek_dir()
        self.full = full_seek_dir()
        self.records = seek_dir()[1]["records"]

    def time_iter_log_dir_stream(self):
        self.stream()

    def time_read_log_dir_full(self):
        self.full()

    def peakmem_iter_log_dir_stream(self):
        self.stream()

    def peakmem_read_log_dir_full(self):
        self.full()

    def track_peak_bytes_stream(self):
        return common.median_peak_delta("bench_logdir:stream_seek_dir")

    track_peak_bytes_stream.unit = "bytes"

    def track_peak_bytes_full(self):
        return common.median_peak_delta("bench_logdir:full_seek_dir")

    track_peak_bytes_full.unit = "bytes"

    def track_ratio_full_vs_stream_peak_memory(self):
        return common.measure_registered("stream_peak", "seek")

    track_ratio_full_vs_stream_peak_memory.unit = "ratio"

    def track_ratio_stream_vs_full_time(self):
        return common.measure_registered("stream_time", "seek")

    track_ratio_stream_vs_full_time.unit = "ratio"
