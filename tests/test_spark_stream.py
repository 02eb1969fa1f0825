"""spark.readStream.format("kafka-segments") over live log dirs (issue 14).

A writer appends kafkafmt.encode(...) batches to a partition's active segment -- including a torn
final write completed later -- rolls segments and adds partitions; the reader's offsets, data-loss
handling and trigger cost are checked without a JVM, then real local[2] queries check AvailableNow
twice from one checkpoint into a file sink (every (topic, partition, offset) exactly once),
maxOffsetsPerTrigger in the micro-batches, the progress a user sees, data loss both ways, corrupt
data mid-stream and a checkpoint of another subscription.
"""
import glob
import json
import os
import shutil
import statistics
import time

import pytest

pyspark = pytest.importorskip("pyspark", minversion="4.1")

import kafkafmt  # noqa: E402
from kafkafmt.spark.options import OptionError, parse  # noqa: E402
from kafkafmt.spark.source import kafka_schema  # noqa: E402
from s3server import fault_proxy, s3  # noqa: E402,F401  (pytest fixtures: a loopback S3 API)
from kafkafmt.spark.stream import (CheckpointMismatchError, DataLossError, KafkaSegmentsStreamReader,  # noqa: E402
                                   lag, offsets_to_json, parse_offsets, rate_limit)

# the test writer appends bare .log files (no indexes): the fallback warnings are expected
pytestmark = pytest.mark.filterwarnings("ignore::kafkafmt.KafkafmtWarning")

HAS_ADMISSION = True
try:
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows
except ImportError:      # pyspark 4.1
    HAS_ADMISSION = False


# --- a writer that behaves like a broker appending to a partition -----------------------------------

class PartitionWriter:
    """Appends record batches to <root>/<topic>-<partition>/<base>.log; rolls segments."""

    def __init__(self, root, topic, partition):
        self.folder = os.path.join(str(root), f"{topic}-{partition}")
        os.makedirs(self.folder, exist_ok=True)
        self.topic, self.partition = topic, partition
        self.next = 0
        self.active = None
        self.pending = b""          # the unwritten rest of a torn write
        self.roll()

    def roll(self):
        assert not self.pending, "complete the torn write before rolling"
        self.active = os.path.join(self.folder, f"{self.next:020d}.log")
        open(self.active, "ab").close()
        return self.active

    def _encode(self, n, **kw):
        vals = [f"{self.topic}/{self.partition}/{self.next + i}".encode() for i in range(n)]
        data = kafkafmt.encode(values=vals, keys=[b"k%d" % (i % 7) for i in range(n)], base_offset=self.next,
                               timestamps=[1767225600000 + self.next + i for i in range(n)], **kw)
        self.next += n
        return data

    def append(self, n, max_records=50, **kw):
        assert not self.pending
        with open(self.active, "ab") as f:
            f.write(self._encode(n, max_records=max_records, **kw))

    def append_txn(self, n, producer_id):
        """n records of an open transaction of `producer_id` (one batch)."""
        with open(self.active, "ab") as f:
            f.write(self._encode(n, max_records=n, producer_id=producer_id, producer_epoch=0, transactional=True))

    def end_txn(self, kind, producer_id):
        with open(self.active, "ab") as f:
            f.write(kafkafmt.encode_control(kind, offset=self.next, producer_id=producer_id, timestamp=1767225600000))
        self.next += 1

    def append_torn(self, n, keep=0.5):
        """Write a batch of n records only partly (a write in progress)."""
        data = self._encode(n, max_records=n)
        cut = max(1, int(len(data) * keep))
        with open(self.active, "ab") as f:
            f.write(data[:cut])
        self.pending = data[cut:]

    def complete(self):
        with open(self.active, "ab") as f:
            f.write(self.pending)
        self.pending = b""


def _reader(root, **options):
    opts = parse({"path": str(root), **options}, stream=True)
    return KafkaSegmentsStreamReader(kafka_schema(opts.include_headers, opts.batch_metadata), opts)


def _all(reader):
    return ReadAllAvailable() if HAS_ADMISSION else None


def _rows_of(reader, start, end):
    out = []
    for p in reader.partitions(start, end):
        for b in reader.read(p):
            d = b.to_pydict()
            out += list(zip(d["topic"], d["partition"], d["offset"]))
    return out


# --- offsets and options, without a JVM --------------------------------------------------------------

def test_offsets_json_is_sorted_and_round_trips():
    offs = {("b", 10): 5, ("b", 9): 4, ("a", 0): 1, ("b", 2): 0}
    js = offsets_to_json(offs)
    assert json.dumps(js) == '{"a": {"0": 1}, "b": {"2": 0, "9": 4, "10": 5}}'
    assert parse_offsets(json.dumps(js)) == offs
    for foreign in ('{"logOffset": 3}', "17", '{"a": [1, 2]}', '{"a": {"0": "x"}}'):
        with pytest.raises(CheckpointMismatchError, match="another source"):
            parse_offsets(foreign)


def test_rate_limit_splits_by_lag_as_spark():
    start = {("t", 0): 0, ("t", 1): 100, ("t", 2): 50}
    latest = {("t", 0): 300, ("t", 1): 200, ("t", 2): 50, ("t", 3): 1}
    # lags 300, 100, 0 and a new partition (from earliest 0) with 1: shares of 100 are
    # floor(100*300/401)=74, floor(100*100/401)=24, the 0.25 share rounds up to 1 (not starved)
    assert rate_limit(100, start, latest, {("t", 3): 0}) == {("t", 0): 74, ("t", 1): 124, ("t", 2): 50,
                                                             ("t", 3): 1}
    assert rate_limit(10_000, start, latest, {("t", 3): 0}) == latest   # never past the end


def test_stream_options_accepted_batch_rejects_them(tmp_path):
    o = parse({"path": str(tmp_path), "maxOffsetsPerTrigger": "500", "minOffsetsPerTrigger": "100",
               "maxTriggerDelay": "30s", "startingOffsets": "latest"}, stream=True)
    assert (o.max_offsets_per_trigger, o.min_offsets_per_trigger, o.max_trigger_delay_ms, o.starting) == \
        (500, 100, 30_000, "latest")
    assert parse({"path": str(tmp_path)}, stream=True).starting == "latest"     # Spark's default for streams
    with pytest.raises(OptionError, match="streaming option"):
        parse({"path": str(tmp_path), "maxOffsetsPerTrigger": "500"})
    with pytest.raises(OptionError, match="stream has no end"):
        parse({"path": str(tmp_path), "endingOffsets": "latest"}, stream=True)
    with pytest.raises(OptionError, match="duration"):
        parse({"path": str(tmp_path), "maxTriggerDelay": "soon"}, stream=True)
    # what schema() sees (either kind of query): both accepted
    parse({"path": str(tmp_path), "maxOffsetsPerTrigger": "5", "startingOffsets": "latest"}, stream=None)


# --- the live log dir, without a JVM ---------------------------------------------------------------------

def test_live_appends_torn_write_rolls_and_new_partitions(tmp_path):
    w0 = PartitionWriter(tmp_path, "live", 0)
    w0.append(120)
    r = _reader(tmp_path, startingOffsets="earliest")
    start = r.initialOffset()
    assert start == {"live": {"0": 0}}
    end = r.latestOffset(start, _all(r))
    assert end == {"live": {"0": 120}}
    # a batch cut off mid-write is left for the next trigger, not corruption, not skipped
    w0.append_torn(30)
    assert r.latestOffset(end, _all(r)) == end
    assert sorted(o for _, _, o in _rows_of(r, start, end)) == list(range(120))
    w0.complete()
    end2 = r.latestOffset(end, _all(r))
    assert end2 == {"live": {"0": 150}}
    # a rolled segment and a new partition are discovered
    w0.roll()
    w0.append(10)
    w1 = PartitionWriter(tmp_path, "live", 1)
    w1.append(7)
    end3 = r.latestOffset(end2, _all(r))
    assert end3 == {"live": {"0": 160, "1": 7}}
    got = _rows_of(r, end, end3)
    assert sorted(got) == sorted([("live", 0, o) for o in range(120, 160)] + [("live", 1, o) for o in range(7)])


def test_preallocated_index_and_log_tails_are_ignored(tmp_path):
    w = PartitionWriter(tmp_path, "pre", 0)
    w.append(200, max_records=10)
    # a live index: a few real entries, then the preallocated zero tail
    data = open(w.active, "rb").read()
    table, _ = kafkafmt.scan_batches(data)
    entries = bytearray(10 * 1024 * 1024 // 1024 * 8)
    for k, i in enumerate((5, 10, 15)):
        rel = int(table["last_offset"][i]) - 0
        entries[k * 8:k * 8 + 8] = rel.to_bytes(4, "big") + int(table["position"][i]).to_bytes(4, "big")
    with open(w.active[:-4] + ".index", "wb") as f:
        f.write(bytes(entries))
    # and a preallocated .log: zeros after the data, later overwritten by appends
    with open(w.active, "ab") as f:
        f.write(b"\0" * 65536)
    r = _reader(tmp_path, startingOffsets="earliest")
    start = r.initialOffset()
    end = r.latestOffset(start, _all(r))
    assert end == {"pre": {"0": 200}}
    more = kafkafmt.encode(values=[b"x"] * 5, base_offset=200)
    with open(w.active, "r+b") as f:         # the broker writes into the preallocated space
        f.seek(len(data))
        f.write(more)
    assert r.latestOffset(end, _all(r)) == {"pre": {"0": 205}}
    assert sorted(o for _, _, o in _rows_of(r, start, {"pre": {"0": 205}})) == list(range(205))


def test_rate_limit_and_41_fallback_without_arguments(tmp_path):
    for p, n in ((0, 300), (1, 100)):
        PartitionWriter(tmp_path, "rl", p).append(n)
    r = _reader(tmp_path, startingOffsets="earliest", maxOffsetsPerTrigger="100")
    start = r.initialOffset()
    if HAS_ADMISSION:
        assert r.getDefaultReadLimit() == ReadMaxRows(100)
        assert r.latestOffset(start, ReadMaxRows(100)) == {"rl": {"0": 75, "1": 25}}
        assert r.latestOffset(start, ReadAllAvailable()) == {"rl": {"0": 300, "1": 100}}
    # pyspark 4.1 calls latestOffset() with no arguments: the options are the limits, from the
    # last end offset handed out (partitions() and latestOffset() record it)
    r = _reader(tmp_path, startingOffsets="earliest", maxOffsetsPerTrigger="100")
    s = r.initialOffset()
    seen = []
    for _ in range(6):
        e = r.latestOffset()
        r.partitions(s, e)
        seen.append(e)
        s = e
    assert seen[0] == {"rl": {"0": 75, "1": 25}} and seen[-1] == {"rl": {"0": 300, "1": 100}}


def test_min_offsets_per_trigger_waits_up_to_max_trigger_delay(tmp_path):
    w = PartitionWriter(tmp_path, "mn", 0)
    w.append(10)
    r = _reader(tmp_path, startingOffsets="earliest", minOffsetsPerTrigger="50", maxTriggerDelay="1s")
    s = r.initialOffset()
    first = r.latestOffset(s, r.getDefaultReadLimit())       # the first trigger is never delayed (as Spark)
    assert first == {"mn": {"0": 10}}
    w.append(10)
    assert r.latestOffset(first, r.getDefaultReadLimit()) == first     # 10 < 50 new offsets: wait
    w.append(45)
    assert r.latestOffset(first, r.getDefaultReadLimit()) == {"mn": {"0": 65}}
    w.append(5)
    time.sleep(1.1)
    assert r.latestOffset({"mn": {"0": 65}}, r.getDefaultReadLimit()) == {"mn": {"0": 70}}   # delay passed


def test_starting_offsets_variants(tmp_path):
    w = PartitionWriter(tmp_path, "so", 0)
    w.append(100)
    PartitionWriter(tmp_path, "so", 1).append(10)
    assert _reader(tmp_path).initialOffset() == {"so": {"0": 100, "1": 10}}       # latest
    assert _reader(tmp_path, startingOffsets='{"so":{"0":40,"1":-2}}').initialOffset() == {"so": {"0": 40, "1": 0}}
    with pytest.raises(OptionError, match="missing: so-1"):
        _reader(tmp_path, startingOffsets='{"so":{"0":40}}').initialOffset()
    # timestamps: the writer gives offset o the timestamp 1767225600000 + o
    got = _reader(tmp_path, startingOffsetsByTimestamp=json.dumps({"so": {"0": 1767225600000 + 30,
                                                                          "1": 1767225600000}})).initialOffset()
    assert got == {"so": {"0": 30, "1": 0}}
    with pytest.raises(OptionError, match="startingOffsetsByTimestampStrategy"):
        _reader(tmp_path, startingTimestamp=str(1767225600000 + 50)).initialOffset()    # so-1 has none that late
    got = _reader(tmp_path, startingTimestamp=str(1767225600000 + 50),
                  startingOffsetsByTimestampStrategy="latest").initialOffset()
    assert got == {"so": {"0": 50, "1": 10}}


def test_data_loss_driver_side_both_ways(tmp_path):
    w = PartitionWriter(tmp_path, "dl", 0)
    w.append(100)
    w.roll()
    w.append(100)
    w.roll()
    w.append(50)
    r = _reader(tmp_path, startingOffsets="earliest")
    start = r.initialOffset()
    end = r.latestOffset(start, _all(r))
    os.remove(os.path.join(w.folder, f"{0:020d}.log"))          # retention deletes the oldest segment
    with pytest.raises(DataLossError, match=r"offsets 0\.\.99 of dl-0 were deleted"):
        r.partitions(start, end)
    lenient = _reader(tmp_path, startingOffsets="earliest", failOnDataLoss="false")
    got = sorted(o for _, _, o in _rows_of(lenient, start, end))
    assert got == list(range(100, 250))
    assert any("0..99" in m for m in lenient.watcher.warnings)
    # a checkpoint of another subscription is refused
    other = _reader(tmp_path, subscribe="elsewhere")
    with pytest.raises(CheckpointMismatchError, match="subscribe=elsewhere"):
        other.latestOffset(end, _all(other))
    # the log end going backwards (a checkpoint of another log dir, a recreated log)
    with pytest.raises(DataLossError, match="went back from 900 to 250"):
        r.latestOffset({"dl": {"0": 900}}, _all(r))
    # the partition folder removed
    shutil.rmtree(w.folder)
    os.makedirs(os.path.join(str(tmp_path), "keep-0"))
    with pytest.raises(DataLossError, match="dl-0 are gone"):
        r.partitions(end, r.latestOffset(end, _all(r)))


def test_truncated_active_segment_is_seen(tmp_path):
    """A broker truncating its log (a new leader) makes the log end go back: data loss as Spark's
    Kafka source reports it, not a stale end offset."""
    w = PartitionWriter(tmp_path, "tr", 0)
    w.append(50)
    cut = os.path.getsize(w.active)
    w.append(50)
    r = _reader(tmp_path, startingOffsets="earliest")
    s = r.initialOffset()
    e = r.latestOffset(s, _all(r))
    assert e == {"tr": {"0": 100}}
    os.truncate(w.active, cut)
    with pytest.raises(DataLossError, match="went back from 100 to 50"):
        r.latestOffset(e, _all(r))
    lenient = _reader(tmp_path, startingOffsets="earliest", failOnDataLoss="false")
    assert lenient.latestOffset(e, _all(lenient)) == {"tr": {"0": 50}}


def _rewrite(path, base, n, max_records, tag=b"new"):
    """Replace a segment file with n other records from offset ``base`` (a log truncated and written
    again by a new leader, a restore of another copy)."""
    with open(path, "wb") as f:
        f.write(kafkafmt.encode(values=[tag + b"%d" % i for i in range(n)], base_offset=base,
                                max_records=max_records, timestamps=[1767225609000 + i for i in range(n)]))


def _two_segments_read(root, topic):
    """A partition of two 100-record segments, and a strict and a lenient (failOnDataLoss=false) reader whose
    first trigger went to its end: (writer, strict, lenient, the end offsets)."""
    w = PartitionWriter(root, topic, 0)
    w.append(100)
    w.roll()
    w.append(100)
    strict = _reader(root, startingOffsets="earliest")
    lenient = _reader(root, startingOffsets="earliest", failOnDataLoss="false")
    e = {topic: {"0": 200}}
    for r in (strict, lenient):
        assert r.latestOffset(r.initialOffset(), _all(r)) == e
    return w, strict, lenient, e


def test_log_written_again_between_triggers_both_ways(tmp_path):
    """The newest segment deleted and written again with other records past the query's offset between
    two triggers (the log end is beyond it again): the batch the query's offset ended in is no longer
    there -- data loss, not a silent skip of the rewritten offsets; failOnDataLoss=false reads them."""
    w, strict, lenient, e = _two_segments_read(tmp_path, "rw")
    assert len(_rows_of(lenient, {"rw": {"0": 0}}, e)) == 200
    os.remove(w.active)
    _rewrite(w.active, 100, 150, max_records=50)
    with pytest.raises(DataLossError, match=r"the log of rw-0 is no longer what this query read below offset "
                                            r"200: the batch read at offsets 150\.\.199"):
        strict.latestOffset(e, _all(strict))
    e2 = lenient.latestOffset(e, _all(lenient))
    assert e2 == {"rw": {"0": 250}}
    assert any("offsets 150..199 hold other records now" in m and "were not compared" in m
               for m in lenient.watcher.warnings)
    got = _rows_of(lenient, e, e2)
    assert [o for _, _, o in got] == list(range(150, 250))
    assert _rows_of(lenient, e, e2) == got                      # the micro-batch replayed: the same rows
    # the next trigger goes on from 250 without complaint
    assert lenient.latestOffset(e2, _all(lenient)) == e2
    # a restarted query has no marks: only its checkpoint's log end is checked (Spark's offsets carry none)
    fresh = _reader(tmp_path, startingOffsets="earliest")
    assert fresh.latestOffset(e, _all(fresh)) == {"rw": {"0": 250}}


def test_segment_replaced_while_a_trigger_looks_at_it(tmp_path, monkeypatch):
    """The newest segment removed and being written again while a trigger looks at it: listed at its old
    size, empty when opened. That trigger keeps the offsets it knew (a restarted query's first: the
    checkpoint's), says no loss and fails nothing (both ways); the next, once the file is written, finds the
    divergence as between two triggers."""
    import kafkafmt.spark.stream as stream
    w, strict, lenient, e = _two_segments_read(tmp_path, "rr")
    w.append(10)                             # (the segment grew: a trigger scans it)
    with open(w.active, "rb") as f:
        grown = f.read()
    looked = stream._file_state

    def replaced_after_the_stat(seg):
        state = looked(seg)
        if seg.log == w.active and os.path.getsize(w.active):
            os.remove(w.active)
            open(w.active, "wb").close()     # (being written again)
        return state

    monkeypatch.setattr(stream, "_file_state", replaced_after_the_stat)
    restarted = _reader(tmp_path, startingOffsets="earliest")       # (its first look at the partition)
    for r in (strict, lenient, restarted):
        with open(w.active, "wb") as f:
            f.write(grown)
        assert r.latestOffset(e, _all(r)) == e
        assert r.watcher.warnings == []
    assert restarted.watcher.deferred == {("rr", 0)} and restarted.partitions(e, e) == []
    monkeypatch.undo()
    _rewrite(w.active, 100, 150, max_records=50)
    with pytest.raises(DataLossError, match=r"the log of rr-0 is no longer what this query read below offset 200"):
        strict.latestOffset(e, _all(strict))
    assert lenient.latestOffset(e, _all(lenient)) == {"rr": {"0": 250}}
    assert [o for _, _, o in _rows_of(lenient, e, {"rr": {"0": 250}})] == list(range(150, 250))



def test_a_query_starting_as_a_segment_is_replaced_looks_again(tmp_path, monkeypatch):
    """A new query whose first look meets the newest segment being written again (listed at its old size,
    empty when opened) looks again: it starts with every partition, at the offsets asked for, not without
    that one (which would read it from the earliest offset later, or refuse startingOffsets naming it).
    A segment still changing at each of its looks fails the start and says so."""
    import kafkafmt.spark.stream as stream
    from kafkafmt.errors import ObjectChangedError
    w = PartitionWriter(tmp_path, "rs", 0)
    w.append(100)
    w.roll()
    w.append(110)
    with open(w.active, "rb") as f:
        whole = f.read()
    looked = stream._file_state
    looks = []

    def replaced_at_the_first_looks(seg, times=1):
        if seg.log == w.active:
            looks.append(seg.log)
            with open(w.active, "wb") as f:
                f.write(whole)                   # (written again)
        state = looked(seg)
        if seg.log == w.active and len(looks) <= times:
            os.remove(w.active)
            open(w.active, "wb").close()     # (being written again)
        return state

    monkeypatch.setattr(stream, "_file_state", replaced_at_the_first_looks)
    for starting, want in [("latest", 210), ("earliest", 0), ('{"rs": {"0": 205}}', 205)]:
        looks.clear()
        r = _reader(tmp_path, startingOffsets=starting)
        assert r.initialOffset() == {"rs": {"0": want}} and len(looks) == 2
        assert r.watcher.deferred == set() and r.watcher.warnings == []
    monkeypatch.setattr(stream, "_file_state", lambda seg: replaced_at_the_first_looks(seg, times=99))
    looks.clear()
    with pytest.raises(ObjectChangedError, match=r"the newest segment of rs-0 changed each of the 3 times"):
        _reader(tmp_path, startingOffsets="latest").initialOffset()

def test_active_segment_rewritten_in_place_is_scanned_anew(tmp_path):
    """The active segment replaced under the same name by a longer one with other batch boundaries:
    the watcher does not go on scanning the new file from the old file's end (mid-batch: a false
    corrupt-data error, or wrong offsets) -- it sees the rewrite and scans it anew."""
    w = PartitionWriter(tmp_path, "ip", 0)
    w.append(100, max_records=50)
    for fail in ("true", "false"):
        r = _reader(tmp_path, startingOffsets="earliest", failOnDataLoss=fail)
        assert r.latestOffset(r.initialOffset(), _all(r)) == {"ip": {"0": 100}}
    r = _reader(tmp_path, startingOffsets="earliest")
    lenient = _reader(tmp_path, startingOffsets="earliest", failOnDataLoss="false")
    for x in (r, lenient):
        x.latestOffset(x.initialOffset(), _all(x))
    _rewrite(w.active, 0, 170, max_records=30, tag=b"other")
    with pytest.raises(DataLossError, match="no longer what this query read below offset 100"):
        r.latestOffset({"ip": {"0": 100}}, _all(r))
    assert lenient.latestOffset({"ip": {"0": 100}}, _all(lenient)) == {"ip": {"0": 170}}
    assert not any("corrupt" in m for m in lenient.watcher.warnings)


def test_corrupt_active_segment(tmp_path):
    w = PartitionWriter(tmp_path, "cr", 0)
    w.append(100, max_records=10)
    size = os.path.getsize(w.active)
    w.append(100, max_records=10)
    with open(w.active, "r+b") as f:        # garble the size field of the batch after the first 100 offsets
        f.seek(size + 8)
        f.write(b"\xff\xff\xff\xf0")
    r = _reader(tmp_path, startingOffsets="earliest")
    with pytest.raises(DataLossError, match=f"{w.active} position {size}"):
        r.initialOffset()
    r = _reader(tmp_path, startingOffsets="earliest", failOnDataLoss="false")
    s = r.initialOffset()
    e = r.latestOffset(s, _all(r))
    assert e == {"cr": {"0": 200}}
    assert any(f"position {size}" in m for m in r.watcher.warnings)
    got = sorted(o for _, _, o in _rows_of(r, s, e))
    assert got == list(range(100)) + list(range(110, 200))        # the garbled batch (10 records) skipped


def test_read_committed_stops_at_the_last_stable_offset(tmp_path):
    w = PartitionWriter(tmp_path, "tx", 0)
    w.append(10)                       # 0..9
    w.append_txn(5, producer_id=7)     # 10..14, open
    w.append(3)                        # 15..17 (not transactional)
    r = _reader(tmp_path, startingOffsets="earliest", **{"kafka.isolation.level": "read_committed"})
    s = r.initialOffset()
    e = r.latestOffset(s, _all(r))
    assert e == {"tx": {"0": 10}}      # the open transaction's first offset
    w.end_txn("abort", producer_id=7)  # 18: marker
    w.append_txn(4, producer_id=8)     # 19..22
    w.end_txn("commit", producer_id=8)  # 23
    e2 = r.latestOffset(e, _all(r))
    assert e2 == {"tx": {"0": 24}}
    got = sorted(o for _, _, o in _rows_of(r, s, e) + _rows_of(r, e, e2))
    assert got == list(range(10)) + [15, 16, 17] + [19, 20, 21, 22]     # aborted 10..14 and markers dropped
    plain = _reader(tmp_path, startingOffsets="earliest")
    ps = plain.initialOffset()
    assert sorted(o for _, _, o in _rows_of(plain, ps, plain.latestOffset(ps, _all(plain)))) == \
        [o for o in range(23) if o != 18]


def test_real_broker_dirs(real_corpus):
    """Log end offsets found from the last index entry on equal a scan of every batch of the newest
    segment; reading earliest..latest gives the library's rows (KRaft metadata, compacted
    __consumer_offsets with gaps, headers)."""
    for rel in ("DonaldY__kafka-2.7.1/kafka-logs", "Niloufar1171__LDI-POC", "seanorth__kafka-server/kafka-logs"):
        root = os.path.join(str(real_corpus), "broker-dirs", rel)
        r = _reader(root, startingOffsets="earliest")
        s = r.initialOffset()
        e = r.latestOffset(s, _all(r))
        for t, parts in e.items():
            for p, nxt in parts.items():
                last = kafkafmt.list_segments(os.path.join(root, f"{t}-{p}"))[-1]
                table, info = kafkafmt.scan_batches(open(last.log, "rb").read(), verify_crc=None)
                n = info["count"]
                assert nxt == (int(table["last_offset"][:n].max()) + 1 if n else last.base_offset), (rel, t, p)
        assert sorted(_rows_of(r, s, e)) == _lib_keys(root), rel


def _uploaded_log_dir(tmp_path, s3, prefix, topic, segment_bytes, records):
    """A two-partition log dir written locally (tmp_path/logs) and uploaded under `prefix` of a new
    bucket: (bucket, local folder)."""
    local = tmp_path / "logs"
    for p in range(2):
        w = kafkafmt.LogWriter(str(local / f"{topic}-{p}"), segment_bytes=segment_bytes)
        w.append(values=[b"v%d" % i for i in range(records)],
                 timestamps=[1767225600000 + i for i in range(records)])
        w.close()
    bucket = s3.bucket()
    s3.upload_dir(str(local), bucket, prefix)
    return bucket, local


def test_object_storage_log_dir(tmp_path, fault_proxy, s3):
    """s3:// (a real S3 API on loopback): listing is the only polling cost -- one listing of the whole
    prefix, however many partition folders, no bytes read -- and a newly uploaded segment is found."""
    bucket, local = _uploaded_log_dir(tmp_path, s3, "logs", "obj", 4096, 300)
    opts = {f"storage.{k}": v for k, v in fault_proxy.storage_options.items() if isinstance(v, str)}
    url = f"s3://{bucket}/logs"
    r = _reader(url, startingOffsets="earliest", **opts)
    r.opts.storage_options = dict(fault_proxy.storage_options)      # client_kwargs is not a string option
    start = r.initialOffset()
    assert start == {"obj": {"0": 0, "1": 0}}
    end = r.latestOffset(start, _all(r))
    assert end == {"obj": {"0": 300, "1": 300}}
    assert sorted(_rows_of(r, start, end)) == _lib_keys(local)
    fault_proxy.log.clear()
    assert r.latestOffset(end, _all(r)) == end                    # an idle trigger
    methods = [m for m, _path, _rng in fault_proxy.log]
    assert methods == ["GET"] and all("list-type=2" in path for _m, path, _r in fault_proxy.log), \
        fault_proxy.log      # LIST logs/ (recursively, one page) -- nothing else
    # tiered storage uploads rolled segments: a new object appears
    more = kafkafmt.encode(values=[b"w%d" % i for i in range(20)], base_offset=300)
    s3.put(bucket, f"logs/obj-1/{300:020d}.log", more)
    end2 = r.latestOffset(end, _all(r))
    assert end2 == {"obj": {"0": 300, "1": 320}}
    assert sorted(_rows_of(r, end, end2)) == [("obj", 1, o) for o in range(300, 320)]


def test_trigger_cost_without_new_data(tmp_path):
    """<= 50 ms of driver time per 100 partitions when nothing changed (local disk)."""
    for p in range(100):
        w = PartitionWriter(tmp_path, "many", p)
        w.append(20)
        w.roll()
        w.append(5)
    old = time.time() - 60          # settled folders (file-system timestamps older than MTIME_SETTLE_S)
    for path in glob.glob(os.path.join(str(tmp_path), "*")) + glob.glob(os.path.join(str(tmp_path), "*", "*")):
        os.utime(path, (old, old))
    os.utime(str(tmp_path), (old, old))
    r = _reader(tmp_path, startingOffsets="earliest")
    s = r.initialOffset()
    e = r.latestOffset(s, _all(r))
    times = []
    for _ in range(15):
        t0 = time.perf_counter()
        assert r.latestOffset(e, _all(r)) == e
        times.append(time.perf_counter() - t0)
    ms = statistics.median(times) * 1000
    print(f"\ntrigger without new data, 100 partitions: {ms:.2f} ms (median of 15)")
    assert ms <= 50


# --- through Spark (local[2]) ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def spark(spark):
    """The shared local[2] session (conftest.py), polling sources every 10 ms."""
    spark.conf.set("spark.sql.streaming.pollingDelay", "10ms")
    return spark


def test_schema_takes_stream_options():
    """Spark calls DataSource.schema() for streams too: stream-only options pass there."""
    from kafkafmt.spark.source import KafkaSegmentsDataSource

    assert KafkaSegmentsDataSource({"path": "/", "maxOffsetsPerTrigger": "5", "startingOffsets": "latest"}).schema()
    with pytest.raises(ValueError, match="unknown option"):
        KafkaSegmentsDataSource({"path": "/", "noSuchOption": "1"}).schema()


def _stream(spark, root, **options):
    reader = spark.readStream.format("kafka-segments")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(str(root))


def _available_now(spark, root, out, ckpt, **options):
    reader = _stream(spark, root, **options)
    q = (reader.select("topic", "partition", "offset", "value").writeStream.format("parquet")
         .option("path", str(out)).option("checkpointLocation", str(ckpt)).trigger(availableNow=True).start())
    try:
        assert q.awaitTermination(120), "AvailableNow query did not finish in 120 s"
        if q.exception() is not None:
            raise q.exception()
        return q.recentProgress
    finally:
        q.stop()


def _sink_keys(spark, out, files_only=False):
    """(topic, partition, offset) in a file sink: through its metadata log (what a reader of the
    sink sees), or the part files alone (a sink folder that a restarted query began)."""
    path = os.path.join(str(out), "part-*") if files_only else str(out)
    return [tuple(r) for r in spark.read.parquet(path).select("topic", "partition", "offset").collect()]


def _lib_keys(root):
    recs = kafkafmt.read_log_dirs(str(root))
    topics = recs.to_arrow().column("topic").to_pylist()
    return sorted(zip(topics, recs.to_arrow().column("partition").to_pylist(), recs.offset.tolist()))


def test_available_now_twice_exactly_once_with_live_writer(spark, tmp_path):
    root, out, ckpt = tmp_path / "logs", tmp_path / "out", tmp_path / "ckpt"
    a0, a1 = PartitionWriter(root, "orders", 0), PartitionWriter(root, "orders", 1)
    a0.append(400)
    a1.append(250)
    a0.append_torn(40)                  # being written when the first run starts
    prog1 = _available_now(spark, root, out, ckpt, startingOffsets="earliest")
    keys = _sink_keys(spark, out)
    assert sorted(keys) == [("orders", 0, o) for o in range(400)] + [("orders", 1, o) for o in range(250)]
    assert sum(p["numInputRows"] for p in prog1) == 650
    # the write completes, segments roll, a partition is added; the second run reads only the rest
    a0.complete()
    a0.append(60)
    a0.roll()
    a0.append(100)
    a1.roll()
    a1.append(30)
    PartitionWriter(root, "orders", 2).append(70)
    prog2 = _available_now(spark, root, out, ckpt, startingOffsets="earliest")
    keys = _sink_keys(spark, out)
    assert len(keys) == len(set(keys))                     # exactly once
    assert sorted(keys) == _lib_keys(root)
    assert sum(p["numInputRows"] for p in prog2) == 200 + 30 + 70
    last = [p for p in prog2 if p["numInputRows"]][-1]["sources"][0]
    assert json.loads(last["endOffset"]) == {"orders": {"0": 600, "1": 280, "2": 70}}
    # values are the writer's
    one = spark.read.parquet(str(out)).where("partition = 0 and offset = 420").collect()[0]
    assert one["value"] == b"orders/0/420"


def test_max_offsets_per_trigger_micro_batches_and_progress(spark, tmp_path):
    root = tmp_path / "logs"
    PartitionWriter(root, "m", 0).append(900)
    PartitionWriter(root, "m", 1).append(300)
    prog = _available_now(spark, root, tmp_path / "out", tmp_path / "ckpt", startingOffsets="earliest",
                          maxOffsetsPerTrigger="400")
    sizes = [p["numInputRows"] for p in prog if p["numInputRows"]]
    assert sizes == [400, 400, 400]        # 1200 offsets, 400 per trigger (300 + 100 split by lag)
    ends = [json.loads(p["sources"][0]["endOffset"]) for p in prog if p["numInputRows"]]
    assert ends == [{"m": {"0": 300, "1": 100}}, {"m": {"0": 600, "1": 200}}, {"m": {"0": 900, "1": 300}}]
    assert json.loads(prog[1]["sources"][0]["startOffset"]) == ends[0]
    first = prog[0]["sources"][0]
    if first.get("latestOffset"):          # reportLatestOffset (pyspark >= 4.2)
        assert json.loads(first["latestOffset"]) == {"m": {"0": 900, "1": 300}}
        assert lag(prog[0]) == {"m-0": 600, "m-1": 200}
    assert sorted(_sink_keys(spark, tmp_path / "out")) == _lib_keys(root)


def test_data_loss_through_spark_both_ways(spark, tmp_path):
    root, out, ckpt = tmp_path / "logs", tmp_path / "out", tmp_path / "ckpt"
    w = PartitionWriter(root, "ret", 0)
    w.append(100)
    w.roll()
    w.append(100)
    _available_now(spark, root, out, ckpt, startingOffsets="earliest")
    w.roll()
    w.append(100)            # 200..299: never read...
    w.roll()
    w.append(100)
    for base in (0, 100, 200):      # ...retention deleted it (and the older, read ones) first
        os.remove(os.path.join(w.folder, f"{base:020d}.log"))
    shutil.copytree(ckpt, tmp_path / "ckpt2")       # the same query state, to run it both ways
    with pytest.raises(Exception, match=r"offsets 200\.\.299 of ret-0 were deleted"):
        _available_now(spark, root, out, ckpt, startingOffsets="earliest")
    _available_now(spark, root, tmp_path / "out2", tmp_path / "ckpt2", startingOffsets="earliest",
                   failOnDataLoss="false")
    got = sorted(o for _, _, o in _sink_keys(spark, tmp_path / "out2", files_only=True))   # new sink folder
    assert got == list(range(300, 400))


def test_checkpoint_of_another_subscription_is_refused(spark, tmp_path):
    root, ckpt = tmp_path / "logs", tmp_path / "ckpt"
    PartitionWriter(root, "first", 0).append(10)
    PartitionWriter(root, "second", 0).append(10)
    _available_now(spark, root, tmp_path / "out", ckpt, subscribe="first", startingOffsets="earliest")
    PartitionWriter(root, "first", 1).append(5)
    with pytest.raises(Exception, match="another subscription"):
        _available_now(spark, root, tmp_path / "out", ckpt, subscribe="second", startingOffsets="earliest")


def test_processing_time_trigger_with_a_live_writer(spark, tmp_path):
    root, out, ckpt = tmp_path / "logs", tmp_path / "out", tmp_path / "ckpt"
    w = PartitionWriter(root, "live", 0)
    w.append(100)
    q = (_stream(spark, root, startingOffsets="earliest").select("topic", "partition", "offset", "value")
         .writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(ckpt))
         .trigger(processingTime="200 milliseconds").start())
    try:
        q.processAllAvailable()
        w.append_torn(20)              # in progress: nothing of it may show up
        q.processAllAvailable()
        assert sorted(o for _, _, o in _sink_keys(spark, out)) == list(range(100))
        w.complete()
        w.roll()
        w.append(30)
        PartitionWriter(root, "live", 1).append(12)
        q.processAllAvailable()
        assert q.exception() is None
        progress = [p for p in q.recentProgress if p["numInputRows"]]
    finally:
        q.stop()
    keys = _sink_keys(spark, out)
    assert len(keys) == len(set(keys)) and sorted(keys) == _lib_keys(root)
    assert json.loads(progress[-1]["sources"][0]["endOffset"]) == {"live": {"0": 150, "1": 12}}
    if progress[-1]["sources"][0].get("latestOffset"):
        assert lag(progress[-1]) == {"live-0": 0, "live-1": 0}


def test_log_written_again_under_a_running_query(spark, tmp_path):
    """A running query (processing-time triggers): the partition's newest segment replaced by one
    with other records past the query's offset. failOnDataLoss=false: the rewritten offsets are
    read again -- the sink gets the new records; true: the query fails naming the partition."""
    for fail in ("false", "true"):
        root, out, ckpt = tmp_path / fail / "logs", tmp_path / fail / "out", tmp_path / fail / "ckpt"
        w = PartitionWriter(root, "run", 0)
        w.append(100)
        w.roll()
        w.append(100)
        q = (_stream(spark, root, startingOffsets="earliest", failOnDataLoss=fail)
             .select("topic", "partition", "offset", "value").writeStream.format("parquet")
             .option("path", str(out)).option("checkpointLocation", str(ckpt))
             .trigger(processingTime="200 milliseconds").start())
        try:
            q.processAllAvailable()
            assert sorted(o for _, _, o in _sink_keys(spark, out)) == list(range(200))
            # (replaced at once: a trigger between a removal and the write would see the log end go back to 100
            # and read from there -- test_segment_replaced_while_a_trigger_looks_at_it)
            _rewrite(tmp_path / fail / "new.log", 100, 150, max_records=50)
            os.replace(tmp_path / fail / "new.log", w.active)
            if fail == "true":
                with pytest.raises(Exception, match="no longer what this query read below offset 200"):
                    q.processAllAvailable()
                continue
            q.processAllAvailable()
            assert q.exception() is None
        finally:
            q.stop()
        rows = spark.read.parquet(str(out)).select("offset", "value").collect()
        new = sorted((r["offset"], bytes(r["value"])) for r in rows if bytes(r["value"]).startswith(b"new"))
        assert new == [(100 + i, b"new%d" % i) for i in range(50, 150)]     # 150..249, read after the rewrite


def test_replayed_micro_batch_yields_the_same_rows(spark, tmp_path):
    """A micro-batch whose commit is missing (the query died after planning it) is replayed from the
    offset log with the same offsets, although more data arrived since: the same rows again."""
    root, ckpt, seen = tmp_path / "logs", tmp_path / "ckpt", tmp_path / "seen"
    seen.mkdir()
    w = PartitionWriter(root, "rp", 0)
    w.append(300)

    def record(df, batch_id):
        rows = sorted(r["offset"] for r in df.select("offset").collect())
        name = seen / f"{batch_id}.json"
        if name.exists():
            name = seen / f"{batch_id}-replay.json"
        name.write_text(json.dumps(rows))

    def run():
        q = (_stream(spark, root, startingOffsets="earliest", maxOffsetsPerTrigger="100")
             .writeStream.foreachBatch(record).option("checkpointLocation", str(ckpt))
             .trigger(availableNow=True).start())
        try:
            assert q.awaitTermination(120)
            assert q.exception() is None
        finally:
            q.stop()

    run()
    assert sorted(os.listdir(seen)) == ["0.json", "1.json", "2.json"]
    for name in ("2", ".2.crc"):         # batch 2 planned and written to the offset log, never committed
        if (ckpt / "commits" / name).exists():
            os.remove(ckpt / "commits" / name)
    w.append(50)
    run()
    first, again = json.loads((seen / "2.json").read_text()), json.loads((seen / "2-replay.json").read_text())
    assert again == first == list(range(200, 300))
    assert json.loads((seen / "3.json").read_text()) == list(range(300, 350))


def test_corrupt_batch_mid_stream_both_ways(spark, tmp_path):
    root = tmp_path / "logs"
    w = PartitionWriter(root, "bad", 0)
    w.append(100, max_records=10)
    w.roll()
    w.append(100, max_records=10)
    seg = os.path.join(w.folder, f"{0:020d}.log")
    data = bytearray(open(seg, "rb").read())
    table, _ = kafkafmt.scan_batches(bytes(data))
    pos = int(table["position"][3])                        # the batch holding offsets 30..39
    data[pos + int(table["size"][3]) - 3] ^= 0xFF          # a payload byte: framing intact, CRC wrong
    open(seg, "wb").write(bytes(data))
    with pytest.raises(Exception, match=rf"{seg}.*position {pos}|position {pos}.*{seg}"):
        _available_now(spark, root, tmp_path / "out", tmp_path / "ckpt", startingOffsets="earliest")
    _available_now(spark, root, tmp_path / "out2", tmp_path / "ckpt2", startingOffsets="earliest",
                   failOnDataLoss="false")
    got = sorted(o for _, _, o in _sink_keys(spark, tmp_path / "out2"))
    assert got == [o for o in range(200) if not 30 <= o < 40]


def test_log_dir_disappearing_is_a_clear_error(tmp_path):
    root = tmp_path / "gone"
    PartitionWriter(root, "g", 0).append(5)
    r = _reader(root, startingOffsets="earliest")
    s = r.initialOffset()
    shutil.rmtree(root)
    with pytest.raises(DataLossError, match=f"log dir {root} is gone"):
        r.latestOffset(s, _all(r))


def test_checkpoint_of_another_source_is_refused(spark, tmp_path):
    root, ckpt = tmp_path / "logs", tmp_path / "ckpt"
    PartitionWriter(root, "k", 0).append(10)
    q = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", "5").load()
         .writeStream.format("noop").option("checkpointLocation", str(ckpt)).trigger(once=True).start())
    assert q.awaitTermination(60)
    q.stop()
    with pytest.raises(Exception, match="written by another source"):
        _available_now(spark, root, tmp_path / "out", ckpt, startingOffsets="earliest")


def test_subscription_options_and_extra_columns(tmp_path):
    for t, p in (("orders", 0), ("orders", 1), ("order-audit", 0), ("payments", 0)):
        PartitionWriter(tmp_path, t, p).append(3)
    assert _reader(tmp_path, subscribePattern="order.*", startingOffsets="earliest").initialOffset() == \
        {"order-audit": {"0": 0}, "orders": {"0": 0, "1": 0}}
    assert _reader(tmp_path, assign='{"orders":[1],"payments":[0]}', startingOffsets="earliest").initialOffset() == \
        {"orders": {"1": 0}, "payments": {"0": 0}}
    assert _reader(tmp_path, subscribe="payments,nope").initialOffset() == {"payments": {"0": 3}}
    # headers and batch metadata, as the batch source gives them
    w = PartitionWriter(tmp_path, "hdr", 0)
    with open(w.active, "ab") as f:
        f.write(kafkafmt.encode(values=[b"a", b"b"], headers=[[("trace", b"t1")], []], base_offset=0,
                                producer_id=42, producer_epoch=3, base_sequence=0, compression="lz4"))
    r = _reader(tmp_path, subscribe="hdr", startingOffsets="earliest", includeHeaders="true",
                includeBatchMetadata="true")
    s = r.initialOffset()
    rows = [row for p in r.partitions(s, r.latestOffset(s, _all(r))) for b in r.read(p) for row in b.to_pylist()]
    assert [(x["value"], x["headers"]) for x in rows] == [(b"a", [{"key": "trace", "value": b"t1"}]), (b"b", None)]
    assert {(x["producerId"], x["producerEpoch"], x["codec"]) for x in rows} == {(42, 3, "lz4")}


def test_stream_from_object_storage_through_spark(spark, tmp_path, s3):
    bucket, local = _uploaded_log_dir(tmp_path, s3, "kafka-logs", "s3t", 8192, 400)
    opts = {f"storage.{k}": v for k, v in s3.storage_options.items() if isinstance(v, str)}
    _available_now(spark, f"s3://{bucket}/kafka-logs", tmp_path / "out", tmp_path / "ckpt",
                   startingOffsets="earliest", **opts)
    assert sorted(_sink_keys(spark, tmp_path / "out")) == _lib_keys(local)
