"""Wrong answers that used to exit 0 (issue 11), each on data shaped like the case: log dirs named
like partitions (several brokers on one host), columns not asked for, a damaged base offset (outside
the v2 CRC), truncation facts of a partition read, files that are not Kafka data, CRC mismatches in
dump, missing paths, records without timestamps, CLI friction, and time-index entries of Kafka 2.x."""
import json
import os
import pathlib
import shutil
import subprocess
import warnings
import sys

import numpy as np
import pytest

import kafkafmt
from kafkafmt.log import sidefiles

REPO = pathlib.Path(__file__).resolve().parent.parent
PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c63f8cf"
                    "c0f01f0005000201ffa2d8cc0000000049454e44ae426082")
COMMANDS = [("dump",), ("verify",), ("stats",), ("export", "--to", "{tmp}/out.parquet")]


def cli(*args, cwd=None):
    env = dict(os.environ)
    env.pop("KAFKAFMT_PROGRESS", None)
    env.pop("KAFKAFMT_DEBUG", None)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "kafkafmt", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=180, cwd=cwd)


def records(n, start=0, prefix="v"):
    return dict(values=[f"{prefix}{i}".encode() for i in range(start, start + n)],
                keys=[f"k{i}".encode() for i in range(start, start + n)],
                timestamps=[1767225600000 + i for i in range(start, start + n)])


def write_partition(folder, n=30, batch=5, segment_bytes=1 << 30, **kw):
    with kafkafmt.LogWriter(folder, segment_bytes=segment_bytes) as w:
        for s in range(0, n, batch):
            w.append(**records(min(batch, n - s), s), **kw)
    return folder


# ----------------------------------------------------------------------------------------------
# 1. log dirs whose own name ends in -<number>

@pytest.fixture
def multinode(tmp_path):
    """MultiNode/kafka-logs-1..3: three brokers on one host; two hold __cluster_metadata-0."""
    root = tmp_path / "MultiNode"
    counts = {}
    for b in (1, 2, 3):
        ld = root / f"kafka-logs-{b}"
        ld.mkdir(parents=True)
        (ld / "meta.properties").write_text(f"version=1\nnode.id={b}\ncluster.id=abc\n")
        write_partition(str(ld / f"orders-{b - 1}"), n=10 * b)
        counts[("orders", b - 1)] = 10 * b
        if b < 3:
            write_partition(str(ld / "__cluster_metadata-0"), n=4)
    # a fourth log dir without meta.properties, its partition folders alone make it one
    bare = root / "deeper" / "kafka-logs-9"
    bare.mkdir(parents=True)
    write_partition(str(bare / "clicks-0"), n=7)
    (bare / "clicks-1").mkdir()           # empty, beside another partition folder: a partition too
    return root


def test_log_dir_named_like_a_partition_is_a_log_dir(multinode):
    ld2 = multinode / "kafka-logs-2"
    assert kafkafmt.log._discovery.folder_kind(str(ld2)) == "log_dir"
    recs = kafkafmt.read_log_dirs(str(ld2))
    assert sorted(set(zip(recs.to_pandas()["topic"], recs.to_pandas()["partition"]))) == [
        ("__cluster_metadata", 0), ("orders", 1)]
    assert len(recs) == 20 + 4


def test_read_log_dirs_finds_log_dirs_at_any_depth(multinode):
    found = kafkafmt.find_log_dirs(str(multinode))
    assert [os.path.basename(p) for p in found] == ["kafka-logs-9", "kafka-logs-1", "kafka-logs-2", "kafka-logs-3"] \
        or sorted(os.path.basename(p) for p in found) == ["kafka-logs-1", "kafka-logs-2", "kafka-logs-3", "kafka-logs-9"]
    recs = kafkafmt.read_log_dirs(str(multinode))
    assert len(recs) == 10 + 20 + 30 + 4 + 7          # __cluster_metadata-0 of two brokers: one copy read
    every = kafkafmt.read_log_dirs(str(multinode), replicas="all")
    assert len(every) == 10 + 20 + 30 + 4 + 4 + 7
    # one root or a list of roots
    two = kafkafmt.read_log_dirs([str(multinode / "kafka-logs-1"), str(multinode / "kafka-logs-3")])
    assert len(two) == 10 + 4 + 30
    parts = kafkafmt.list_partitions(str(multinode / "deeper" / "kafka-logs-9"))
    assert [(p.topic, p.partition) for p in parts] == [("clicks", 0), ("clicks", 1)]


@pytest.mark.parametrize("command", ["stats", "verify", "export", "dump"])
def test_cli_reads_multi_broker_log_dirs(multinode, tmp_path, command):
    target = multinode / "kafka-logs-2"
    if command == "stats":
        p = cli("stats", "--json", target)
        assert p.returncode == 0, p.stderr
        assert json.loads(p.stdout)["totals"]["records"] == 24
    elif command == "verify":
        p = cli("verify", "--json", target)
        assert p.returncode == 0, p.stdout + p.stderr
        summary = json.loads(p.stdout.splitlines()[-1])
        assert summary["records"] == 24 and summary["partitions"] == 2
    elif command == "export":
        out = tmp_path / "o.jsonl"
        p = cli("export", target, "--to", out)
        assert p.returncode == 0, p.stderr
        assert len(out.read_text().splitlines()) == 24
    else:
        p = cli("dump", "--records", target)
        assert p.returncode == 0, p.stderr
        assert sum(line.startswith("| offset:") for line in p.stdout.splitlines()) == 24


def test_stats_says_which_log_dir_and_no_cross_partition_offsets(multinode):
    p = cli("stats", "--replicas", "all", multinode)          # every copy: told apart by their log dir
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    meta = [ln for ln in lines if ln.startswith("__cluster_metadata-0")]
    assert len(meta) == 2 and "kafka-logs-1" in meta[0] and "kafka-logs-2" in meta[1]
    once = cli("stats", multinode).stdout.splitlines()         # by default one copy, still named by its log dir
    meta = [ln for ln in once if ln.startswith("__cluster_metadata-0")]
    assert len(meta) == 1 and "kafka-logs-1" in meta[0]
    total = [ln for ln in lines if ln.startswith("TOTAL")][0]
    header = lines[0]
    col = header.index("OFFSETS")
    assert total[col:col + 8].strip() == "-"
    j = json.loads(cli("stats", "--json", multinode).stdout)
    assert j["totals"]["firstOffset"] is None and j["totals"]["records"] == 71


# ----------------------------------------------------------------------------------------------
# 2. columns not asked for

def test_columns_not_asked_for_are_absent(tmp_path):
    folder = write_partition(str(tmp_path / "t-0"), n=12)
    df = kafkafmt.read_log_dir(folder, columns=["offset", "timestamp"]).to_pandas()
    assert list(df.columns) == ["topic", "partition", "offset", "timestamp", "timestampType"]
    recs = kafkafmt.read_log_dirs(str(tmp_path), columns=["offset", "value"])
    assert "key" not in recs.to_arrow().column_names and recs.value.to_pylist()[0] == b"v0"
    with pytest.raises(AttributeError, match="'key' column was not decoded"):
        recs.key
    seg = kafkafmt.list_segments(folder)[0].log
    d = kafkafmt.read_segment(seg, values=False)
    assert "value" not in d.to_pandas().columns and d.key.to_pylist()[0] == b"k0"
    assert "value" not in d[2:5].columns and "value" not in d.take([3, 1]).columns


# ----------------------------------------------------------------------------------------------
# 3. a damaged base offset

def _batches(path):
    """The batch headers as stored (no offset-sequence check: a damaged file still lists them)."""
    with open(path, "rb") as f:
        return kafkafmt.scan_batches(f.read())[0]


def _flip_base(path, batch, byte=4, value=0xFF):
    """Set one byte of a batch's base offset (outside the v2 CRC)."""
    pos = int(_batches(path).position[batch])
    with open(path, "r+b") as f:
        f.seek(pos + byte)
        f.write(bytes([value]))
    return pos


@pytest.fixture
def real_segment_copy(real_corpus, tmp_path):
    """A real broker-written segment with several batches, copied into a partition folder."""
    src = None
    for p in sorted((real_corpus / "broker-dirs").rglob("*.log")):
        if len(kafkafmt.read_segment(p).batches) >= 5 and "__cluster_metadata" not in str(p):
            src = p
            break
    assert src is not None
    folder = tmp_path / (src.parent.name if kafkafmt.log._names.partition_of_name(src.parent.name) else "t-0")
    folder.mkdir()
    dst = folder / src.name
    shutil.copyfile(src, dst)
    return dst


@pytest.mark.parametrize("where", ["middle", "first", "smaller"])
def test_damaged_base_offset_names_the_damaged_batch(real_segment_copy, tmp_path, where):
    seg = real_segment_copy
    b = _batches(seg)
    k = {"middle": len(b) // 2, "first": 0, "smaller": len(b) - 2}[where]
    byte, value = (4, 0xFF) if where != "smaller" else (7, 0x00)
    if where == "smaller":
        # a later batch's base offset dropping below its predecessor's
        assert int(b.base_offset[k]) & 0xFF != 0 or int(b.base_offset[k]) > int(b.last_offset[k - 1])
    pos = _flip_base(seg, k, byte, value)
    damaged = int(_batches(seg).base_offset[k]) if where != "smaller" else None
    folder = str(seg.parent)
    # strict reads fail on it, naming its position
    with pytest.raises(kafkafmt.CorruptRecordError, match="out of sequence") as err:
        kafkafmt.read_log_dir(folder)
    assert err.value.position == pos and err.value.file == str(seg)
    # salvage skips exactly that batch and reports it
    recs = kafkafmt.read_log_dir(folder, errors="salvage")
    bad = [e for e in recs.report if e.is_damage]
    assert [(e.start, e.end) for e in bad] == [(pos, pos + int(b.size[k]))]
    assert len(recs.batches) == len(b) - 1
    assert (np.diff(recs.offset) > 0).all() and recs.offset.max() <= int(b.last_offset.max())
    if damaged is not None:
        assert damaged not in recs.offset.tolist()
    # verify: one error, at that batch
    p = cli("verify", "--json", folder)
    assert p.returncode == 1
    errors = [json.loads(ln) for ln in p.stdout.splitlines() if '"severity":"error"' in ln]
    assert len(errors) == 1 and errors[0]["position"] == pos and "out of sequence" in errors[0]["message"], errors
    # stats reports it (exit 1) and never shows an impossible offset
    p = cli("stats", "--json", folder)
    assert p.returncode == 1 and "out of sequence" in p.stderr
    assert json.loads(p.stdout)["partitions"][0]["lastOffset"] <= int(b.last_offset.max())
    # export fails on it (or skips it under --salvage), never writes it
    out = tmp_path / "o.jsonl"
    p = cli("export", folder, "--to", out)
    assert p.returncode == 1 and not out.exists() and "out of sequence" in p.stderr
    p = cli("export", folder, "--to", out, "--salvage")
    assert p.returncode == 1 and len(out.read_text().splitlines()) == len(recs)


def test_damaged_base_offset_of_a_segments_last_batch(tmp_path):
    """The last batch of a rolled segment: the next segment's base offset judges it."""
    folder = write_partition(str(tmp_path / "t-0"), n=40, batch=5, segment_bytes=400)
    segs = kafkafmt.list_segments(folder)
    assert len(segs) >= 3
    b = _batches(segs[0].log)
    pos = _flip_base(segs[0].log, len(b) - 1, 5, 0x7F)
    with pytest.raises(kafkafmt.CorruptRecordError, match="out of sequence") as err:
        kafkafmt.read_log_dir(folder)
    assert err.value.position == pos
    recs = kafkafmt.read_log_dir(folder, errors="salvage")
    assert len(recs) == 40 - int(b.record_count[-1]) and (np.diff(recs.offset) > 0).all()


def test_intact_logs_with_offset_gaps_are_not_out_of_sequence(real_corpus):
    """Compacted partitions (offset gaps, non-zero base offsets) read as before."""
    for folder in sorted((real_corpus / "broker-dirs").rglob("__consumer_offsets-*")):
        kafkafmt.read_log_dir(str(folder))


# ----------------------------------------------------------------------------------------------
# 4. truncation facts of a partition read

def test_read_log_dir_keeps_truncation_facts(tmp_path):
    folder = write_partition(str(tmp_path / "t-0"), n=20)
    seg = kafkafmt.list_segments(folder)[-1].log
    size = os.path.getsize(seg)
    with open(seg, "r+b") as f:
        f.truncate(size - 9)
    one = kafkafmt.read_segment(seg)
    recs = kafkafmt.read_log_dir(folder)
    assert recs.truncated and recs.tail == "truncated"
    assert (recs.valid_bytes, recs.trailing_bytes) == (one.valid_bytes, one.trailing_bytes)
    assert recs.trailing_bytes == size - 9 - one.valid_bytes > 0
    clean = kafkafmt.read_log_dir(write_partition(str(tmp_path / "u-0"), n=5))
    assert clean.tail is None and not clean.truncated and clean.trailing_bytes == 0


# ----------------------------------------------------------------------------------------------
# 5-7. bad input: one clear line, non-zero exit, the same on every command

@pytest.fixture
def bad_files(tmp_path):
    d = tmp_path / "bad"
    d.mkdir()
    (d / "img.png").write_bytes(PNG)
    (d / "notes.log").write_text("hello, this is not a Kafka segment\n" * 20)
    (d / "empty.bin").write_bytes(b"")
    return d


@pytest.mark.parametrize("name", ["img.png", "notes.log", "empty.bin"])
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_non_kafka_file_is_an_error_everywhere(bad_files, tmp_path, name, command):
    args = [a.format(tmp=tmp_path) for a in command]
    p = cli(*args, bad_files / name)
    assert p.returncode == 2, (p.stdout, p.stderr)              # bad input
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "not a Kafka log segment" in lines[0], p.stderr
    assert "Traceback" not in p.stderr and "batch offset" not in p.stderr and "offset 2" not in lines[0]
    assert str(bad_files / name) in lines[0]
    assert "OK" not in p.stdout


def test_read_segment_of_a_non_kafka_file(bad_files):
    with pytest.raises(kafkafmt.NotKafkaDataError, match="not a Kafka log segment: first entry at position 0"):
        kafkafmt.read_segment(bad_files / "img.png")


def test_empty_segment_named_as_one_is_fine(tmp_path):
    folder = tmp_path / "t-0"
    folder.mkdir()
    (folder / "00000000000000000000.log").write_bytes(b"")
    p = cli("stats", "--json", folder / "00000000000000000000.log")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["totals"]["records"] == 0


def test_dump_says_crc_mismatch_on_stderr(real_corpus):
    p = cli("dump", real_corpus / "record-sets/dpkp__kafka-python/control_batch_data_v2.log.bin")
    assert p.returncode == 1
    assert "CRC mismatch" in p.stderr and "isvalid: false" in p.stdout


def test_missing_paths_raise_kafkafmt_errors(bad_files):
    with pytest.raises(kafkafmt.PathNotFoundError, match="/nonexistent") as err:
        kafkafmt.read_log_dir("/nonexistent")
    assert isinstance(err.value, FileNotFoundError) and isinstance(err.value, kafkafmt.KafkafmtError)
    with pytest.raises(kafkafmt.PathNotFoundError):
        kafkafmt.read_log_dirs("/nonexistent/logs")
    with pytest.raises(kafkafmt.NotALogDirError, match="img.png") as err:
        kafkafmt.read_log_dirs(str(bad_files / "img.png"))
    assert isinstance(err.value, kafkafmt.KafkafmtError)
    with pytest.raises(kafkafmt.NotALogDirError):
        kafkafmt.read_log_dir(str(bad_files))     # a folder, but not <topic>-<partition>


# ----------------------------------------------------------------------------------------------
# 8. records without a timestamp

def test_stats_counts_records_without_timestamp(tmp_path):
    folder = str(tmp_path / "old-0")
    with kafkafmt.LogWriter(folder) as w:
        w.append(values=[b"a", b"b", b"c"], magic=0)                     # magic 0: no timestamps
        w.append(values=[b"d", b"e"], timestamps=[1767225600000, 1767225600001])
    j = json.loads(cli("stats", "--json", folder).stdout)
    part = j["partitions"][0]
    assert part["noTimestamp"] == 3 and part["records"] == 5
    assert part["firstTimestamp"] == 1767225600000
    table = cli("stats", folder).stdout.splitlines()
    col = table[0].index("NO-TS")
    assert table[1][col - 2:col + 5].strip() == "3"


# ----------------------------------------------------------------------------------------------
# 9. friction

def test_dump_topics_partitions_and_files(multinode):
    p = cli("dump", multinode, "--topics", "orders", "--partitions", "1")
    assert p.returncode == 0, p.stderr
    dumped = [ln for ln in p.stdout.splitlines() if ln.startswith("Dumping")]
    assert len(dumped) == 1 and "orders-1" in dumped[0]
    seg = kafkafmt.list_segments(str(multinode / "kafka-logs-1" / "orders-0"))[0].log
    p = cli("dump", "--files", seg)
    assert p.returncode == 0 and p.stdout.startswith(f"Dumping {seg}")


def test_unknown_option_prints_the_commands_usage(tmp_path):
    p = cli("dump", "--no-such-flag", tmp_path)
    assert p.returncode == 2 and "usage: kafkafmt dump" in p.stderr
    p = cli("stats", "--bogus", tmp_path)
    assert p.returncode == 2 and "usage: kafkafmt stats" in p.stderr


def test_warnings_once(tmp_path):
    folder = write_partition(str(tmp_path / "logs" / "t-0"), n=20)
    base = kafkafmt.list_segments(folder)[0].log
    shutil.copyfile(base, base + ".deleted")
    p = cli("export", tmp_path / "logs", "--to", tmp_path / "o.jsonl")
    assert p.returncode == 0 and p.stderr.count(".log.deleted") == 1, p.stderr
    # a small segment (at most index.interval.bytes) has no index on a broker: no news
    os.unlink(base[:-4] + ".index")
    p = cli("dump", folder, "--offset-range", "3:6")
    assert "no .index file" not in p.stderr, p.stderr


def test_missing_indexes_said_once_per_read(tmp_path):
    """Large segments without their .index: one warning for the read, whatever the number of
    segments and seeks (issue 21: every seek warned); the report still names each file."""
    folder = str(tmp_path / "big-0")
    kafkafmt.write_log_dir(folder, values=[b"v%05d" % i + b"x" * 200 for i in range(3000)], timestamps=[1] * 3000,
                           batch_size=2048, segment_bytes=64 << 10)
    segs = kafkafmt.list_segments(folder)
    assert len(segs) >= 5 and all(s.size > 4096 for s in segs)
    for s in segs:
        os.unlink(s.index)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        recs = kafkafmt.read_log_dir(folder, start_offset=1500, end_offset=2500)
    said = [w for w in caught if issubclass(w.category, kafkafmt.KafkafmtWarning)]
    assert len(said) == 1 and "no .index file" in str(said[0].message) and "more index file" in str(said[0].message)
    assert recs.offset.tolist() == list(range(1500, 2500))
    assert len([e for e in recs.report if e.kind is kafkafmt.ReportKind.INDEX_FALLBACK]) >= 2
    p = cli("dump", folder, "--offset-range", "1500:2500")
    assert p.stderr.count("no .index file") == 1, p.stderr


def test_tiered_uploads_without_indexes_are_not_leftovers(tmp_path):
    """Uploads of Kafka's layout without .index/.timeindex objects are segments read by a scan, not
    broker leftovers (issue 21 item 9)."""
    from test_tiered import _write_local, kafka_layout_objects

    src = tmp_path / "src" / "t-0"
    kafkafmt.write_log_dir(str(src), values=[b"v%d" % i for i in range(500)], timestamps=[1] * 500,
                           segment_bytes=4096)
    objs = {k: v for k, v in kafka_layout_objects(str(src), "t", 0, "AAAAAAAAAAAAAAAAAAAAAQ").items()
            if not k.endswith((".index", ".timeindex"))}
    _write_local(tmp_path / "remote" / "kafka-tiered-storage", objs)
    report = []
    parts = kafkafmt.log._discovery.find_partitions(str(tmp_path / "remote"), report=report)
    assert [p.name for p in parts] == ["t-0"]
    assert not [e for e in report if e.kind is kafkafmt.ReportKind.LEFTOVER], report
    assert kafkafmt.read_log_dirs(str(tmp_path / "remote")).offset.tolist() == list(range(500))


def test_stats_filter_that_matches_nothing_says_so(multinode):
    p = cli("stats", multinode, "--topics", "nosuch")
    assert p.returncode == 2 and "--topics" in p.stderr


# ----------------------------------------------------------------------------------------------
# 10. time-index entries written by Kafka 2.x

def test_time_index_record_offsets_accepted_by_dump_and_verify(tmp_path):
    """Kafka before 3.8 (KAFKA-16310) indexed the offset of the record holding the max timestamp,
    not the batch's last offset: both are valid for the broker's time lookups."""
    folder = write_partition(str(tmp_path / "t-0"), n=20, batch=5)
    seg = kafkafmt.list_segments(folder)[0]
    b = _batches(seg.log)
    # an entry per batch, each naming the batch's middle record (max timestamp of the batch: its last record
    # here, so the timestamp matches; a 2.x leader wrote the record offset of the max timestamp)
    entries = np.array([(int(b.max_timestamp[i]), int(b.base_offset[i]) + 2) for i in range(len(b))],
                       sidefiles.TIMEINDEX_DTYPE)
    sidefiles.write_timeindex(seg.timeindex, entries, seg.base_offset)
    p = cli("dump", "--verify-index-only", seg.timeindex)
    assert "Indexed offset" not in p.stderr and p.returncode == 0, p.stderr
    assert cli("verify", folder).returncode == 0
    # an offset in no batch is flagged by both
    bad = entries.copy()
    bad["offset"][-1] = int(b.last_offset[-1]) + 50
    sidefiles.write_timeindex(seg.timeindex, bad, seg.base_offset)
    p = cli("dump", "--verify-index-only", seg.timeindex)
    assert p.returncode == 1 and "Indexed offset" in p.stderr
    assert cli("verify", folder).returncode == 1


# ---------------------------------------------------------------------------------------------------------
# issue 21: the library's arguments

def test_time_bounds_take_every_form_a_user_has(sample):
    import datetime as dt

    import pandas as pd

    folder = os.path.join(str(sample), "orders-0")
    all_ts = kafkafmt.read_log_dir(folder, columns=["offset"]).timestamp
    lo_ms, hi_ms = int(np.sort(all_ts)[len(all_ts) // 4]), int(np.sort(all_ts)[len(all_ts) // 2])
    want = kafkafmt.read_log_dir(folder, start_timestamp=lo_ms, end_timestamp=hi_ms, columns=["offset"]).offset
    assert len(want) > 0
    lo = dt.datetime.fromtimestamp(lo_ms / 1000, dt.timezone.utc)
    hi = dt.datetime.fromtimestamp(hi_ms / 1000, dt.timezone.utc)
    for a, b in [(lo, hi), (lo.replace(tzinfo=None), hi.replace(tzinfo=None)), (pd.Timestamp(lo), pd.Timestamp(hi)),
                 (lo.isoformat(), hi.isoformat().replace("+00:00", "Z")), (str(lo_ms), str(hi_ms)),
                 (np.datetime64(lo_ms, "ms"), np.datetime64(hi_ms, "ms")),
                 (np.sort(all_ts)[len(all_ts) // 4], np.uint64(hi_ms))]:      # (NumPy integers: a read's own)
        got = kafkafmt.read_log_dir(folder, start_timestamp=a, end_timestamp=b, columns=["offset"]).offset
        assert got.tolist() == want.tolist(), (a, b)
    assert kafkafmt.offset_for_timestamp(folder, lo) == int(want[0])
    for bad in ("yesterday", np.float64(lo_ms), np.bool_(True), True):
        with pytest.raises(ValueError, match="start_timestamp: not a time"):
            kafkafmt.read_log_dir(folder, start_timestamp=bad)


def test_unknown_columns_and_keywords_are_named(sample):
    folder = os.path.join(str(sample), "orders-0")
    with pytest.raises(ValueError, match="unknown column 'nosuch'"):
        kafkafmt.read_log_dir(folder, columns=["value", "nosuch"])
    with pytest.raises(TypeError, match=r"read_log_dirs\(\) got an unexpected keyword argument 'topic'.*topics="):
        kafkafmt.read_log_dirs(str(sample), topic="orders")
    with pytest.raises(TypeError, match=r"iter_log_dirs\(\)"):
        next(kafkafmt.iter_log_dirs(str(sample), topic="orders"))


def test_a_filter_that_matches_nothing_says_so(sample, tmp_path):
    with pytest.warns(kafkafmt.KafkafmtWarning, match="no partition of topic typo"):
        assert len(kafkafmt.read_log_dirs(str(sample), topics=["typo"])) == 0
    with pytest.warns(kafkafmt.KafkafmtWarning, match="no partition 99"):
        assert len(kafkafmt.read_log_dirs(str(sample), topics=["orders"], partitions=[99])) == 0
    (tmp_path / "not-kafka").mkdir()
    (tmp_path / "not-kafka" / "notes.txt").write_text("hello")
    with pytest.warns(kafkafmt.KafkafmtWarning, match="no partition folders, log dirs or tiered-storage uploads"):
        assert len(kafkafmt.read_log_dirs(str(tmp_path / "not-kafka"))) == 0
