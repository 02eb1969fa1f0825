"""Planning of kafka-segments queries: what discovery found is kept while nothing under the roots changes
(`kafkafmt.log.tree_state`), a frame's second action does not plan again, a log that grew is read by the next
frame, pushed filters never share a plan, and the timestamp options are resolved in the tasks -- with the rows
the library's planner gives (Kafka's offsets-for-times through the time indexes)."""
import os
import time

import numpy as np
import pytest

pyspark = pytest.importorskip("pyspark", minversion="4.1")

import kafkafmt  # noqa: E402
import kafkafmt.spark  # noqa: E402
from kafkafmt.log import Segment, tree_state  # noqa: E402
from kafkafmt.spark import planning  # noqa: E402
from kafkafmt.spark.options import parse  # noqa: E402
from kafkafmt.spark.read import TIME_SCAN_BYTES, read_tasks  # noqa: E402
from kafkafmt.spark.source import KafkaSegmentsReader, PushdownReader, kafka_schema  # noqa: E402
from pyspark.sql.datasource import GreaterThanOrEqual  # noqa: E402

T0 = 1_767_225_600_000
HOUR_AGO = time.time() - 3600


def _settle(root):
    """Every file and folder under root last modified an hour ago (what a backup restored long ago looks like:
    a change now is sure to show in its times)."""
    for here, dirs, files in os.walk(root):
        for name in dirs + files:
            os.utime(os.path.join(here, name), (HOUR_AGO, HOUR_AGO))
    os.utime(root, (HOUR_AGO, HOUR_AGO))


def _write(folder, n, *, first=0, step=10, jitter=0, seed=0, segment_bytes=4096, value_bytes=40, compression="lz4",
           **kw):
    rng = np.random.default_rng(seed)
    ts = T0 + (first + np.arange(n)) * step + (rng.integers(-jitter, jitter + 1, n) if jitter else 0)
    kafkafmt.write_log_dir(folder, values=[b"v%06d" % i + b"x" * value_bytes for i in range(first, first + n)],
                           timestamps=ts.tolist(), compression=compression, segment_bytes=segment_bytes, **kw)


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """Small partitions with timestamps out of order, one partition above TIME_SCAN_BYTES, one with an aborted
    transaction; settled."""
    root = tmp_path_factory.mktemp("plans") / "kafka-logs"
    for p in range(3):
        _write(root / f"small-{p}", 300, jitter=60, seed=p)
    _write(root / "big-0", 6000, jitter=30, seed=9, value_bytes=200, segment_bytes=256 << 10, compression="none")
    with kafkafmt.LogWriter(root / "txn-0", segment_bytes=4096) as w:
        for i in range(30):
            w.append(values=[b"t%03d" % i] * 5, timestamps=[T0 + i * 50 + k for k in range(5)], producer_id=7,
                     transactional=True)
            w.append_control("abort" if i % 3 == 0 else "commit", producer_id=7, timestamp=T0 + i * 50 + 9)
    _settle(root)
    return root


def _folders(root):
    return sorted(p for p in os.listdir(root) if "-" in p and os.path.isdir(os.path.join(root, p)))


def _library(root, per_partition, isolation="read_uncommitted"):
    """(topic, partition, offset) of every record the library reads, each partition with its own options."""
    out = []
    for name in _folders(root):
        topic, _, p = name.rpartition("-")
        kw = per_partition(topic, int(p))
        if kw is None:
            continue
        recs = kafkafmt.read_log_dir(os.path.join(root, name), columns=["offset"], isolation=isolation, **kw)
        out += [(topic, int(p), int(o)) for o in recs.offset]
    return sorted(out)


def _planned(reader):
    """(topic, partition, offset) of what a reader's input partitions read, in this process."""
    out = []
    for part in reader.partitions():
        for batch in read_tasks(part.tasks, reader.schema, reader.opts):
            out += zip(batch.column("topic").to_pylist(), batch.column("partition").to_pylist(),
                       batch.column("offset").to_pylist())
    return sorted(out)


def _reader(root, cls=KafkaSegmentsReader, **options):
    opts = parse({"path": str(root), **options})
    return cls(kafka_schema(), opts)


# --- the roots' state ------------------------------------------------------------------------------------

def test_tree_state_sees_what_changes_a_read(tmp_path):
    """A segment that grew, a side file rewritten in place with its time set back, a new partition folder, a
    checkpoint beside a partition folder given alone: each changes the state; reading nothing changes it."""
    root = tmp_path / "logs"
    _write(root / "a-0", 50)
    _settle(root)
    log = root / "a-0" / "00000000000000000000.log"
    states = [tree_state([root])]
    assert states[0].settled and tree_state([root]) == states[0]
    kafkafmt.read_log_dirs(root)
    assert tree_state([root]) == states[0]
    with open(log, "ab") as f:              # an append in place: its folder's mtime stays
        f.write(kafkafmt.encode(values=[b"more"], base_offset=50))
    states.append(tree_state([root]))
    assert not states[-1].settled            # modified just now: not to be kept
    index = root / "a-0" / "00000000000000000000.timeindex"
    data = bytearray(index.read_bytes())
    data[0] ^= 1
    before = os.stat(index)
    index.write_bytes(bytes(data))
    os.utime(index, ns=(before.st_atime_ns, before.st_mtime_ns))     # its times set back: the change time moves
    states.append(tree_state([root]))
    _write(root / "a-1", 5)
    states.append(tree_state([root]))
    alone = tree_state([root / "a-1"])
    kafkafmt.log.sidefiles.write_offset_checkpoint(root / kafkafmt.log.LOG_START_CHECKPOINT, {("a", 1): 2})
    assert tree_state([root / "a-1"]) != alone
    assert len(set(states)) == len(states)
    assert tree_state(["memory://logs"]) is None      # an object store's: no token


# --- discovery kept, tasks planned per query ---------------------------------------------------------------

def test_pushed_filters_never_share_a_plan(logs):
    """Two queries of the same roots in one process (discovery kept for the second): each gets the tasks of its
    own pushed filters."""
    planning._found.clear()
    narrowed = _reader(logs, PushdownReader)
    list(narrowed.pushFilters([GreaterThanOrEqual(("offset",), 250)]))
    everything = _reader(logs, PushdownReader)
    list(everything.pushFilters([]))
    assert _planned(narrowed) == [r for r in _library(logs, lambda t, p: {}) if r[2] >= 250]
    assert len(planning._found) == 1                 # one discovery, kept
    assert _planned(everything) == _library(logs, lambda t, p: {})


def test_a_change_under_the_roots_is_discovered_again(tmp_path):
    root = tmp_path / "logs"
    _write(root / "a-0", 20)
    _settle(root)
    planning._found.clear()
    assert len(_planned(_reader(root))) == 20
    kept = dict(planning._found)
    assert kept and len(_planned(_reader(root))) == 20 and dict(planning._found) == kept   # not found again
    _write(root / "a-0", 5, first=20)                # the log grows (and is modified just now)
    assert len(_planned(_reader(root))) == 25


# --- timestamp options, resolved in the tasks ---------------------------------------------------------------

def _by_partition(spec):
    return {t: {str(p): v for p, v in ps.items()} for t, ps in spec.items()}


CASES = [
    ({"startingTimestamp": T0 + 1000, "endingTimestamp": T0 + 2500}, None),
    ({"startingTimestamp": T0 + 10_000}, None),                   # later than every small partition's records
    ({"endingTimestamp": T0 + 1200}, None),
    ({"startingOffsetsByTimestamp": {"small": {0: T0 + 500, 2: T0 + 2900}, "big": {0: T0 + 30_000}, "txn": {0: 0}},
      "endingOffsetsByTimestamp": {"small": {0: T0 + 800, 1: T0 + 100}, "big": {0: T0 + 31_000}}}, None),
    ({"startingTimestamp": T0 + 700, "endingTimestamp": T0 + 40_000, "kafka.isolation.level": "read_committed"},
     "read_committed"),
    ({"startingTimestamp": T0 + 1000, "endingTimestamp": T0 + 50_000, "targetPartitionBytes": 100_000}, None),
    ({"startingTimestamp": T0 + 1000, "startingOffsets": '{"small": {"0": 200, "1": 5, "2": -2}, "big": {"0": -2},'
                                                         ' "txn": {"0": -2}}'}, None),
]


def _options(case):
    import json

    return {k: (json.dumps(_by_partition(v)) if isinstance(v, dict) else str(v)) for k, v in case.items()}


def _per_partition(case):
    import json

    def ts(key, by, topic, p):
        if key in case:
            return case[key]
        return case.get(by, {}).get(topic, {}).get(p)

    starting = json.loads(case.get("startingOffsets", "{}"))

    def kw(topic, p):
        start = starting.get(topic, {}).get(str(p))
        return {"start_timestamp": ts("startingTimestamp", "startingOffsetsByTimestamp", topic, p),
                "end_timestamp": ts("endingTimestamp", "endingOffsetsByTimestamp", topic, p),
                "start_offset": None if start in (None, -2) else start}
    return kw


@pytest.mark.parametrize("case,isolation", CASES)
def test_timestamp_options_give_the_library_rows(logs, case, isolation):
    """Planned in the driver without opening a time index (small partitions cut by their records' timestamps,
    larger ones resolved through their time indexes in the task, one larger than an input partition's share
    resolved here to be split), read as the library reads each partition from those timestamps."""
    big = sum(os.path.getsize(logs / "big-0" / f) for f in os.listdir(logs / "big-0") if f.endswith(".log"))
    assert big > TIME_SCAN_BYTES            # read through its time indexes, in the task
    reader = _reader(logs, **_options(case))
    assert _planned(reader) == _library(logs, _per_partition(case), isolation or "read_uncommitted")


def test_the_driver_opens_no_time_index(logs, monkeypatch):
    opened = []
    original = Segment.index_entries

    def counted(self, kind, report):
        opened.append(kind)
        return original(self, kind, report)

    monkeypatch.setattr(Segment, "index_entries", counted)
    groups = _reader(logs, startingTimestamp=str(T0 + 1000), endingTimestamp=str(T0 + 2500)).partitions()
    assert "timeindex" not in opened
    timed = [t for g in groups for t in g.tasks]
    assert timed and all(isinstance(t, planning.TimeBound) for t in timed)


# --- in Spark --------------------------------------------------------------------------------------------

def _counting_source(calls):
    """kafka-segments registered as another format whose planning notes, in the file ``calls``, each
    partitions() call and each discovery it made (the planning runs in a Python worker of Spark's)."""
    from kafkafmt.spark.source import KafkaSegmentsDataSource

    class Counted(KafkaSegmentsReader):
        def partitions(self):
            from kafkafmt.spark import planning as here

            key = here._discovery_key(self.opts)
            kept = here._found.get(key)
            groups = super().partitions()
            now = here._found.get(key)
            with open(calls, "a") as f:
                f.write(f"plan:{os.getpid()}\n" + (f"discover:{os.getpid()}\n" if now is None or now is not kept
                                                   else ""))
            return groups

    def reader(self, schema):
        return Counted(schema, self._opts())

    return type("Counted", (KafkaSegmentsDataSource,), {"name": classmethod(lambda cls: "kafka-segments-counted"),
                                                        "reader": reader})


def _calls(path):
    """(plans, discoveries, planning workers) the planning noted."""
    lines = [line.split(":") for line in path.read_text().split()] if path.exists() else []
    return (sum(what == "plan" for what, _ in lines), sum(what == "discover" for what, _ in lines),
            len({pid for _, pid in lines}))


def test_a_frame_plans_once_and_unchanged_roots_are_discovered_once(spark, tmp_path):
    root = tmp_path / "logs"
    for p in range(2):
        _write(root / f"a-{p}", 30)
    _settle(root)
    calls = tmp_path / "calls"
    spark.dataSource.register(_counting_source(calls))
    df = spark.read.format("kafka-segments-counted").load(str(root))
    assert df.count() == 60 and df.count() == 60
    # Spark 4.1 to 4.3 keep a frame's planned read on it; a Spark that plans each query plans again
    again = 1 if kafkafmt.spark.pushdown_is_scoped_to_scans(spark) else 0
    assert _calls(calls)[:2] == (1 + again, 1)
    assert spark.read.format("kafka-segments-counted").load(str(root)).count() == 60
    # a new frame: planned from what discovery found (Spark reuses its planning worker between queries)
    plans, found, workers = _calls(calls)
    assert (plans, found) == (2 + again, workers) and workers < plans


def test_a_log_that_grew_is_read_by_a_new_frame(spark, tmp_path):
    """The segment grows in place (its folder unchanged): the next frame reads the new records. The frame
    planned before keeps its plan where Spark keeps it on the frame (Spark 4.1 to 4.3), as Spark's own file
    sources keep the files they listed."""
    root = tmp_path / "logs"
    _write(root / "a-0", 30)
    _settle(root)
    df = spark.read.format("kafka-segments").load(str(root))
    assert df.count() == 30
    with open(root / "a-0" / "00000000000000000000.log", "ab") as f:
        f.write(kafkafmt.encode(values=[b"late"] * 4, base_offset=30))
    assert spark.read.format("kafka-segments").load(str(root)).count() == 34
    assert df.count() == (34 if kafkafmt.spark.pushdown_is_scoped_to_scans(spark) else 30)


def test_timestamp_options_in_spark(spark, logs):
    case = CASES[0][0]
    reader = spark.read.format("kafka-segments")
    for k, v in _options(case).items():
        reader = reader.option(k, v)
    rows = sorted((r.topic, r.partition, r.offset) for r in reader.load(str(logs)).select("topic", "partition",
                                                                                         "offset").collect())
    assert rows == _library(logs, _per_partition(case))
