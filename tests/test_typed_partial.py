"""Typed reads of a whole log dir: topics without a schema kept as bytes when asked
(``untyped_topics="bytes"``, ``--untyped-topics bytes``, Spark's ``untypedTopics``), errors that stay
short (a topic without a subject; two topics whose types clash), and the warning when none of a
topic's values could be read.

The log dir holds Avro topics written by confluent-kafka's AvroSerializer against its mock registry
(with the matching ``_schemas`` topic, tests/avro_support.py) and copies of real broker partitions
without any subject (a user topic of JSON text and ``__consumer_offsets``, from the real corpus);
their raw bytes are checked against what kafka-python read from the same files (expected.json).
"""
import base64
import json
import os
import shutil
import warnings

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import kafkafmt
import kcli
from avro_support import RegistryMirror
from kafkafmt.errors import KafkafmtWarning, SchemaError, SchemaNotFoundError

REAL = "broker-dirs/Niloufar1171__LDI-POC"
UNTYPED = ("TestTopicPatient", "__consumer_offsets")
ORDER = {"type": "record", "name": "Order", "namespace": "com.acme", "fields": [
    {"name": "id", "type": "long"}, {"name": "note", "type": "string"}]}
USER = {"type": "record", "name": "User", "namespace": "com.acme", "fields": [
    {"name": "name", "type": "string"}, {"name": "age", "type": "int"}]}
CLASH = {"type": "record", "name": "Order", "namespace": "com.other", "fields": [
    {"name": "id", "type": "string"}, {"name": "note", "type": "string"}]}
KEY = {"type": "record", "name": "Key", "fields": [{"name": "k", "type": "long"}]}


@pytest.fixture(scope="module")
def logs(real_corpus, tmp_path_factory):
    """(log dir, raw values by topic, kafka-python's first records by real topic)."""
    m = RegistryMirror()
    for subject, schema in (("orders-value", ORDER), ("orders-key", KEY), ("users-value", USER),
                            ("clash-value", CLASH), ("bad-value", ORDER)):
        m.register(subject, schema)
    m.register("js-value", json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}}), "JSON")
    root = tmp_path_factory.mktemp("partial") / "logs"
    m.write(root)
    raw = {"orders": [m.serializer(ORDER, topic="orders")({"id": i, "note": f"n{i}"}) for i in range(30)],
           "users": [m.serializer(USER, topic="users")({"name": f"u{i}", "age": i}) for i in range(20)],
           "clash": [m.serializer(CLASH, topic="clash")({"id": str(i), "note": ""}) for i in range(5)],
           "bad": [json.dumps({"id": i}).encode() for i in range(25)] + [None]}      # none in the wire format
    keys = [m.serializer(KEY, topic="orders", is_key=True)({"k": i}) for i in range(30)]
    kafkafmt.write_log_dir(str(root / "orders-0"), keys=keys, values=raw["orders"], segment_bytes=900)
    for t in ("users", "clash", "bad"):
        kafkafmt.write_log_dir(str(root / f"{t}-0"), values=raw[t], batch_size=200)
    expected = json.loads((real_corpus / "expected.json").read_text())
    firsts = {}
    for t, n in (("TestTopicPatient", 0), ("__consumer_offsets", 6)):
        shutil.copytree(real_corpus / REAL / f"{t}-{n}", root / f"{t}-{n}")
        entry = next(e for e in expected["logs"] if e["file"] == f"{REAL}/{t}-{n}/00000000000000000000.log")
        firsts[t] = entry["first_records"]
    return root, raw, firsts


TOPICS = ["orders", "users", *UNTYPED, "_schemas"]


def test_a_topic_without_a_subject_stops_the_read_in_a_few_words(logs, tmp_path):
    root, _, _ = logs
    with pytest.raises(SchemaNotFoundError) as exc:
        kafkafmt.read_log_dirs(str(root), topics=TOPICS, value_format="registry")
    text = str(exc.value)
    assert "TestTopicPatient" in text and "untyped_topics='bytes'" in text and len(text) < 500
    p = kcli.run("export", root, "--topics", ",".join(TOPICS), "--value-format", "registry", "--to",
                 tmp_path / "x.parquet")
    assert p.returncode == 1 and "--untyped-topics bytes" in p.stderr and len(p.stderr) < 600
    assert not (tmp_path / "x.parquet").exists()


def test_untyped_topics_bytes_types_what_has_a_subject_and_keeps_the_rest_as_bytes(logs):
    root, raw, firsts = logs
    with warnings.catch_warnings():
        warnings.simplefilter("error", KafkafmtWarning)       # nothing failed: no warning
        recs = kafkafmt.read_log_dirs(str(root), topics=TOPICS, value_format="registry", untyped_topics="bytes")
    t = recs.to_arrow()
    assert t.column_names[-3:] == ["valueSchemaId", "valueError", "valueBytes"]
    by_topic = {name: t.filter(pc.equal(t["topic"], name)) for name in TOPICS}
    # the topics with a subject: typed as a read of them alone types them, no bytes kept
    alone = kafkafmt.read_log_dirs(str(root), topics=["orders", "users"], value_format="registry").to_arrow()
    for name in ("orders", "users"):
        own = alone.filter(pc.equal(alone["topic"], name))
        fields = own.schema.field("value").type.names
        got = [{f: v[f] for f in fields} for v in by_topic[name].column("value").to_pylist()]
        assert got == own.column("value").to_pylist()
        assert by_topic[name].column("valueBytes").null_count == by_topic[name].num_rows
    assert by_topic["users"].column("value").to_pylist()[3] == {"id": None, "note": None, "name": "u3", "age": 3}
    # the others: null values, their bytes as kafka-python read them from the broker's files
    for name in UNTYPED:
        rows = by_topic[name]
        assert rows.column("value").null_count == rows.num_rows and rows.column("valueError").null_count == rows.num_rows
        kept = rows.column("valueBytes").to_pylist()
        for first in firsts[name]:
            if first.get("control_type") is None:
                got = kept[rows.column("offset").to_pylist().index(first["offset"])]
                if first["value"] is None:
                    assert got is None
                else:                           # expected.json cuts long values short with "..."
                    assert got.hex().startswith(first["value"].rstrip(".")) and len(first["value"]) > 20
                    assert first["value"].endswith("...") or got.hex() == first["value"]
    assert by_topic["_schemas"].column("valueBytes").null_count < by_topic["_schemas"].num_rows
    # keys: the same rule
    keyed = kafkafmt.read_log_dirs(str(root), topics=["orders", "users"], key_format="avro", untyped_topics="bytes")
    kt = keyed.to_arrow()
    assert kt.column_names[-3:] == ["keySchemaId", "keyError", "keyBytes"]
    assert kt.column("key").to_pylist()[:30] == [{"k": i} for i in range(30)]
    assert kt.column("keyBytes").to_pylist()[30:] == [None] * 20          # users' keys are null: nothing kept


def test_every_door_gives_the_same_partly_typed_table(logs, tmp_path):
    root, raw, _ = logs
    lib = kafkafmt.read_log_dirs(str(root), topics=TOPICS, value_format="registry", untyped_topics="bytes").to_arrow()
    stream = kafkafmt.iter_log_dirs(str(root), topics=TOPICS, value_format="registry", untyped_topics="bytes",
                                    max_bytes=2048)
    assert pa.RecordBatchReader.from_stream(stream).read_all().equals(lib)
    per_partition = [kafkafmt.read_log_dir(str(root / name), value_format="registry", untyped_topics="bytes")
                     for name in sorted(os.listdir(root)) if name.rsplit("-", 1)[0] in TOPICS]
    assert [len(r) for r in per_partition] and all(r.to_arrow().column_names == lib.column_names
                                                   for r in per_partition)
    out = tmp_path / "partial.parquet"
    kcli.run("export", root, "--topics", ",".join(TOPICS), "--value-format", "registry", "--untyped-topics", "bytes",
             "--to", out, check=0)
    got = pq.read_table(out)
    for name in ("topic", "offset", "value", "valueSchemaId", "valueError", "valueBytes"):
        assert got.column(name).to_pylist() == lib.column(name).to_pylist(), name
    lines = kcli.run("export", root, "--topics", ",".join(TOPICS), "--value-format", "registry", "--untyped-topics",
                     "bytes", "--to", "-", "--format", "jsonl", check=0).stdout.splitlines()
    rows = [json.loads(x) for x in lines]
    assert [r["offset"] for r in rows] == lib.column("offset").to_pylist()
    assert [None if r["valueBytes"] is None else base64.b64decode(r["valueBytes"]) for r in rows] == \
        lib.column("valueBytes").to_pylist()
    assert [r["value"] for r in rows if r["topic"] == "users"][:2] == [{"name": "u0", "age": 0},
                                                                       {"name": "u1", "age": 1}]
    # dump: a topic kept as bytes prints its bytes, the others as kafka-avro-console-consumer does
    text = kcli.run("dump", root, "--topics", "TestTopicPatient,users", "--value-decoder", "registry",
                    "--untyped-topics", "bytes", "--skip-record-metadata", check=0).stdout
    payloads = [line.split("payload: ", 1)[1] for line in text.splitlines() if "payload: " in line]
    assert payloads[0].startswith("{\\r\\n") and payloads[-1] == '{"name":"u19","age":19}'
    missing = kcli.run("dump", root, "--topics", "TestTopicPatient,users", "--value-decoder", "registry")
    assert missing.returncode == 1 and "--untyped-topics bytes" in missing.stderr


def test_spark_types_what_has_a_subject_and_keeps_the_rest_as_bytes(logs, spark):
    root, _, _ = logs
    from kafkafmt.spark import register

    register(spark)
    lib = kafkafmt.read_log_dirs(str(root), topics=TOPICS, value_format="registry", untyped_topics="bytes").to_arrow()
    df = (spark.read.format("kafka-segments").option("subscribe", ",".join(TOPICS)).option("valueFormat", "registry")
          .option("untypedTopics", "bytes").load(str(root)))
    rows = sorted(df.select("topic", "offset", "value", "valueBytes").collect(), key=lambda r: (r.topic, r.offset))
    want = sorted(zip(lib.column("topic").to_pylist(), lib.column("offset").to_pylist(),
                      lib.column("value").to_pylist(), lib.column("valueBytes").to_pylist()))
    got = [(r.topic, r.offset, None if r.value is None else r.value.asDict(), None if r.valueBytes is None
            else bytes(r.valueBytes)) for r in rows]
    assert got == want
    with pytest.raises(Exception, match="untypedTopics|untyped_topics"):
        spark.read.format("kafka-segments").option("subscribe", ",".join(TOPICS)).option(
            "valueFormat", "registry").load(str(root)).collect()
    with pytest.raises(Exception, match="'clash' and 'orders' cannot be one column: field id is"):
        spark.read.format("kafka-segments").option("subscribe", "orders,clash").option(
            "valueFormat", "avro").load(str(root)).collect()


def test_a_subject_of_another_type_is_kept_as_bytes_too(logs):
    root, raw, _ = logs
    shutil.copytree(root / "bad-0", root / "js-0", dirs_exist_ok=True)
    try:
        with pytest.raises(Exception, match="JSON"):
            kafkafmt.read_log_dirs(str(root), topics=["orders", "js"], value_format="avro").to_arrow()
        t = kafkafmt.read_log_dirs(str(root), topics=["orders", "js"], value_format="avro",
                                   untyped_topics="bytes").to_arrow()
        js = t.filter(pc.equal(t["topic"], "js"))
        assert js.column("valueBytes").to_pylist() == raw["bad"] and js.column("value").null_count == js.num_rows
    finally:
        shutil.rmtree(root / "js-0")


def test_topics_whose_types_clash_are_named_with_the_first_differing_field(logs, tmp_path):
    root, _, _ = logs
    for read in (lambda: kafkafmt.read_log_dirs(str(root), topics=["orders", "clash"], value_format="avro"),
                 lambda: kafkafmt.iter_log_dirs(str(root), topics=["orders", "clash"], value_format="avro").schema):
        with pytest.raises(SchemaError) as exc:
            read()
        text = str(exc.value)
        assert "'clash'" in text and "'orders'" in text and "field id" in text and len(text) < 300, text
    p = kcli.run("export", root, "--topics", "orders,clash", "--value-format", "avro", "--to", tmp_path / "c.parquet")
    assert p.returncode == 1 and "field id" in p.stderr and len(p.stderr.splitlines()) <= 3, p.stderr


# -- a read none of whose values could be read says so -----------------------------------------------

def _warned(read):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = read()
        if hasattr(result, "__next__"):
            for _ in result:
                pass
    return [str(w.message) for w in caught if issubclass(w.category, KafkafmtWarning)], result


def test_a_topic_none_of_whose_values_could_be_read_warns_once_per_read(logs):
    root, raw, _ = logs
    first = "no magic byte: the value starts with 0x7b"
    seg = sorted(p for p in os.listdir(root / "bad-0") if p.endswith(".log"))[0]
    for read in (lambda: kafkafmt.read_log_dir(str(root / "bad-0"), value_format="avro"),
                 lambda: kafkafmt.read_log_dirs(str(root), topics=["bad", "orders"], value_format="avro"),
                 lambda: kafkafmt.iter_log_dirs(str(root), topics=["bad"], value_format="avro", max_bytes=100),
                 lambda: kafkafmt.iter_log_dir(str(root / "bad-0"), value_format="avro", max_bytes=100),
                 lambda: kafkafmt.type_values(kafkafmt.read_log_dir(str(root / "bad-0")), value_format="avro")):
        said, _ = _warned(read)
        assert len(said) == 1, said
        assert "'bad'" in said[0] and "25 values" in said[0] and first in said[0] and "orders" not in said[0]
    said, _ = _warned(lambda: kafkafmt.read_segment(str(root / "bad-0" / seg), value_format="avro"))
    assert len(said) == 1 and "'bad'" in said[0]
    # values that were read (orders), a tombstone alone, keys kept as bytes: nothing to say
    for read in (lambda: kafkafmt.read_log_dirs(str(root), topics=["orders", "users"], value_format="avro"),
                 lambda: kafkafmt.read_log_dirs(str(root), topics=["orders", *UNTYPED], value_format="registry",
                                                untyped_topics="bytes")):
        said, _ = _warned(read)
        assert said == []
    # the command line says it too (once), as it says each file's bad values
    for args in (("export", root, "--topics", "bad", "--value-format", "avro", "--to", "-", "--format", "jsonl"),
                 ("dump", root / "bad-0", "--value-decoder", "avro")):
        p = kcli.run(*args, check=0)
        assert p.stderr.count("none of the 25 values of topic 'bad'") == 1, p.stderr
