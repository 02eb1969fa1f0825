"""The command line (kafkafmt dump | verify | stats | export), run as a subprocess on the bundled
sample and on the real broker files of ../shared/real-corpus, checked against the library."""
import base64
import collections
import csv
import io
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import kafkafmt
from kcli import run as cli
from kafkafmt.log import sidefiles
from kafkafmt.record import CODEC_NAMES, CONTROL_TYPES

REPO = pathlib.Path(__file__).resolve().parent.parent
BAD_CRC = "record-sets/dpkp__kafka-python/control_batch_data_v2.log.bin"
ZSTD_LABELLED_NONE = "record-sets/tulios__kafkajs/recordBatch__fixtures__v0_recordbatch_zstd.carved.log.bin"


# ----------------------------------------------------------------------------------------------
# helpers and fixtures

def jsonl(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def segments_of(folder):
    return sorted(pathlib.Path(folder).glob("*.log"))


def b64(b):
    return None if b is None else base64.b64encode(b).decode()


def flip(path, pos, mask=0xFF):
    data = bytearray(path.read_bytes())
    data[pos] ^= mask
    path.write_bytes(bytes(data))


def no_traceback(p):
    assert "Traceback" not in p.stderr, p.stderr


# ----------------------------------------------------------------------------------------------
# command-line parsing helpers (in-process)

def test_ranges_and_times():
    from kafkafmt.cli.common import UsageError, parse_offset_range, parse_size, parse_time, parse_time_range

    assert parse_offset_range("5:9") == (5, 9)
    assert parse_offset_range("5..9") == (5, 9)
    assert parse_offset_range("5:") == (5, None)
    assert parse_offset_range(":9") == (None, 9)
    assert parse_offset_range("42") == (42, 43)
    t0 = 1767225600000
    assert parse_time("2026-01-01T00:00:00Z") == t0
    assert parse_time("2026-01-01") == t0
    assert parse_time("2026-01-01T01:00:00+01:00") == t0
    assert parse_time(str(t0)) == t0
    assert parse_time_range(f"{t0}:{t0 + 5}") == (t0, t0 + 5)
    assert parse_time_range("2026-01-01T00:00:00Z..2026-01-01T00:00:01Z") == (t0, t0 + 1000)
    assert parse_time_range("2026-01-01T00:00:00Z:2026-01-01T00:00:01Z") == (t0, t0 + 1000)
    assert parse_time_range("2026-01-01T10:30:00Z:") == (t0 + 37_800_000, None)
    assert parse_time_range("2026-01-01T10:30") == (t0 + 37_800_000, None)
    assert parse_time_range(f":{t0}") == (None, t0)
    assert parse_size("64K") == 65536 and parse_size("2M") == 2 << 20 and parse_size("100") == 100
    for bad in ("9:5", "a:b"):
        with pytest.raises(UsageError):
            parse_offset_range(bad)
    with pytest.raises(UsageError):
        parse_time_range("yesterday")


# ----------------------------------------------------------------------------------------------
# stats

def test_stats_json_matches_library(sample):
    p = cli("stats", "--sample", "--json", sample=sample, check=0)
    doc = json.loads(p.stdout)
    parts = {d["name"]: d for d in doc["partitions"]}
    assert set(parts) == {f"{t}-{n}" for t, n, _ in kafkafmt.list_partitions(str(sample))}
    total_records = 0
    for name, d in parts.items():
        folder = sample / name
        recs = kafkafmt.read_log_dir(folder)
        allr = kafkafmt.read_log_dir(folder, include_control=True)
        assert d["records"] == len(recs)
        assert d["controlRecords"] == len(allr.controls)
        total_records += len(recs)
        segs = {s["baseOffset"]: s for s in d["segments"]}
        assert len(segs) == len(segments_of(folder))
        payload = batch_bytes = 0
        for log in segments_of(folder):
            r = kafkafmt.read_segment(log, include_control=True)
            s = segs[int(log.stem)]
            b = r.batches
            assert s["batches"] == len(b)
            assert s["fileBytes"] == log.stat().st_size
            assert s["batchBytes"] == int(b.size.astype(np.int64).sum())
            assert s["records"] + s["controlRecords"] == len(r)
            assert s["firstOffset"] == int(b.base_offset[0]) and s["lastOffset"] == int(b.last_offset[-1])
            assert s["magics"] == {str(k): v for k, v in collections.Counter(b.magic.tolist()).items()}
            assert {k: v["batches"] for k, v in s["codecs"].items()} == dict(
                collections.Counter(CODEC_NAMES[c] for c in b.codec.tolist()))
            data_ts = r.timestamp[~b.is_control[r.batch_index]]
            assert s["firstTimestamp"] == int(data_ts.min()) and s["lastTimestamp"] == int(data_ts.max())
            assert s["producers"] == len(set(b.producer_id[b.producer_id >= 0].tolist()))
            # the compression ratio: payload (keys, values, header keys and values) / batch bytes
            pl = int(r.key.lengths().sum() + r.value.lengths().sum() + r.headers.key.lengths().sum()
                     + r.headers.value.lengths().sum())
            assert s["payloadBytes"] == pl
            assert s["compressionRatio"] == pytest.approx(pl / s["batchBytes"], abs=1e-4)
            payload += pl
            batch_bytes += s["batchBytes"]
        assert d["compressionRatio"] == pytest.approx(payload / batch_bytes, abs=1e-4)
    assert doc["totals"]["records"] == total_records == len(kafkafmt.read_log_dirs(str(sample)))
    # transactions of the sample's payments topic: one commit, one abort of 20 records
    pay = parts["payments-0"]
    committed = kafkafmt.read_log_dir(sample / "payments-0", isolation="read_committed")
    assert pay["abortedTransactions"] == 1 and pay["committedTransactions"] == 1
    assert pay["abortedRecords"] == pay["records"] - len(committed)
    assert pay["controls"] == {"ABORT": 1, "COMMIT": 1}
    assert doc["problems"] == []


def test_stats_table_and_default_command(sample):
    p = cli("stats", "--sample", sample=sample, check=0)
    lines = p.stdout.splitlines()
    assert lines[0].split()[:3] == ["PARTITION", "/", "SEGMENT"]
    rows = {ln.split()[0]: ln.split() for ln in lines[1:] if not ln.startswith(" ")}
    for t, n, folder in kafkafmt.list_partitions(str(sample)):
        recs = kafkafmt.read_log_dir(folder)
        row = rows[f"{t}-{n}"]
        assert int(row[1]) == len(recs)
        assert int(row[2]) == sum(len(kafkafmt.read_segment(s).batches) for s in segments_of(folder))
    # aligned columns: every line has the RECORDS column ending at the same place
    end = lines[0].index("RECORDS") + len("RECORDS")
    assert all(ln[:end].rstrip()[-1].isdigit() for ln in lines[1:])
    assert p.stderr == ""         # piped: no progress bar, nothing else
    # the README's old main command still works: `kafkafmt --sample` runs stats
    p2 = cli("--sample", sample=sample, check=0)
    assert p2.stdout == p.stdout


def test_stats_real_corpus(real_corpus):
    root = real_corpus / "broker-dirs"
    p = cli("stats", root, "--json", check=0)
    doc = json.loads(p.stdout)
    found = {}
    for d in doc["partitions"]:
        found[d["path"]] = d
    folders = [f for f in root.rglob("*") if f.is_dir() and re.match(r"^.+-\d+$", f.name)]
    assert len(folders) == len(found)
    for folder in folders:
        d = found[str(folder)]
        allr = kafkafmt.read_log_dir(folder, include_control=True)
        assert d["records"] == len(kafkafmt.read_log_dir(folder))
        assert d["controlRecords"] == len(allr.controls)
        assert d["batches"] == len(allr.batches)


# ----------------------------------------------------------------------------------------------
# dump

BATCH_V2 = re.compile(
    r"^baseOffset: (\d+) lastOffset: (\d+) count: (\d+) baseSequence: (-?\d+) lastSequence: (-?\d+) "
    r"producerId: (-?\d+) producerEpoch: (-?\d+) partitionLeaderEpoch: (-?\d+) isTransactional: (true|false) "
    r"isControl: (true|false) deleteHorizonMs: (OptionalLong\.empty|OptionalLong\[\d+\]) position: (\d+) "
    r"(CreateTime|LogAppendTime): (-?\d+) size: (\d+) magic: 2 compresscodec: (none|gzip|snappy|lz4|zstd) "
    r"crc: (\d+) isvalid: (true|false)$")
RECORD_V2 = re.compile(r"^\| offset: (\d+) (CreateTime|LogAppendTime): (-?\d+) keySize: (-?\d+) valueSize: (-?\d+) "
                       r"sequence: (-?\d+) headerKeys: \[([^\]]*)\](.*)$")


def test_dump_text_like_kafka(sample):
    seg = sample / "payments-0" / "00000000000000000045.log"
    p = cli("dump", seg, "--records", check=0)
    lines = p.stdout.splitlines()
    assert lines[0] == f"Dumping {seg}"
    assert lines[1] == "Log starting offset: 45"
    recs = kafkafmt.read_segment(seg, verify_crc=False, include_control=True)
    b = recs.batches
    batch_lines = [ln for ln in lines if ln.startswith("baseOffset:")]
    assert len(batch_lines) == len(b)
    for i, ln in enumerate(batch_lines):
        m = BATCH_V2.match(ln)
        assert m, ln
        assert int(m.group(1)) == b.base_offset[i] and int(m.group(2)) == b.last_offset[i]
        assert int(m.group(3)) == b.record_count[i] and int(m.group(12)) == b.position[i]
        assert int(m.group(15)) == b.size[i] and int(m.group(17)) == b.crc[i]
        assert m.group(16) == CODEC_NAMES[int(b.codec[i])]
        assert int(m.group(14)) == b.max_timestamp[i]
        assert m.group(9) == str(bool(b.is_transactional[i])).lower()
        assert m.group(10) == str(bool(b.is_control[i])).lower()
    rec_lines = [ln for ln in lines if ln.startswith("| ")]
    assert len(rec_lines) == len(recs)
    for r, ln in enumerate(rec_lines):
        m = RECORD_V2.match(ln)
        assert m, ln
        assert int(m.group(1)) == recs.offset[r] and int(m.group(3)) == recs.timestamp[r]
        assert int(m.group(4)) == len(recs.key[r]) and int(m.group(5)) == len(recs.value[r])
        assert int(m.group(6)) == recs.sequence[r]
    # the abort marker, as kafka-dump-log prints it
    assert rec_lines[-1].endswith("endTxnMarker: ABORT coordinatorEpoch: 4")
    # --print-data: key and payload, as text
    p = cli("dump", seg, "--print-data", check=0)
    first = [ln for ln in p.stdout.splitlines() if ln.startswith("| ")][0]
    assert first.endswith(f" key: {recs.key[0].decode()} payload: {recs.value[0].decode()}")
    p = cli("dump", seg, "--skip-record-metadata", check=0)
    data = [ln for ln in p.stdout.splitlines() if ln.startswith("| ")]
    assert data[0] == f"| key: {recs.key[0].decode()} payload: {recs.value[0].decode()}"
    assert len(data) == len(recs) - len(recs.controls)       # control records left out


_TRICKY = [b"\\", b"'", b'"', b"\x00", b"x", b"0", b"\xff", b"\n", b"\x7f", "\x85\u2028\U000e0001é".encode()]


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=40) | st.lists(st.sampled_from(_TRICKY), max_size=12).map(b"".join))
def test_escape_text_is_the_per_character_rule(data):
    """Each character not printable escaped (\\t \\n \\r, \\xNN, \\uNNNN, \\UNNNNNNNN), invalid bytes as \\xNN, the
    rest as it is: the one-pass escape equals the rule applied character by character, backslashes and both
    quotes included."""
    from kafkafmt.cli.common import escape_text

    text = data.decode("utf-8", "backslashreplace")
    want = "".join(ch if ch.isprintable() else {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(ch) or (
        f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}")
        for ch in text)
    assert escape_text(data) == want


def test_dump_escapes_non_printable(tmp_path):
    from kafkafmt.cli.common import escape_text

    assert escape_text(b"plain") == "plain"
    assert escape_text(b"a\nb\tc\x00\xff") == "a\\nb\\tc\\x00\\xff"
    assert escape_text("é€".encode()) == "é€"
    folder = tmp_path / "bin-0"
    with kafkafmt.LogWriter(str(folder)) as w:
        w.append(keys=[b"k\x01"], values=[b"line1\nline2\xfe"], timestamps=[1000])
    p = cli("dump", folder, "--print-data", check=0)
    rec = [ln for ln in p.stdout.splitlines() if ln.startswith("| ")]
    assert len(rec) == 1 and rec[0].endswith("key: k\\x01 payload: line1\\nline2\\xfe")


def _check_json_against_library(lines, files):
    by_file = collections.defaultdict(lambda: {"batch": [], "record": []})
    for o in lines:
        if o["type"] in ("batch", "record"):
            by_file[o["file"]][o["type"]].append(o)
    for f in files:
        recs = kafkafmt.read_segment(f, verify_crc=False, include_control=True)
        b = recs.batches
        got = by_file[str(f)]
        assert len(got["batch"]) == len(b), f
        for i, o in enumerate(got["batch"]):
            assert o["baseOffset"] == b.base_offset[i] and o["lastOffset"] == b.last_offset[i]
            assert o["count"] == b.record_count[i] and o["position"] == b.position[i] and o["size"] == b.size[i]
            assert o["magic"] == b.magic[i] and o["crc"] == b.crc[i] and o["isvalid"] == bool(b.crc_valid[i])
            assert o["compresscodec"] == CODEC_NAMES[int(b.codec[i])]
            assert o["producerId"] == b.producer_id[i] and o["producerEpoch"] == b.producer_epoch[i]
            assert o["baseSequence"] == b.base_sequence[i]
            assert o["partitionLeaderEpoch"] == b.partition_leader_epoch[i]
            assert o["isTransactional"] == bool(b.is_transactional[i]) and o["isControl"] == bool(b.is_control[i])
            assert o["maxTimestamp"] == b.max_timestamp[i] and o["firstTimestamp"] == b.first_timestamp[i]
            assert o["attributes"] == b.attributes[i]
        assert len(got["record"]) == len(recs), f
        heads = recs.headers.to_pylist()
        ctl = {int(o): (int(t), int(e)) for o, t, e in zip(recs.controls.offset, recs.controls.type,
                                                           recs.controls.coordinator_epoch)}
        seq = recs.sequence
        for r, o in enumerate(got["record"]):
            assert o["offset"] == recs.offset[r] and o["timestamp"] == recs.timestamp[r]
            assert o["key"] == b64(recs.key[r]) and o["value"] == b64(recs.value[r])
            assert o["keySize"] == (-1 if recs.key[r] is None else len(recs.key[r]))
            assert o["valueSize"] == (-1 if recs.value[r] is None else len(recs.value[r]))
            assert [(h["key"], h["value"]) for h in o["headers"]] == [(k, b64(v)) for k, v in heads[r]]
            assert o["headerKeys"] == [k for k, _ in heads[r]]
            assert o["sequence"] == seq[r]
            assert o["batchBaseOffset"] == b.base_offset[recs.batch_index[r]]
            if o["isControl"]:
                t, e = ctl[o["offset"]]
                assert o["control"]["type"] == CONTROL_TYPES[t] and o["control"]["typeId"] == t
                if t in (0, 1):
                    assert o["control"]["coordinatorEpoch"] == e


def test_dump_json_matches_library_sample(sample):
    p = cli("dump", "--sample", "--records", "--json", sample=sample, check=0)
    lines = jsonl(p.stdout)
    files = [f for t, n, folder in kafkafmt.list_partitions(str(sample)) for f in segments_of(folder)]
    assert [o["file"] for o in lines if o["type"] == "file"] == [str(f) for f in files]
    _check_json_against_library(lines, files)
    # header values are there (base64 by default; --bytes utf8 / hex on request)
    withh = [o for o in lines if o["type"] == "record" and o["headers"]]
    assert withh and all(h["value"] is not None for o in withh for h in o["headers"])
    seg = sample / "orders-0" / "00000000000000000000.log"
    p = cli("dump", seg, "--records", "--json", "--bytes", "utf8", check=0)
    recs = kafkafmt.read_segment(seg)
    rl = [o for o in jsonl(p.stdout) if o["type"] == "record"]
    assert [o["value"] for o in rl] == [v.decode() for v in recs.value.to_pylist()]
    h = [o for o in rl if o["headers"]][0]
    assert h["headers"][0]["key"] == "trace-id" and len(h["headers"][0]["value"]) == 16
    p = cli("dump", seg, "--records", "--json", "--bytes", "hex", check=0)
    rl = [o for o in jsonl(p.stdout) if o["type"] == "record"]
    assert rl[0]["key"] == recs.key[0].hex()


def _expected_logs(real_corpus, prefix):
    entries = json.loads((real_corpus / "expected.json").read_text())["logs"]
    return [e for e in entries if e["file"].startswith(prefix) and e["file"] not in (BAD_CRC, ZSTD_LABELLED_NONE)]


def test_dump_real_segments_match_expected(real_corpus):
    """Batch lines of real broker segments and client record sets against the independent decode."""
    entries = _expected_logs(real_corpus, "broker-dirs/") + _expected_logs(real_corpus, "record-sets/")
    files = [real_corpus / e["file"] for e in entries]
    p = cli("dump", *files, "--records", "--json", check=0)
    lines = jsonl(p.stdout)
    by_file = collections.defaultdict(lambda: {"batch": [], "record": []})
    for o in lines:
        if o["type"] in ("batch", "record"):
            by_file[o["file"]][o["type"]].append(o)
    for e, f in zip(entries, files):
        got = by_file[str(f)]
        bl, rl = got["batch"], got["record"]
        assert len(bl) == e["batches"], e["file"]
        assert len(rl) == e["records"], e["file"]
        assert dict(collections.Counter(str(o["magic"]) for o in bl)) == e["magics"]
        assert dict(collections.Counter(o["compresscodec"] for o in bl)) == e["codecs"]
        assert sum(o["isvalid"] for o in bl) == e["crc_ok"] and sum(not o["isvalid"] for o in bl) == e["crc_bad"]
        assert sum(o["isControl"] for o in bl) == e["control_batches"]
        assert sum(o["isTransactional"] for o in bl) == e["transactional_batches"]
        assert sum(o["producerId"] > -1 for o in bl) == e["batches_with_producer_id"]
        v2 = [o for o in bl if o["magic"] == 2]
        assert sorted({o["partitionLeaderEpoch"] for o in v2}) == e["leader_epochs"]
        assert sum(o["size"] for o in bl) == e["size"] - e["trailing_bytes"]
        if rl:
            assert rl[0]["offset"] == e["first_offset"] and rl[-1]["offset"] == e["last_offset"]
        for fr, o in zip(e["first_records"], rl):
            assert o["offset"] == fr["offset"]
            for field in ("key", "value"):
                want = fr[field]
                got_b = None if o[field] is None else base64.b64decode(o[field]).hex()
                if want is None:
                    assert got_b is None
                elif want.endswith("..."):
                    assert got_b.startswith(want[:-3])
                else:
                    assert got_b == want
    _check_json_against_library(lines, files[:len(_expected_logs(real_corpus, "broker-dirs/"))])


def test_dump_real_side_files_match_expected(real_corpus):
    exp = json.loads((real_corpus / "expected.json").read_text())
    idx = [(e, "index", ("offset", "position")) for e in exp["indexes"]]
    idx += [(e, "timeindex", ("timestamp", "offset")) for e in exp["timeindexes"]]
    paths = [real_corpus / e["file"] for e, _, _ in idx]
    assert all(e["ok"] for e, _, _ in idx)
    p = cli("dump", *paths, "--json", check=0)
    lines = jsonl(p.stdout)
    text = cli("dump", *paths, check=0).stdout
    for (e, kind, fields), path in zip(idx, paths):
        got = [[o[f] for f in fields] for o in lines if o["type"] == f"{kind}_entry" and o["file"] == str(path)]
        assert got == e["entries"], e["file"]
        block = text.split(f"Dumping {path}\n", 1)[1].split("Dumping ", 1)[0].splitlines()
        if kind == "index":
            assert block == [f"offset: {o} position: {q}" for o, q in e["entries"]]
        else:
            assert block == [f"timestamp: {t} offset: {o}" for t, o in e["entries"]]
    p = cli("dump", *paths, "--verify-index-only", check=0)
    assert p.stdout.splitlines() == [f"Dumping {path}" for path in paths] and p.stderr == ""
    p = cli("dump", *paths, "--index-sanity-check", check=0)
    assert [ln for ln in p.stdout.splitlines() if not ln.startswith("Dumping")] == \
        [f"{path} passed sanity check." for path in paths]
    snaps = [real_corpus / e["file"] for e in exp["snapshots"]]
    lines = jsonl(cli("dump", *snaps, "--json", check=0).stdout)
    text = cli("dump", *snaps, check=0).stdout
    for e, path in zip(exp["snapshots"], snaps):
        got = [o for o in lines if o["type"] == "producer_state" and o["file"] == str(path)]
        assert [(o["producerId"], o["producerEpoch"], o["lastSequence"], o["lastOffset"], o["offsetDelta"],
                 o["timestamp"], o["coordinatorEpoch"]) for o in got] == \
            [(x["producer_id"], x["epoch"], x["last_seq"], x["last_offset"], x["offset_delta"], x["ts"],
              x["coordinator_epoch"]) for x in e["entries"]]
        block = text.split(f"Dumping {path}\n", 1)[1].split("Dumping ", 1)[0].splitlines()
        assert len(block) == len(e["entries"])
        for line, x in zip(block, e["entries"]):
            assert line.startswith(f"producerId: {x['producer_id']} producerEpoch: {x['epoch']} "
                                   f"coordinatorEpoch: {x['coordinator_epoch']} ")
            assert f" lastSequence: {x['last_seq']} lastOffset: {x['last_offset']} offsetDelta: {x['offset_delta']}" in line


def test_dump_kraft_control_records(real_corpus):
    d = real_corpus / "broker-dirs" / "Niloufar1171__LDI-POC"
    p = cli("dump", d / "bootstrap.checkpoint", d / "__cluster_metadata-0", "--records", check=0)
    out = p.stdout
    assert "KRaft bootstrap snapshot" in out
    assert re.search(r" SnapshotHeader \{\"version\":0,\"lastContainedLogTimestamp\":-?\d+\}", out)
    assert " SnapshotFooter {\"version\":0}" in out
    assert re.search(r" LeaderChange: \{\"version\":0,\"leaderId\":\d+,\"voters\":\[", out)


def test_dump_ranges(sample):
    folder = sample / "orders-0"
    p = cli("dump", folder, "--offset-range", "900:905", "--records", "--json", check=0)
    lines = jsonl(p.stdout)
    offs = [o["offset"] for o in lines if o["type"] == "record"]
    assert offs == list(range(900, 905))
    batches = [o for o in lines if o["type"] == "batch"]
    assert batches and all(b["lastOffset"] >= 900 and b["baseOffset"] < 905 for b in batches)
    assert [o["file"] for o in lines if o["type"] == "file"] == [str(folder / "00000000000000000885.log")]
    # time range: offsets-for-times, as a consumer seeking by time
    t1, t2 = 1767225660000, 1767225720000        # 00:01:00Z .. 00:02:00Z
    want = kafkafmt.read_log_dir(folder, start_timestamp=t1, end_timestamp=t2).offset.tolist()
    assert want
    for arg in (f"{t1}:{t2}", "2026-01-01T00:01:00Z..2026-01-01T00:02:00Z", "2026-01-01T00:01:00Z:2026-01-01T00:02:00Z"):
        p = cli("dump", folder, "--time-range", arg, "--records", "--json", check=0)
        assert [o["offset"] for o in jsonl(p.stdout) if o["type"] == "record"] == want, arg
    # --max-bytes: only whole batches within the first N bytes (as kafka-dump-log)
    seg = folder / "00000000000000000000.log"
    p = cli("dump", seg, "--max-bytes", "5000", "--json", check=0)
    bl = [o for o in jsonl(p.stdout) if o["type"] == "batch"]
    allb = kafkafmt.read_segment(seg).batches
    ends = (allb.position.astype(np.int64) + allb.size)
    assert len(bl) == int((ends <= 5000).sum()) and bl[-1]["position"] + bl[-1]["size"] <= 5000


def test_dump_bad_files(real_corpus):
    bad = real_corpus / BAD_CRC
    p = cli("dump", bad, "--records", check=1)
    assert "isvalid: false" in p.stdout
    no_traceback(p)
    z = real_corpus / ZSTD_LABELLED_NONE
    p = cli("dump", z, check=1)
    assert "Skipped 362 corrupt bytes at position 0" in p.stdout
    err = [ln for ln in p.stderr.splitlines() if ln]
    assert len(err) == 1 and z.name in err[0] and "position 0" in err[0]
    no_traceback(p)


# ----------------------------------------------------------------------------------------------
# verify

def test_verify_clean(sample, real_corpus):
    p = cli("verify", "--sample", sample=sample, check=0)
    last = p.stdout.splitlines()[-1]
    assert last.startswith(f"OK: {len(kafkafmt.list_partitions(str(sample)))} partitions") and "0 errors" in last
    p = cli("verify", real_corpus / "broker-dirs", "--json", check=0)
    lines = jsonl(p.stdout)
    summary = lines[-1]
    assert summary["type"] == "summary" and summary["errors"] == 0 and summary["status"] == "OK"
    root = real_corpus / "broker-dirs"
    folders = [f for f in root.rglob("*") if f.is_dir() and re.match(r"^.+-\d+$", f.name)]
    assert summary["partitions"] == len(folders)
    allr = [kafkafmt.read_log_dir(f, include_control=True) for f in folders]
    # and the KRaft bootstrap snapshot beside the partition folders (record batches too)
    allr += [kafkafmt.read_segment(f, include_control=True) for f in root.rglob("*.checkpoint")]
    assert summary["batches"] == sum(len(r.batches) for r in allr)
    assert summary["records"] == sum(len(r) - len(r.controls) for r in allr)
    assert all(o["severity"] == "warning" for o in lines[:-1])


def test_verify_finds_every_problem(sample, tmp_path):
    root = tmp_path / "logs"
    shutil.copytree(sample, root)
    o0 = root / "orders-0"
    seg_a, seg_b = sorted(o0.glob("*.log"))[:2]
    ba = kafkafmt.read_segment(seg_a).batches
    bb = kafkafmt.read_segment(seg_b).batches
    flip(seg_a, int(ba.position[3]) + 70)             # inside batch 3's records: CRC mismatch
    flip(seg_b, int(bb.position[5]) + 100)            # and batch 5 of the next segment
    idx = root / "orders-1" / "00000000000000000000.index"
    entries = sidefiles.read_index(idx)
    raw = bytearray(idx.read_bytes())
    raw[8 * 2 + 4:8 * 2 + 8] = (int(entries["position"][2]) + 1).to_bytes(4, "big")   # entry 2 off by one
    idx.write_bytes(bytes(raw))
    pay = root / "payments-0" / "00000000000000000071.log"
    pay.write_bytes(pay.read_bytes() + b"\x00\x00\x00\x00\x00\x00\x00\x7a\x00\x00\x01\x00garbage")   # torn write
    snap = root / "payments-0" / "00000000000000000122.snapshot"
    sidefiles.write_producer_snapshot(snap, [dict(producer_id=1001, epoch=0, last_sequence=29, last_offset=91,
                                                   offset_delta=0, timestamp=1767225607000)])
    flip(snap, 20)

    p = cli("verify", root, "--json", check=1)
    no_traceback(p)
    lines = jsonl(p.stdout)
    probs = [o for o in lines if o["type"] == "problem" and o["severity"] == "error"]
    summary = lines[-1]
    assert summary["status"] == "FAILED" and summary["errors"] == len(probs)

    def at(path):
        return [o for o in probs if o["file"] == str(path)]

    a = at(seg_a)
    assert len(a) == 1 and a[0]["position"] == int(ba.position[3]) and "CRC" in a[0]["message"]
    assert a[0]["offset"] == int(ba.base_offset[3])
    b = at(seg_b)
    assert len(b) == 1 and b[0]["position"] == int(bb.position[5])
    i = at(idx)
    assert i and i[0]["position"] == 16 and "no batch starts" in " ".join(o["message"] for o in i)
    t = at(pay)
    assert len(t) == 1 and "truncated" in t[0]["message"] and t[0]["position"] == pay.stat().st_size - 19
    s = at(snap)
    assert len(s) == 1 and "CRC" in s[0]["message"] and s[0]["position"] == 2
    # the text form names file and position on each line
    p = cli("verify", root, check=1)
    assert f"error: {seg_a} position {int(ba.position[3])}" in p.stdout
    assert p.stdout.splitlines()[-1].startswith("FAILED:")


# ----------------------------------------------------------------------------------------------
# errors and exit codes

def test_errors_and_exit_codes(sample, tmp_path):
    p = cli("stats", tmp_path / "missing", check=2)
    assert p.stderr.strip() == f"kafkafmt stats: error: no such file or directory: {tmp_path / 'missing'}"
    p = cli("dump", "--no-such-option", check=2)
    no_traceback(p)
    p = cli("export", "--sample", "--to", tmp_path / "out.unknown", sample=sample, check=2)
    assert "format" in p.stderr
    # a corrupt copy: strict export stops with one line naming file, position and offset
    root = tmp_path / "logs"
    shutil.copytree(sample / "orders-0", root / "orders-0")
    seg = sorted((root / "orders-0").glob("*.log"))[0]
    b = kafkafmt.read_segment(seg).batches
    flip(seg, int(b.position[2]) + 80)
    p = cli("export", root, "--to", tmp_path / "o.parquet", check=1)
    err = p.stderr.strip().splitlines()
    assert len(err) == 1
    assert str(seg) in err[0] and f"position {int(b.position[2])}" in err[0] and f"offset {int(b.base_offset[2])}" in err[0]
    assert not (tmp_path / "o.parquet").exists()              # no half-written output
    assert not list(tmp_path.glob(".o.parquet*"))
    p = cli("export", root, "--to", tmp_path / "o.parquet", "--debug", check=1)
    assert "Traceback" in p.stderr
    # --salvage: everything else is exported, the corrupt batch reported, exit 1
    p = cli("export", root, "--to", tmp_path / "o.parquet", "--salvage", check=1)
    import pyarrow.parquet as pq

    n = pq.read_table(tmp_path / "o.parquet").num_rows
    assert n == len(kafkafmt.read_log_dir(sample / "orders-0")) - int(b.record_count[2])
    assert f"position {int(b.position[2])}" in p.stderr
    # stats on the corrupt copy: counts the rest, names the problem, exit 1
    p = cli("stats", root, "--json", check=1)
    assert json.loads(p.stdout)["partitions"][0]["skippedBytes"] == int(b.size[2])


def test_progress_only_on_terminal(sample):
    p = cli("verify", "--sample", sample=sample, check=0)
    assert "\r" not in p.stderr and p.stderr == ""
    p = cli("verify", "--sample", sample=sample, env={"KAFKAFMT_PROGRESS": "1"}, check=0)
    # (text mode reads the bar's carriage returns as newlines)
    first = kafkafmt.list_partitions(str(sample))[0]
    first = f"{first.topic}-{first.partition}"          # the bar names the partition it reads
    assert "B/s" in p.stderr and "records (" in p.stderr and first in p.stderr   # tqdm's bar, our postfix
    p = cli("verify", "--sample", "--quiet", sample=sample, env={"KAFKAFMT_PROGRESS": "1"}, check=0)
    assert p.stderr == ""


def test_broken_pipe_is_quiet(sample):
    e = dict(os.environ, KAFKAFMT_SAMPLE_DIR=str(sample), PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "kafkafmt", "dump", "--sample", "--records", "--print-data"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e)
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert proc.returncode == 0 and "Traceback" not in err and "Broken pipe" not in err


def test_console_script_entry_point(sample, capsys, monkeypatch):
    """pyproject's [project.scripts] kafkafmt = "kafkafmt.__main__:main" resolves to the CLI."""
    import kafkafmt.__main__ as entry

    monkeypatch.setenv("KAFKAFMT_SAMPLE_DIR", str(sample))
    assert entry.main(["stats", "--sample", "--json", "--no-progress"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["totals"]["records"] == len(kafkafmt.read_log_dirs(str(sample)))


# ----------------------------------------------------------------------------------------------
# export

SPARK_KAFKA = [("key", "binary"), ("value", "binary"), ("topic", "string"), ("partition", "int32"),
               ("offset", "int64"), ("timestamp", "timestamp[ms, tz=UTC]"), ("timestampType", "int32"),
               ("headers", "list")]


def test_export_parquet_round_trip(sample, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = tmp_path / "all.parquet"
    p = cli("export", "--sample", "--to", out, sample=sample, check=0)
    assert "exported" in p.stderr
    t = pq.read_table(out)
    assert [(f.name, str(f.type) if f.name != "headers" else "list") for f in t.schema] == SPARK_KAFKA
    hdr = t.schema.field("headers").type
    assert pa.types.is_list(hdr) and hdr.value_type == pa.struct([("key", pa.string()), ("value", pa.binary())])
    want = kafkafmt.read_log_dirs(str(sample))
    assert t.num_rows == len(want)
    assert t.column("offset").to_pylist() == want.offset.tolist()
    assert t.column("topic").to_pylist() == want.topic.tolist()
    assert t.column("partition").to_pylist() == want.partition.tolist()
    assert t.column("key").to_pylist() == want.key.to_pylist()
    assert t.column("value").to_pylist() == want.value.to_pylist()
    assert t.column("timestamp").cast(pa.int64()).to_pylist() == want.timestamp.tolist()
    heads = [None if not h else [{"key": k, "value": v} for k, v in h] for h in want.headers.to_pylist()]
    assert t.column("headers").to_pylist() == heads
    # filters: topic, partition, offsets, read_committed
    out2 = tmp_path / "pay.parquet"
    cli("export", sample, "--topics", "payments,orders", "--partitions", "0", "--offset-range", "10:100",
        "--isolation", "read_committed", "--to", out2, check=0)
    t2 = pq.read_table(out2)
    want2 = [("orders", o) for o in kafkafmt.read_log_dir(sample / "orders-0", start_offset=10, end_offset=100,
                                                           isolation="read_committed").offset.tolist()]
    want2 += [("payments", o) for o in kafkafmt.read_log_dir(sample / "payments-0", start_offset=10, end_offset=100,
                                                               isolation="read_committed").offset.tolist()]
    assert list(zip(t2.column("topic").to_pylist(), t2.column("offset").to_pylist())) == want2


def test_export_arrow_csv_jsonl(sample, tmp_path):
    import pyarrow as pa

    want = kafkafmt.read_log_dir(sample / "orders-1")
    for name in ("o.arrow", "o.feather"):
        cli("export", sample / "orders-1", "--to", tmp_path / name, "--batch-metadata", check=0)
        t = pa.ipc.open_file(str(tmp_path / name)).read_all()
        assert t.num_rows == len(want)
        assert [f.name for f in t.schema][:8] == [n for n, _ in SPARK_KAFKA]
        assert t.column("producerId").to_pylist() == want.batch_column("producer_id").tolist()
    cli("export", sample / "orders-1", "--to", tmp_path / "o.csv", check=0)
    rows = list(csv.DictReader(io.StringIO((tmp_path / "o.csv").read_text())))
    assert len(rows) == len(want)
    assert [base64.b64decode(r["value"]) for r in rows] == want.value.to_pylist()
    assert [int(r["offset"]) for r in rows] == want.offset.tolist()
    assert [int(r["timestamp"]) for r in rows] == want.timestamp.tolist()
    heads = want.headers.to_pylist()
    for r, h in zip(rows, heads):
        assert (json.loads(r["headers"]) if r["headers"] else []) == [{"key": k, "value": b64(v)} for k, v in h]
    cli("export", sample / "orders-1", "--to", tmp_path / "o.jsonl", check=0)
    objs = jsonl((tmp_path / "o.jsonl").read_text())
    assert len(objs) == len(want)
    assert [base64.b64decode(o["key"]) for o in objs] == want.key.to_pylist()
    assert {o["topic"] for o in objs} == {"orders"} and {o["partition"] for o in objs} == {1}
    # to stdout
    p = cli("export", sample / "payments-0", "--to", "-", "--format", "jsonl", "--bytes", "utf8", check=0)
    objs = jsonl(p.stdout)
    assert [o["value"] for o in objs] == [v.decode() for v in kafkafmt.read_log_dir(sample / "payments-0").value.to_pylist()]


def test_export_spark_engine_needs_pyspark(sample, tmp_path):
    import importlib.util

    if importlib.util.find_spec("pyspark") is not None:
        pytest.skip("pyspark is installed: the Spark engine is tested with the Spark data source")
    p = cli("export", "--sample", "--engine", "spark", "--to", tmp_path / "o.parquet", sample=sample, check=2)
    assert "pyspark" in p.stderr
    no_traceback(p)


def test_empty_batches_are_seen(tmp_path):
    """A batch the cleaner emptied (no records) is dumped, counted and checked like any other, also
    when it is alone at the start or end of a segment."""
    folder = tmp_path / "compacted-0"
    with kafkafmt.LogWriter(str(folder)) as w:
        w.append_empty_batch(last_offset=3, timestamp=500)
        w.append(keys=[b"k"], values=[b"v"], timestamps=[1000], offsets=[4])
        w.append_empty_batch(last_offset=9, timestamp=2000)
    seg = segments_of(folder)[0]
    want = kafkafmt.read_segment(seg).batches
    assert want.record_count.tolist() == [0, 1, 0]
    p = cli("dump", folder, "--json", check=0)
    assert [o["lastOffset"] for o in jsonl(p.stdout) if o["type"] == "batch"] == want.last_offset.tolist()
    p = cli("stats", folder, "--json", check=0)
    d = json.loads(p.stdout)["partitions"][0]
    assert d["batches"] == 3 and d["records"] == 1 and d["lastOffset"] == 9
    p = cli("verify", folder, "--json", check=0)
    assert jsonl(p.stdout)[-1]["batches"] == 3


# ----------------------------------------------------------------------------------------------
# one exit-code convention for every command: 0 success / nothing to do, 1 problems found (or
# work a dry run would do), 2 bad usage or input

EXIT_COMMANDS = {
    "dump": lambda tmp: ["dump"],
    "verify": lambda tmp: ["verify"],
    "stats": lambda tmp: ["stats"],
    "report": lambda tmp: ["report", "--json"],
    "export": lambda tmp: ["export", "--to", str(tmp / "out.parquet")],
    "recover": lambda tmp: ["recover"],
}


@pytest.fixture
def exit_inputs(sample, tmp_path):
    """Bad inputs, a clean log dir and a damaged one (a byte flipped inside a batch)."""
    from kafkafmt.cli import main

    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("not Kafka data\n")
    clean = tmp_path / "clean"
    shutil.copytree(sample / "orders-1", clean / "orders-1")
    assert main(["recover", "--apply", "-q", "--backup", str(tmp_path / "bk"), str(clean)]) == 0
    damaged = tmp_path / "damaged"
    shutil.copytree(clean, damaged)
    seg = segments_of(damaged / "orders-1")[0]
    flip(seg, int(kafkafmt.read_segment(seg).batches.position[1]) + 70)
    return {"missing": tmp_path / "missing", "empty dir": tmp_path / "empty", "not Kafka": tmp_path / "notes.txt",
            "clean": clean, "damaged": damaged}


@pytest.mark.parametrize("command", sorted(EXIT_COMMANDS))
def test_exit_code_convention_every_command(command, exit_inputs, tmp_path, capsys):
    """Through the library's entry point (kafkafmt.cli.main, what the console script and
    ``python -m kafkafmt`` call): bad input is 2 with one line on stderr that names the path once
    (never again in parentheses), problems found are 1, a clean log dir is 0."""
    from kafkafmt.cli import main

    args = EXIT_COMMANDS[command](tmp_path)
    for case in ("missing", "empty dir", "not Kafka"):
        capsys.readouterr()
        assert main(args + ["--no-progress", str(exit_inputs[case])]) == 2, (command, case)
        err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
        assert len(err) == 1 and err[0].startswith(f"kafkafmt {command}: error: "), (command, case, err)
        assert err[0].count(str(exit_inputs[case])) == 1 and "(" + str(exit_inputs[case]) not in err[0], err
    assert main(args + ["--no-progress", str(exit_inputs["damaged"])]) == 1, command
    (tmp_path / "out.parquet").unlink(missing_ok=True)
    assert main(args + ["--no-progress", str(exit_inputs["clean"])]) == 0, command
    with pytest.raises(SystemExit) as exc:                       # argparse's own usage errors
        main([command, "--no-such-option"])
    assert exc.value.code == 2


def test_exit_codes_are_documented():
    """The CLI reference (generated from argparse) states the convention, and the one place the
    user guide lists the codes says the same."""
    from kafkafmt.cli import build_parser

    text = build_parser().format_help()
    assert "0 success or nothing to do, 1 problems found (or work a dry run would do), 2 bad usage or input" in \
        " ".join(text.split())
    guide = (REPO / "docs" / "guide" / "command-line.md").read_text()
    assert "Exit codes, every command: 0 success or nothing to do, 1 problems found (or work a dry run would " \
           "do), 2 bad usage or input" in " ".join(guide.split())
