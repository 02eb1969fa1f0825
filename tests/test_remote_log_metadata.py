"""__remote_log_metadata (KIP-405's topic-based RemoteLogMetadataManager) as a table through every door
(kafkafmt.internal, ``dump --remote-log-metadata-decoder``, ``export --internal``, Spark's ``decode``), each
segment's current state, and the tiered audit (library, ``verify``, ``report``) against a LocalTieredStorage
layout.

The events are written byte by byte here from Kafka's message specs
(storage/src/main/resources/message/RemoteLog*.json, RemotePartitionDeleteMetadataRecord.json) and
RemoteLogMetadataSerde's frame, not with kafkafmt's encoder; the metadata partition of each user partition
is Kafka's RemoteLogMetadataTopicPartitioner, written here from Kafka's Utils.murmur2 and Java's
Objects.hash (checked against Kafka's own murmur2 test vectors). The expected dump texts follow Kafka's
toString methods (RemoteLogSegmentMetadata & co.).
"""
import base64
import datetime
import json
import shutil
import struct
import uuid

import pyarrow.parquet as pq
import pytest

import kafkafmt
from kafkafmt import internal
from kafkafmt.report import audit_tiered

import kcli

RLMM = "__remote_log_metadata"
T0 = 1_767_225_600_000
SECOND = 1000
STATES = ["COPY_SEGMENT_STARTED", "COPY_SEGMENT_FINISHED", "DELETE_SEGMENT_STARTED", "DELETE_SEGMENT_FINISHED"]
DELETE_STATES = ["DELETE_PARTITION_MARKED", "DELETE_PARTITION_STARTED", "DELETE_PARTITION_FINISHED"]
CORRUPT = b"corrupted"          # frame version 99: what Kafka's DumpLogSegmentsTest writes


# --- Kafka's partitioner, from Utils.murmur2 and Objects.hash ----------------------------------------------

def _i32(v):
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def murmur2(data):
    m, h = 0x5BD1E995, _i32(0x9747B28C ^ len(data))
    n4 = len(data) // 4
    for i in range(n4):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = _i32((h * m) ^ k)
    rest, tail = len(data) % 4, data[4 * n4:]
    if rest >= 3:
        h ^= tail[2] << 16
    if rest >= 2:
        h ^= tail[1] << 8
    if rest >= 1:
        h = _i32((h ^ tail[0]) * m)
    h = _i32(h ^ ((h & 0xFFFFFFFF) >> 13))
    h = _i32(h * m)
    return _i32(h ^ ((h & 0xFFFFFFFF) >> 15))


def metadata_partition(topic_id, partition, n=50):
    u = uuid.UUID(bytes=topic_id)
    msb, lsb = u.int >> 64, u.int & ((1 << 64) - 1)
    h = 1
    for v in (lsb, msb):                        # Objects.hash(lsb, msb, partition): Long.hashCode, Integer.hashCode
        h = _i32(31 * h + _i32(v ^ (v >> 32)))
    h = _i32(31 * h + partition)
    return (murmur2(struct.pack(">i", h)) & 0x7FFFFFFF) % n


def test_murmur2_is_kafkas():
    """Kafka's UtilsTest.testMurmur2 vectors, then the partitioner itself against kafkafmt's."""
    for text, want in [("21", -973932308), ("foobar", -790332482), ("a-little-bit-long-string", -985981536),
                       ("a-little-bit-longer-string", -1486304829), ("abc", 479470107),
                       ("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971)]:
        assert murmur2(text.encode()) == want
    for tid in (TID_ORDERS, TID_CLICKS, bytes(16), b"\xff" * 16):
        for p in (0, 1, 7, 4095):
            for n in (50, 7):
                assert internal.metadata_partition(tid, p, n) == metadata_partition(tid, p, n)
                assert internal.metadata_partition(_text(tid), p, n) == metadata_partition(tid, p, n)


# --- the encoder: RemoteLogMetadataSerde's frame and the four message specs --------------------------------

def _uv(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _str(s):
    b = s.encode()
    return _uv(len(b) + 1) + b


def _bytes(b):
    return b"\x00" if b is None else _uv(len(b) + 1) + b


def _tags(tags):
    """A tagged-field section: {tag: bytes}, ascending."""
    return _uv(len(tags)) + b"".join(_uv(t) + _uv(len(v)) + v for t, v in sorted(tags.items()))


def _tip(topic, tid, partition):
    return _str(topic) + tid + struct.pack(">i", partition) + _tags({})


def _frame(api_key, version, body):
    return _uv(1) + _uv(api_key) + _uv(version) + body


def enc_segment(ev):
    epochs = _uv(len(ev["epochs"]) + 1) + b"".join(struct.pack(">iq", e, o) + _tags({}) for e, o in ev["epochs"])
    tags = {} if ev.get("txn_empty") is None else {0: b"\x01" if ev["txn_empty"] else b"\x00"}
    body = (_tip(ev["topic"], ev["tid"], ev["partition"]) + ev["sid"] + _tags({})
            + struct.pack(">qqiqq", ev["start"], ev["end"], ev["broker"], ev["max_ts"], ev["ts"]) + epochs
            + struct.pack(">i", ev["size"]) + _bytes(ev.get("custom")) + struct.pack(">b", ev["state"]) + _tags(tags))
    return _frame(0, 0, body)


def enc_update(ev):
    version, tags = 0, {}
    if ev.get("broker_epoch") is not None:           # version 1: BrokerLeaderEpoch tag 0, EndOffset tag 1
        version, tags = 1, {0: struct.pack(">i", ev["broker_epoch"]), 1: struct.pack(">q", ev["end"])}
    body = (_tip(ev["topic"], ev["tid"], ev["partition"]) + ev["sid"] + _tags({})
            + struct.pack(">iq", ev["broker"], ev["ts"]) + _bytes(ev.get("custom")) + struct.pack(">b", ev["state"])
            + _tags(tags))
    return _frame(1, version, body)


def enc_delete(ev):
    body = _tip(ev["topic"], ev["tid"], ev["partition"]) + struct.pack(">iqb", ev["broker"], ev["ts"], ev["state"]) \
        + _tags({})
    return _frame(2, 0, body)


def _text(b):
    return base64.urlsafe_b64encode(b).decode().rstrip("=")


def _ts(ms):
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)


# --- the expected outputs: the table's row, kafka-dump-log's text --------------------------------------------

def expected_row(ev):
    kind = ev["kind"]
    seg = kind == "segment_metadata"
    return {
        "kind": kind, "api_key": {"segment_metadata": 0, "segment_update": 1, "partition_delete": 2}[kind],
        "version": 1 if ev.get("broker_epoch") is not None else 0,
        "topic": ev["topic"], "topic_id": _text(ev["tid"]), "partition": ev["partition"],
        "segment_id": None if kind == "partition_delete" else _text(ev["sid"]),
        "start_offset": ev["start"] if seg else None,
        "end_offset": ev["end"] if seg or ev.get("broker_epoch") is not None else None,
        "broker_id": ev["broker"], "max_timestamp": _ts(ev["max_ts"]) if seg else None,
        "event_timestamp": _ts(ev["ts"]), "segment_size_in_bytes": ev["size"] if seg else None,
        "segment_leader_epochs": [{"leader_epoch": e, "offset": o} for e, o in ev["epochs"]] if seg else None,
        "custom_metadata": ev.get("custom"),
        "state": (DELETE_STATES if kind == "partition_delete" else STATES)[ev["state"]],
        "txn_index_empty": bool(ev.get("txn_empty")) if seg else None,
        "broker_leader_epoch": ev.get("broker_epoch"), "error": None, "raw_value": None,
    }


def expected_text(ev):
    tip = f"{_text(ev['tid'])}:{ev['topic']}-{ev['partition']}"
    if ev["kind"] == "partition_delete":
        return (f"RemotePartitionDeleteMetadata{{topicPartition={tip}, state={DELETE_STATES[ev['state']]}, "
                f"eventTimestampMs={ev['ts']}, brokerId={ev['broker']}}}")
    sid = f"RemoteLogSegmentId{{topicIdPartition={tip}, id={_text(ev['sid'])}}}"
    custom = "Optional.empty" if ev.get("custom") is None else f"Optional[CustomMetadata{{{len(ev['custom'])} bytes}}]"
    if ev["kind"] == "segment_update":
        return (f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={sid}, customMetadata={custom}, "
                f"state={STATES[ev['state']]}, eventTimestampMs={ev['ts']}, brokerId={ev['broker']}}}")
    epochs = "{" + ", ".join(f"{e}={o}" for e, o in sorted(ev["epochs"])) + "}"
    return (f"RemoteLogSegmentMetadata{{remoteLogSegmentId={sid}, startOffset={ev['start']}, endOffset={ev['end']}, "
            f"brokerId={ev['broker']}, maxTimestampMs={ev['max_ts']}, eventTimestampMs={ev['ts']}, "
            f"segmentLeaderEpochs={epochs}, segmentSizeInBytes={ev['size']}, customMetadata={custom}, "
            f"state={STATES[ev['state']]}, txnIdxEmpty={'true' if ev.get('txn_empty') else 'false'}}}")


# --- the scenario -----------------------------------------------------------------------------------------------

TID_ORDERS = bytes.fromhex("6f72646572732d746f7069632d696421")
TID_CLICKS = bytes.fromhex("636c69636b732d746f7069632d696421")
TID_GONE = bytes.fromhex("676f6e652d2d2d746f7069632d696421")
RECORDS, PER_SEGMENT = 120, 30


def _pick():
    """Two metadata partitions, and user partitions whose events go there (Kafka's partitioner): orders pa, pb;
    clicks pc, pd; gone pe; and orders pu, whose events would go to a third metadata partition."""
    m1 = metadata_partition(TID_ORDERS, 0)
    counts = {}
    for p in range(1, 400):
        counts.setdefault(metadata_partition(TID_ORDERS, p), []).append(p)
    m2 = max((m for m in counts if m != m1), key=lambda m: (len(counts[m]), -m))
    held = {m1, m2}
    pb = counts[m2][0]
    clicks = [p for p in range(1000) if metadata_partition(TID_CLICKS, p) in held][:2]
    pe = next(p for p in range(1000) if metadata_partition(TID_GONE, p) in held)
    pu = next(p for p in range(1, 1000) if metadata_partition(TID_ORDERS, p) not in held)
    return held, {"pa": ("orders", TID_ORDERS, 0), "pb": ("orders", TID_ORDERS, pb), "pc": ("clicks", TID_CLICKS, clicks[0]),
                  "pd": ("clicks", TID_CLICKS, clicks[1]), "pe": ("gone", TID_GONE, pe), "pu": ("orders", TID_ORDERS, pu)}


def _sid(name, i):
    return uuid.uuid5(uuid.NAMESPACE_OID, f"{name}/{i}").bytes


class Scenario:
    """The events (per metadata partition, in order) and what the remote storage and log dir hold, with or
    without the faults."""

    def __init__(self, source, faults):
        self.held, self.parts = _pick()
        self.source = source           # {name: (folder, [(base, end, {suffix: path})])}
        self.events = {m: [] for m in self.held}
        self.clock = T0
        self.uploads = {}              # name -> [(segment index, sid, truncate)]
        self.local = {}                # name -> [segment index]
        self.orphans = []              # (name, segment index, sid)
        self.faults = faults
        self.expected = []             # (check, topic, partition, sid text, start, end, expected bytes, actual bytes)
        self.build()

    def seg(self, name, i):
        return self.source[name][1][i]

    def add(self, name, kind, **kw):
        topic, tid, p = self.parts[name]
        self.clock += 10 * SECOND
        ts = kw.pop("ts", None)
        ev = dict(kind=kind, topic=topic, tid=tid, partition=p, broker=kw.pop("broker", 1),
                  ts=self.clock if ts is None else ts, **kw)
        self.events[metadata_partition(tid, p)].append(ev)
        return ev

    def copy(self, name, i, *, finish=True, custom=None, txn_empty=None, epochs=None, broker_epoch=None, ts=None,
             broker=1):
        base, end, files = self.seg(name, i)
        sid = _sid(name, i)
        self.add(name, "segment_metadata", sid=sid, start=base, end=end, max_ts=T0 + end, size=files[".log"].stat().st_size,
                 epochs=epochs or [(0, base)], state=0, txn_empty=txn_empty, ts=ts, broker=broker)
        if finish:
            self.add(name, "segment_update", sid=sid, custom=custom, state=1, broker_epoch=broker_epoch, end=end,
                     broker=broker)
        return sid

    def build(self):
        f = self.faults
        # orders pa: segment 0 copied (custom metadata on the finish) and later deleted; 1 and 2 copied
        sid0 = self.copy("pa", 0, custom=b"\x0a\x0b\x0c")
        sid1 = self.copy("pa", 1, txn_empty=True, epochs=[(0, self.seg("pa", 1)[0]), (2, self.seg("pa", 1)[0] + 5)])
        sid2 = self.copy("pa", 2, txn_empty=False)
        self.add("pa", "segment_update", sid=sid0, custom=b"\x0a\x0b\x0c", state=2)
        self.add("pa", "segment_update", sid=sid0, custom=b"\x0a\x0b\x0c", state=3)
        self.uploads["pa"] = [(1, sid1, 0)] + ([(0, sid0, 0)] if f else [(2, sid2, 0)])
        self.local["pa"] = [2, 3]
        if f:           # 2's upload gone; 0's, deleted, still there
            self.expect("missing_upload", "pa", 2, sid2, expected=True)
            self.expect("orphan_upload", "pa", 0, sid0, actual=0)
        # orders pb: 0 and 1 copied (1's finish a version-1 update); with faults 1's upload cut short and 2's
        # copy started more than an hour before the last event, never finished
        self.copy("pb", 0)
        sid1 = self.copy("pb", 1, broker_epoch=7)
        self.uploads["pb"] = [(0, _sid("pb", 0), 0), (1, sid1, 10 if f else 0)]
        self.local["pb"] = [2, 3]
        if f:
            self.expect("wrong_size", "pb", 1, sid1, expected=True, actual=-10)
            sid2 = self.copy("pb", 2, finish=False, ts=T0 + 1000 * SECOND)
            self.expect("stale_copy", "pb", 2, sid2)
        # clicks pc: 0 and 1 copied; with faults an upload of 2 no event names
        self.copy("pc", 0)
        self.copy("pc", 1, broker=2)
        self.uploads["pc"] = [(0, _sid("pc", 0), 0), (1, _sid("pc", 1), 0)]
        self.local["pc"] = [2, 3]
        if f:
            orphan = _sid("pc", 99)
            self.uploads["pc"].append((2, orphan, 0))
            self.expect("orphan_upload", "pc", 2, orphan, end=None, actual=0)
        # clicks pd: 0 and 1 copied; with faults the local log starts at 3 (segment 2 is nowhere)
        self.copy("pd", 0)
        self.copy("pd", 1)
        self.uploads["pd"] = [(0, _sid("pd", 0), 0), (1, _sid("pd", 1), 0)]
        self.local["pd"] = [3] if f else [2, 3]
        if f:
            self.expected.append(("offset_gap", "clicks", self.parts["pd"][2], None, self.seg("pd", 1)[1] + 1,
                                  self.seg("pd", 3)[0] - 1, None, None))
        # gone pe: a segment copied, then the partition deleted (the controller marks it, the leader deletes)
        sid = self.copy("pe", 0)
        self.add("pe", "partition_delete", state=0, broker=3000)
        self.add("pe", "partition_delete", state=1)
        self.add("pe", "segment_update", sid=sid, state=2)
        self.add("pe", "segment_update", sid=sid, state=3)
        self.add("pe", "partition_delete", state=2, ts=T0 + 10_000 * SECOND)
        # orders pu: uploaded, its metadata partition not among the log dir's: not audited
        self.uploads["pu"] = [(0, _sid("pu", 0), 0)]
        self.local["pu"] = []

    def expect(self, check, name, i, sid, *, end=True, expected=False, actual=None):
        topic, _, p = self.parts[name]
        base, last, files = self.seg(name, i)
        size = files[".log"].stat().st_size
        self.expected.append((check, topic, p, _text(sid), base, last if end else None, size if expected else None,
                              None if actual is None else size + actual))

    def write(self, root):
        logs, remote = root / "logs", root / "remote" / "kafka-tiered-storage"
        for m, evs in self.events.items():
            values = [{"segment_metadata": enc_segment, "segment_update": enc_update,
                       "partition_delete": enc_delete}[e["kind"]](e) for e in evs]
            values.insert(3, CORRUPT)
            kafkafmt.write_log_dir(str(logs / f"{RLMM}-{m}"), keys=[None] * len(values), values=values,
                                   timestamps=[e["ts"] for e in evs[:3]] + [evs[2]["ts"]] + [e["ts"] for e in evs[3:]])
        for name, ups in self.uploads.items():
            topic, tid, p = self.parts[name]
            folder = remote / f"{topic}-{p}-{_text(tid)}"
            folder.mkdir(parents=True)
            for i, sid, cut in ups:
                base, _, files = self.seg(name, i)
                for suffix, path in files.items():
                    data = path.read_bytes()
                    if suffix == ".log" and cut:
                        data = data[:-cut]
                    (folder / f"{base:020d}-{_text(sid)}{suffix}").write_bytes(data)
                (folder / f"{base:020d}-{_text(sid)}.snapshot").write_bytes(b"")
        for name, idx in self.local.items():
            if not idx:
                continue
            topic, _, p = self.parts[name]
            folder = logs / f"{topic}-{p}"
            folder.mkdir(parents=True)
            for i in idx:
                for path in self.seg(name, i)[2].values():
                    shutil.copy(path, folder / path.name)
        return root


@pytest.fixture(scope="module")
def layouts(tmp_path_factory):
    """(faulty, clean): the same cluster's log dir and LocalTieredStorage folder, with and without the faults
    (a missing upload, two orphans -- one no event names, one of a deleted segment --, a wrong-size upload, a
    stale copy, an offset gap)."""
    src = tmp_path_factory.mktemp("rlmm-src")
    source = {}
    for name in ("pa", "pb", "pc", "pd", "pe", "pu"):
        folder = src / f"src{name}-0"
        kafkafmt.write_log_dir(str(folder), keys=[b"k%d" % i for i in range(RECORDS)],
                               values=[b"v" * (40 + i % 7) for i in range(RECORDS)],
                               timestamps=[T0 + i for i in range(RECORDS)], max_records=PER_SEGMENT,
                               segment_bytes=1, index_interval_bytes=64)
        bases = sorted(int(p.stem) for p in folder.glob("*.log"))
        segs = []
        for j, base in enumerate(bases):
            end = bases[j + 1] - 1 if j + 1 < len(bases) else RECORDS - 1
            files = {p.suffix: p for p in folder.glob(f"{base:020d}.*") if p.suffix in (".log", ".index", ".timeindex")}
            segs.append((base, end, files))
        assert len(segs) == RECORDS // PER_SEGMENT
        source[name] = (folder, segs)
    out = []
    for faults in (True, False):
        s = Scenario(source, faults)
        s.root = s.write(tmp_path_factory.mktemp("faulty" if faults else "clean"))
        out.append(s)
    return out


# --- the table -------------------------------------------------------------------------------------------------

def _events_table(s):
    recs = kafkafmt.read_log_dirs(str(s.root / "logs"), topics=[RLMM])
    return internal.remote_log_metadata(recs)


def test_every_field_of_every_event(layouts):
    s = layouts[0]
    table = _events_table(s)
    assert table.schema == internal.schema_of("remote_log_metadata")
    rows = table.to_pylist()
    assert [r["source_partition"] for r in rows] == sorted(r["source_partition"] for r in rows)
    assert len(s.held) == 2 and {r["source_partition"] for r in rows} == s.held
    assert {(r["topic"], r["partition"]) for r in rows if r["topic"]} == \
        {(s.parts[n][0], s.parts[n][2]) for n in ("pa", "pb", "pc", "pd", "pe")}
    for m in sorted(s.held):
        got = [r for r in rows if r["source_partition"] == m]
        want = [expected_row(e) for e in s.events[m]]
        want.insert(3, None)
        assert [r["offset"] for r in got] == list(range(len(want)))
        for r, w in zip(got, want):
            r = {k: v for k, v in r.items() if k not in ("offset", "timestamp", "source_partition", "log_dir")}
            if w is None:           # the undecodable value: an error row naming why, its bytes kept
                assert r["error"] == ("Could not deserialize metadata record due to unknown frame version 99"
                                      "(only frame version 1 is supported)")
                assert r["raw_value"] == CORRUPT and r["kind"] is None and r["topic"] is None
                continue
            assert r == w


def test_current_state_per_segment(layouts):
    s = layouts[0]
    view = internal.remote_log_segments(_events_table(s))
    assert view.column_names[:4] == ["topic", "topic_id", "partition", "segment_id"]
    last = {}
    for m in sorted(s.held):
        for e in s.events[m]:
            if e["kind"] != "partition_delete":
                st = last.setdefault(_text(e["sid"]), {"events": 0})
                st.update(state=STATES[e["state"]], broker=e["broker"], custom=e.get("custom"), events=st["events"] + 1)
                if e["kind"] == "segment_metadata":
                    st.update(start=e["start"], end=e["end"], size=e["size"], started=e["ts"])
    got = {r["segment_id"]: r for r in view.to_pylist()}
    assert set(got) == set(last)
    for sid, st in last.items():
        r = got[sid]
        assert (r["state"], r["broker_id"], r["custom_metadata"], r["events"]) == \
               (st["state"], st["broker"], st["custom"], st["events"])
        assert (r["start_offset"], r["end_offset"], r["segment_size_in_bytes"]) == (st["start"], st["end"], st["size"])
        assert r["copy_started"] == _ts(st["started"])
        gone = r["topic"] == "gone"
        assert r["partition_delete_state"] == ("DELETE_PARTITION_FINISHED" if gone else None)
    deleted = got[_text(_sid("pa", 0))]
    assert (deleted["state"], deleted["custom_metadata"]) == ("DELETE_SEGMENT_FINISHED", b"\x0a\x0b\x0c")


def test_dump_prints_what_kafka_dump_log_prints(layouts):
    s = layouts[0]
    m = sorted(s.held)[0]
    folder = s.root / "logs" / f"{RLMM}-{m}"
    want = [expected_text(e) for e in s.events[m]]
    want.insert(3, "Error at offset 3, skipping. Could not deserialize metadata record due to unknown frame "
                   "version 99(only frame version 1 is supported)")
    for flags in (["--remote-log-metadata-decoder"], ["--print-data"]):     # Kafka's flag, and by the folder's name
        out = kcli.run("dump", folder, *flags, check=0).stdout
        lines = [line for line in out.splitlines() if line.startswith("| offset:")]
        assert [line.split(" payload: ", 1)[1] for line in lines] == want
        assert all(" key: " not in line for line in lines)
    objs = [json.loads(line) for line in kcli.run("dump", folder, "--json", "--records", check=0).stdout.splitlines()]
    recs = [o for o in objs if "decoder" in o]
    assert [o["decoder"] for o in recs] == ["remote-log-metadata"] * len(want)
    assert recs[3]["decodedValue"] is None and recs[3]["decodeError"] == want[3]
    first = recs[0]["decodedValue"]
    e = s.events[m][0]
    assert first["type"] == "RemoteLogSegmentMetadataRecord" and first["version"] == 0
    assert first["data"]["remoteLogSegmentId"] == {"topicIdPartition": {"name": e["topic"], "id": _text(e["tid"]),
                                                                        "partition": e["partition"]},
                                                   "id": _text(e["sid"])}
    assert first["data"]["segmentSizeInBytes"] == e["size"]


def test_export_and_spark_give_the_same_table(layouts, tmp_path, spark):
    s = layouts[0]
    want = _events_table(s)
    kcli.run("export", s.root / "logs", "--internal", "remote_log_metadata", "--to", tmp_path / "e.parquet", check=0)
    assert pq.read_table(tmp_path / "e.parquet").equals(want)
    df = spark.read.format("kafka-segments").option("decode", "remote_log_metadata").load(str(s.root / "logs"))
    assert df.columns == want.column_names
    got = [r.asDict(recursive=True) for r in df.orderBy("source_partition", "offset").collect()]
    for name in ("segment_id", "state", "end_offset", "custom_metadata", "txn_index_empty", "error"):
        assert [None if r[name] is None else (bytes(r[name]) if name == "custom_metadata" else r[name])
                for r in got] == want.column(name).to_pylist()


def test_a_newer_version_and_a_truncated_value_are_errors_of_their_rows(tmp_path):
    e = {"kind": "segment_update", "topic": "t", "tid": TID_ORDERS, "partition": 0, "sid": _sid("x", 0), "broker": 1,
         "ts": T0, "state": 1}
    good = enc_update(e)
    values = [good[:-3], _frame(1, 2, good[3:]), good + b"\x00\x00", _frame(9, 0, b"")]
    kafkafmt.write_log_dir(str(tmp_path / f"{RLMM}-0"), keys=[None] * 4, values=values)
    with pytest.warns(kafkafmt.KafkafmtWarning, match="1 records of unknown type, 1 records with a version newer"):
        t = internal.remote_log_metadata(kafkafmt.read_log_dir(str(tmp_path / f"{RLMM}-0")))
    errors = t.column("error").to_pylist()
    assert errors[0].startswith("Failed to deserialize record with type 1: RemoteLogSegmentMetadataUpdateRecord v0 field")
    assert errors[1] == ("Failed to deserialize record with type 1: version 2 of RemoteLogSegmentMetadataUpdateRecord "
                         "is newer than known")
    assert errors[2] == "Found 2 byte(s) of garbage after 1"
    assert errors[3] == "Unknown metadata id 9"
    assert t.column("raw_value").to_pylist() == values and t.column("topic").null_count == 4


# --- the audit ----------------------------------------------------------------------------------------------------

def _findings(audit):
    return sorted((f.check, f.topic, f.partition, f.segment_id, f.start_offset, f.end_offset, f.expected_bytes,
                   f.actual_bytes) for f in audit.findings)


def _want(s):
    return sorted(s.expected, key=lambda t: tuple("" if v is None else v for v in t))


def test_audit_finds_each_fault_and_nothing_else(layouts):
    faulty, clean = layouts
    audit = audit_tiered([faulty.root / "logs", faulty.root / "remote"])
    assert sorted(_findings(audit), key=lambda t: tuple("" if v is None else v for v in t)) == _want(faulty)
    assert len(faulty.expected) == 6 and {f.check for f in audit.findings} == {
        "missing_upload", "orphan_upload", "wrong_size", "stale_copy", "offset_gap"}
    assert audit.metadata_partitions == 50 and audit.as_of == T0 + 10_000 * SECOND
    assert audit.notes == [f"1 uploads of partitions whose {RLMM} partition is not among the paths were not audited"]
    by_check = {f.check: f for f in audit.findings}
    pb = faulty.parts["pb"][2]
    assert by_check["wrong_size"].file.endswith(
        f"orders-{pb}-{_text(TID_ORDERS)}/{faulty.seg('pb', 1)[0]:020d}-{_text(_sid('pb', 1))}.log")
    assert "copy started at 2026-01-01T00:16:40.000Z by broker 1 and never finished (2.5 h" in by_check["stale_copy"].message
    # bytes per topic: what the metadata says is uploaded, and what the uploads take
    sizes = {n: [f[".log"].stat().st_size for _, _, f in faulty.source[n][1]] for n in faulty.parts}
    orders = next(t for t in audit.topics if t["topic"] == "orders")
    assert orders["remoteSegments"] == 4 and orders["remoteBytes"] == sizes["pa"][1] + sizes["pa"][2] + sum(sizes["pb"][:2])
    assert (orders["missingUploads"], orders["wrongSizes"], orders["staleCopies"]) == (1, 1, 1)
    assert not _findings(audit_tiered([clean.root / "logs", clean.root / "remote"]))


def test_verify_says_each_finding_and_exits_1_then_0_when_clean(layouts):
    faulty, clean = layouts
    p = kcli.run("verify", faulty.root / "logs", faulty.root / "remote", "--json", check=1)
    lines = [json.loads(line) for line in p.stdout.splitlines()]
    got = sorted((o["check"], o["topic"], o["partition"], o["segmentId"], o["startOffset"], o["endOffset"],
                  o["expectedBytes"], o["actualBytes"]) for o in lines if o.get("check"))
    assert sorted(got, key=lambda t: tuple("" if v is None else v for v in t)) == _want(faulty)
    messages = " ".join(o["message"] for o in lines if o.get("check"))
    assert "COPY_SEGMENT_FINISHED in __remote_log_metadata" in messages and "not named by __remote_log_metadata" in messages
    assert "(__remote_log_metadata: DELETE_SEGMENT_FINISHED): never read" in messages
    # a copy started 2.5 h before the last event is stale only past --stale-copy-ms
    p = kcli.run("verify", faulty.root / "logs", faulty.root / "remote", "--json", "--stale-copy-ms", "36000000",
                 check=1)
    assert "stale_copy" not in {json.loads(line).get("check") for line in p.stdout.splitlines()}
    p = kcli.run("verify", clean.root / "logs", clean.root / "remote", check=0)
    assert "OK:" in p.stdout and "were not audited" in p.stderr


def test_report_shows_the_audit_and_remote_bytes(layouts, tmp_path):
    faulty, clean = layouts
    p = kcli.run("report", faulty.root / "logs", faulty.root / "remote", "--json", "--no-checks",
                 "--to", tmp_path / "r.html", check=1)
    doc = json.loads(p.stdout)
    got = sorted((r["check"], r["topic"], r["partition"], r["segmentId"], r["startOffset"], r["endOffset"],
                  r["expectedBytes"], r["actualBytes"]) for r in doc["tiered"])
    assert sorted(got, key=lambda t: tuple("" if v is None else v for v in t)) == _want(faulty)
    assert {r["topic"] for r in doc["remote"]} == {"orders", "clicks"}         # gone: nothing left remote
    assert sum(1 for r in doc["problems"] if r["message"] in {t["message"] for t in doc["tiered"]}) == 6
    html = (tmp_path / "r.html").read_text()
    assert "Tiered storage" in html and _text(_sid("pc", 99)) in html
    doc = json.loads(kcli.run("report", clean.root / "logs", clean.root / "remote", "--json", "--no-checks",
                              check=0).stdout)
    assert doc["tiered"] == [] and sum(r["uploads"] for r in doc["remote"]) == 8
