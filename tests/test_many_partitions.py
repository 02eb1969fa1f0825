"""Many small partitions: read_log_dirs reads small whole segments of many partitions at once
(kafkafmt.log._bulk: one buffer, one native scan, one kernel pass) and must give exactly what reading
each partition on its own gives -- records, batch table, control records, labels, report, errors -- on
real broker data, the sample, and generated dirs with every kind of damage (a damaged partition is read
the usual way, in its place). The same for iter_log_dirs' chunks (each partition's own iter_log_dir
chunks) and the Polars scan's frame. Also: discovery shares its listings, and read_log_dir on one partition
never lists its siblings."""
import contextlib
import os
import shutil
import struct

import numpy as np
import pytest

import kafkafmt
from kafkafmt import errors
from kafkafmt.log import Unit, discover, find_partitions, plan, read_units
from kafkafmt.log import _bulk as bulk
from kafkafmt.read import decoded_bytes, iter_log_dir, read_log_dir, read_log_dirs
from kafkafmt.record import DecodeOptions, Records
import kafkafmt.read._readers as readers
from kafkafmt.storage import _local

import kpy


# --- the reference: every partition read on its own, concatenated ------------------------------------------

@contextlib.contextmanager
def segment_by_segment():
    """`read_log_dir` reading each segment on its own (as it does a log of more than a few MiB): the reference the
    reads in one pass are held to."""
    readers._SEGMENTS_AT_ONCE[0] = False
    try:
        yield
    finally:
        readers._SEGMENTS_AT_ONCE[0] = True


def one_by_one(root, **kwargs):
    """What read_log_dirs documents: the partitions' reads (read_log_dir, each segment on its own), one after the
    other."""
    report = []
    found = find_partitions(root, report=report)
    parts = []
    with segment_by_segment():
        for p in found:
            recs = read_log_dir(p, **kwargs)
            report += recs.report
            parts.append(recs)
    return Records.concat(parts).replace(report=report)


def assert_same(a, b):
    assert len(a) == len(b)
    assert a.to_arrow(batch_metadata=True, log_dir=True).equals(b.to_arrow(batch_metadata=True, log_dir=True))
    for name in ("offset", "timestamp", "timestamp_type", "batch_index"):
        assert getattr(a, name).dtype == getattr(b, name).dtype, name
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    for x, y in ((a.batches, b.batches), (a.controls, b.controls)):
        assert x.columns == y.columns
        for c in x.columns:
            assert x[c].dtype == y[c].dtype, c
            np.testing.assert_array_equal(x[c], y[c], err_msg=c)
    assert type(a.topic) is type(b.topic)
    np.testing.assert_array_equal(np.asarray(a.topic, dtype=object), np.asarray(b.topic, dtype=object))
    np.testing.assert_array_equal(np.asarray(a.log_dir, dtype=object), np.asarray(b.log_dir, dtype=object))
    np.testing.assert_array_equal(a.partition, b.partition)
    assert [(e.kind, e.file, e.message, e.start, e.end, e.offset) for e in a.report] == \
        [(e.kind, e.file, e.message, e.start, e.end, e.offset) for e in b.report]
    assert (a.file, a.valid_bytes, a.trailing_bytes, a.tail) == (b.file, b.valid_bytes, b.trailing_bytes, b.tail)
    assert a.columns == b.columns


def assert_same_read(root, **kwargs):
    got = read_log_dirs(root, **kwargs)
    assert_same(got, one_by_one(root, **kwargs))
    return got


def assert_same_error(root, **kwargs):
    with pytest.raises(errors.KafkafmtError) as want:
        one_by_one(root, **kwargs)
    with pytest.raises(errors.KafkafmtError) as got:
        read_log_dirs(root, **kwargs)
    assert type(got.value) is type(want.value)
    assert (str(got.value), got.value.file, got.value.position, got.value.offset) == \
        (str(want.value), want.value.file, want.value.position, want.value.offset)
    return got.value


@pytest.fixture
def bulk_used(monkeypatch):
    """Counts the units read_units reads in bulk (as one `Records`, or as each unit's chunks) and those it leaves
    to the usual read."""
    seen = {"records": 0, "chunks": 0, "fallback": 0}
    real = bulk.read_units

    def counting(*args, **kwargs):
        for kind, x, idx in real(*args, **kwargs):
            seen[kind] += len(idx) if kind == "records" else 1
            yield kind, x, idx

    import kafkafmt.read._readers as readers
    monkeypatch.setattr(readers, "read_units", counting)
    return seen


# --- generated log dirs ---------------------------------------------------------------------------------------

def write(folder, n, *, first=0, codec=None, per_batch=3, seed=0, magic=2, segment_bytes=1 << 30, headers=True):
    rnd = np.random.default_rng(seed)
    keys = [None if rnd.random() < 0.1 else b"k%d" % (first + i) for i in range(n)]
    values = [None if rnd.random() < 0.05 else bytes(rnd.integers(0, 255, rnd.integers(0, 80), np.uint8))
              for i in range(n)]
    hdrs = [[("h", b"%d" % i)] if headers and magic == 2 and i % 4 == 0 else [] for i in range(n)]
    kafkafmt.write_log_dir(folder, keys=keys, values=values, headers=hdrs if magic == 2 else None,
                           timestamps=[1_700_000_000_000 + first + i for i in range(n)], base_offset=first,
                           compression=codec, max_records=per_batch, segment_bytes=segment_bytes, magic=magic)


@pytest.fixture
def many(tmp_path):
    """A log dir of 60 small partitions of four topics: one-record and multi-record batches, several
    segments, every codec, v0/v1 messages, an empty partition, and the broker's side files."""
    root = tmp_path / "kafka-logs"
    root.mkdir()
    (root / "meta.properties").write_text("version=0\nbroker.id=1\n")
    codecs = [None, "gzip", "snappy", "lz4", "zstd"]
    for p in range(20):
        write(root / f"events-{p}", 30 + p, first=p * 7, codec=codecs[p % 5], per_batch=1 + p % 4, seed=p)
    for p in range(20):
        write(root / f"orders-{p}", 40, first=1000 * p, per_batch=5, segment_bytes=600, seed=100 + p)
    for p in range(10):
        write(root / f"legacy-{p}", 12, magic=1, codec=[None, "gzip"][p % 2], per_batch=3, seed=200 + p)
    for p in range(9):
        write(root / f"v0-{p}", 9, magic=0, seed=300 + p)
    (root / "empty-0").mkdir()
    return root


def test_many_small_partitions_read_at_once_equal_one_by_one(many, bulk_used):
    got = assert_same_read(many)
    assert len(got) > 0 and len(np.unique(got.partition)) == 20
    assert bulk_used["fallback"] == 0 and bulk_used["records"] == 60


@pytest.mark.parametrize("kwargs", [dict(columns=["offset", "timestamp"]), dict(columns=["key", "headers"]),
                                    dict(verify_crc=False), dict(verify_crc=None), dict(include_control=True),
                                    dict(errors="salvage"), dict(start_offset=5), dict(isolation="read_committed"),
                                    dict(binary="view"), dict(threads=2)])
def test_options_give_the_usual_records(many, kwargs):
    assert_same_read(many, **kwargs)


def test_the_sample_and_the_real_corpus(sample, real_corpus, bulk_used):
    assert_same_read(sample)            # transactions, compaction, Avro values, several segments
    assert_same_read(sample, include_control=True)
    for root in sorted((real_corpus / "broker-dirs").iterdir()):
        assert_same_read(root)          # KRaft control batches, compacted __consumer_offsets with gaps
    assert bulk_used["records"] > 0


def test_transactions_and_cleaned_batches(tmp_path, bulk_used):
    root = tmp_path / "logs"
    for p in range(4):
        folder = root / f"txn-{p}"
        folder.mkdir(parents=True)
        recs = [kpy.Rec(o, 1_700_000_000_000 + o, b"k", b"v%d" % o) for o in range(10)]
        data = (kpy.build_v2(recs[:4], producer_id=7, producer_epoch=1, transactional=True)
                + kpy.build_control_v2(4, 0, producer_id=7, producer_epoch=1)
                + kpy.build_empty_v2(5, 2)                          # the cleaner emptied 5..7
                + kpy.build_v2(recs[8:], producer_id=8, transactional=True)
                + kpy.build_control_v2(10, 1, producer_id=8))
        (folder / "00000000000000000000.log").write_bytes(data)
    for kwargs in ({}, dict(include_control=True), dict(isolation="read_committed")):
        assert_same_read(root, **kwargs)
    got = read_log_dirs(root)
    assert len(got.controls) == 8 and len(got) == 4 * 6
    assert got.controls.batch_index.dtype == np.int64
    assert bulk_used["records"] > 0


def outcome(folder, **kwargs):
    """``read_log_dir(folder, **kwargs)``, or the error it raises as (type, text, file, position, offset)."""
    try:
        return read_log_dir(folder, **kwargs)
    except errors.KafkafmtError as exc:
        return type(exc), str(exc), exc.file, exc.position, exc.offset


def assert_same_outcomes(folder, *, start_offset, end_offset):
    """`read_log_dir` of ``folder`` gives what its segment-by-segment read gives (the same Records, or the same
    error), under seven option sets: none, salvage, no CRC check, a start offset, an end offset, a projection, two
    threads salvaging."""
    for kwargs in ({}, {"errors": "salvage"}, {"verify_crc": False}, {"start_offset": start_offset},
                   {"end_offset": end_offset}, {"columns": ["offset", "key"]}, {"threads": 2, "errors": "salvage"}):
        got = outcome(folder, **kwargs)
        with segment_by_segment():
            want = outcome(folder, **kwargs)
        if isinstance(want, tuple):
            assert got == want, kwargs
        else:
            assert_same(got, want)


def assert_same_chunks(folder, **kwargs):
    """`iter_log_dir` of ``folder`` yields the chunks its segment-by-segment read yields; returns how many."""
    chunks = list(iter_log_dir(folder, **kwargs))
    with segment_by_segment():
        usual = list(iter_log_dir(folder, **kwargs))
    assert len(chunks) == len(usual)
    for a, b in zip(chunks, usual):
        assert_same(a, b)
    return len(chunks)


def assert_same_reads(folder, **kwargs):
    """`read_log_dir` and `iter_log_dir` of ``folder`` give what its segment-by-segment read gives."""
    got = read_log_dir(folder, **kwargs)
    with segment_by_segment():
        want = read_log_dir(folder, **kwargs)
    assert_same(got, want)
    assert_same_chunks(folder, **kwargs)


def test_a_partition_of_many_small_segments_is_read_in_one_pass(many, tmp_path, bulk_used):
    """``read_log_dir`` of a partition of several small segments decodes them in one pass: the Records (report,
    end of log, batches) each segment read on its own gives, the records kafka-python decodes; a damaged segment,
    a tail cut short, an empty newest segment and options bounding the read give what the read segment by segment
    gives too (strict: the same error)."""
    root = _copy(many, tmp_path)
    folder = root / "orders-3"
    assert len(_log(folder)) > 4
    got = read_log_dir(folder)
    assert bulk_used["chunks"] == 1 and bulk_used["fallback"] == 0
    with segment_by_segment():
        want = read_log_dir(folder)
    assert_same(got, want)
    for kwargs in ({}, {"max_bytes": 300}, {"keep_empty": True}):        # (the stream: each segment its chunk)
        assert assert_same_chunks(folder, **kwargs) >= len(_log(folder))
    # (chunks of 300 bytes: a segment in several chunks, read the usual way)
    assert (bulk_used["chunks"], bulk_used["fallback"]) == (1 + 2, 1)
    truth = [r for f in _log(folder) for r in kpy.kp_decode((folder / f).read_bytes())["records"]]
    assert got.offset.tolist() == [r["offset"] for r in truth] and got.value.to_pylist() == [r["value"] for r in truth]
    (folder / ("%020d.log" % 99_999)).write_bytes(b"")                   # (the newest segment, empty)
    last = folder / _log(folder)[-2]
    last.write_bytes(last.read_bytes()[:-5])                             # (its predecessor's tail cut short)
    middle = folder / _log(folder)[2]
    data = bytearray(middle.read_bytes())
    data[len(data) // 2] ^= 0xFF
    middle.write_bytes(bytes(data))

    assert_same_outcomes(folder, start_offset=3003, end_offset=3020)
    assert outcome(folder)[0] is errors.CrcError and outcome(folder)[2] == str(middle)
    assert any(e.kind is kafkafmt.ReportKind.CORRUPT for e in outcome(folder, errors="salvage").report)


def _runs_partition(folder, segments=12, per_segment=2, per_batch=3):
    """A partition folder of ``segments`` small segments written by kafka-python's builders (``per_segment``
    batches of ``per_batch`` records each, every other batch gzip), each named by its first offset; returns the
    size of its largest segment."""
    folder.mkdir(parents=True)
    offset, largest = 0, 0
    for s in range(segments):
        data = b""
        for b in range(per_segment):
            recs = [kpy.Rec(o, 1_700_000_000_000 + o, b"k%d" % o, kpy.compressible(o))
                    for o in range(offset, offset + per_batch)]
            data += kpy.build_v2(recs, "gzip" if b % 2 else 0)
            offset += per_batch
        (folder / ("%020d.log" % (s * per_segment * per_batch))).write_bytes(data)
        largest = max(largest, len(data))
    return largest


def test_a_log_of_many_small_segments_is_read_a_run_at_a_time(tmp_path, bulk_used, monkeypatch):
    """A partition of more small segments than one pass takes (`SMALL_UNIT_BYTES`: set here to four segments) is
    read a run of segments at a time, each run in one pass: what reading each segment on its own gives (records,
    batches, report, end of log; the chunks of iter_log_dir; read_log_dirs among small partitions), kafka-python's
    records. Damage -- a run's last segment holding offsets the next run's first holds too, a flipped byte in a run,
    a tail cut short, an empty newest segment -- gives what the segment-by-segment read gives, under seven option
    sets."""
    root = tmp_path / "logs"
    folder = root / "runs-0"
    largest = _runs_partition(folder)
    monkeypatch.setattr(readers, "SMALL_UNIT_BYTES", 4 * largest)
    monkeypatch.setattr(bulk, "SMALL_UNIT_BYTES", 4 * largest)
    for p in range(3):
        _runs_partition(root / f"small-{p}", segments=2)
    got = read_log_dir(folder)
    assert (bulk_used["chunks"], bulk_used["fallback"]) == (3, 0)           # (12 segments: three runs of four)
    with segment_by_segment():
        want = read_log_dir(folder)
    assert_same(got, want)
    truth = [r for f in _log(folder) for r in kpy.kp_decode((folder / f).read_bytes())["records"]]
    assert got.offset.tolist() == [r["offset"] for r in truth] and got.value.to_pylist() == [r["value"] for r in truth]
    for kwargs in ({}, {"keep_empty": True}, {"columns": ["offset"]}):
        assert assert_same_chunks(folder, **kwargs) == 12
    assert_same_read(root)
    assert_same_read(root, errors="salvage")

    logs = [folder / f for f in _log(folder)]
    # the last segment of the first run holds three more records, at offsets the next run's first segment holds
    extra = [kpy.Rec(24 + i, 1_700_000_000_000, b"x", b"stray %d" % i) for i in range(3)]
    logs[3].write_bytes(logs[3].read_bytes() + kpy.build_v2(extra))
    assert_same_outcomes(folder, start_offset=20, end_offset=50)
    salvaged = outcome(folder, errors="salvage")
    assert len(salvaged) == len(truth) and np.all(np.diff(salvaged.offset) > 0)       # (no offset read twice)
    data = bytearray(logs[6].read_bytes())
    data[len(data) // 2] ^= 0xFF                                        # (the second run damaged)
    logs[6].write_bytes(bytes(data))
    logs[9].write_bytes(logs[9].read_bytes()[:-5])                      # (a tail cut short in the third)
    (folder / ("%020d.log" % 72)).write_bytes(b"")                     # (the newest segment, empty)
    assert_same_outcomes(folder, start_offset=20, end_offset=50)
    assert outcome(folder)[0] is errors.CorruptRecordError and outcome(folder)[2] == str(logs[3])


def test_offset_bounds_read_their_stretches_in_the_pass(tmp_path, bulk_used, monkeypatch):
    """A read between two offsets reads its segments in one pass (their runs of four here) -- the segment a bound
    falls in too: the stretch of it that the index points at, read from that byte on or up to it, its records
    selected as the segment-by-segment read selects them. The same records, batches and report as that read, and
    the same chunks of iter_log_dir, at each end offset from the first segment to past the last, from start
    offsets inside a batch and at one, salvaging too."""
    from kafkafmt.recovery import rebuild_indexes

    folder = tmp_path / "logs" / "runs-0"
    largest = _runs_partition(folder, per_segment=4)        # (12 segments of 4 batches of 3 records: 0..143)
    for log in _log(folder):
        rebuild_indexes(str(folder / log), index_interval_bytes=1, write=True)     # (an entry a batch)
    monkeypatch.setattr(readers, "SMALL_UNIT_BYTES", 4 * largest)
    monkeypatch.setattr(bulk, "SMALL_UNIT_BYTES", 4 * largest)
    seen = []
    real = kafkafmt.storage.LocalStorage.read_many

    def read_many(storage, paths, buf, starts, versions=None, offsets=None):
        seen.extend(zip(paths, [0] * len(paths) if offsets is None else offsets.tolist(), np.diff(starts).tolist()))
        return real(storage, paths, buf, starts, versions, offsets)
    monkeypatch.setattr(kafkafmt.storage.LocalStorage, "read_many", read_many)
    got = read_log_dir(folder, start_offset=5, end_offset=100)
    assert got.offset.tolist() == list(range(5, 100))
    assert (bulk_used["chunks"], bulk_used["fallback"]) == (3, 0)           # (segments 0-3, 4-7, and 8)
    first, last = seen[0], seen[-1]
    assert first[0].endswith("%020d.log" % 0) and first[1] > 0                  # (from its second batch on)
    assert last[0].endswith("%020d.log" % 96) and last[2] < os.path.getsize(last[0])    # (up to its third)
    for end in (1, 12, 13, 48, 49, 96, 100, 143, 144, 400):
        for start in ({}, {"start_offset": 3}, {"start_offset": 5}, {"start_offset": 61, "errors": "salvage"}):
            assert_same_reads(folder, end_offset=end, **start)


def test_records_out_of_offset_order_are_selected_as_the_usual_read_selects_them(tmp_path, bulk_used):
    """A batch whose records' offsets are out of order (written so, with a sound CRC), and a start offset among
    them or at a segment's base above a record: the pass keeps the records the segment-by-segment read keeps (its
    selection is a binary search of the bounds in the records as decoded), in one pass."""
    root = tmp_path / "logs"
    for p in range(3):
        folder = root / f"odd-{p}"
        folder.mkdir(parents=True)
        first = kpy.build_v2([kpy.Rec(o, 1_700_000_000_000 + o, b"k", b"a%d" % o) for o in range(10)])
        odd = kpy.build_v2([kpy.Rec(o, 1_700_000_000_000 + o, b"k", b"b%d" % o) for o in (10, 13, 11, 12)],
                           base_offset=10)
        (folder / ("%020d.log" % 0)).write_bytes(first + odd)
        low = kpy.build_v2([kpy.Rec(o, 1_700_000_000_000 + o, b"k", b"c%d" % o) for o in (14, 13, 15)],
                           base_offset=14)           # (a record below its segment's base offset)
        (folder / ("%020d.log" % 14)).write_bytes(low)
    folder = root / "odd-0"
    for kwargs in ({"start_offset": 11}, {"start_offset": 12}, {"start_offset": 14},
                   {"start_offset": 12, "end_offset": 14}, {"start_offset": 12, "verify_crc": False},
                   {"start_offset": 13, "errors": "salvage"}):
        assert_same_reads(folder, **kwargs)
        assert_same_read(root, **kwargs)
    assert read_log_dir(folder, start_offset=12).offset.tolist()[:3] == [13, 11, 12]       # (as the usual read)
    assert bulk_used["fallback"] == 0


# --- damage: the damaged partition is read the usual way, in its place --------------------------------------

def _copy(many, tmp_path):
    return shutil.copytree(many, tmp_path / "copy" / "kafka-logs")


def _log(folder):
    return sorted(p for p in os.listdir(folder) if p.endswith(".log"))


def test_a_crc_mismatch_raises_the_usual_error_and_salvage_reads_around_it(many, tmp_path, bulk_used):
    root = _copy(many, tmp_path)
    seg = root / "events-6" / _log(root / "events-6")[0]
    data = bytearray(seg.read_bytes())
    data[len(data) // 2] ^= 0xFF
    seg.write_bytes(bytes(data))
    exc = assert_same_error(root)
    assert isinstance(exc, errors.CrcError) and exc.file == str(seg)
    # a larger partition after it, read by another thread, is damaged too: the first one's error wins
    big = root / "orders-20"
    write(big, 60_000, first=20_000, per_batch=200, seed=19)
    seg2 = big / _log(big)[-1]
    data = bytearray(seg2.read_bytes())
    data[-100] ^= 0xFF
    seg2.write_bytes(bytes(data))
    assert assert_same_error(root, threads=2).file == str(seg)
    got = assert_same_read(root, errors="salvage", threads=2)
    got = assert_same_read(root, errors="salvage")
    assert any(e.kind is kafkafmt.ReportKind.CORRUPT for e in got.report)
    assert bulk_used["fallback"] >= 1


# --- iter_log_dirs: the same chunks as each partition's own iter_log_dir, one after the other ------------------

def stream_one_by_one(root, **kwargs):
    """What iter_log_dirs documents: each partition's chunks (iter_log_dir, each segment on its own), one partition
    after the other, every chunk's report the read's one list; (chunks, report, the error that ended it or None)."""
    report, chunks = [], []
    try:
        with segment_by_segment():
            for p in find_partitions(root, report=report):
                chunks += iter_log_dir(p, report=report, **kwargs)
    except errors.KafkafmtError as exc:
        return chunks, report, exc
    return chunks, report, None


def assert_same_stream(root, **kwargs):
    want, want_report, want_exc = stream_one_by_one(root, **kwargs)
    got, report = [], []
    try:
        for recs in kafkafmt.iter_log_dirs(root, report=report, **kwargs):
            assert recs.report is report         # (the chunks' report: the read's one list, as each grows)
            got.append(recs)
    except errors.KafkafmtError as exc:
        assert want_exc is not None and type(exc) is type(want_exc)
        assert (str(exc), exc.file, exc.position, exc.offset) == \
            (str(want_exc), want_exc.file, want_exc.position, want_exc.offset)
    else:
        assert want_exc is None
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert_same(a.replace(report=[]), b.replace(report=[]))
    assert [(e.kind, e.file, e.message, e.start, e.end, e.offset) for e in report] == \
        [(e.kind, e.file, e.message, e.start, e.end, e.offset) for e in want_report]
    return got, report


@pytest.mark.parametrize("kwargs, in_bulk", [
    ({}, 60), (dict(columns=["offset", "timestamp"]), 60), (dict(include_control=True, verify_crc=False), 60),
    (dict(start_offset=5), 60),                   # (a segment read from inside: its stretch in the pass too)
    (dict(keep_empty=True, max_bytes=300), 1),    # (a segment read in several chunks: the same)
    (dict(isolation="read_committed"), 0), (dict(binary="view"), 0)])
def test_iter_log_dirs_gives_each_partitions_own_chunks(many, kwargs, in_bulk, bulk_used):
    got, _ = assert_same_stream(many, **kwargs)
    assert len({(r.topic, r.partition) for r in got}) == 59            # (every partition but the empty one)
    assert bulk_used["chunks"] == in_bulk          # small partitions decoded many at once, not one by one
    assert bulk_used["chunks"] + bulk_used["fallback"] == (60 if in_bulk else 0)


def test_iter_log_dirs_of_damaged_partitions_the_sample_and_the_real_corpus(many, tmp_path, sample, real_corpus,
                                                                             bulk_used):
    root = _copy(many, tmp_path)
    seg = root / "events-6" / _log(root / "events-6")[0]
    data = bytearray(seg.read_bytes())
    data[len(data) // 2] ^= 0xFF                # a CRC that fails: strict stops there, salvage reads around it
    seg.write_bytes(bytes(data))
    tail = root / "orders-3" / _log(root / "orders-3")[-1]
    tail.write_bytes(tail.read_bytes()[:-7])     # a torn tail
    assert_same_stream(root)
    _, report = assert_same_stream(root, errors="salvage")
    assert {kafkafmt.ReportKind.CORRUPT, kafkafmt.ReportKind.TRUNCATED} <= {e.kind for e in report}
    assert bulk_used["fallback"] >= 1
    assert_same_stream(sample, include_control=True)
    for d in sorted((real_corpus / "broker-dirs").iterdir()):
        assert_same_stream(d)


@pytest.mark.parametrize("damage", ["truncated", "zeros", "garbage"])
def test_damaged_tails(many, tmp_path, damage):
    root = _copy(many, tmp_path)
    for name in ("events-3", "orders-12"):
        seg = root / name / _log(root / name)[-1]
        data = seg.read_bytes()
        if damage == "truncated":
            data = data[:-7]
        elif damage == "zeros":
            data += bytes(4096)
        else:
            data += b"\x00" * 8 + b"\x7f\x00\x00\x10" + b"junk"
        seg.write_bytes(data)
    if damage == "garbage":
        assert_same_error(root)
    else:
        assert_same_read(root)
    assert_same_read(root, errors="salvage")


def test_a_cut_off_segment_before_others_raises_the_usual_error(many, tmp_path):
    root = _copy(many, tmp_path)
    folder = root / "orders-4"
    seg = folder / _log(folder)[0]
    seg.write_bytes(seg.read_bytes()[:-5])
    assert "later segments follow" in str(assert_same_error(root))
    assert_same_read(root, errors="salvage")
    # the stream: the same error, after the same report entries (the cut tail's, made just before it is raised)
    _, report = assert_same_stream(root)
    assert report[-1].kind is kafkafmt.ReportKind.TRUNCATED and report[-1].file == str(seg)


def test_batches_out_of_offset_sequence(many, tmp_path):
    root = _copy(many, tmp_path)
    # a damaged base offset inside a segment (the v2 CRC does not cover it)
    seg = root / "events-0" / _log(root / "events-0")[0]
    data = bytearray(seg.read_bytes())
    size = struct.unpack_from(">i", data, 8)[0]
    struct.pack_into(">q", data, 12 + size, 10_000)
    seg.write_bytes(bytes(data))
    # a segment whose batches run past the next segment's base offset (its file renamed)
    folder = root / "orders-7"
    logs = _log(folder)
    os.rename(folder / logs[1], folder / ("%020d.log" % (int(logs[1][:20]) - 2)))
    assert_same_error(root)
    got = assert_same_read(root, errors="salvage")
    assert any(e.kind is kafkafmt.ReportKind.CORRUPT for e in got.report)


def test_records_the_kernel_refuses_fall_back(many, tmp_path, bulk_used):
    """A batch whose CRC verifies but whose records are malformed: only the kernel finds it."""
    root = _copy(many, tmp_path)
    folder = root / "events-10"          # uncompressed (codecs cycle every 5 partitions)
    seg = folder / _log(folder)[0]
    data = bytearray(seg.read_bytes())
    size = struct.unpack_from(">i", data, 8)[0]
    pos = 12 + size                       # the second batch
    struct.pack_into(">b", data, pos + 61, 0x7F)   # its first record's length varint: far too long
    kpy.fix_crc_v2(data, pos)
    seg.write_bytes(bytes(data))
    exc = assert_same_error(root)
    assert exc.offset is not None
    got = assert_same_read(root, errors="salvage")
    assert bulk_used["fallback"] >= 1
    np.testing.assert_array_equal(np.unique(got.partition[got.topic == "events"]), np.arange(20))


def test_a_file_that_shrank_since_it_was_listed(many):
    """Planned from discovery's listing, then cut: that unit falls back (the usual read says what
    changed); the others are read in bulk."""
    found = discover(many).partitions
    units = [Unit(plan(p), p.topic, p.partition, p.log_dir_url) for p in found]
    victim = next(i for i, u in enumerate(units) if u.tasks)
    log = units[victim].tasks[0].segment.log
    with open(log, "r+b") as f:
        f.truncate(os.path.getsize(log) - 3)
    out = list(read_units(units, DecodeOptions(threads=1)))
    assert ("fallback", victim, None) in out
    assert sum(len(i) for kind, _, i in out if kind == "records") == len(units) - 1
    with pytest.raises(errors.ObjectChangedError):
        read_log_dir(found[victim])


def test_pieces_keep_unit_order_and_max_bytes(many):
    found = discover(many).partitions
    units = [Unit(plan(p), p.topic, p.partition, p.log_dir_url) for p in found]
    out = list(read_units(units, DecodeOptions(threads=1), chain=False, max_bytes=4096, group_bytes=2048))
    order = [i for kind, x, idx in out for i in (idx if kind == "records" else [x])]
    assert order == list(range(len(units)))
    assert sum(kind == "records" for kind, _, _ in out) > 5
    whole = Records.concat([x for _, x, _ in out])
    assert_same(whole.replace(report=[]), one_by_one(many).replace(report=[]))


# --- listings --------------------------------------------------------------------------------------------------

@pytest.fixture
def listings(monkeypatch):
    calls = []

    def counting(real):
        def listed(self, path, **kwargs):
            calls.append(os.path.normpath(path))
            return real(self, path, **kwargs)
        return listed

    def counting_many(real):
        def listed(self, paths, **kwargs):
            got = real(self, paths, **kwargs)
            calls.extend(os.path.normpath(p) for p, g in zip(paths, got) if g is not None)
            return got
        return listed

    # (a folder's rows, or the same kept compactly: discovery keeps its partition folders' so, listing many in
    # one call)
    for name in ("list", "folder_listing"):
        monkeypatch.setattr(_local.LocalStorage, name, counting(getattr(_local.LocalStorage, name)))
    monkeypatch.setattr(_local.LocalStorage, "folder_listings", counting_many(_local.LocalStorage.folder_listings))
    return calls


def test_each_folder_is_listed_once(many, listings):
    read_log_dirs(many)
    assert len(listings) == len(set(listings))
    assert str(many) in listings and str(many / "events-0") in listings


def test_read_log_dir_does_not_list_its_siblings(many, listings):
    folder = many / "orders-3"
    recs = read_log_dir(folder)
    assert listings == [str(folder)]
    assert_same(recs, read_log_dir(find_partitions(many, topics=["orders"], partitions=[3])[0]))


def test_log_start_offsets_are_read_again_when_the_checkpoint_changes(many, tmp_path):
    root = _copy(many, tmp_path)
    ckpt = root / "log-start-offset-checkpoint"
    folder = root / "orders-2"
    first = read_log_dir(folder)
    for start, age in ((2010, 100), (2020, 50)):
        ckpt.write_text(f"0\n1\norders 2 {start}\n")
        t = os.path.getmtime(ckpt) - age         # settled: old enough to be kept
        os.utime(ckpt, (t, t))
        assert int(read_log_dir(folder).offset[0]) == start
    ckpt.unlink()
    assert int(read_log_dir(folder).offset[0]) == int(first.offset[0])
    assert_same_read(root)


def test_a_partition_pickled_lists_its_folder_afresh(many):
    import pickle

    p = discover(many, topics=["orders"], partitions=[5]).partitions[0]
    assert p.listing is not None
    q = pickle.loads(pickle.dumps(p))
    assert q.listing is None and (q.name, q.folder, q.log_dir, q.real) == (p.name, p.folder, p.log_dir, p.real)
    assert len(q.list_segments()) > 1
    assert [s.base_offset for s in q.list_segments()] == [s.base_offset for s in p.list_segments()]


def test_a_partition_folder_linked_into_another_log_dir_is_read_once(many, tmp_path):
    other = tmp_path / "elsewhere" / "kafka-logs"
    other.mkdir(parents=True)
    (other / "meta.properties").write_text("version=0\nbroker.id=2\n")
    os.symlink(many / "orders-3", other / "orders-3")
    write(other / "solo-0", 5, seed=9)
    linked = tmp_path / "linked-logs"
    os.symlink(many, linked)                     # the whole log dir again, through a link
    got = read_log_dirs([many, other, linked])
    assert len(got) == len(read_log_dirs(many)) + 5
    assert_same(got, one_by_one([many, other, linked]))


def test_a_polars_scan_reads_many_small_partitions_in_one_pass(many, bulk_used, monkeypatch):
    """kafkafmt.polars.scan_log_dirs: the small partitions decoded many at once and given to Polars in a few
    frames (a frame a chunk made Polars' own work per frame most of such a scan), the same frame as the read."""
    import polars as pl

    import kafkafmt.polars as kpl
    from kafkafmt.read import _polars

    frames, sizes = [], []
    joined = _polars._joined

    def counted(items):
        frames.append(len(items))
        sizes.append(sum(decoded_bytes(r) for r in items) if len(items) > 1 else 0)
        return joined(items)

    monkeypatch.setattr(_polars, "_joined", counted)
    want = pl.from_arrow(read_log_dirs(many).to_arrow())
    chunks = len(stream_one_by_one(many)[0])
    got = kpl.scan_log_dirs(many).collect()
    assert got.equals(want) and len(got) > _polars.FRAME_ROWS // 100
    assert bulk_used["chunks"] == 60 and bulk_used["fallback"] == 0
    assert frames == [chunks]           # (every chunk in one frame: fewer rows than a frame holds)
    # a bound pushed down reads each partition from it (as iter_log_dir reads it: a partition of several small
    # segments in one pass); head stops early; each the read's answer
    pred = pl.col("offset") >= 20
    assert kpl.scan_log_dirs(many).filter(pred).collect().equals(want.filter(pred))
    several = sum(len(_log(many / name)) > 1 for name in os.listdir(many) if (many / name).is_dir())
    assert several == 20 and bulk_used["chunks"] == 60 + several
    assert kpl.scan_log_dirs(many).head(7).collect().equals(want.head(7))
    # a frame holds no more than a chunk may (max_bytes): chunks of large values are not gathered without end
    frames.clear()
    sizes.clear()
    assert kpl.scan_log_dirs(many, max_bytes=4096).collect().equals(want)
    assert len(frames) > 10 and max(sizes) <= 4096
