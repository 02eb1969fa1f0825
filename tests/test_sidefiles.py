"""Kafka side files: readers, writers, index building and checks (kafkafmt.log.sidefiles)."""
import json
import uuid

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafkafmt
from kafkafmt.log import sidefiles as sf
from kafkafmt.errors import CorruptRecordError, CrcError, EncodeError

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def be(*parts):
    """Concatenate (value, numpy big-endian type) pairs into bytes."""
    return b"".join(np.array([v], t).tobytes() for v, t in parts)


def batches_table(sizes, last_offsets, max_ts, base_offsets=None):
    sizes = np.asarray(sizes, np.int32)
    pos = np.concatenate(([0], np.cumsum(sizes.astype(np.int64))[:-1])) if len(sizes) else np.zeros(0, np.int64)
    last = np.asarray(last_offsets, np.int64)
    return {"position": pos, "size": sizes, "last_offset": last,
            "base_offset": last if base_offsets is None else np.asarray(base_offsets, np.int64),
            "max_timestamp": np.asarray(max_ts, np.int64)}


# ---------------------------------------------------------------------------------------------
# offset / time / transaction index

def test_index_round_trip_and_layout(tmp_path):
    entries = np.array([(105, 4200), (130, 9000)], sf.INDEX_DTYPE)
    raw = sf.encode_index(entries, 100)
    assert raw == be((5, ">i4"), (4200, ">i4"), (30, ">i4"), (9000, ">i4"))
    path = tmp_path / "00000000000000000100.index"
    sf.write_index(path, [(105, 4200), (130, 9000)])             # base offset from the name
    assert path.read_bytes() == raw
    got = sf.read_index(path)
    assert got.dtype == sf.INDEX_DTYPE and got.tolist() == [(105, 4200), (130, 9000)]
    assert sf.read_index(raw, base_offset=100).tolist() == got.tolist()
    assert sf.read_index(raw).tolist() == [(5, 4200), (30, 9000)]   # bytes, no base: relative


def test_index_preallocated_zero_tail(tmp_path):
    path = tmp_path / "00000000000000000007.index"
    sf.write_index(path, [(9, 5000), (20, 9100)], preallocate=1003)
    assert path.stat().st_size == 1000                            # rounded down to whole entries
    assert sf.read_index(path).tolist() == [(9, 5000), (20, 9100)]
    assert len(sf.read_index(path, trim_zeros=False)) == 125      # Kafka's view of an untrimmed file
    assert len(sf.read_index(bytes(80))) == 0                     # fresh active segment: all zeros


def test_timeindex_round_trip_and_zero_tail(tmp_path):
    entries = [(1700000000000, 12), (1700000000500, 40)]
    raw = sf.encode_timeindex(entries, 10)
    assert raw == be((1700000000000, ">i8"), (2, ">i4"), (1700000000500, ">i8"), (30, ">i4"))
    path = tmp_path / "00000000000000000010.timeindex"
    sf.write_timeindex(path, entries, preallocate=120)
    got = sf.read_timeindex(path)
    assert got.dtype == sf.TIMEINDEX_DTYPE and got.tolist() == entries
    # an entry (ts 0, base offset) first is indistinguishable from the zero tail
    assert sf.read_timeindex(sf.encode_timeindex([(0, 0)], 0)).tolist() == []
    assert sf.read_timeindex(sf.encode_timeindex([(0, 0)], 0), trim_zeros=False).tolist() == [(0, 0)]


def test_index_size_not_multiple_is_corrupt(tmp_path):
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(bytes(8) + b"\x01\x02\x03")
    with pytest.raises(CorruptRecordError) as e:
        sf.read_index(path)
    assert e.value.position == 8 and e.value.file == str(path)
    with pytest.raises(CorruptRecordError) as e:
        sf.read_timeindex(bytes(13))
    assert e.value.position == 12


def test_index_encoder_validation():
    with pytest.raises(EncodeError):
        sf.encode_index([(99, 0)], 100)                            # below base offset
    with pytest.raises(EncodeError):
        sf.encode_index([(100 + 2**31, 0)], 100)                   # relative offset overflow
    with pytest.raises(EncodeError):
        sf.encode_index([(105, 10), (105, 20)], 100)               # not increasing
    with pytest.raises(EncodeError):
        sf.encode_timeindex([(5, 1), (5, 2)], 0)                   # timestamp must grow
    with pytest.raises(EncodeError):
        sf.encode_index([(1, 2, 3)], 0)
    with pytest.raises(ValueError):
        sf.write_index("/nonexistent/not-an-offset.index", [])


def test_txnindex_round_trip(tmp_path):
    aborted = [(4001, 10, 15, 9), (4002, 12, 30, 10)]
    path = tmp_path / "00000000000000000000.txnindex"
    sf.write_txnindex(path, aborted)
    raw = path.read_bytes()
    assert len(raw) == 68
    assert raw[:34] == be((0, ">i2"), (4001, ">i8"), (10, ">i8"), (15, ">i8"), (9, ">i8"))
    got = sf.read_txnindex(path)
    assert got.dtype == sf.TXNINDEX_DTYPE
    assert got.tolist() == [(0,) + a for a in aborted]
    as_dicts = [dict(zip(("producer_id", "first_offset", "last_offset", "last_stable_offset"), a)) for a in aborted]
    assert sf.encode_txnindex(as_dicts) == raw == sf.encode_txnindex(got)
    with pytest.raises(EncodeError):
        sf.encode_txnindex([(1, 5, 9, 5), (2, 6, 9, 6)])           # last offsets must increase
    with pytest.raises(CorruptRecordError) as e:
        sf.read_txnindex(raw + b"\x00")
    assert e.value.position == 68
    with pytest.raises(CorruptRecordError) as e:
        sf.read_txnindex(raw[:34] + b"\x00\x01" + raw[36:])
    assert e.value.position == 34


# ---------------------------------------------------------------------------------------------
# producer snapshot

SNAP_ENTRIES = [(4001, 0, 11, 11, 2, 1670068129797, -1, -1), (77, 3, 5, 900, 0, 1670068739452, 4, 880)]


def test_producer_snapshot_round_trip(tmp_path):
    path = tmp_path / "00000000000000000901.snapshot"
    sf.write_producer_snapshot(path, SNAP_ENTRIES)
    raw = path.read_bytes()
    assert len(raw) == 10 + 46 * 2
    from kafkafmt._native.scan import crc32c
    assert raw[:2] == b"\x00\x01" and int.from_bytes(raw[2:6], "big") == crc32c(raw[6:])
    snap = sf.read_producer_snapshot(path)
    assert snap["version"] == 1 and snap["crc_valid"] and snap["offset"] == 901 and snap["trailing"] == 0
    assert snap["entries"].dtype == sf.PRODUCER_ENTRY_DTYPE
    assert snap["entries"].tolist() == SNAP_ENTRIES
    assert sf.encode_producer_snapshot(snap["entries"]) == raw
    # dicts with defaults for coordinator_epoch / current_txn_first_offset
    d = dict(zip(sf.PRODUCER_ENTRY_DTYPE.names[:6], SNAP_ENTRIES[0][:6]))
    assert sf.encode_producer_snapshot([d]) == sf.encode_producer_snapshot(SNAP_ENTRIES[:1])
    empty = sf.encode_producer_snapshot([])
    assert len(empty) == 10 and sf.read_producer_snapshot(empty)["entries"].size == 0


def test_producer_snapshot_errors():
    raw = sf.encode_producer_snapshot(SNAP_ENTRIES)
    bad = raw[:20] + bytes([raw[20] ^ 1]) + raw[21:]
    with pytest.raises(CrcError) as e:
        sf.read_producer_snapshot(bad)
    assert e.value.position == 2
    assert sf.read_producer_snapshot(bad, verify_crc=False)["crc_valid"] is False
    with pytest.raises(CorruptRecordError) as e:
        sf.read_producer_snapshot(raw[:9])
    assert e.value.position == 0
    with pytest.raises(CorruptRecordError) as e:
        sf.read_producer_snapshot(raw[:-1])                          # last entry cut short
    assert e.value.position == 10 + 46
    with pytest.raises(CorruptRecordError):
        sf.read_producer_snapshot(b"\x00\x02" + raw[2:])            # unknown version
    with pytest.raises(CorruptRecordError):
        sf.read_producer_snapshot(raw[:6] + b"\xff\xff\xff\xff" + raw[10:], verify_crc=False)
    trailing = raw + b"xy"
    snap = sf.read_producer_snapshot(trailing, verify_crc=False)
    assert snap["trailing"] == 2 and not snap["crc_valid"]


# ---------------------------------------------------------------------------------------------
# text files

def test_leader_epoch_checkpoint(tmp_path):
    path = tmp_path / "leader-epoch-checkpoint"
    sf.write_leader_epoch_checkpoint(path, [(0, 0), (3, 1200)])
    assert path.read_bytes() == b"0\n2\n0 0\n3 1200\n"
    got = sf.read_leader_epoch_checkpoint(path)
    assert got["version"] == 0 and got["entries"].tolist() == [(0, 0), (3, 1200)]
    assert got["entries"].dtype == sf.EPOCH_ENTRY_DTYPE
    assert sf.read_leader_epoch_checkpoint(b"")["version"] is None        # Kafka: empty list
    assert sf.read_leader_epoch_checkpoint(b"0\r\n1\r\n5\t 7 \r\n")["entries"].tolist() == [(5, 7)]
    for bad in (b"1\n0\n", b"0\n2\n0 0\n", b"0\n1\n0\n", b"0\n1\n 0 0\n", b"0\nx\n", b"0\n1\n0 1e3\n",
                b"0\n1\n0 0 0\n", b"0\n1\n\xff 1\n"):
        with pytest.raises(CorruptRecordError):
            sf.read_leader_epoch_checkpoint(bad)


def test_offset_checkpoint(tmp_path):
    offsets = {("orders", 3): 42, ("__consumer_offsets", 17): 0}
    path = tmp_path / "recovery-point-offset-checkpoint"
    sf.write_offset_checkpoint(path, offsets)
    assert path.read_bytes() == b"0\n2\norders 3 42\n__consumer_offsets 17 0\n"
    assert sf.read_offset_checkpoint(path) == offsets
    with pytest.raises(CorruptRecordError) as e:
        sf.read_offset_checkpoint(b"0\n1\norders 3\n")
    assert e.value.position == 4
    with pytest.raises(EncodeError):
        sf.encode_offset_checkpoint({("a b", 0): 1})


def test_partition_metadata(tmp_path):
    u = uuid.UUID("bea4a610-122e-4b09-b7dd-b87c9e9ce333")
    path = tmp_path / "partition.metadata"
    for form in (u, u.bytes, "vqSmEBIuSwm33bh8npzjMw"):
        sf.write_partition_metadata(path, form)
        assert path.read_bytes() == b"version: 0\ntopic_id: vqSmEBIuSwm33bh8npzjMw"
    got = sf.read_partition_metadata(path)
    assert got == {"version": 0, "topic_id": "vqSmEBIuSwm33bh8npzjMw", "topic_uuid": u}
    assert sf.read_partition_metadata(b"version:  1\ntopic_id: vqSmEBIuSwm33bh8npzjMw==\nmore")["version"] == 1
    for bad in (b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", b"version: -1\ntopic_id: vqSmEBIuSwm33bh8npzjMw",
                b"version: 0\n", b"version:0\ntopic_id: vqSmEBIuSwm33bh8npzjMw",
                b"version: 0\ntopic_id: vqSmEBIuSwm33bh8npzj+w", b"topic_id: x\nversion: 0"):
        with pytest.raises(CorruptRecordError):
            sf.read_partition_metadata(bad)
    with pytest.raises(EncodeError):
        sf.encode_partition_metadata(uuid.UUID(int=0))


def test_quorum_state_and_meta_properties():
    assert sf.read_quorum_state(b'{"leaderId":1,"data_version":0}') == {"leaderId": 1, "data_version": 0}
    with pytest.raises(CorruptRecordError):
        sf.read_quorum_state(b"[1]")
    props = sf.read_meta_properties(b"#\n#Sat Jun 03\ncluster.id=d00\\u0041\nversion = 0\nbroker.id:\\\n  7\n")
    assert props == {"cluster.id": "d00A", "version": "0", "broker.id": "7"}


# ---------------------------------------------------------------------------------------------
# what a broker writes: build_index_entries against a plain model of LogSegment.append

def kafka_model(sizes, last_offsets, max_ts, interval, rolled, appends=None, time_offsets=None):
    """Straight transcription of the per-append rules (LogSegment.append before KAFKA-806,
    TimeIndex.maybeAppend, OffsetIndex.append, onBecomeInactiveSegment)."""
    n = len(sizes)
    appends = list(range(n)) if appends is None else list(appends)
    toff = list(last_offsets) if time_offsets is None else list(time_offsets)
    index, tindex = [], []
    log_size, bytes_since = 0, 0
    max_so_far, off_of_max = -1, None
    i = 0
    while i < n:
        j = i
        while j + 1 < n and appends[j + 1] == appends[i]:
            j += 1
        largest_ts, shallow = -1, None
        for k in range(i, j + 1):                       # LogAppendInfo: first batch with the max
            if max_ts[k] > largest_ts:
                largest_ts, shallow = max_ts[k], toff[k]
        physical = log_size
        log_size += sum(sizes[i:j + 1])
        if largest_ts > max_so_far:
            max_so_far, off_of_max = largest_ts, shallow
        if bytes_since > interval:
            index.append((last_offsets[j], physical))
            if max_so_far > (tindex[-1][0] if tindex else -1):
                tindex.append((max_so_far, off_of_max))
            bytes_since = 0
        bytes_since += sum(sizes[i:j + 1])
        i = j + 1
    if rolled and max_so_far > (tindex[-1][0] if tindex else -1):
        tindex.append((max_so_far, off_of_max))
    return index, tindex


def test_build_index_entries_hand_example():
    sizes = [1780, 160, 2790, 156, 115, 1780, 2790, 3524, 130]
    ts = [10, 20, 30, 40, 35, 50, 50, 60, -1]
    t = batches_table(sizes, range(9), ts)
    idx, tix = sf.build_index_entries(t, 4096)
    assert idx.tolist() == [(3, 4730), (7, 9571)]
    assert tix.tolist() == [(40, 3), (60, 7)]                   # final max (60, 7) already indexed
    t2 = batches_table(sizes, range(9), ts[:7] + [55, 58])
    assert sf.build_index_entries(t2, 4096)[1].tolist() == [(40, 3), (55, 7), (58, 8)]
    assert sf.build_index_entries(t2, 4096, rolled=False)[1].tolist() == [(40, 3), (55, 7)]
    # equal timestamps: the first batch holding the max keeps it
    t3 = batches_table([5000, 5000, 5000], [0, 1, 2], [9, 9, 9])
    assert sf.build_index_entries(t3, 4096)[1].tolist() == [(9, 0)]
    # no timestamps (magic 0): no time index at all
    t4 = batches_table([5000, 5000], [0, 1], [-1, -1])
    idx, tix = sf.build_index_entries(t4, 4096)
    assert idx.tolist() == [(1, 5000)] and tix.size == 0
    empty = sf.build_index_entries(batches_table([], [], []))
    assert empty[0].size == 0 and empty[1].size == 0


def test_build_index_entries_options():
    t = batches_table([3000, 3000, 3000, 3000], [4, 9, 14, 19], [1, 5, 3, 4])
    assert sf.build_index_entries(t, 0)[0].tolist() == [(9, 3000), (14, 6000), (19, 9000)]
    _, tix = sf.build_index_entries(t, 0, time_offsets=[0, 6, 12, 17])
    assert tix.tolist() == [(5, 6)]
    idx, tix = sf.build_index_entries(t, 4096, append_ids=[0, 0, 1, 1])
    assert idx.tolist() == [(19, 6000)] and tix.tolist() == [(5, 9)]
    no_pos = {k: v for k, v in t.items() if k != "position"}
    assert sf.build_index_entries(no_pos)[0].tolist() == sf.build_index_entries(t)[0].tolist()


@FAST
@given(st.lists(st.tuples(st.integers(61, 9000), st.integers(1, 5), st.integers(-1, 40), st.booleans()),
                max_size=60),
       st.sampled_from([0, 100, 4096, 20000]), st.booleans(), st.booleans())
def test_build_index_entries_matches_model(rows, interval, rolled, grouped):
    sizes = [r[0] for r in rows]
    last = list(np.cumsum([r[1] for r in rows]) - 1) if rows else []
    ts = [r[2] for r in rows]
    appends = list(np.cumsum([not r[3] for r in rows])) if grouped else None
    idx, tix = sf.build_index_entries(batches_table(sizes, last, ts), interval, rolled, append_ids=appends)
    want_idx, want_tix = kafka_model(sizes, last, ts, interval, rolled, appends)
    assert idx.tolist() == want_idx
    assert tix.tolist() == want_tix
    # what the builder produces is what a reader reads back and what the checks accept
    base = 0
    assert sf.read_index(sf.encode_index(idx, base)).tolist() == want_idx
    assert sf.read_timeindex(sf.encode_timeindex(tix, base), trim_zeros=False).tolist() == want_tix
    table = batches_table(sizes, last, ts, base_offsets=[l - r[1] + 1 for l, r in zip(last, rows)])
    if not grouped:
        assert sf.check_index(idx, table, base) == []
    assert sf.check_timeindex(tix, table, base) == []


# ---------------------------------------------------------------------------------------------
# checks

def test_check_index_problems():
    t = batches_table([5000, 5000, 5000], [4, 9, 14], [1, 2, 3], base_offsets=[0, 5, 10])
    good = np.array([(9, 5000), (14, 10000)], sf.INDEX_DTYPE)
    assert sf.check_index(good, t, 0) == []
    bad = np.array([(9, 5000), (13, 10000), (12, 12000), (2, 3)], sf.INDEX_DTYPE)
    problems = sf.check_index(bad, t, 5)
    text = "\n".join(problems)
    assert "index entry 1 (offset 13, position 10000): the batch at that position has last offset 14" in text
    assert "index entry 2: offset 12 is not greater than entry 1's offset 13" in text
    assert "index entry 2 (offset 12, position 12000): no batch starts at position 12000" in text
    assert "index entry 3: offset 2 is below the segment base offset 5" in text
    assert "index entry 3: position 3 is not greater" in text


def test_check_timeindex_problems():
    t = batches_table([100, 100, 100], [4, 9, 14], [10, 30, 20], base_offsets=[0, 5, 10])
    assert sf.check_timeindex(np.array([(10, 4), (30, 9)], sf.TIMEINDEX_DTYPE), t, 0) == []
    assert sf.check_timeindex(np.array([(30, 7)], sf.TIMEINDEX_DTYPE), t, 0) == []   # record-level offset
    bad = np.array([(10, 4), (10, 9), (20, 14), (40, 20), (50, 3)], sf.TIMEINDEX_DTYPE)
    text = "\n".join(sf.check_timeindex(bad, t, 0))
    assert "time index entry 1: timestamp 10 is not greater than entry 0's timestamp 10" in text
    assert "time index entry 1 (timestamp 10, offset 9): the batch holding the offset has max timestamp 30" in text
    assert "time index entry 2 (timestamp 20, offset 14): an earlier batch already has the larger timestamp 30" in text
    assert "time index entry 3 (timestamp 40, offset 20): offset is past the segment's last offset 14" in text
    assert "time index entry 4: offset 3 is below entry 3's offset 20" in text
    gap = batches_table([100, 100], [4, 14], [1, 2], base_offsets=[0, 12])
    assert "offset is in no batch" in "\n".join(sf.check_timeindex(np.array([(2, 10)], sf.TIMEINDEX_DTYPE), gap, 0))


# ---------------------------------------------------------------------------------------------
# readers never fail with anything but CorruptRecordError

READERS = [sf.read_index, sf.read_timeindex, sf.read_txnindex, sf.read_producer_snapshot,
           lambda b: sf.read_producer_snapshot(b, verify_crc=False), sf.read_leader_epoch_checkpoint,
           sf.read_offset_checkpoint, sf.read_partition_metadata, sf.read_quorum_state, sf.read_meta_properties]


def _reads_or_corrupt(data):
    for reader in READERS:
        try:
            reader(data)
        except CorruptRecordError:
            pass


@FAST
@given(st.binary(max_size=300))
def test_readers_on_random_bytes(data):
    _reads_or_corrupt(data)


@FAST
@given(st.integers(-3, 3), st.integers(-2, 4),
       st.lists(st.text(alphabet="0123456789 -+\t\r\nab:=\\u_", max_size=12), max_size=5))
def test_text_readers_on_near_valid_input(version, count, lines):
    text = f"{version}\n{count}\n" + "\n".join(lines)
    _reads_or_corrupt(text.encode())
    _reads_or_corrupt(f"version: {version}\ntopic_id: {''.join(lines)[:24]}".encode())


@FAST
@given(st.integers(-2, 4), st.binary(max_size=150))
def test_snapshot_reader_on_near_valid_input(count, body):
    data = b"\x00\x01" + b"\x00\x00\x00\x00" + np.array([count], ">i4").tobytes() + body
    _reads_or_corrupt(data)
    from kafkafmt._native.scan import crc32c
    fixed = data[:2] + np.array([crc32c(data[6:])], ">u4").tobytes() + data[6:]
    try:
        snap = sf.read_producer_snapshot(fixed)
        assert snap["crc_valid"] and len(snap["entries"]) == count
    except CorruptRecordError:
        assert count < 0 or len(body) < 46 * count


# ---------------------------------------------------------------------------------------------
# real broker-written files

def _corpus_files(root, pattern):
    return sorted((root / "broker-dirs").rglob(pattern))


def _expected(root, section):
    data = json.loads((root / "expected.json").read_text())
    return {e["file"]: e for e in data[section]}


def _is_active(log_path):
    logs = sorted(p.name for p in log_path.parent.glob("*.log"))
    return log_path.name == logs[-1]


def test_real_indexes_agree_with_expected(real_corpus):
    exp = _expected(real_corpus, "indexes")
    files = _corpus_files(real_corpus, "*.index")
    assert {str(p.relative_to(real_corpus)) for p in files} == set(exp)
    for path in files:
        e = exp[str(path.relative_to(real_corpus))]
        got = sf.read_index(path)
        base = sf.offset_from_file_name(path)
        # expected.json lists (relative offset, position) as stored
        assert [[o - base, p] for o, p in got.tolist()] == e["entries"]
        assert sf.encode_index(got, base) == path.read_bytes()[:8 * len(got)]
        recs = kafkafmt.read_segment(path.with_suffix(".log"))
        assert sf.check_index(got, recs.batches, base) == e["problems"] == []


def test_real_timeindexes_agree_with_expected(real_corpus):
    exp = _expected(real_corpus, "timeindexes")
    files = _corpus_files(real_corpus, "*.timeindex")
    assert {str(p.relative_to(real_corpus)) for p in files} == set(exp)
    for path in files:
        e = exp[str(path.relative_to(real_corpus))]
        got = sf.read_timeindex(path)
        base = sf.offset_from_file_name(path)
        assert [[t, o - base] for t, o in got.tolist()] == e["entries"]
        assert sf.encode_timeindex(got, base) == path.read_bytes()[:12 * len(got)]
        recs = kafkafmt.read_segment(path.with_suffix(".log"))
        assert sf.check_timeindex(got, recs.batches, base) == e["problems"] == []


def test_real_producer_snapshots_agree_with_expected(real_corpus):
    exp = _expected(real_corpus, "snapshots")
    files = _corpus_files(real_corpus, "*.snapshot")
    assert {str(p.relative_to(real_corpus)) for p in files} == set(exp)
    for path in files:
        e = exp[str(path.relative_to(real_corpus))]
        snap = sf.read_producer_snapshot(path)
        assert (snap["version"], snap["crc_valid"], snap["trailing"]) == (e["version"], e["crc_ok"], e["trailing"])
        assert snap["offset"] == int(path.name.split(".")[0])
        want = [(x["producer_id"], x["epoch"], x["last_seq"], x["last_offset"], x["offset_delta"], x["ts"],
                 x["coordinator_epoch"], x["current_txn_first_offset"]) for x in e["entries"]]
        assert snap["entries"].tolist() == want
        assert sf.encode_producer_snapshot(snap["entries"]) == path.read_bytes()   # byte-exact, crc included


def test_real_text_side_files_parse_and_re_encode(real_corpus):
    seen = 0
    for path in _corpus_files(real_corpus, "leader-epoch-checkpoint"):
        got = sf.read_leader_epoch_checkpoint(path)
        assert got["version"] == 0 and len(got["entries"]) >= 1
        assert sf.encode_leader_epoch_checkpoint(got["entries"]) == path.read_bytes()
        recs_dir = sorted(path.parent.glob("*.log"))
        if recs_dir:     # every epoch start is a batch base offset carrying that epoch (or the log end)
            b = kafkafmt.read_segment(recs_dir[0]).batches
            for epoch, start in got["entries"].tolist():
                hit = np.flatnonzero(b.base_offset == start)
                assert hit.size == 0 or b.partition_leader_epoch[hit[0]] == epoch
        seen += 1
    for path in _corpus_files(real_corpus, "*offset-checkpoint"):
        got = sf.read_offset_checkpoint(path)
        assert sf.encode_offset_checkpoint(got) == path.read_bytes()
        seen += 1
    for path in _corpus_files(real_corpus, "partition.metadata"):
        got = sf.read_partition_metadata(path)
        assert got["version"] == 0
        assert sf.encode_partition_metadata(got["topic_uuid"]) == path.read_bytes()
        seen += 1
    for path in _corpus_files(real_corpus, "quorum-state"):
        assert "leaderEpoch" in sf.read_quorum_state(path)
    for path in _corpus_files(real_corpus, "meta.properties"):
        assert "cluster.id" in sf.read_meta_properties(path)
    assert seen >= 10
    # cross-file facts
    donald = real_corpus / "broker-dirs" / "DonaldY__kafka-2.7.1" / "kafka-logs"
    if donald.is_dir():
        assert sf.read_offset_checkpoint(donald / "cleaner-offset-checkpoint")[("__consumer_offsets", 39)] == 18
        assert sf.read_leader_epoch_checkpoint(donald / "myTopic-0" / "leader-epoch-checkpoint")[
            "entries"].tolist() == [(0, 38)]
        assert sf.read_partition_metadata(
            real_corpus / "broker-dirs" / "Niloufar1171__LDI-POC" / "__cluster_metadata-0" / "partition.metadata"
        )["topic_uuid"] == uuid.UUID(int=1)        # KRaft's fixed metadata topic id


def test_real_segments_reproduce_broker_index_entries(real_corpus):
    """Every .log with a broker-written .index/.timeindex: the builder gives the broker's entries."""
    checked = 0
    for log in _corpus_files(real_corpus, "*.log"):
        ipath, tpath = log.with_suffix(".index"), log.with_suffix(".timeindex")
        if not (ipath.exists() or tpath.exists()):
            continue
        recs = kafkafmt.read_segment(log)
        idx, tix = sf.build_index_entries(recs.batches, index_interval_bytes=4096, rolled=True)
        # A rolled segment's empty .index is a 0-byte file (trimmed on roll); the corpus omits those.
        want_idx = sf.read_index(ipath).tolist() if ipath.exists() else []
        assert idx.tolist() == want_idx, log
        assert tix.tolist() == sf.read_timeindex(tpath).tolist(), log
        if _is_active(log):
            # The active segment was closed by a clean shutdown: LogSegment.close() wrote the final
            # time index entry; without it (a running broker) the last entry is missing.
            _, open_tix = sf.build_index_entries(recs.batches, 4096, rolled=False)
            assert open_tix.tolist() == tix.tolist()[:-1]
        checked += 1
    assert checked >= 4


def test_record_level_time_offsets_on_real_batch(real_corpus):
    log = real_corpus / "broker-dirs/DonaldY__kafka-2.7.1/kafka-logs/__consumer_offsets-39/00000000000000000018.log"
    if not log.exists():
        pytest.skip("segment not in this corpus")
    recs = kafkafmt.read_segment(log)
    # one batch, offsets 18..19 with equal timestamps: a pre-KAFKA-16310 leader would index offset 18
    assert sf.record_offsets_of_max_timestamp(recs).tolist() == [18]
    assert sf.build_index_entries(recs.batches)[1]["offset"].tolist() == [19]
    assert sf.build_index_entries(recs.batches, time_offsets=[18])[1]["offset"].tolist() == [18]
