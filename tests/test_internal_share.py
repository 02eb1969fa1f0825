"""__share_group_state (KIP-932 share groups) as a table through every door: kafkafmt.internal,
``kafkafmt export --internal share_group_state``, ``kafkafmt dump`` (``--share-group-state-decoder``,
Kafka's flag, and by the folder's name) and Spark's ``decode`` option -- reached through the internal
table registry alone.

The records are written byte by byte here from Kafka's JSON definitions (share-coordinator's
ShareSnapshotKey/Value and ShareUpdateKey/Value, Kafka 4.2: DeliveryCompleteCount tagged), not with
kafkafmt's encoder, so the decoder is checked against an independent writing of the layout."""
import base64
import json
import struct

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kafkafmt
from kafkafmt import internal

import kcli

TOPIC_ID = bytes(range(0x10, 0x20))
TOPIC_ID_TEXT = base64.urlsafe_b64encode(TOPIC_ID).decode().rstrip("=")
T0 = 1_767_225_600_000


def _uvarint(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _key(rtype, group, partition):
    """ShareSnapshotKey / ShareUpdateKey (not flexible): int16 record type, then GroupId (int16 length),
    TopicId (16 bytes), Partition (int32)."""
    g = group.encode()
    return struct.pack(">hh", rtype, len(g)) + g + TOPIC_ID + struct.pack(">i", partition)


def _batches(batches):
    """[]StateBatch, flexible: uvarint count + 1; each FirstOffset int64, LastOffset int64, DeliveryState
    int8, DeliveryCount int16 and an empty tagged-field section."""
    return _uvarint(len(batches) + 1) + b"".join(struct.pack(">qqbh", *b) + b"\x00" for b in batches)


def _tags(delivery_complete_count):
    if delivery_complete_count is None:
        return b"\x00"
    return b"\x01" + _uvarint(0) + _uvarint(4) + struct.pack(">i", delivery_complete_count)


def _snapshot(snapshot_epoch, state_epoch, leader_epoch, start, batches, dcc=None):
    """ShareSnapshotValue v0 (flexible): SnapshotEpoch, StateEpoch, LeaderEpoch int32; StartOffset,
    CreateTimestamp, WriteTimestamp int64; StateBatches; tagged DeliveryCompleteCount (tag 0)."""
    return (struct.pack(">hiiiqqq", 0, snapshot_epoch, state_epoch, leader_epoch, start, T0, T0 + 5)
            + _batches(batches) + _tags(dcc))


def _update(snapshot_epoch, leader_epoch, start, batches, dcc=None):
    """ShareUpdateValue v0 (flexible): SnapshotEpoch, LeaderEpoch int32; StartOffset int64; StateBatches;
    tagged DeliveryCompleteCount (tag 0)."""
    return struct.pack(">hiiq", 0, snapshot_epoch, leader_epoch, start) + _batches(batches) + _tags(dcc)


# (key, value) and what Kafka's JSON converters print for them
RECORDS = [
    (_key(0, "shippers", 0), _snapshot(0, 1, 3, 100, [(100, 104, 0, 1)])),
    (_key(1, "shippers", 0), _update(0, 3, -1, [(100, 102, 2, 1), (103, 104, 4, 5)], dcc=3)),
    (_key(0, "shippers", 0), _snapshot(1, 1, 3, 105, [], dcc=0)),
    (_key(0, "billing", 2), None),                       # a tombstone: the group's state deleted
    (struct.pack(">h", 7) + b"\x00\x01x", b"\x00\x00"),  # a record type these schemas do not know
]
KEYS = [{"groupId": "shippers", "topicId": TOPIC_ID_TEXT, "partition": 0}] * 3 + \
       [{"groupId": "billing", "topicId": TOPIC_ID_TEXT, "partition": 2}]
BATCH = ("firstOffset", "lastOffset", "deliveryState", "deliveryCount")
VALUES = [
    {"snapshotEpoch": 0, "stateEpoch": 1, "leaderEpoch": 3, "startOffset": 100, "createTimestamp": T0,
     "writeTimestamp": T0 + 5, "stateBatches": [dict(zip(BATCH, (100, 104, 0, 1)))]},
    {"snapshotEpoch": 0, "leaderEpoch": 3, "startOffset": -1, "deliveryCompleteCount": 3,
     "stateBatches": [dict(zip(BATCH, (100, 102, 2, 1))), dict(zip(BATCH, (103, 104, 4, 5)))]},
    {"snapshotEpoch": 1, "stateEpoch": 1, "leaderEpoch": 3, "startOffset": 105, "deliveryCompleteCount": 0,
     "createTimestamp": T0, "writeTimestamp": T0 + 5, "stateBatches": []},
]


@pytest.fixture
def share_dir(tmp_path):
    root = tmp_path / "logs"
    with kafkafmt.LogWriter(str(root / "__share_group_state-0")) as w:
        w.append(keys=[k for k, _ in RECORDS], values=[v for _, v in RECORDS],
                 timestamps=[T0 + i for i in range(len(RECORDS))])
    return root


def _rows(table):
    return table.drop_columns(["raw_key", "raw_value", "log_dir"]).to_pylist()


def test_share_group_state_table(share_dir):
    with pytest.warns(kafkafmt.KafkafmtWarning, match="__share_group_state: 1 records of unknown type"):
        t = internal.share_group_state(kafkafmt.read_log_dir(str(share_dir / "__share_group_state-0")))
    assert t.schema == internal.schema_of("share_group_state")
    rows = _rows(t)
    for row, key, value in zip(rows, KEYS, VALUES):
        assert (row["group"], row["topic_id"], row["partition"]) == (key["groupId"], key["topicId"], key["partition"])
        assert row["snapshot_epoch"] == value["snapshotEpoch"] and row["leader_epoch"] == value["leaderEpoch"]
        assert row["start_offset"] == value["startOffset"] and row["state_epoch"] == value.get("stateEpoch")
        assert row["delivery_complete_count"] == value.get("deliveryCompleteCount", -1)
        assert [tuple(b.values()) for b in row["state_batches"]] == \
            [tuple(b[f] for f in BATCH) for b in value["stateBatches"]]
        ts = value.get("createTimestamp")
        assert row["create_timestamp"] == (None if ts is None else pa.scalar(ts, pa.timestamp("ms", "UTC")).as_py())
    assert [r["kind"] for r in rows] == ["share_snapshot", "share_update", "share_snapshot", "share_snapshot",
                                         "unknown"]
    assert [r["tombstone"] for r in rows] == [False, False, False, True, False]
    assert rows[3]["group"] == "billing" and rows[3]["start_offset"] is None and rows[3]["error"] is None
    assert rows[4]["error"] == "unknown record type 7" and rows[4]["group"] is None
    assert t.column("raw_key").to_pylist() == [None] * 4 + [RECORDS[4][0]]
    assert t.column("source_partition").to_pylist() == [0] * 5


def test_share_group_state_from_the_registry_alone():
    """One registry entry reaches every door: the table's function, its schema, kafka-dump-log's decoder,
    export's choices and Spark's decode option."""
    entry = internal.internal_table("share_group_state")
    assert entry.build is internal.share_group_state and entry.topic == "__share_group_state"
    assert "share_group_state" in internal.TABLES and internal.TOPIC_OF["share_group_state"] == entry.topic
    assert internal.decoders()["share-group-state"] is entry
    assert "--share-group-state-decoder" in kcli.run("dump", "--help", check=0).stdout
    assert "share_group_state" in kcli.run("export", "--help", check=0).stdout


def test_share_group_state_dump(share_dir):
    """kafka-dump-log's texts: ``key: {"type":"0","data":{...}} payload: {"version":"0","data":{...}}``,
    ``<DELETE>`` and "Unknown record type" -- with the flag and by the folder's name alike."""
    folder = share_dir / "__share_group_state-0"
    want_keys = [json.dumps({"type": str(struct.unpack(">h", k[:2])[0]), "data": d}, separators=(",", ":"))
                 for (k, _), d in zip(RECORDS, KEYS)]
    want_values = [json.dumps({"version": "0", "data": d}, separators=(",", ":")) for d in VALUES] + ["<DELETE>"]
    for flags in (["--share-group-state-decoder"], ["--print-data"]):
        out = kcli.run("dump", folder, *flags, check=0).stdout
        lines = [line for line in out.splitlines() if line.startswith("| offset:")]
        assert len(lines) == 5
        for line, key, value in zip(lines, want_keys, want_values):
            assert line.endswith(f" key: {key} payload: {value}"), line
        assert lines[4].endswith(" key: Unknown record type 7 at offset 4, skipping.")
    objs = [json.loads(line) for line in kcli.run("dump", folder, "--json", "--records", check=0).stdout.splitlines()]
    recs = [o for o in objs if "decodedKey" in o]
    assert [o["decoder"] for o in recs] == ["share-group-state"] * 5
    assert [o["decodedValue"] for o in recs[:4]] == [json.loads(v) for v in want_values[:3]] + [None]
    # the bytes without decoding
    out = kcli.run("dump", folder, "--print-data", "--no-decode-internal", check=0).stdout
    assert "snapshotEpoch" not in out


def test_share_group_state_export_and_spark(share_dir, tmp_path, spark):
    with pytest.warns(kafkafmt.KafkafmtWarning):
        want = internal.share_group_state(kafkafmt.read_log_dirs(str(share_dir), topics=["__share_group_state"]))
    p = kcli.run("export", share_dir, "--internal", "share_group_state", "--to", tmp_path / "s.parquet", check=0)
    assert "1 records of unknown type" in p.stderr
    assert pq.read_table(tmp_path / "s.parquet").equals(want)
    kcli.run("export", share_dir, "--internal", "share_group_state", "--to", tmp_path / "s.jsonl", check=0)
    lines = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert [r["start_offset"] for r in lines] == want.column("start_offset").to_pylist()
    df = spark.read.format("kafka-segments").option("decode", "share_group_state").load(str(share_dir))
    assert df.columns == want.column_names
    got = [r.asDict(recursive=True) for r in df.orderBy("offset").collect()]
    assert [r["group"] for r in got] == want.column("group").to_pylist()
    assert [r["state_batches"] for r in got] == want.column("state_batches").to_pylist()
