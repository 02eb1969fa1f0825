"""Scaling: time and memory against the number of partitions, the records per batch, and threads.

Data (``corpus.log_dir("many-N")``, N in ``corpus.MANY_COUNTS``): a broker's log dir of N small
partitions, each one ~13 KB segment of 69 one-record batches (offset commits, as a
``__consumer_offsets`` partition holds), written once by kafkafmt's LogWriter.

* ``ManyPartitions``: ``read_log_dirs(root)`` against kafka-python reading every ``.log`` of every
  partition folder into lists with topic and partition (one core against one core, interleaved
  medians), the time per partition, the fixed cost per partition on top of its records' decode
  (read_log_dirs minus ``decode`` of the same segments concatenated into one buffer, per partition),
  and the peak memory the read (and ``to_arrow()``) adds over the Arrow table's size.
* ``ManySegments``: ``read_log_dir`` of one partition of 50 or 400 segments of ~8 KB (32 records of 200 B
  each) against kafka-python reading each ``.log`` (a topic that rolls its segments often).
* ``OnePartition``: ``read_log_dir`` of one partition of the 20 000-partition dir ÷ the same read in
  the 200-partition dir (a read of one partition costs the same whatever its siblings: 1.0).
* ``RecordsPerBatch``: ``decode`` of 200 000 records in batches of 1, 10, 100, 1 000 records: records/s
  and × aiokafka.
* ``ThreadRatios``: ``read_log_dirs`` with 2 threads against 1 on 4 large partitions (the ``cluster``
  dir's ``orders``) and on the 2 000 small ones (run without ``--cpu-affinity``).

``python -m benchmarks.bench_scaling`` prints the curves without asv.
"""

from __future__ import annotations

import os

import numpy as np

from . import common, corpus
from .common import (aiokafka_columns, kafka_python_columns, register_ratio, register_value, require_kafkafmt)

COUNTS = list(corpus.MANY_COUNTS)
PER_BATCH = [1, 10, 100, 1000]
PER_BATCH_RECORDS = 200_000


def many_root(n):
    path, meta = corpus.log_dir("many-%d" % n)
    return str(path), meta


def touch(recs):
    recs.offset, recs.timestamp, recs.key, recs.value, recs.headers  # noqa: B018
    return recs


def kafkafmt_many(n, threads=1):
    root, _ = many_root(n)
    return lambda: touch(common.kafkafmt.read_log_dirs(root, threads=threads))


def kafkafmt_many_stream(n):
    """iter_log_dirs over the N partitions, every chunk's columns touched (the stream door: a chunk a partition)."""
    root, _ = many_root(n)

    def run():
        return sum(len(touch(recs)) for recs in common.kafkafmt.iter_log_dirs(root, threads=1))
    return run


def kafkafmt_many_polars(n):
    """kafkafmt.polars.scan_log_dirs(...).collect() of the N partitions (a Polars frame)."""
    root, _ = many_root(n)
    import kafkafmt.polars as kpl

    return lambda: kpl.scan_log_dirs(root, threads=1).collect()


def _logs(root):
    """(topic, partition, [.log paths]) of every partition folder, in name order."""
    out = []
    for name in sorted(os.listdir(root)):
        folder = os.path.join(root, name)
        topic, _, part = name.rpartition("-")
        if not (os.path.isdir(folder) and topic and part.isdigit()):
            continue
        out.append((topic, int(part), [os.path.join(folder, f) for f in sorted(os.listdir(folder))
                                       if f.endswith(".log")]))
    return out


def peer_many(n, columns=kafka_python_columns):
    """kafka-python (or aiokafka) reading every .log of every partition folder into one set of lists with
    topic and partition per record."""
    root, _ = many_root(n)

    def run():
        out = [[], [], [], [], [], [], []]   # offset, timestamp, key, value, headers, topic, partition
        for topic, p, logs in _logs(root):
            for path in logs:
                with open(path, "rb") as f:
                    cols = columns(f.read())
                k = len(cols[0])
                out[0].append(cols[0])
                out[1].append(cols[1])
                out[2].extend(cols[2])
                out[3].extend(cols[3])
                out[4].extend(cols[4])
                out[5].extend([topic] * k)
                out[6].extend([p] * k)
        return out
    return run


def decode_all(n):
    """decode() of every partition's segment concatenated into one buffer: the records' decode alone."""
    root, _ = many_root(n)
    buf = b"".join(open(path, "rb").read() for _, _, logs in _logs(root) for path in logs)
    arr = np.frombuffer(buf, np.uint8)
    return lambda: touch(common.kafkafmt.decode(arr, threads=1))


def _check_many(n):
    common.verified_once("many", str(n), lambda: _check_many_now(n))


def _check_many_now(n):
    a, b = kafkafmt_many(n)(), peer_many(n)()
    assert len(a) == sum(len(x) for x in b[0]) == many_root(n)[1]["records"]
    assert np.array_equal(np.asarray(a.offset), np.concatenate(b[0]))
    assert a.value.to_pylist()[:1000] == b[3][:1000]


def fixed_us_per_partition(n, budget_s=None):
    read, floor = kafkafmt_many(n), decode_all(n)
    t_read, t_floor = common.interleaved_medians([read, floor], budget_s)
    return round(1e6 * (t_read - t_floor) / n, 1)


def us_per_partition(n, budget_s=None):
    (t,) = common.interleaved_medians([kafkafmt_many(n)], budget_s)
    return round(1e6 * t / n, 1)


def peak_setup(n):
    """For common.peak_delta_bytes: read_log_dirs(root).to_arrow() of the n-partition dir."""
    root, _ = many_root(n)
    common.kafkafmt.set_cpu_count(1)

    def run():
        run.table = common.kafkafmt.read_log_dirs(root, threads=1).to_arrow()
    return run


def peak_over_arrow(n):
    root, _ = many_root(n)
    nbytes = common.kafkafmt.read_log_dirs(root, threads=1).to_arrow().nbytes
    return round(common.median_peak_delta("bench_scaling:peak_setup", n) / nbytes, 2)


register_ratio("many_vs_kafka_python", "read_log_dirs × kafka-python, N small partitions", COUNTS,
               lambda n: (peer_many(n), kafkafmt_many(n)), family="scaling",
               track="bench_scaling.ManyPartitions.track_ratio_vs_kafka_python")
register_ratio("many_stream_vs_kafka_python", "iter_log_dirs × kafka-python, N small partitions", COUNTS,
               lambda n: (peer_many(n), kafkafmt_many_stream(n)), family="scaling",
               track="bench_scaling.ManyPartitions.track_stream_vs_kafka_python")
register_ratio("many_polars_vs_kafka_python", "scan_log_dirs().collect() × kafka-python, N small partitions", COUNTS,
               lambda n: (peer_many(n), kafkafmt_many_polars(n)), family="scaling",
               track="bench_scaling.ManyPartitions.track_polars_vs_kafka_python")
register_value("many_us_per_partition", "read_log_dirs µs per partition", COUNTS, us_per_partition, "µs",
               better="lower", family="scaling", track="bench_scaling.ManyPartitions.track_us_per_partition")
register_value("many_fixed_us", "read_log_dirs fixed µs per partition (beyond its records' decode)", COUNTS,
               fixed_us_per_partition, "µs", better="lower", family="scaling",
               track="bench_scaling.ManyPartitions.track_fixed_us_per_partition")
register_value("many_peak_over_arrow", "read_log_dirs + to_arrow peak memory ÷ Arrow table", COUNTS,
               peak_over_arrow, "ratio", better="lower", family="scaling",
               track="bench_scaling.ManyPartitions.track_peak_over_arrow")


class ManyPartitions:
    params = COUNTS
    param_names = ["partitions"]
    timeout = 1200

    def setup(self, n):
        require_kafkafmt()
        common.note_quick()
        _check_many(n)
        self.mine = kafkafmt_many(n)

    def time_read_log_dirs(self, n):
        self.mine()

    def track_ratio_vs_kafka_python(self, n):
        return common.measure_registered("many_vs_kafka_python", n)

    track_ratio_vs_kafka_python.unit = "ratio"

    def track_stream_vs_kafka_python(self, n):
        return common.measure_registered("many_stream_vs_kafka_python", n)

    track_stream_vs_kafka_python.unit = "ratio"

    def track_polars_vs_kafka_python(self, n):
        return common.measure_registered("many_polars_vs_kafka_python", n)

    track_polars_vs_kafka_python.unit = "ratio"

    def track_us_per_partition(self, n):
        return common.measure_registered("many_us_per_partition", n)

    track_us_per_partition.unit = "µs"

    def track_fixed_us_per_partition(self, n):
        return common.measure_registered("many_fixed_us", n)

    track_fixed_us_per_partition.unit = "µs"

    def track_peak_over_arrow(self, n):
        return common.measure_registered("many_peak_over_arrow", n)

    track_peak_over_arrow.unit = "ratio"


# --- one partition of many small segments ----------------------------------------------------------------

SEGMENT_COUNTS = [50, 400, 2000]
SEGMENT_RECORDS = 32     # records of ~200 B a segment of ~8 KB (a topic rolling its segments often)


def segments_folder(n):
    """A partition of ``n`` segments of about 8 KB (written once per count, cached): its folder."""
    folder = corpus.cache_dir() / "logdirs" / ("segments-%d" % n) / "events-0"
    if not (folder.parent / ".complete").exists():
        rng = np.random.default_rng(n)
        values = [bytes(rng.integers(0, 255, 200, np.uint8)) for _ in range(n * SEGMENT_RECORDS)]
        with common.kafkafmt.LogWriter(str(folder), segment_bytes=1) as w:     # (a segment a batch)
            for k in range(n):
                w.append(values=values[k * SEGMENT_RECORDS:(k + 1) * SEGMENT_RECORDS])
        (folder.parent / ".complete").write_text("")
    return str(folder)


def kafkafmt_segments(n):
    folder = segments_folder(n)
    return lambda: touch(common.kafkafmt.read_log_dir(folder, threads=1))


def peer_segments(n):
    """kafka-python reading every .log of the partition folder, in offset order."""
    folder = segments_folder(n)
    logs = [os.path.join(folder, f) for f in sorted(os.listdir(folder)) if f.endswith(".log")]

    def run():
        out = [[], [], [], [], []]
        for path in logs:
            with open(path, "rb") as f:
                cols = kafka_python_columns(f.read())
            out[0].append(cols[0])
            out[1].append(cols[1])
            for k in (2, 3, 4):
                out[k].extend(cols[k])
        return out
    return run


def _check_segments(n):
    def now():
        a, b = kafkafmt_segments(n)(), peer_segments(n)()
        assert len(os.listdir(segments_folder(n))) >= n
        assert np.array_equal(np.asarray(a.offset), np.concatenate(b[0])) and a.value.to_pylist() == b[3]
    common.verified_once("segments", str(n), now)


register_ratio("segments_vs_kafka_python", "read_log_dir of one partition of N segments of ~8 KB × kafka-python",
               SEGMENT_COUNTS, lambda n: (peer_segments(n), kafkafmt_segments(n)), family="scaling",
               track="bench_scaling.ManySegments.track_ratio_vs_kafka_python")


class ManySegments:
    params = SEGMENT_COUNTS
    param_names = ["segments"]
    timeout = 600

    def setup(self, n):
        require_kafkafmt()
        common.note_quick()
        _check_segments(n)
        self.mine = kafkafmt_segments(n)

    def time_read_log_dir(self, n):
        self.mine()

    def track_ratio_vs_kafka_python(self, n):
        return common.measure_registered("segments_vs_kafka_python", n)

    track_ratio_vs_kafka_python.unit = "ratio"


# --- one partition among many -----------------------------------------------------------------------

def one_partition(n):
    root, _ = many_root(n)
    folder = os.path.join(root, "t0-7")
    return lambda: touch(common.kafkafmt.read_log_dir(folder, threads=1))


register_ratio("one_partition_20000_vs_200", "read_log_dir of one partition: among 20 000 ÷ among 200",
               ["t0-7"], lambda _: (one_partition(COUNTS[-1]), one_partition(COUNTS[0])), better="lower",
               family="scaling", track="bench_scaling.OnePartition.track_ratio_20000_vs_200")


class OnePartition:
    timeout = 600

    def setup(self):
        require_kafkafmt()
        common.note_quick()
        self.big, self.small = one_partition(COUNTS[-1]), one_partition(COUNTS[0])

    def time_read_log_dir_among_20000(self):
        self.big()

    def time_read_log_dir_among_200(self):
        self.small()

    def track_ratio_20000_vs_200(self):
        return common.measure_registered("one_partition_20000_vs_200", "t0-7")

    track_ratio_20000_vs_200.unit = "ratio"


# --- records per batch -------------------------------------------------------------------------------

def per_batch_buffer(k):
    """PER_BATCH_RECORDS records (the corpus generator's, no headers) in batches of k, uncompressed."""
    path = corpus.cache_dir() / ("per-batch-%d.bin" % k)
    if not path.exists():
        recs = corpus.generate_records(PER_BATCH_RECORDS, 37, False)
        sizes = [k] * (PER_BATCH_RECORDS // k)
        corpus._atomic_write(path, corpus.encode_batches(recs, sizes, magic=2, codec="none"))
    return path.read_bytes()


def _per_batch_vs_aiokafka(k):
    buf = per_batch_buffer(k)
    return (lambda: aiokafka_columns(buf)), (lambda: touch(common.kafkafmt.decode(buf, threads=1)))


def records_per_second(k, budget_s=None):
    buf = per_batch_buffer(k)
    (t,) = common.interleaved_medians([lambda: touch(common.kafkafmt.decode(buf, threads=1))], budget_s)
    return int(PER_BATCH_RECORDS / t)


register_ratio("per_batch_vs_aiokafka", "decode × aiokafka, by records per batch", PER_BATCH,
               _per_batch_vs_aiokafka, family="scaling", track="bench_scaling.RecordsPerBatch.track_ratio_vs_aiokafka")
register_value("per_batch_rate", "decode records/s, by records per batch", PER_BATCH, records_per_second,
               "records/s", family="scaling", track="bench_scaling.RecordsPerBatch.track_records_per_second")


class RecordsPerBatch:
    params = PER_BATCH
    param_names = ["records_per_batch"]
    timeout = 600

    def setup(self, k):
        require_kafkafmt()
        common.note_quick()
        self.buf = per_batch_buffer(k)

    def time_decode(self, k):
        touch(common.kafkafmt.decode(self.buf, threads=1))

    def track_records_per_second(self, k):
        return common.measure_registered("per_batch_rate", k)

    track_records_per_second.unit = "records/s"

    def track_ratio_vs_aiokafka(self, k):
        return common.measure_registered("per_batch_vs_aiokafka", k)

    track_ratio_vs_aiokafka.unit = "ratio"


# --- threads -------------------------------------------------------------------------------------------

THREAD_DIRS = ["cluster-orders", "many-2000"]


def _threads_read(which, threads):
    if which == "many-2000":
        return kafkafmt_many(2000, threads)
    root, _ = corpus.log_dir("cluster")
    return lambda: touch(common.kafkafmt.read_log_dirs(str(root), topics=["orders"], threads=threads))


register_ratio("read_dirs_threads_2_vs_1", "read_log_dirs: 2 threads × 1 thread", THREAD_DIRS,
               lambda w: (_threads_read(w, 1), _threads_read(w, 2)), family="threads",
               track="bench_scaling.ThreadRatios.track_ratio_2_threads_vs_1")


class ThreadRatios:
    params = THREAD_DIRS
    param_names = ["log_dir"]
    timeout = 600

    def setup(self, which):
        require_kafkafmt()
        common.note_quick()

    def track_ratio_2_threads_vs_1(self, which):
        return common.measure_registered("read_dirs_threads_2_vs_1", which)

    track_ratio_2_threads_vs_1.unit = "ratio"


def _curves(budget_s=None):
    print("| partitions | µs per partition | fixed µs per partition | × kafka-python | peak ÷ Arrow |")
    print("|---|---|---|---|---|")
    for n in COUNTS:
        ratio = common.ratio(peer_many(n), kafkafmt_many(n), budget_s)
        print("| %d | %.1f | %.1f | %.2f | %.2f |" % (n, us_per_partition(n, budget_s),
                                                     fixed_us_per_partition(n, budget_s), ratio,
                                                     peak_over_arrow(n)), flush=True)
    print("\n| records per batch | records/s | × aiokafka |")
    print("|---|---|---|")
    for k in PER_BATCH:
        a, b = _per_batch_vs_aiokafka(k)
        print("| %d | %.2f M | %.2f |" % (k, records_per_second(k, budget_s) / 1e6, common.ratio(a, b, budget_s)),
              flush=True)
    print("\n| read_log_dirs | 2 threads ÷ 1 thread |")
    print("|---|---|")
    for w in THREAD_DIRS:
        print("| %s | %.2f |" % (w, common.ratio(_threads_read(w, 1), _threads_read(w, 2), budget_s)), flush=True)
    print("\nread_log_dir of one partition among %d ÷ among %d: %.2f"
          % (COUNTS[-1], COUNTS[0], common.ratio(one_partition(COUNTS[-1]), one_partition(COUNTS[0]), budget_s)))


if __name__ == "__main__":
    common.note_quick()
    _curves(float(os.environ.get("KAFKAFMT_BENCH_BUDGET", "2")))
