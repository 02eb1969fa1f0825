"""Kafka's internal topics on the command line: ``kafkafmt dump --offsets-decoder |
--transaction-log-decoder | --cluster-metadata-decoder``, decoding by folder name
(``--no-decode-internal``), ``kafkafmt export --internal``, and the bundled sample's
``__consumer_offsets-0`` / ``__cluster_metadata-0`` partitions. Run as subprocesses (as
tests/test_cli.py does) on the sample and the real broker files of ../shared/real-corpus, checked
against `kafkafmt.internal` and, where one exists, an independent reading of the bytes."""
import base64
import csv
import json
import os
import pathlib
import re
import shutil
import struct
import warnings

import numpy as np
import pyarrow.parquet as pq
import pytest

import kafkafmt
import kafkafmt.internal as ki
from kafkafmt import KafkafmtWarning, LogWriter

import kcli

T0 = 1_767_225_600_000
RECORD = re.compile(r"^\| offset: (\d+) ")


# ----------------------------------------------------------------------------------------------
# helpers and fixtures

def cli(*args, sample=None, check=None):
    """kcli.run, and never a traceback."""
    p = kcli.run(*args, sample=sample, check=check)
    assert "Traceback" not in p.stderr, p.stderr
    return p


def jsonl(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def record_lines(text):
    """{offset: record line} of dump's text output."""
    out = {}
    for line in text.splitlines():
        m = RECORD.match(line)
        if m:
            out[int(m.group(1))] = line
    return out


def split_contents(line):
    """(metadata part, key text or None, payload text or None) of a record line."""
    key = payload = None
    head = line
    if " payload: " in line:
        head, payload = line.split(" payload: ", 1)
    if " key: " in head:
        head, key = head.split(" key: ", 1)
    return head, key, payload


def corpus_partitions(real_corpus, topic):
    return sorted(p for p in (real_corpus / "broker-dirs").rglob(f"{topic}-*") if p.is_dir())


def every_record(folder):
    """Non-control records of a partition folder (what the decoders print contents for)."""
    return kafkafmt.read_log_dir(folder)


def _b64(b):
    return None if b is None else base64.b64encode(b).decode()


# ----------------------------------------------------------------------------------------------
# dump --offsets-decoder on real broker files

def test_offsets_decoder_real_corpus_exact_line(real_corpus):
    """One line as Kafka 3.x's DumpLogSegments prints it (field names and order of Kafka's generated
    JSON converters: OffsetCommitKey v1 and OffsetCommitValue v3)."""
    folder = real_corpus / "broker-dirs/Niloufar1171__LDI-POC/__consumer_offsets-6"
    p = cli("dump", folder, "--offsets-decoder", check=0)
    line = record_lines(p.stdout)[1]
    assert line == ('| offset: 1 CreateTime: 1769791663129 keySize: 66 valueSize: 24 sequence: 0 headerKeys: [] '
                    'key: {"type":"1","data":{"group":"DEVSmileCDR","topic":'
                    '"batch2.work.notification.SHR_PROD.persistence","partition":0}} '
                    'payload: {"version":"3","data":{"offset":0,"leaderEpoch":-1,"metadata":"",'
                    '"commitTimestamp":1769791663122}}')
    # the group metadata record: members with their subscription and assignment decoded (protocolType consumer)
    gm = json.loads(split_contents(record_lines(p.stdout)[0])[2])
    assert gm["version"] == "3" and gm["data"]["protocolType"] == "consumer"
    m0 = gm["data"]["members"][0]
    assert set(m0["subscription"]) >= {"topics", "userData"} and "assignedPartitions" in m0["assignment"]


def test_offsets_decoder_real_corpus_every_record(real_corpus):
    folders = corpus_partitions(real_corpus, "__consumer_offsets")
    assert len(folders) >= 7
    p = cli("dump", *folders, "--offsets-decoder", check=0)
    plain = cli("dump", *folders, "--records", "--no-decode-internal", check=0)
    files = [f for f in re.findall(r"^Dumping (.+)$", p.stdout, re.M)]
    assert files == re.findall(r"^Dumping (.+)$", plain.stdout, re.M)
    # per file: the same lines as --records, each record with key/payload appended
    chunks = re.split(r"^Dumping .+$", p.stdout, flags=re.M)[1:]
    plain_chunks = re.split(r"^Dumping .+$", plain.stdout, flags=re.M)[1:]
    total = 0
    for f, text, ptext in zip(files, chunks, plain_chunks):
        got, want = record_lines(text), record_lines(ptext)
        assert sorted(got) == sorted(want), f
        recs = kafkafmt.read_segment(f)
        table = ki.consumer_offsets(recs).to_pylist()
        assert [r["offset"] for r in table] == sorted(got)
        for row, k, v in zip(table, recs.key.to_pylist(), recs.value.to_pylist()):
            head, key, payload = split_contents(got[row["offset"]])
            assert head == want[row["offset"]], f
            assert (key, payload) == ki.dump_text("offsets", k, v, row["offset"])
            # against the C decoder of the table (a separate implementation of the same schemas)
            kj = json.loads(key)
            assert kj["data"]["group"] == row["group"]
            if row["kind"] == "offset_commit":
                assert kj["type"] in ("0", "1")
                assert (kj["data"]["topic"], kj["data"]["partition"]) == (row["topic"], row["partition"])
                if row["tombstone"]:
                    assert payload == "<DELETE>"
                else:
                    pj = json.loads(payload)
                    assert pj["data"]["offset"] == row["committed_offset"]
                    assert pj["data"]["metadata"] == row["metadata"]
                    assert int(pj["version"]) == struct.unpack_from(">h", v)[0]
            else:
                assert row["kind"] == "group_metadata" and kj["type"] == "2"
            total += 1
    assert total == sum(len(every_record(f)) for f in folders) > 50


def test_default_decoding_by_folder_name(real_corpus):
    folder = real_corpus / "broker-dirs/seanorth__kafka-server/kafka-logs/__consumer_offsets-16"
    decoded = cli("dump", folder, "--offsets-decoder", check=0).stdout
    assert cli("dump", folder, "--print-data", check=0).stdout == decoded
    # --no-decode-internal: the bytes, escaped as for any topic
    raw = record_lines(cli("dump", folder, "--print-data", "--no-decode-internal", check=0).stdout)
    recs = every_record(folder)
    from kafkafmt.cli.common import escape_text

    for o, k, v in zip(recs.offset.tolist(), recs.key.to_pylist(), recs.value.to_pylist()):
        _, key, payload = split_contents(raw[o])
        assert key == escape_text(k) and payload == (None if v is None else escape_text(v))
    # without --print-data nothing is decoded: batch lines only, as for any topic
    a = cli("dump", folder, check=0).stdout
    assert a == cli("dump", folder, "--no-decode-internal", check=0).stdout and "key:" not in a


def test_decoders_exclusive_and_on_other_topics(sample):
    p = cli("dump", sample / "orders-0", "--offsets-decoder", "--cluster-metadata-decoder")
    assert p.returncode == 2 and "not allowed with" in p.stderr
    # a decoder given explicitly applies to any file (as Kafka's does): order keys are no coordinator keys
    seg = sample / "payments-0" / "00000000000000000000.log"
    p = cli("dump", seg, "--offsets-decoder", check=0)
    lines = record_lines(p.stdout)
    recs = kafkafmt.read_segment(seg)
    for o, k, v in zip(recs.offset.tolist(), recs.key.to_pylist(), recs.value.to_pylist()):
        _, key, payload = split_contents(lines[o])
        want = ki.dump_text("offsets", k, v, o)
        assert (key, payload) == want
        assert key.startswith(("Unknown record type", "Error at offset")) and payload is None
    # a record without a key: Kafka's decoder fails there; here an error on stderr, exit code 1
    clicks = sorted((sample / "clicks-0").glob("*.log"))[-1]
    p = cli("dump", clicks, "--offsets-decoder", check=1)
    assert "message had a missing key" in p.stderr
    crecs = kafkafmt.read_segment(clicks)
    keyless = [o for o, k in zip(crecs.offset.tolist(), crecs.key.to_pylist()) if k is None]
    assert keyless and all("key:" not in record_lines(p.stdout)[o] for o in keyless)


# ----------------------------------------------------------------------------------------------
# dump --cluster-metadata-decoder

def test_cluster_metadata_decoder_real_corpus(real_corpus):
    folder = real_corpus / "broker-dirs/Niloufar1171__LDI-POC/__cluster_metadata-0"
    p = cli("dump", folder, "--cluster-metadata-decoder", check=0)
    assert cli("dump", folder, "--print-data", check=0).stdout == p.stdout      # by folder name
    lines = record_lines(p.stdout)
    every = kafkafmt.read_log_dir(folder, include_control=True)
    assert sorted(lines) == every.offset.tolist()
    recs = every_record(folder)
    table = ki.cluster_metadata(recs).to_pylist()
    ctl = set(every.controls["offset"].tolist())
    assert ctl and all("payload:" not in lines[o] and "key:" not in lines[o] for o in ctl)
    seen = set()
    for row, v in zip(table, recs.value.to_pylist()):
        _, key, payload = split_contents(lines[row["offset"]])
        assert key is None
        assert payload == ki.dump_text("cluster-metadata", None, v, row["offset"])[1]
        pj = json.loads(payload)
        # the type name Kafka's MetadataRecordType prints, from the frame's api key (read here by hand)
        assert v[0] in (0, 1) and v[1] < 0x80
        assert pj["type"] == ki.metadata_type_enum_name(v[1]) and pj["version"] == row["version"]
        assert pj["data"] == json.loads(row["fields"])
        seen.add(pj["type"])
    assert {"TOPIC_RECORD", "PARTITION_RECORD", "REGISTER_BROKER_RECORD", "FEATURE_LEVEL_RECORD"} <= seen
    # LeaderChange control records keep Kafka's control text
    assert any(" LeaderChange: {" in lines[o] for o in ctl)


def test_kraft_bootstrap_snapshot_decoded_by_default(real_corpus):
    snap = real_corpus / "broker-dirs/Niloufar1171__LDI-POC/bootstrap.checkpoint"
    p = cli("dump", snap, "--print-data", check=0)
    assert p.stdout == cli("dump", snap, "--cluster-metadata-decoder", check=0).stdout
    assert '"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version","featureLevel":19}' \
        in p.stdout
    raw = cli("dump", snap, "--print-data", "--no-decode-internal", check=0).stdout
    assert "FEATURE_LEVEL_RECORD" not in raw and "payload: " in raw


# ----------------------------------------------------------------------------------------------
# JSON lines

def test_json_record_lines_carry_decoded_objects(sample, real_corpus):
    for folder, decoder in ((sample / "__consumer_offsets-0", "offsets"),
                            (real_corpus / "broker-dirs/Niloufar1171__LDI-POC/__cluster_metadata-0",
                             "cluster-metadata")):
        p = cli("dump", folder, "--records", "--json", check=0)
        rl = [o for o in jsonl(p.stdout) if o["type"] == "record"]
        recs = kafkafmt.read_log_dir(folder, include_control=True)
        assert [o["offset"] for o in rl] == recs.offset.tolist()
        for o, k, v in zip(rl, recs.key.to_pylist(), recs.value.to_pylist()):
            assert o["key"] == _b64(k) and o["value"] == _b64(v)       # the bytes stay
            if o["isControl"]:
                assert "decoder" not in o
                continue
            assert o["decoder"] == decoder and "decodeError" not in o
            kt, vt = ki.dump_text(decoder, k, v, o["offset"])
            assert o["decodedKey"] == (None if kt is None else json.loads(kt))
            assert o["decodedValue"] == (None if vt == "<DELETE>" else json.loads(vt))
        n = sum(1 for o in rl if not o["isControl"])
        assert n == len(kafkafmt.read_log_dir(folder)) > 0
        p = cli("dump", folder, "--records", "--json", "--no-decode-internal", check=0)
        assert not any("decoder" in o for o in jsonl(p.stdout))
    # tombstones: decodedValue null, the key still decoded
    p = cli("dump", sample / "__consumer_offsets-0", "--records", "--json", check=0)
    dead = [o for o in jsonl(p.stdout) if o["type"] == "record" and o["value"] is None]
    assert len(dead) == 2 and all(o["decodedValue"] is None and o["decodedKey"]["data"]["group"] == "old-reports"
                                  for o in dead)
    # an undecodable record says why
    p = cli("dump", sample / "payments-0" / "00000000000000000000.log", "--records", "--json",
            "--transaction-log-decoder", check=0)
    rl = [o for o in jsonl(p.stdout) if o["type"] == "record"]
    assert rl and all(o["decodeError"].startswith(("Unknown record type", "Error at offset")) for o in rl)


# ----------------------------------------------------------------------------------------------
# __transaction_state (no real broker files of it here: written with the schema encoder)

def _transaction_log(root):
    folder = root / "__transaction_state-0"
    tps = [{"Topic": "payments", "PartitionIds": [0]}]
    values = []
    for i, (status, parts) in enumerate([(0, []), (1, tps), (2, tps), (4, [])]):
        values.append(ki.encode_transaction_record("payments-tx", 1, {
            "ProducerId": 1001, "ProducerEpoch": 0, "TransactionTimeoutMs": 60000, "TransactionStatus": status,
            "TransactionPartitions": parts, "TransactionLastUpdateTimestampMs": T0 + i,
            "TransactionStartTimestampMs": T0 if status else -1}))
    values.append(ki.encode_transaction_record("payments-tx"))      # expired: a tombstone
    with LogWriter(folder) as w:
        for i, (k, v) in enumerate(values):
            w.append(keys=[k], values=[v], timestamps=[T0 + i])
    return folder


def test_transaction_log_decoder_and_export(tmp_path):
    folder = _transaction_log(tmp_path)
    p = cli("dump", folder, "--transaction-log-decoder", check=0)
    assert cli("dump", folder, "--print-data", check=0).stdout == p.stdout
    lines = record_lines(p.stdout)
    assert len(lines) == 5
    first = split_contents(lines[1])
    assert first[1] == '{"type":"0","data":{"transactionalId":"payments-tx"}}'
    pj = json.loads(first[2])
    assert pj["version"] == "1" and pj["data"]["producerId"] == 1001 and pj["data"]["transactionStatus"] == 1
    assert pj["data"]["transactionPartitions"] == [{"topic": "payments", "partitionIds": [0]}]
    assert split_contents(lines[4])[2] == "<DELETE>"
    out = tmp_path / "tx.parquet"
    cli("export", tmp_path, "--internal", "transaction_state", "--to", out, check=0)
    want = ki.transaction_state(kafkafmt.read_log_dirs(str(tmp_path), topics=["__transaction_state"]))
    got = pq.read_table(out)
    assert got.schema == ki.schema_of("transaction_state") and got.equals(want)
    assert got.column("status").to_pylist() == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit", None]


# ----------------------------------------------------------------------------------------------
# export --internal

@pytest.mark.parametrize("name", ["consumer_offsets", "group_members", "cluster_metadata"])
def test_export_internal_equals_library_sample_and_corpus(name, sample, real_corpus, tmp_path):
    topic = {"cluster_metadata": "__cluster_metadata"}.get(name, "__consumer_offsets")
    for root in (sample, real_corpus / "broker-dirs"):
        out = tmp_path / f"{name}.parquet"
        p = cli("export", root, "--internal", name, "--to", out, check=0)
        with warnings.catch_warnings():
            warnings.simplefilter("error", KafkafmtWarning)       # nothing unknown in these
            want = getattr(ki, name)(kafkafmt.read_log_dirs(str(root), topics=[topic]))
        got = pq.read_table(out)
        assert got.schema == ki.schema_of(name)
        assert got.num_rows == want.num_rows > 0
        assert got.equals(want), name
        assert f"exported {want.num_rows} {name} rows" in p.stderr
    # Arrow IPC too
    out = tmp_path / f"{name}.arrow"
    cli("export", sample, "--internal", name, "--to", out, check=0)
    import pyarrow as pa

    with pa.ipc.open_file(out) as f:
        assert f.read_all().equals(getattr(ki, name)(kafkafmt.read_log_dirs(str(sample), topics=[topic])))


def test_export_internal_jsonl_and_csv(sample, tmp_path):
    want = ki.consumer_offsets(kafkafmt.read_log_dirs(str(sample), topics=["__consumer_offsets"])).to_pylist()
    p = cli("export", "--sample", "--internal", "consumer_offsets", "--to", "-", "--format", "jsonl",
            sample=sample, check=0)
    rows = jsonl(p.stdout)
    assert len(rows) == len(want)
    for got, w in zip(rows, want):
        assert list(got) == list(w)
        for k, v in w.items():
            if hasattr(v, "timestamp"):
                v = round(v.timestamp() * 1000)
            elif isinstance(v, bytes):
                v = _b64(v)
            assert got[k] == v, k
    out = tmp_path / "co.csv"
    cli("export", "--sample", "--internal", "consumer_offsets", "--to", out, sample=sample, check=0)
    with open(out, newline="") as f:
        table = list(csv.reader(f))
    assert table[0] == ki.schema_of("consumer_offsets").names
    assert len(table) == len(want) + 1
    col = table[0].index("committed_offset")
    assert [int(r[col]) if r[col] else None for r in table[1:]] == [w["committed_offset"] for w in want]
    tomb = table[0].index("tombstone")
    assert {r[tomb] for r in table[1:]} == {"true", "false"}
    # group_members in CSV: the nested columns as JSON
    out = tmp_path / "gm.csv"
    cli("export", "--sample", "--internal", "group_members", "--to", out, sample=sample, check=0)
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    gm = ki.group_members(kafkafmt.read_log_dirs(str(sample), topics=["__consumer_offsets"])).to_pylist()
    assert [json.loads(r["assignment"]) if r["assignment"] else None for r in rows] == [g["assignment"] for g in gm]


def test_export_internal_streams_chunks(real_corpus, tmp_path, monkeypatch, capsys):
    """Many small chunks give the same table as one call on the whole partition."""
    import kafkafmt.cli.reading as reading_mod
    from kafkafmt.cli import main

    monkeypatch.setattr(reading_mod, "CHUNK_BYTES", 4096)      # the chunk size of every command's reads
    root = real_corpus / "broker-dirs/Niloufar1171__LDI-POC"
    out = tmp_path / "cm.parquet"
    assert main(["export", str(root), "--internal", "cluster_metadata", "--to", str(out), "--no-progress"]) == 0
    whole = kafkafmt.read_log_dir(root / "__cluster_metadata-0")
    chunks = list(kafkafmt.iter_log_dir(root / "__cluster_metadata-0", max_bytes=4096))
    assert len(chunks) > 20
    got = pq.read_table(out)
    assert got.equals(ki.cluster_metadata(whole))


def test_export_internal_reads_kraft_snapshots(sample, tmp_path):
    """.checkpoint snapshots in a __cluster_metadata folder: their rows first, then the log's."""
    root = tmp_path / "logs"
    shutil.copytree(sample / "__cluster_metadata-0", root / "__cluster_metadata-0")
    shutil.copytree(sample / "orders-0", root / "orders-0")
    # a snapshot: metadata records written with the encoder, in a segment renamed as Kafka names snapshots
    values = [ki.encode_metadata_record(2, 0, {"Name": "snap-topic", "TopicId": bytes(range(16))}),
              ki.encode_metadata_record(12, 0, {"Name": "metadata.version", "FeatureLevel": 19})]
    with LogWriter(tmp_path / "snap-0") as w:
        w.append(keys=[None, None], values=values, timestamps=[T0, T0])
    snap = root / "__cluster_metadata-0" / "00000000000000000030-0000000001.checkpoint"
    shutil.copy(tmp_path / "snap-0" / "00000000000000000000.log", snap)
    out = tmp_path / "cm.parquet"
    p = cli("export", root, "--internal", "cluster_metadata", "--to", out, check=0)
    assert "1 snapshots" in p.stderr
    got = pq.read_table(out)
    want_snap = ki.cluster_metadata(kafkafmt.read_segment(snap))
    want_log = ki.cluster_metadata(kafkafmt.read_log_dir(root / "__cluster_metadata-0"))
    assert got.num_rows == want_snap.num_rows + want_log.num_rows
    assert got.slice(0, 2).equals(want_snap) and got.slice(2).equals(want_log)
    assert got.column("topic_name").to_pylist()[0] == "snap-topic"
    # dump decodes the snapshot by default
    d = cli("dump", snap, "--print-data", check=0)
    assert "Snapshot end offset: 30, epoch: 1" in d.stdout and '"type":"TOPIC_RECORD"' in d.stdout


def test_export_internal_usage_errors(sample, tmp_path):
    out = tmp_path / "x.parquet"
    p = cli("export", sample, "--internal", "consumer_offsets", "--topics", "orders", "--to", out, check=2)
    assert "__consumer_offsets" in p.stderr
    cli("export", sample, "--internal", "consumer_offsets", "--topics", "__consumer_offsets", "--to", out, check=0)
    p = cli("export", sample, "--internal", "consumer_offsets", "--engine", "spark", "--to", out, check=2)
    assert "--engine spark" in p.stderr
    p = cli("export", sample, "--internal", "transaction_state", "--to", out, check=2)
    assert "no __transaction_state partition" in p.stderr
    p = cli("export", sample, "--internal", "offsets", "--to", out)
    assert p.returncode == 2 and "invalid choice" in p.stderr
    choices = re.search(r"--internal \{([a-z_,]+)\}", cli("export", "--help", check=0).stdout).group(1)
    assert tuple(choices.split(",")) == tuple(ki.TABLES)


@pytest.mark.parametrize("name", ["consumer_offsets", "transaction_state", "cluster_metadata"])
def test_export_internal_reads_only_its_own_topic(name, sample, real_corpus, tmp_path):
    """Loose segments of user topics under a root are not an internal table's input (they were
    exported as rows with errors); the topic's own partitions are, and files named explicitly."""
    root = tmp_path / "root"
    loose = root / "loose"
    loose.mkdir(parents=True)
    for seg in sorted((pathlib.Path(sample) / "orders-0").glob("*.log"))[:3]:
        shutil.copy(seg, loose / seg.name)
    topic = ki.TOPIC_OF[name]
    out = tmp_path / "x.parquet"
    p = cli("export", root, "--internal", name, "--to", out, check=2)
    assert f"no {topic} partition" in p.stderr
    # beside real partitions of the topic: exactly the library's table of those partitions
    own = [f for f in pathlib.Path(sample).iterdir() if f.name.startswith(topic + "-")]
    for f in own:
        shutil.copytree(f, root / f.name)
    if own:
        cli("export", root, "--internal", name, "--to", out, check=0)
        want = getattr(ki, name)(kafkafmt.read_log_dirs(str(root), topics=[topic]))
        assert pq.read_table(out).equals(want)


def test_export_internal_partitions_filter(real_corpus, tmp_path):
    out = tmp_path / "co.parquet"
    root = real_corpus / "broker-dirs"
    cli("export", root, "--internal", "consumer_offsets", "--partitions", "6,16", "--to", out, check=0)
    folders = [f for f in corpus_partitions(real_corpus, "__consumer_offsets") if f.name.endswith(("-6", "-16"))]
    want = [ki.consumer_offsets(kafkafmt.read_log_dir(f)) for f in folders]
    got = pq.read_table(out)
    assert got.num_rows == sum(t.num_rows for t in want) > 0
    assert sorted(got.column("group").to_pylist(), key=str) == sorted(
        [g for t in want for g in t.column("group").to_pylist()], key=str)


# ----------------------------------------------------------------------------------------------
# the bundled sample's internal topics

def test_sample_internal_partitions_decode_cleanly(sample):
    with warnings.catch_warnings():
        warnings.simplefilter("error", KafkafmtWarning)
        co_recs = kafkafmt.read_log_dir(sample / "__consumer_offsets-0")
        co = ki.consumer_offsets(co_recs).to_pylist()
        gm = ki.group_members(co_recs).to_pylist()
        cm = ki.cluster_metadata(kafkafmt.read_log_dir(sample / "__cluster_metadata-0")).to_pylist()
    for rows in (co, gm, cm):
        assert rows and all(r["error"] is None for r in rows)
    assert all(r.get("raw_key") is None and r.get("raw_value") is None for r in co + cm)
    data_parts = {(t, n): folder for t, n, folder in kafkafmt.list_partitions(str(sample))
                  if not t.startswith("__cluster_metadata")}
    # offset commits name real partitions, never beyond their log end, and never go back per group
    last = {}
    for r in co:
        if r["kind"] != "offset_commit":
            continue
        assert (r["topic"], r["partition"]) in data_parts
        if r["tombstone"]:
            assert r["committed_offset"] is None
            continue
        end = int(kafkafmt.read_log_dir(data_parts[(r["topic"], r["partition"])],
                                        include_control=True).offset[-1]) + 1
        assert 0 <= r["committed_offset"] <= end
        key = (r["group"], r["topic"], r["partition"])
        assert r["committed_offset"] >= last.get(key, 0)
        last[key] = r["committed_offset"]
    assert {g for g, _, _ in last} == {"billing", "analytics", "old-reports"}
    assert sum(r["tombstone"] for r in co) == 2
    # members with consumer-protocol subscriptions and assignments that cover their subscribed topics
    members = [r for r in gm if r["member_id"] is not None]
    assert {r["group"] for r in members} == {"billing", "analytics", "old-reports"}
    for r in members:
        assert r["protocol_type"] == "consumer" and r["subscription"]
        assert {a["topic"] for a in r["assignment"]} <= set(r["subscription"])
    # cluster metadata: a TopicRecord per topic, with the id the partition folders hold
    topics = {r["topic_name"]: r["topic_id"] for r in cm if r["record_type"] == "TopicRecord"}
    assert set(topics) == {t for t, _ in data_parts}
    for (t, n), folder in data_parts.items():
        md = kafkafmt.read_partition_metadata(os.path.join(folder, "partition.metadata"))
        assert topics[t] == md["topic_id"]
        prow = [r for r in cm if r["record_type"] == "PartitionRecord" and r["topic_id"] == md["topic_id"]
                and r["partition_id"] == n]
        assert len(prow) == 1 and prow[0]["leader"] == 0 and prow[0]["replicas"] == [0]
    kinds = {r["record_type"] for r in cm}
    assert {"RegisterBrokerRecord", "ConfigRecord", "FeatureLevelRecord", "PartitionRecord"} <= kinds
    assert ("topic:customers", "cleanup.policy", "compact") in {
        (r["config_resource"], r["config_name"], r["config_value"]) for r in cm if r["record_type"] == "ConfigRecord"}


def test_sample_dump_decodes_internal_partitions(sample):
    p = cli("dump", "--sample", "--print-data", sample=sample, check=0)
    assert "kafkafmt:" not in p.stderr and "error" not in p.stderr     # (the compacted topic's offset gaps are listed)
    parts = re.split(r"^Dumping ", p.stdout, flags=re.M)
    for chunk in parts[1:]:
        name = chunk.splitlines()[0]
        lines = record_lines(chunk)
        if "/__consumer_offsets-" in name:
            assert lines and all('key: {"type":"' in line for line in lines.values())
        elif "/__cluster_metadata-" in name:
            assert lines and all('payload: {"type":"' in line for line in lines.values())
        else:
            assert not any('key: {"type":"' in line for line in lines.values())
