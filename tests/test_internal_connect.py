"""Kafka Connect's internal topics (connect-configs, connect-offsets, connect-status) as tables,
from partitions written as a Connect worker writes them (string keys, JsonConverter values without
schemas, tombstones), read back from disk."""
import json

import pyarrow as pa
import pytest

import kafkafmt
import kafkafmt.errors
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
    # without --topics: found by its name and records, and said so
    p = kcli.run("export", root, "--internal", "connect_status", "--to", tmp_path / "t.parquet", check=0)
    assert "reads the topic dc1-connect-status" in p.stderr
    assert pq.read_table(tmp_path / "t.parquet").equals(want)


# ------------------------------------------------------------------------------------------------
# issue 34 item 8: Connect's topics under the names Connect clusters give them, in every door

CONFIGS = [("connector-datagen", {"properties": {"connector.class": "DatagenConnector", "tasks.max": "1"}}),
           ("task-datagen-0", {"properties": {"task.class": "DatagenTask"}}),
           ("commit-datagen", {"tasks": 1}),
           ("target-state-datagen", {"state": "STARTED", "state.v2": "STARTED"})]
OFFSETS = [('["datagen",{"task.id":"datagen-0"}]', {"random.iterations": 120}),
           ('["datagen",{"task.id":"datagen-1"}]', None)]
STATUS = [("status-connector-datagen", {"state": "RUNNING", "trace": None, "worker_id": "connect:8083",
                                        "generation": 2}),
          ("status-task-datagen-0", {"state": "RUNNING", "trace": None, "worker_id": "connect:8083",
                                     "generation": 2}),
          ("status-topic-pageviews:connector-datagen", {"topic": {"name": "pageviews", "connector": "datagen",
                                                                  "task": 0, "discoverTimestamp": 1700000000000}})]
RECORDS = {"connect_configs": CONFIGS, "connect_offsets": OFFSETS, "connect_status": STATUS}
# (configs, offsets, status) as clusters name them
NAMINGS = {
    "confluent images": ("docker-connect-configs", "docker-connect-offsets", "docker-connect-status"),
    "underscore": ("_kafka-connect-configs", "_kafka-connect-offsets", "_kafka-connect-status"),
    "strimzi": ("my-connect-cluster-configs", "my-connect-cluster-offsets", "my-connect-cluster-status"),
    "debezium": ("my_connect_configs", "my_connect_offsets", "my_connect_statuses"),
    "mirrormaker 2": ("mm2-configs.dc1.internal", "mm2-offsets.dc1.internal", "mm2-status.dc1.internal"),
}


def _cluster(root, names, partitions=(0,)):
    """A log dir with a Connect cluster's three topics under ``names`` and a user topic beside them."""
    for table, topic in zip(("connect_configs", "connect_offsets", "connect_status"), names):
        for p in partitions:
            _write(str(root / f"{topic}-{p}"), RECORDS[table])
    _write(str(root / "pageviews-0"), [("u1", {"page": "/a"}), ("u2", {"page": "/b"})])
    return root


@pytest.mark.parametrize("naming", sorted(NAMINGS))
def test_connect_topics_found_under_their_clusters_names(naming, tmp_path):
    """The library and the CLI find each table's topic by its name and records, with no --topics."""
    import pyarrow.parquet as pq

    import kcli

    names = NAMINGS[naming]
    root = _cluster(tmp_path / "logs", names)
    for table, topic in zip(("connect_configs", "connect_offsets", "connect_status"), names):
        assert kafkafmt.find_internal_topic(str(root), table) == topic
        want = getattr(internal, table)(kafkafmt.read_log_dirs(str(root), topics=[topic]))
        assert want.num_rows == len(RECORDS[table]) and want.column("error").null_count == want.num_rows
        out = tmp_path / f"{table}.parquet"
        p = kcli.run("export", root, "--internal", table, "--to", out, check=0)
        assert f"reads the topic {topic}" in p.stderr
        assert pq.read_table(out).equals(want)


def test_connect_topics_found_by_spark(tmp_path, spark):
    names = NAMINGS["confluent images"]
    root = _cluster(tmp_path / "logs", names, partitions=(0, 1))
    for table, topic in zip(("connect_configs", "connect_offsets", "connect_status"), names):
        want = getattr(internal, table)(kafkafmt.read_log_dirs(str(root), topics=[topic]))
        df = spark.read.format("kafka-segments").option("decode", table).load(str(root))
        got = sorted((r["source_partition"], r["offset"]) for r in df.select("source_partition", "offset").collect())
        assert got == sorted(zip(want.column("source_partition").to_pylist(), want.column("offset").to_pylist()))
        assert len(got) == 2 * len(RECORDS[table])


def test_connect_topic_found_by_its_records_alone(tmp_path):
    """A status topic under a name like no other (a cluster's own config) is found by its records; a
    user topic named like a Connect topic whose records are not Connect's is passed over."""
    import kcli

    root = tmp_path / "logs"
    _write(str(root / "infra-state-0"), STATUS)
    _write(str(root / "connector-status-events-0"), [("e1", {"event": "deployed"}), ("e2", {"event": "failed"})])
    _write(str(root / "pageviews-0"), [("u1", {"page": "/a"})])
    assert kafkafmt.find_internal_topic(str(root), "connect_status") == "infra-state"
    p = kcli.run("export", root, "--internal", "connect_status", "--to", tmp_path / "s.jsonl", check=0)
    assert "reads the topic infra-state" in p.stderr
    assert len((tmp_path / "s.jsonl").read_text().splitlines()) == len(STATUS)
    # named like it but holding other records, and nothing else fits: the error names it
    (root / "infra-state-0").rename(tmp_path / "gone")
    p = kcli.run("export", root, "--internal", "connect_status", "--to", tmp_path / "t.jsonl", check=2)
    assert "connector-status-events" in p.stderr and "--topics" in p.stderr
    assert not (tmp_path / "t.jsonl").exists()


def test_two_connect_clusters_name_the_candidates(tmp_path, spark):
    import kcli

    root = tmp_path / "logs"
    _cluster(root, NAMINGS["confluent images"])
    _cluster(root, NAMINGS["strimzi"])
    with pytest.raises(kafkafmt.errors.TopicNotFoundError, match="docker-connect-status, my-connect-cluster-status"):
        kafkafmt.find_internal_topic(str(root), "connect_status")
    p = kcli.run("export", root, "--internal", "connect_status", "--to", tmp_path / "s.parquet", check=2)
    assert "docker-connect-status, my-connect-cluster-status" in p.stderr and "--topics" in p.stderr
    assert not (tmp_path / "s.parquet").exists()
    with pytest.raises(Exception, match="docker-connect-status, my-connect-cluster-status.*subscribe"):
        spark.read.format("kafka-segments").option("decode", "connect_status").load(str(root)).count()
    # naming one reads it
    df = spark.read.format("kafka-segments").option("decode", "connect_status") \
        .option("subscribe", "my-connect-cluster-status").load(str(root))
    assert df.count() == len(STATUS)


def test_an_empty_connect_topic_is_found_by_its_name(tmp_path):
    root = tmp_path / "logs"
    (root / "docker-connect-status-0").mkdir(parents=True)
    kafkafmt.LogWriter(str(root / "docker-connect-status-0")).close()
    _write(str(root / "pageviews-0"), [("u1", {"page": "/a"})])
    assert kafkafmt.find_internal_topic(str(root), "connect_status") == "docker-connect-status"
