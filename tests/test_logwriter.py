"""LogWriter / write_log_dir / the bundled sample, checked file by file like a broker would lay them out.

The side files are read here with ``struct`` directly (independently of kafkafmt.log.sidefiles), and what a
broker would have written is derived here from the batches of each ``.log`` (LogSegment.append: an offset
index entry (batch last offset, batch position) when more than ``index.interval.bytes`` were appended since
the last entry, a time index entry (max timestamp so far, last offset of the first batch that reached it)
at the same moments if the timestamp grew, plus one when the segment is rolled; the transaction index: an
entry per aborted transaction in the segment of its ABORT marker, with ProducerStateManager's last stable
offset rule).
"""
from __future__ import annotations

import base64
import glob
import os
import re
import struct
import uuid

import numpy as np
import pytest

import kpy

import kafkafmt
from kafkafmt import EncodeError  # noqa: E402
from kafkafmt.log import LogWriter, write_log_dir  # noqa: E402

TS0 = 1_700_000_000_000
INT32_MAX = 2**31 - 1
SEGMENT_FILE = re.compile(r"^(\d{20})\.(log|index|timeindex|txnindex)$")


# ---------------------------------------------------------------------------------------------------------
# independent readers
def read_index(path):
    data = open(path, "rb").read()
    assert len(data) % 8 == 0, f"{path}: {len(data)} bytes, not a multiple of 8"
    out = []
    for i in range(0, len(data), 8):
        rel, pos = struct.unpack_from(">ii", data, i)
        if rel == 0 and pos == 0:        # zero tail of a preallocated index (never a real entry)
            break
        out.append((rel, pos))
    return out


def read_timeindex(path):
    data = open(path, "rb").read()
    assert len(data) % 12 == 0, f"{path}: {len(data)} bytes, not a multiple of 12"
    out = []
    for i in range(0, len(data), 12):
        ts, rel = struct.unpack_from(">qi", data, i)
        if ts == 0 and rel == 0:
            break
        out.append((ts, rel))
    return out


def read_txnindex(path):
    data = open(path, "rb").read()
    assert len(data) % 34 == 0, f"{path}: {len(data)} bytes, not a multiple of 34"
    return [struct.unpack_from(">hqqqq", data, i) for i in range(0, len(data), 34)]


def segments(path):
    """Sorted base offsets of the segments in a partition directory."""
    bases = set()
    for name in os.listdir(path):
        m = SEGMENT_FILE.match(name)
        if m:
            bases.add(int(m.group(1)))
    return sorted(bases)


def seg_file(path, base, suffix):
    return os.path.join(path, f"{base:020d}{suffix}")


def batches_of(log_path):
    """Batch rows of a .log as plain dicts (kafkafmt's decoding, control batches included)."""
    recs = kafkafmt.decode(open(log_path, "rb").read(), include_control=True)
    assert recs.tail is None and recs.trailing_bytes == 0
    b = recs.batches
    cols = ("position", "size", "base_offset", "last_offset", "max_timestamp", "record_count", "magic",
            "producer_id", "producer_epoch", "base_sequence", "is_transactional", "is_control", "codec",
            "partition_leader_epoch")
    rows = [dict(zip(cols, vals)) for vals in zip(*(np.asarray(getattr(b, c)).tolist() for c in cols))]
    return rows, recs


def expected_indexes(batches, interval, rolled):
    """What LogSegment.append (one batch per append) and the roll write for these batches."""
    index, tindex = [], []
    since = 0
    max_ts, max_off = -1, None
    for b in batches:
        if b["max_timestamp"] > max_ts:
            max_ts, max_off = b["max_timestamp"], b["last_offset"]
        if since > interval:
            index.append((b["last_offset"], b["position"]))
            if max_ts > (tindex[-1][0] if tindex else -1):
                tindex.append((max_ts, max_off))
            since = 0
        since += b["size"]
    final = list(tindex)
    if max_ts > (tindex[-1][0] if tindex else -1):
        final.append((max_ts, max_off))
    return index, (final if rolled else tindex), final


def check_partition(path, segment_bytes, interval, *, strict_active_timeindex=True):
    """Every structural property of a partition directory; returns (all records, per-segment batches)."""
    names = sorted(os.listdir(path))
    bases = segments(path)
    assert bases, f"no segments in {path}"
    allowed = {"leader-epoch-checkpoint", "partition.metadata"}
    for name in names:
        assert SEGMENT_FILE.match(name) or name in allowed, f"unexpected file {name}"
    assert "leader-epoch-checkpoint" in names and "partition.metadata" in names
    for base in bases:
        for suffix in (".log", ".index", ".timeindex"):
            assert os.path.exists(seg_file(path, base, suffix)), f"{base:020d}{suffix} missing"
    per_segment = []
    data = []
    for k, base in enumerate(bases):
        log = seg_file(path, base, ".log")
        raw = open(log, "rb").read()
        data.append(raw)
        rows, recs = batches_of(log)
        assert rows, f"segment {base} is empty"
        per_segment.append(rows)
        size = len(raw)
        # the segment is named after its first offset
        first = int(np.asarray(recs.offset)[0]) if len(recs) else rows[0]["base_offset"]
        assert rows[0]["base_offset"] == base
        assert first == base or rows[0]["record_count"] == 0
        # offsets in the segment fit in int32 relative offsets (what the index can hold)
        assert rows[-1]["last_offset"] - base <= INT32_MAX
        # size limit: only a segment holding a single batch may exceed segment_bytes
        assert size <= segment_bytes or len(rows) == 1, f"segment {base}: {size} > {segment_bytes}"
        if k + 1 < len(bases):
            # and it rolled only when the next batch did not fit, or when the next batch's offsets
            # would not fit the index's int32 offsets relative to this segment's base (shouldRoll)
            nxt = batches_of(seg_file(path, bases[k + 1], ".log"))[0][0]
            assert size + nxt["size"] > segment_bytes or nxt["last_offset"] - base > INT32_MAX
        # offset index
        idx = read_index(seg_file(path, base, ".index"))
        want_idx, want_t, want_t_final = expected_indexes(rows, interval, rolled=k + 1 < len(bases))
        assert [(base + r, p) for r, p in idx] == want_idx
        starts = {b["position"]: b for b in rows}
        for rel, pos in idx:
            assert pos in starts, f"index entry ({rel}, {pos}) points inside a batch"
            assert starts[pos]["last_offset"] == base + rel
        assert all(a[0] < b[0] and a[1] < b[1] for a, b in zip(idx, idx[1:]))
        if interval > 0 and size > 4 * interval:
            biggest = max(b["size"] for b in rows)
            assert size // (interval + biggest) - 1 <= len(idx) <= size // interval + 1
        # time index
        tidx = [(ts, base + rel) for ts, rel in read_timeindex(seg_file(path, base, ".timeindex"))]
        assert all(a[0] < b[0] and a[1] <= b[1] for a, b in zip(tidx, tidx[1:])), "time index not increasing"
        if k + 1 < len(bases) or strict_active_timeindex:
            # rolled segments, and the active one after a clean close, end with the final entry
            assert tidx == want_t_final
        else:
            assert tidx in (want_t, want_t_final)
        for ts, off in tidx:
            assert base <= off <= rows[-1]["last_offset"]
    all_recs = kafkafmt.decode(b"".join(data))
    return all_recs, per_segment, bases


# ---------------------------------------------------------------------------------------------------------
def _records(n, start=0, value_size=150, seed=0):
    rnd = np.random.default_rng(seed)
    keys = [None if i % 7 == 0 else b"key-%d" % (i % 13) for i in range(n)]
    values = [None if i % 11 == 5 else rnd.integers(0, 256, rnd.integers(0, value_size), dtype=np.uint8).tobytes()
              for i in range(n)]
    ts = (TS0 + np.arange(n) * 100 + rnd.integers(-300, 300, n)).tolist()
    return keys, values, ts


@pytest.mark.parametrize("codec", ["none", "gzip", "lz4", "zstd", "snappy"])
@pytest.mark.parametrize("segment_bytes,interval", [(4096, 1024), (20_000, 4096), (1 << 30, 512), (100, 0)])
def test_write_log_dir(tmp_path, codec, segment_bytes, interval):
    n = 600
    keys, values, ts = _records(n)
    path = tmp_path / "orders-0"
    w = write_log_dir(path, keys=keys, values=values, timestamps=ts, compression=codec, batch_size=1500,
                      segment_bytes=segment_bytes, index_interval_bytes=interval)
    assert w.closed
    recs, per_segment, bases = check_partition(str(path), segment_bytes, interval)
    assert np.asarray(recs.offset).tolist() == list(range(n))
    assert recs.key.to_pylist() == keys
    assert recs.value.to_pylist() == values
    assert np.asarray(recs.timestamp).tolist() == ts
    if segment_bytes < 1 << 30:
        assert len(bases) > 1
    if segment_bytes == 100:
        assert all(len(rows) == 1 for rows in per_segment)
    assert all(b["codec"] == kpy.CODEC_IDS[codec] for rows in per_segment for b in rows)
    # checkpoint files
    text = (path / "leader-epoch-checkpoint").read_text()
    assert text == "0\n1\n0 0\n"
    meta = (path / "partition.metadata").read_bytes()
    m = re.fullmatch(rb"version: 0\ntopic_id: ([A-Za-z0-9_-]{22})", meta)
    assert m, meta
    raw = base64.urlsafe_b64decode(m.group(1) + b"==")
    assert len(raw) == 16 and raw != bytes(16)


def test_layout_names_and_no_leftovers(tmp_path):
    path = tmp_path / "my.topic_name-12"
    keys, values, ts = _records(300)
    w = write_log_dir(path, keys=keys, values=values, timestamps=ts, segment_bytes=8000, batch_size=1000,
                      base_offset=5000, leader_epoch=7)
    assert (w.topic, w.partition) == ("my.topic_name", 12)
    names = sorted(os.listdir(path))
    bases = segments(str(path))
    assert bases[0] == 5000 and len(bases) > 2
    expected = {f"{b:020d}{s}" for b in bases for s in (".log", ".index", ".timeindex")}
    assert set(names) == expected | {"leader-epoch-checkpoint", "partition.metadata"}
    assert (path / "leader-epoch-checkpoint").read_text() == "0\n1\n7 5000\n"
    recs, per_segment, _ = check_partition(str(path), 8000, 4096)
    assert np.asarray(recs.offset).tolist() == list(range(5000, 5300))
    assert all(b["partition_leader_epoch"] == 7 for rows in per_segment for b in rows)


def test_topic_id(tmp_path):
    tid = uuid.UUID("12345678-1234-5678-1234-567812345678")
    write_log_dir(tmp_path / "a-0", values=[b"x"], timestamps=[TS0], topic_id=tid)
    text = (tmp_path / "a-0" / "partition.metadata").read_text()
    assert text == "version: 0\ntopic_id: " + base64.urlsafe_b64encode(tid.bytes).decode().rstrip("=")
    # the default is deterministic per topic, the same for every partition, different across topics
    write_log_dir(tmp_path / "b-0", values=[b"x"], timestamps=[TS0])
    write_log_dir(tmp_path / "b-1", values=[b"x"], timestamps=[TS0])
    write_log_dir(tmp_path / "c-0", values=[b"x"], timestamps=[TS0])
    b0 = (tmp_path / "b-0" / "partition.metadata").read_bytes()
    assert b0 == (tmp_path / "b-1" / "partition.metadata").read_bytes()
    assert b0 != (tmp_path / "c-0" / "partition.metadata").read_bytes()


def test_several_appends_mixed(tmp_path):
    path = tmp_path / "events-3"
    expect_off, expect_val = [], []
    with LogWriter(path, segment_bytes=6000, index_interval_bytes=700, leader_epoch=2) as w:
        k, v, t = _records(120, seed=1)
        assert w.append(keys=k, values=v, timestamps=t, compression="gzip", batch_size=800,
                        producer_id=77, producer_epoch=1) == (0, 119)
        expect_off += list(range(120))
        expect_val += v
        k, v, t = _records(50, seed=2)
        assert w.append(keys=k, values=v, timestamps=t, magic=1, compression="snappy", max_records=9) == (120, 169)
        expect_off += list(range(120, 170))
        expect_val += v
        offs = [200 + 3 * i for i in range(40)]
        k, v, t = _records(40, seed=3)
        assert w.append(keys=k, values=v, timestamps=t, offsets=offs, compression="lz4") == (200, 317)
        expect_off += offs
        expect_val += v
        w.append_empty_batch(last_offset=330, timestamp=TS0 + 10**6)
        k, v, t = _records(60, seed=4)
        w.append(keys=k, values=v, timestamps=t, compression="zstd", batch_size=1000, producer_id=77,
                 producer_epoch=1)
        expect_off += list(range(331, 391))
        expect_val += v
        k, v, t = _records(30, seed=5)
        w.append(keys=k, values=v, timestamps=t, magic=0, compression="none")
        expect_off += list(range(391, 421))
        expect_val += v
        assert w.append(values=[]) is None
    recs, per_segment, bases = check_partition(str(path), 6000, 700)
    assert np.asarray(recs.offset).tolist() == expect_off
    assert recs.value.to_pylist() == expect_val
    rows = [b for seg in per_segment for b in seg]
    # the empty batch survives, alone, at 330
    empty = [b for b in rows if b["record_count"] == 0]
    assert [(b["base_offset"], b["last_offset"]) for b in empty] == [(330, 330)]
    # producer 77's sequences continue across appends (and batches), starting at 0
    mine = [b for b in rows if b["producer_id"] == 77]
    assert mine and mine[0]["base_sequence"] == 0
    for a, b in zip(mine, mine[1:]):
        assert b["base_sequence"] == a["base_sequence"] + a["record_count"]
    assert sum(b["record_count"] for b in mine) == 180
    assert all(b["producer_epoch"] == 1 for b in mine)
    # magics as appended
    assert {b["magic"] for b in rows} == {0, 1, 2}
    assert {b["partition_leader_epoch"] for b in rows if b["magic"] == 2} == {2}


def test_logwriter_errors(tmp_path):
    with pytest.raises(EncodeError):
        LogWriter(tmp_path / "no_partition_number")
    with pytest.raises(EncodeError):
        LogWriter(tmp_path / "t-0", segment_bytes=0)
    w = LogWriter(tmp_path / "t-0")
    w.append(values=[b"a", b"b"], timestamps=[TS0, TS0])
    with pytest.raises(EncodeError):
        w.append(values=[b"c"], offsets=[1], timestamps=[TS0])       # behind the log end
    with pytest.raises(EncodeError):
        w.append(values=[b"c"], timestamps=[TS0], transactional=True)  # no producer id
    with pytest.raises(EncodeError):
        w.append_empty_batch(last_offset=0, timestamp=TS0)
    w.close()
    with pytest.raises(EncodeError):
        w.append(values=[b"d"], timestamps=[TS0])
    w.close()    # twice is fine
    recs = kafkafmt.read_segment(tmp_path / "t-0" / f"{0:020d}.log")
    assert recs.value.to_pylist() == [b"a", b"b"]


def test_no_write_on_exception(tmp_path):
    with pytest.raises(RuntimeError):
        with LogWriter(tmp_path / "t-0") as w:
            w.append(values=[b"a"], timestamps=[TS0])
            raise RuntimeError("boom")
    assert not (tmp_path / "t-0").exists()


def test_offset_overflow_rolls_segment(tmp_path):
    path = tmp_path / "compacted-0"
    offsets = [0, 1, INT32_MAX + 5, INT32_MAX + 6, 3 * INT32_MAX]
    write_log_dir(path, values=[b"v%d" % i for i in range(5)], offsets=offsets, timestamps=[TS0] * 5,
                  index_interval_bytes=0)
    recs, per_segment, bases = check_partition(str(path), 1 << 30, 0)
    assert np.asarray(recs.offset).tolist() == offsets
    assert bases == [0, INT32_MAX + 5, 3 * INT32_MAX]


# ---------------------------------------------------------------------------------------------------------
# transactions and the .txnindex
def expected_aborted(path):
    """{segment base: [(producer_id, first, last, lso)]} derived from the log alone."""
    open_txn = {}
    out = {}
    for base in segments(path):
        rows, recs = batches_of(seg_file(path, base, ".log"))
        controls = recs.controls
        ctl_by_offset = dict(zip(np.asarray(controls.offset).tolist(), np.asarray(controls.type).tolist()))
        for b in rows:
            pid = b["producer_id"]
            if b["is_control"]:
                ctype = ctl_by_offset[b["base_offset"]]
                first = open_txn.pop(pid, None)
                if ctype == 0 and first is not None:
                    others = [f for p, f in open_txn.items()]
                    lso = min(others) if others else b["last_offset"] + 1
                    out.setdefault(base, []).append((0, pid, first, b["last_offset"], lso))
            elif b["is_transactional"] and b["record_count"]:
                open_txn.setdefault(pid, b["base_offset"])
    return out


def _append(w, n, pid=-1, txn=False, tag=b"x", codec="none"):
    vals = [tag + b"-%d" % i + b"." * 120 for i in range(n)]
    return w.append(values=vals, keys=[tag] * n, timestamps=[TS0 + w.next_offset + i for i in range(n)],
                    producer_id=pid, producer_epoch=0 if pid >= 0 else 0, transactional=txn, compression=codec)


A, B, C = 4001, 4002, 4003


@pytest.mark.parametrize("segment_bytes", [1 << 30, 1500, 400])
def test_txnindex_commit_and_abort_interleaved(tmp_path, segment_bytes):
    path = tmp_path / "payments-0"
    with LogWriter(path, segment_bytes=segment_bytes, index_interval_bytes=256) as w:
        _append(w, 3, tag=b"plain")                          # 0-2
        a_first, _ = _append(w, 4, A, True, b"A")            # 3-6
        b_first, _ = _append(w, 2, B, True, b"B", "gzip")    # 7-8
        _append(w, 3, A, True, b"A")                         # 9-11
        _append(w, 5, B, True, b"B")                         # 12-16
        _append(w, 2, tag=b"plain")                          # 17-18
        commit = w.append_control("commit", producer_id=A, coordinator_epoch=3, timestamp=TS0 + 19)
        abort = w.append_control("abort", producer_id=B, coordinator_epoch=3, timestamp=TS0 + 20)
        _append(w, 3, tag=b"plain")
    assert (a_first, b_first, commit, abort) == (3, 7, 19, 20)
    check_partition(str(path), segment_bytes, 256)
    want = expected_aborted(str(path))
    # independently of the walk above: A committed before B aborted -> LSO = marker + 1
    assert list(want.values()) == [[(0, B, 7, 20, 21)]]
    files = sorted(glob.glob(str(path / "*.txnindex")))
    assert len(files) == 1
    base = int(os.path.basename(files[0])[:20])
    assert base in want
    # the txnindex lives in the segment holding the ABORT marker
    rows, _ = batches_of(seg_file(str(path), base, ".log"))
    assert any(b["is_control"] and b["base_offset"] == abort for b in rows)
    assert os.path.getsize(files[0]) == 34
    assert read_txnindex(files[0]) == want[base]
    # read_committed view: B's records are aborted
    recs = kafkafmt.decode(b"".join(open(seg_file(str(path), s, ".log"), "rb").read() for s in segments(str(path))),
                           include_control=True)
    assert np.asarray(recs.controls.type).tolist() == [1, 0]
    assert np.asarray(recs.controls.coordinator_epoch).tolist() == [3, 3]


@pytest.mark.parametrize("segment_bytes", [1 << 30, 700])
def test_txnindex_lso_is_first_offset_of_oldest_open_txn(tmp_path, segment_bytes):
    path = tmp_path / "t-0"
    with LogWriter(path, segment_bytes=segment_bytes) as w:
        _append(w, 2, A, True, b"A")          # 0-1  A opens at 0
        _append(w, 2, C, True, b"C")          # 2-3  C opens at 2
        _append(w, 2, B, True, b"B")          # 4-5  B opens at 4
        w.append_control("abort", producer_id=B, timestamp=TS0)       # 6: A and C open -> LSO 0
        w.append_control("abort", producer_id=A, timestamp=TS0)       # 7: C open -> LSO 2
        _append(w, 1, B, True, b"B")          # 8    B opens again
        w.append_control("commit", producer_id=C, timestamp=TS0)      # 9
        w.append_control("abort", producer_id=B, timestamp=TS0)       # 10: nothing open -> 11
        w.append_control("abort", producer_id=A, timestamp=TS0)       # 11: A has no open txn: no entry
        _append(w, 1, C, True, b"C")          # 12
    check_partition(str(path), segment_bytes, 4096)
    want = expected_aborted(str(path))
    flat = [e for base in sorted(want) for e in want[base]]
    assert flat == [(0, B, 4, 6, 0), (0, A, 0, 7, 2), (0, B, 8, 10, 11)]
    got = {}
    for f in glob.glob(str(path / "*.txnindex")):
        got[int(os.path.basename(f)[:20])] = read_txnindex(f)
    assert got == want
    for base, entries in got.items():
        assert all(b[3] < a[3] for b, a in zip(entries, entries[1:])) or len(entries) == 1
        assert os.path.getsize(seg_file(str(path), base, ".txnindex")) == 34 * len(entries)


# ---------------------------------------------------------------------------------------------------------
# the bundled sample
TOPICS = ["orders-0", "orders-1", "payments-0", "customers-0", "clicks-0", "shipments-0", "_schemas-0",
          "__consumer_offsets-0", "__cluster_metadata-0"]


SAMPLE_CONFIG = {}     # partition dir name -> (segment_bytes, index_interval_bytes), seen while generating


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    import kafkafmt.sample as sample_mod
    root = tmp_path_factory.mktemp("sample") / "sample"
    mp = pytest.MonkeyPatch()
    mp.setenv("KAFKAFMT_SAMPLE_DIR", str(root))
    init = LogWriter.__init__

    def spy(self, path, **kw):
        init(self, path, **kw)
        SAMPLE_CONFIG[os.path.basename(os.path.normpath(self.path))] = (self.segment_bytes,
                                                                        self.index_interval_bytes)

    mp.setattr(LogWriter, "__init__", spy)
    try:
        path = sample_mod.sample_dir()
        again = sample_mod.sample_dir()
    finally:
        mp.undo()
    assert path == again == str(root)
    assert sorted(SAMPLE_CONFIG) == sorted(TOPICS)
    return path


def _files(root):
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            out[os.path.relpath(p, root)] = open(p, "rb").read()
    return out


def test_sample_dir_env_and_complete(sample, monkeypatch):
    import kafkafmt.sample as sample_mod
    assert sorted(d for d in os.listdir(sample) if os.path.isdir(os.path.join(sample, d))) == sorted(TOPICS)
    assert os.path.exists(os.path.join(sample, ".complete"))
    assert os.path.exists(os.path.join(sample, "meta.properties"))
    monkeypatch.setenv("KAFKAFMT_SAMPLE_DIR", sample)
    assert sample_mod.sample_dir(create=False) == sample


def test_sample_deterministic(sample, tmp_path):
    from kafkafmt.sample import generate
    a = _files(generate(str(tmp_path / "a")))
    b = _files(generate(str(tmp_path / "b")))
    assert a.keys() == b.keys()
    assert [k for k in a if a[k] != b[k]] == []
    s = _files(sample)
    s.pop(".complete")
    assert s.keys() == a.keys()
    assert [k for k in s if s[k] != a[k]] == []


@pytest.mark.parametrize("topic", TOPICS)
def test_sample_partitions_decode_and_indexes(sample, topic):
    path = os.path.join(sample, topic)
    for log in sorted(glob.glob(os.path.join(path, "*.log"))):
        recs = kafkafmt.read_segment(log)
        assert recs.tail is None and not recs.truncated
        assert np.asarray(recs.batches.crc_valid).all()
        truth = kpy.kp_decode(open(log, "rb").read())
        kpy.assert_records_match(recs, truth)
    check_partition(path, *SAMPLE_CONFIG[topic])
    try:
        from kafkafmt.log import sidefiles
    except ImportError:
        return
    for base in segments(path):
        batches = kafkafmt.read_segment(seg_file(path, base, ".log"), include_control=True).batches
        assert sidefiles.check_index(sidefiles.read_index(seg_file(path, base, ".index")), batches, base) == []
        assert sidefiles.check_timeindex(sidefiles.read_timeindex(seg_file(path, base, ".timeindex")), batches,
                                         base) == []


def _all(path, **kw):
    return kafkafmt.decode(b"".join(open(seg_file(path, s, ".log"), "rb").read() for s in segments(path)), **kw)


def test_sample_orders(sample):
    for p in (0, 1):
        path = os.path.join(sample, f"orders-{p}")
        assert len(segments(path)) >= 3
        recs = _all(path)
        b = recs.batches
        assert set(np.asarray(b.codec).tolist()) == {0, 1, 2, 3, 4}
        assert (np.asarray(b.producer_id) == 500 + p).all()
        seq = np.asarray(b.base_sequence)
        cnt = np.asarray(b.record_count)
        assert seq[0] == 0 and (seq[1:] == seq[:-1] + cnt[:-1]).all()
        assert np.asarray(recs.offset).tolist() == list(range(len(recs)))
        hs = recs.headers.to_pylist()
        with_h = sum(1 for h in hs if h)
        assert 0.1 < with_h / len(hs) < 0.3
        assert all([k for k, _ in h] == ["trace-id", "source"] for h in hs if h)
        assert all(k is not None and k.startswith(b"customer-") for k in recs.key.to_pylist())


def test_sample_orders_codec_changes_every_400_records(sample):
    for p in (0, 1):
        recs = _all(os.path.join(sample, f"orders-{p}"))
        codec = np.asarray(recs.batches.codec)[np.asarray(recs.batch_index)]
        blocks = [sorted(set(codec[i:i + 400].tolist())) for i in range(0, len(codec), 400)]
        assert len(blocks) >= 5 and all(len(b) == 1 for b in blocks)
        assert {b[0] for b in blocks} == {0, 1, 2, 3, 4}
        assert all(a != b for a, b in zip(blocks, blocks[1:]))


def test_sample_payments(sample):
    path = os.path.join(sample, "payments-0")
    recs = _all(path, include_control=True)
    b = recs.batches
    pids = set(np.asarray(b.producer_id)[np.asarray(b.is_transactional)].tolist())
    assert pids == {1001, 1002}
    assert sorted(np.asarray(recs.controls.type).tolist()) == [0, 1]
    want = expected_aborted(path)
    assert sum(len(v) for v in want.values()) == 1
    got = {int(os.path.basename(f)[:20]): read_txnindex(f) for f in glob.glob(os.path.join(path, "*.txnindex"))}
    assert got == want
    ((base, [(_, pid, first, last, lso)]),) = got.items()
    assert pid == 1002
    # 1001's transaction (opened before 1002's) is still open at the abort: LSO is its first offset
    first_1001 = int(np.asarray(b.base_offset)[np.asarray(b.producer_id) == 1001].min())
    assert lso == first_1001 < first
    # plain (non-transactional) records surround the transactions
    plain = ~np.asarray(b.is_transactional)
    assert plain[0] and plain[-1]
    # read_committed differs from read_uncommitted: the aborted producer's records exist
    data = _all(path)
    bi = np.asarray(data.batch_index)
    aborted = np.asarray(data.batches.producer_id)[bi] == 1002
    assert aborted.sum() > 0 and (~aborted).sum() > 0


def test_sample_customers(sample):
    path = os.path.join(sample, "customers-0")
    recs = _all(path)
    off = np.asarray(recs.offset)
    assert (np.diff(off) > 1).any(), "a compacted topic has offset gaps"
    assert recs.value.null_count > 0, "tombstones"
    assert (np.asarray(recs.batches.record_count) == 0).sum() == 1, "one empty batch left by the cleaner"


def test_sample_clicks(sample):
    path = os.path.join(sample, "clicks-0")
    bases = segments(path)
    first = open(seg_file(path, bases[0], ".log"), "rb").read()
    rows, recs = batches_of(seg_file(path, bases[0], ".log"))
    assert {b["magic"] for b in rows} == {1} and {b["codec"] for b in rows} == {1}
    # relative inner offsets in the gzip wrappers, wrapper offset = last absolute offset
    import zlib
    pos = 0
    running = bases[0]
    while pos < len(first):
        offset, size = struct.unpack_from(">qi", first, pos)
        klen = struct.unpack_from(">i", first, pos + 26)[0]
        assert klen == -1
        vlen = struct.unpack_from(">i", first, pos + 30)[0]
        inner = zlib.decompress(first[pos + 34:pos + 34 + vlen], 47)
        ioffs = []
        ip = 0
        while ip < len(inner):
            o, s = struct.unpack_from(">qi", inner, ip)
            ioffs.append(o)
            ip += 12 + s
        assert ioffs == list(range(len(ioffs)))
        assert offset == running + len(ioffs) - 1
        running += len(ioffs)
        pos += 12 + size
    later = [batches_of(seg_file(path, b, ".log"))[0] for b in bases[1:]]
    assert later and all(b["magic"] == 2 for rows in later for b in rows)


def test_active_segment_timeindex_has_clean_close_entry(tmp_path):
    """Trimmed index files are the state after a clean close, and LogSegment.close() adds the final time
    index entry (maxTimestampSoFar, its offset) to the active segment too."""
    path = tmp_path / "t-0"
    write_log_dir(path, values=[b"a", b"b", b"c"], timestamps=[TS0 + 5, TS0 + 9, TS0 + 1], max_records=1)
    check_partition(str(path), 1 << 30, 4096, strict_active_timeindex=True)
    assert read_timeindex(seg_file(str(path), 0, ".timeindex")) == [(TS0 + 9, 1)]


def test_leader_epoch_checkpoint_starts_at_first_v2_batch(tmp_path):
    path = tmp_path / "clicks-0"
    with LogWriter(path, leader_epoch=4) as w:
        w.append(values=[b"old"] * 5, timestamps=[TS0] * 5, magic=1, compression="gzip")
        w.append(values=[b"new"] * 5, timestamps=[TS0] * 5, magic=2)
    assert (path / "leader-epoch-checkpoint").read_text() == "0\n1\n4 5\n"
    path = tmp_path / "legacy-0"
    write_log_dir(path, values=[b"old"] * 5, timestamps=[TS0] * 5, magic=1)
    assert (path / "leader-epoch-checkpoint").read_text() == "0\n0\n"


# ---------------------------------------------------------------------------------------------------------
# an existing partition folder is continued, never rewritten (issue 21)

def _hashes(folder):
    import hashlib

    return {n: hashlib.sha256(open(os.path.join(folder, n), "rb").read()).hexdigest()
            for n in sorted(os.listdir(folder))}


def _real_partition(real_corpus, tmp_path, name="TestTopicPatient-0"):
    import shutil

    src = real_corpus / "broker-dirs" / "Niloufar1171__LDI-POC" / name
    dst = tmp_path / name
    shutil.copytree(src, dst)
    for p in dst.iterdir():
        p.chmod(0o644)
    return str(dst)


def test_appending_to_a_real_partition_keeps_every_byte(real_corpus, tmp_path):
    folder = _real_partition(real_corpus, tmp_path)
    before = _hashes(folder)
    old = kafkafmt.read_log_dir(folder)
    assert len(old) > 0
    end = int(old.batches.last_offset[-1]) + 1
    with LogWriter(folder) as w:
        assert w.append(values=[b"new-1", b"new-2"], timestamps=[TS0, TS0 + 1]) == (end, end + 1)
    after = _hashes(folder)
    assert {n: h for n, h in after.items() if n in before} == before       # no existing file touched
    assert sorted(set(after) - set(before)) == [f"{end:020d}.{k}" for k in ("index", "log", "timeindex")]
    recs = kafkafmt.read_log_dir(folder)
    assert recs.offset.tolist() == old.offset.tolist() + [end, end + 1]
    assert recs.value.to_pylist() == old.value.to_pylist() + [b"new-1", b"new-2"]
    # an independent decoder reads the new segment at the right offsets
    new = kpy.kp_decode(open(os.path.join(folder, f"{end:020d}.log"), "rb").read())["records"]
    assert [(r["offset"], r["value"]) for r in new] == [(end, b"new-1"), (end + 1, b"new-2")]
    # a second writer continues after the first; the leader-epoch history gains an entry only when the epoch rises
    epochs = kafkafmt.read_leader_epoch_checkpoint(os.path.join(folder, "leader-epoch-checkpoint"))["entries"]
    with LogWriter(folder, leader_epoch=int(epochs["epoch"][-1]) + 2) as w:
        w.append(values=[b"new-3"], timestamps=[TS0 + 2])
    got = kafkafmt.read_leader_epoch_checkpoint(os.path.join(folder, "leader-epoch-checkpoint"))["entries"]
    assert got.tolist()[:len(epochs)] == epochs.tolist()
    assert got.tolist()[len(epochs):] == [(int(epochs["epoch"][-1]) + 2, end + 2)]
    assert kafkafmt.read_log_dir(folder).offset.tolist()[-3:] == [end, end + 1, end + 2]
    import kcli

    kcli.run("verify", folder, check=0)


def test_appending_refuses_what_would_lose_or_reorder_data(real_corpus, tmp_path):
    folder = _real_partition(real_corpus, tmp_path)
    end = int(kafkafmt.read_log_dir(folder).batches.last_offset[-1]) + 1
    with pytest.raises(EncodeError, match="log end offset"):
        LogWriter(folder, base_offset=0)
    with pytest.raises(EncodeError, match="never go back"):
        LogWriter(folder, leader_epoch=-5)
    with pytest.raises(EncodeError, match="topic id"):
        LogWriter(folder, topic_id=uuid.uuid4())
    # a gap is allowed when asked for (offsets only increase)
    with LogWriter(folder, base_offset=end + 10) as w:
        w.append(values=[b"x"], timestamps=[TS0])
    assert kafkafmt.read_log_dir(folder).offset.tolist()[-1] == end + 10
    # a damaged end is refused, naming the file and position, and nothing is written
    log = os.path.join(folder, f"{end + 10:020d}.log")
    with open(log, "ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00\x01\x00torn")
    before = _hashes(folder)
    with pytest.raises(kafkafmt.KafkafmtError, match="recover") as exc:
        LogWriter(folder)
    assert exc.value.file.endswith(f"{end + 10:020d}.log") and exc.value.position is not None
    assert _hashes(folder) == before


def test_a_transaction_and_sequences_continue_across_writers(tmp_path):
    folder = str(tmp_path / "t-0")
    with LogWriter(folder) as w:
        w.append(values=[b"committed"], timestamps=[TS0], producer_id=5)
        w.append(values=[b"a1", b"a2"], timestamps=[TS0, TS0], producer_id=7, transactional=True)
    with LogWriter(folder) as w:
        w.append(values=[b"s"], timestamps=[TS0], producer_id=5)
        w.append_control("abort", producer_id=7, timestamp=TS0 + 1)
    recs = kafkafmt.read_log_dir(folder)
    b = recs.batches
    assert [int(s) for p, s in zip(b.producer_id, b.base_sequence) if p == 5] == [0, 1]   # producer 5 goes on
    committed = kafkafmt.read_log_dir(folder, isolation="read_committed")
    assert committed.value.to_pylist() == [b"committed", b"s"]
    txn = glob.glob(os.path.join(folder, "*.txnindex"))
    # the ABORT marker (offset 4) is in the second writer's segment, which starts at the log end offset 3
    assert [os.path.basename(t) for t in txn] == [f"{3:020d}.txnindex"]


def test_appending_killed_at_every_step_leaves_old_or_new(real_corpus, tmp_path):
    import shutil
    import subprocess
    import sys

    src = _real_partition(real_corpus, tmp_path / "src")
    old = kafkafmt.read_log_dir(src)
    before = _hashes(src)
    script = ("import sys, kafkafmt\n"
              "with kafkafmt.LogWriter(sys.argv[1], leader_epoch=9) as w:\n"
              "    w.append(values=[b'n%d' % i for i in range(50)], timestamps=[1] * 50, batch_size=200)\n")
    complete = None
    for k in range(1, 30):
        folder = str(tmp_path / f"k{k}" / "TestTopicPatient-0")
        shutil.copytree(src, folder)
        env = dict(os.environ, KAFKAFMT_CRASH_AFTER=str(k))
        rc = subprocess.run([sys.executable, "-c", script, folder], env=env).returncode
        recs = kafkafmt.read_log_dir(folder)          # strict: never a torn file
        now = _hashes(folder)
        assert {n: h for n, h in now.items() if n in before} == {
            n: h for n, h in before.items() if n != "leader-epoch-checkpoint"} | (
            {"leader-epoch-checkpoint": now["leader-epoch-checkpoint"]})
        assert recs.offset.tolist()[:len(old)] == old.offset.tolist()
        assert len(recs) in (len(old), len(old) + 50)
        assert not [n for n in now if n.endswith(".tmp")] or rc != 0
        if rc == 0:
            complete = k
            break
    assert complete is not None and complete > 3, complete


# ---------------------------------------------------------------------------------------------------------
# one writer per partition: the partition folder's lock, and the log dir's .lock as a broker holds it

_HOLD = """
import fcntl, sys
import kafkafmt
if sys.argv[1] == "broker":                   # a broker: Kafka's FileLock.tryLock on <log dir>/.lock
    f = open(sys.argv[2], "a+")
    fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
else:                                         # another LogWriter, with 5 records on disk
    w = kafkafmt.LogWriter(sys.argv[2])
    w.append(values=[b"child %d" % i for i in range(5)], timestamps=[1] * 5)
    w.flush()
print("holding", flush=True)
sys.stdin.read()                              # until the test kills it
"""


def _holder(kind, path):
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-c", _HOLD, kind, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                             [os.path.dirname(os.path.dirname(os.path.abspath(kafkafmt.__file__))),
                              os.environ.get("PYTHONPATH", "")])))
    assert p.stdout.readline().strip() == "holding"
    return p


def test_a_second_writer_on_a_partition_is_refused_until_the_first_is_closed(tmp_path):
    """Writer 1 appends 100 and flushes; writer 2 on the same folder is refused (it would continue at 100 too and
    both would write offsets 100.. twice), in this process as from another; after close, or an exception
    leaving writer 1's with block, writer 2 goes on at the log end."""
    folder = str(tmp_path / "t-0")
    w1 = LogWriter(folder)
    w1.append(values=[b"one %d" % i for i in range(100)], timestamps=[TS0] * 100)
    w1.flush()
    with pytest.raises(kafkafmt.errors.PartitionLockedError, match="another LogWriter"):
        LogWriter(folder)
    w1.append(values=[b"more"], timestamps=[TS0])
    w1.close()
    with pytest.raises(RuntimeError):
        with LogWriter(folder) as w2:
            assert w2.next_offset == 101
            raise RuntimeError("boom")
    with LogWriter(folder) as w3:
        w3.append(values=[b"three"], timestamps=[TS0])
    assert kafkafmt.read_log_dir(folder).offset.tolist() == list(range(102))
    with LogWriter(str(tmp_path / "t-1")), LogWriter(str(tmp_path / "u-0")):
        pass                                                # other partitions: a writer each


def test_a_writer_in_another_process_holds_the_partition_until_it_dies(tmp_path):
    folder = tmp_path / "t-0"
    child = _holder("writer", folder)
    try:
        with pytest.raises(kafkafmt.errors.PartitionLockedError, match="another LogWriter"):
            LogWriter(folder)
    finally:
        child.kill()                                        # kill -9: the lock goes with the process
        child.wait()
    with LogWriter(folder) as w:
        assert w.next_offset == 5                           # after what the killed writer flushed
        w.append(values=[b"after"], timestamps=[TS0])
    assert len(kafkafmt.read_log_dir(str(folder))) == 6


def test_a_writer_is_refused_while_a_broker_holds_the_log_dirs_lock(tmp_path):
    """A log dir a broker has used (meta.properties; .lock): while another process holds .lock as Kafka's
    FileLock does, no LogWriter appends to its partitions and nothing is created; the writers of one process
    share the lock (as a broker's partitions), hold it while open, and let go of it when they close."""
    from kafkafmt.recovery import lock_holder

    root = tmp_path / "logs"
    root.mkdir()
    (root / "meta.properties").write_text("version=0\nbroker.id=0\n")
    (root / ".lock").touch()
    broker = _holder("broker", root / ".lock")
    try:
        with pytest.raises(kafkafmt.errors.PartitionLockedError, match="running broker"):
            LogWriter(root / "t-0")
        assert sorted(os.listdir(root)) == [".lock", "meta.properties"]          # refused before any change
    finally:
        broker.kill()
        broker.wait()
    w1, w2 = LogWriter(root / "t-0"), LogWriter(root / "t-1")
    assert lock_holder(root)                               # held while they write (recover refuses)
    w1.close()
    assert lock_holder(root)
    w2.close()
    assert not lock_holder(root)
    child = _holder("broker", root / ".lock")              # a broker can start now
    child.kill()
    child.wait()


def test_recover_refuses_a_partition_a_writer_is_writing(tmp_path):
    from kafkafmt.errors import LogDirLockedError
    from kafkafmt.recovery import recover

    folder = tmp_path / "t-0"
    w = LogWriter(folder, segment_bytes=200)
    for i in range(5):
        w.append(values=[b"x" * 50], timestamps=[TS0 + i])
    assert not recover(folder).refusals                    # a dry run reads only
    with pytest.raises(LogDirLockedError, match="being written by a LogWriter"):
        recover(folder, apply=True, backup=tmp_path / "bk")
    w.close()
    recover(folder, apply=True, backup=tmp_path / "bk")
