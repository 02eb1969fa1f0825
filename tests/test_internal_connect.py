"""Kafka Connect's internal topics (connect-configs, connect-offsets, connect-status) as tables,
from partitions written as a Connect worker writes them (string keys, JsonConverter values without
schemas, tombstones), read back from disk."""
import json

import pyarrow as pa

import kafkafmt
from kafkafmt import internal


def _write(path, records):
    with kafkafmt.LogWriter(path) as w:
        w.append(keys=[None if k is None else k.encode() for k, _ in records],
                 values=[None if v is None else json.dumps(v, separators=(",", ":")).encode() for _, v in records],
                 timestamps=list(range(1000, 1000 + len(records))))
    return kafkafmt.read_log_dir(path)


def test_connect_configs(tmp_path):
    records = [
        ("connector-my-source", {"properties": {"connector.class": "FileStreamSource", "tasks.max": "2",
                                                "file": None}}),
        ("target-state-my-source", {"state": "STARTED", "state.v2": "STARTED"}),
        ("task-my-source-0", {"properties": {"task.class": "FileStreamSourceTask"}}),
        ("task-my-source-1", {"properties": {}}),
        ("commit-my-source", {"tasks": 2}),
        ("tasks-fencing-my-source", {"task-count": 2}),
        ("session-key", {"key": "c2VjcmV0", "algorithm": "HmacSHA256", "creation-timestamp": 1700000000000}),
        ("restart-connector-my-source", {"include-tasks": True, "only-failed": False}),
        ("logger-cluster-org.apache.kafka", {"level": "DEBUG"}),
        ("connector-my-source", None),
        ("whatever", {"a": 1}),
        ("commit-broken", {"no": "tasks"}),
    ]
    recs = _write(str(tmp_path / "connect-configs-0"), records)
    t = internal.connect_configs(recs)
    assert t.schema == internal.schema_of("connect_configs")
    rows = t.to_pylist()
    assert [r["kind"] for r in rows] == ["connector", "target_state", "task", "task", "commit", "tasks_fencing",
                                         "session_key", "restart", "logger_cluster", "connector", "unknown", "commit"]
    assert rows[0]["connector"] == "my-source" and dict(rows[0]["properties"]) == records[0][1]["properties"]
    assert rows[1]["state"] == "STARTED" and rows[1]["state_v2"] == "STARTED"
    assert (rows[3]["connector"], rows[3]["task"], rows[3]["properties"]) == ("my-source", 1, [])
    assert rows[4]["tasks"] == 2 and rows[5]["task_count"] == 2
    assert rows[6]["session_key"] == "c2VjcmV0" and rows[6]["creation_timestamp"].timestamp() == 1_700_000_000
    assert rows[7]["include_tasks"] is True and rows[7]["only_failed"] is False
    assert rows[8]["logger_namespace"] == "org.apache.kafka" and rows[8]["level"] == "DEBUG"
    assert rows[9]["tombstone"] and rows[9]["error"] is None and rows[9]["properties"] is None
    assert rows[10]["error"] and rows[10]["raw_value"] == b'{"a":1}'
    assert "tasks" in rows[11]["error"] and rows[11]["raw_key"] == b"commit-broken"
    assert set(r["source_partition"] for r in rows) == {0} and rows[0]["offset"] == 0


def test_connect_offsets(tmp_path):
    records = [
        ('["file-source",{"filename":"/tmp/a.txt"}]', {"position": 1234}),
        ('["jdbc",{"table":"t","protocol":"1"}]', {"incrementing": 9, "ts": None}),
        ('["file-source",{"filename":"/tmp/a.txt"}]', None),
        ("not json", {"x": 1}),
    ]
    recs = _write(str(tmp_path / "connect-offsets-3"), records)
    rows = internal.connect_offsets(recs).to_pylist()
    assert rows[0]["connector"] == "file-source" and json.loads(rows[0]["connect_partition"]) == {
        "filename": "/tmp/a.txt"} and json.loads(rows[0]["connect_offset"]) == {"position": 1234}
    assert json.loads(rows[1]["connect_offset"]) == {"incrementing": 9, "ts": None}
    assert rows[2]["tombstone"] and rows[2]["connect_offset"] is None and rows[2]["error"] is None
    assert rows[3]["error"] and rows[3]["raw_key"] == b"not json"
    assert {r["source_partition"] for r in rows} == {3}


def test_connect_status(tmp_path):
    records = [
        ("status-connector-my-source", {"state": "RUNNING", "trace": None, "worker_id": "10.0.0.1:8083",
                                        "generation": 3}),
        ("status-task-my-source-0", {"state": "FAILED", "trace": "java.lang.Exception: x\n\tat ...",
                                     "worker_id": "10.0.0.2:8083", "generation": 4}),
        ("status-topic-orders:connector-my-source", {"topic": {"name": "orders", "connector": "my-source",
                                                               "task": 0, "discoverTimestamp": 1700000000123}}),
        ("status-task-my-source-0", None),
        ("status-other", {"state": "x"}),
    ]
    recs = _write(str(tmp_path / "connect-status-1"), records)
    t = internal.connect_status(recs)
    assert t.schema == internal.schema_of("connect_status")
    rows = t.to_pylist()
    assert [r["kind"] for r in rows] == ["connector", "task", "topic", "task", "unknown"]
    assert rows[0]["state"] == "RUNNING" and rows[0]["generation"] == 3 and rows[0]["trace"] is None
    assert rows[1]["task"] == 0 and rows[1]["trace"].startswith("java.lang.Exception")
    assert rows[2]["topic"] == "orders" and rows[2]["connector"] == "my-source"
    assert rows[2]["discover_timestamp"] == pa.scalar(1700000000123, pa.timestamp("ms", tz="UTC")).as_py()
    assert rows[3]["tombstone"] and rows[3]["state"] is None and rows[4]["error"]
    assert set(internal.CONNECT_TABLES) <= set(internal.TOPIC_OF)


def _connect_dir(tmp_path, topic="connect-status"):
    records = [("status-connector-my-source", {"state": "RUNNING", "trace": None, "worker_id": "w1:8083",
                                               "generation": 3}),
               ("status-task-my-source-0", {"state": "FAILED", "trace": "boom", "worker_id": "w1:8083",
                                            "generation": 3}),
               ("status-topic-orders:my-source", {"topic": {"name": "orders", "connector": "my-source", "task": 0,
                                                             "discoverTimestamp": 1700000000000}})]
    _write(str(tmp_path / "logs" / f"{topic}-0"), records)
    return tmp_path / "logs"


def test_connect_tables_through_the_cli_and_spark(tmp_path, spark):
    import pyarrow.parquet as pq

    import kcli

    root = _connect_dir(tmp_path)
    want = internal.connect_status(kafkafmt.read_log_dirs(str(root), topics=["connect-status"]))
    kcli.run("export", root, "--internal", "connect_status", "--to", tmp_path / "s.parquet", check=0)
    assert pq.read_table(tmp_path / "s.parquet").equals(want)
    df = spark.read.format("kafka-segments").option("decode", "connect_status").load(str(root))
    assert sorted(r["offset"] for r in df.collect()) == want.column("offset").to_pylist()
    assert [r["state"] for r in df.orderBy("offset").collect()] == want.column("state").to_pylist()


def test_a_connect_cluster_names_its_own_topics(tmp_path):
    import pyarrow.parquet as pq

    import kcli

    root = _connect_dir(tmp_path, topic="dc1-connect-status")
    kcli.run("export", root, "--internal", "connect_status", "--topics", "dc1-connect-status",
             "--to", tmp_path / "s.parquet", check=0)
    want = internal.connect_status(kafkafmt.read_log_dirs(str(root)))
    assert pq.read_table(tmp_path / "s.parquet").equals(want) and want.num_rows == 3
    p = kcli.run("export", root, "--internal", "connect_status", "--to", tmp_path / "t.parquet")
    assert p.returncode != 0 and "connect-status" in p.stderr
