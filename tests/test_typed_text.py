"""Typed values as text -- ``dump`` (text and ``--json``), ``export`` to JSON lines and CSV, and
``DecodedColumn.json()`` -- against what kafka-avro-console-consumer prints, and local date-times
(no zone) never printed as UTC instants.

The reference text comes from Avro's own Java classes doing what Confluent's AvroMessageFormatter
does (tests/java/AvroConsoleJson.java: a generic datum, no logical-type conversions, Avro's
JsonEncoder), run on the very bytes confluent-kafka's AvroSerializer wrote. Java's number printing is
checked on its own against ``Double.toString`` / ``Float.toString`` of a Java 19 or later.
"""
import csv
import datetime
import decimal
import glob
import io
import json
import os
import pathlib
import random
import shutil
import struct
import subprocess
import tempfile
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kafkafmt
import kcli
from avro_support import RegistryMirror, compact

HERE = pathlib.Path(__file__).resolve().parent
UTC = datetime.timezone.utc

SUB = {"type": "record", "name": "Sub", "namespace": "t.inner", "fields": [
    {"name": "n", "type": "int"}, {"name": "c", "type": {"type": "enum", "name": "Colour", "symbols": ["RED", "BLUE"]}}]}
EVERY = {"type": "record", "name": "Every", "namespace": "t", "fields": [
    {"name": "id", "type": "long"},
    {"name": "s", "type": "string"},
    {"name": "b", "type": "bytes"},
    {"name": "fx", "type": {"type": "fixed", "name": "Three", "size": 3}},
    {"name": "i", "type": "int"},
    {"name": "bo", "type": "boolean"},
    {"name": "f", "type": "float"},
    {"name": "d", "type": "double"},
    {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
    {"name": "decf", "type": {"type": "fixed", "name": "D8", "size": 8, "logicalType": "decimal", "precision": 18,
                              "scale": 4}},
    {"name": "u", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "dt", "type": {"type": "int", "logicalType": "date"}},
    {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "tu", "type": {"type": "long", "logicalType": "time-micros"}},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "tsu", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "lt", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
    {"name": "ltu", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
    {"name": "opt", "type": ["null", "string"], "default": None},
    {"name": "olt", "type": ["null", {"type": "long", "logicalType": "local-timestamp-millis"}], "default": None},
    {"name": "multi", "type": ["null", "int", "string", SUB]},
    {"name": "arr", "type": {"type": "array", "items": ["null", "long"]}},
    {"name": "mp", "type": {"type": "map", "values": "t.inner.Sub"}},
]}
TOP_UNION = ["null", "string", "long"]
# floats whose double prints alike (Avro 1.12.0-1.12.1, PySpark's jar, print a float as the double it widens to)
FLOATS = [0.5, 1.0e10, -2.25, 3.0, 0.00048828125, 0.0, float("nan"), float("inf"), -float("inf")]
DOUBLES = [1e-5, 0.1, 1e21, 123456.789, -0.0, 1.0e7, 9999999.0, 0.001, 5e-324, float("nan"), -float("inf"),
           2.0 ** 70, 1 / 3]
STRINGS = ["plain", "quote \" back\\slash /", "controls \x00\x01\x1f\x7f \b\t\n\f\r", "unicode é ü 漢字 \u2028 \U0001F600",
           ""]
LOCAL = datetime.datetime(2024, 5, 1, 12, 30, 0, 123456)


def every(i):
    multi = [None, i, f"m{i}", {"n": i, "c": "BLUE"}][i % 4]
    return {"id": i, "s": STRINGS[i % len(STRINGS)], "b": bytes([0, 1, 0x1F, 0x22, 0x5C, 0x7F, 0x80, 0xE9, 0xFF][: i % 10]),
            "fx": bytes([i % 256, 0x0A, 0xFF]), "i": -i * 1000, "bo": i % 2 == 0,
            "f": FLOATS[i % len(FLOATS)], "d": DOUBLES[i % len(DOUBLES)],
            "dec": decimal.Decimal(f"{(-1) ** i * i * 1234}.{i % 100:02d}"),
            "decf": decimal.Decimal(f"{i * 98765}.{i % 10000:04d}"),
            "u": str(uuid.UUID(int=i * 7919)), "dt": datetime.date(2024, 1, 1) + datetime.timedelta(days=i),
            "tm": datetime.time(1, 2, 3, (i % 1000) * 1000), "tu": datetime.time(23, 59, 59, i % 1000000),
            "ts": datetime.datetime(2024, 2, 29, 23, 59, 59, 123000, tzinfo=UTC) + datetime.timedelta(hours=i),
            "tsu": datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC) + datetime.timedelta(seconds=i),
            "lt": LOCAL.replace(microsecond=123000) + datetime.timedelta(minutes=i),
            "ltu": LOCAL + datetime.timedelta(microseconds=i),
            "opt": None if i % 3 == 0 else STRINGS[(i + 1) % len(STRINGS)],
            "olt": None if i % 2 else LOCAL.replace(microsecond=0),
            "multi": multi, "arr": [None if (i + k) % 3 == 0 else k * 10 ** 12 for k in range(i % 4)],
            "mp": {} if i % 3 == 0 else {f"k{i}": {"n": i, "c": "RED"}}}


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """A log dir whose ``every`` topic holds EVERY values and ``top`` a top-level union, written by
    confluent-kafka's AvroSerializer, with its ``_schemas`` topic; (root, every's values, top's values)."""
    m = RegistryMirror()
    m.register("every-value", EVERY)
    m.register("top-value", TOP_UNION)
    root = tmp_path_factory.mktemp("text") / "logs"
    m.write(root)
    values = [m.serializer(EVERY, topic="every")(every(i)) for i in range(48)]
    kafkafmt.write_log_dir(str(root / "every-0"), values=values)
    top = [m.serializer(TOP_UNION, topic="top")(v) for v in ["x\x01y", 5, None, "", -(2 ** 63)]]
    kafkafmt.write_log_dir(str(root / "top-0"), values=top)
    return root, values, top


def _java():
    """A java of version 19 or later (Double.toString's shortest digits), else any java; None without one."""
    cands = [os.path.join(os.environ["JAVA_HOME"], "bin", "java")] if os.environ.get("JAVA_HOME") else []
    cands += [shutil.which("java")] + sorted(glob.glob("/usr/lib/jvm/*/bin/java"), reverse=True)
    found = []
    for c in cands:
        if c and os.access(c, os.X_OK):
            p = subprocess.run([c, "-version"], capture_output=True, text=True)
            v = p.stderr.split('"')[1] if '"' in p.stderr else "0"
            major = int(v.split(".")[1] if v.startswith("1.") else v.split(".")[0].split("-")[0])
            found.append((major, c))
    return max(found) if found else (0, None)


def _class_path():
    pyspark = pytest.importorskip("pyspark")
    jars = pathlib.Path(pyspark.__file__).parent / "jars"
    names = ["avro-1", "jackson-core-", "jackson-databind-", "jackson-annotations-", "slf4j-api-"]
    paths = [next(iter(sorted(jars.glob(n + "*.jar"))), None) for n in names]
    if None in paths:
        pytest.skip("PySpark's jars lack Avro or Jackson")
    return os.pathsep.join(map(str, paths))


def console_consumer(schema, bodies):
    """What kafka-avro-console-consumer prints for Avro bodies (the values without their 5-byte
    framing) written with ``schema``: one text per body."""
    major, java = _java()
    if java is None:
        pytest.skip("no java")
    with tempfile.TemporaryDirectory() as tmp:
        schema_file = pathlib.Path(tmp) / "writer.avsc"
        schema_file.write_text(compact(schema))
        p = subprocess.run([java, "-cp", _class_path(), str(HERE / "java" / "AvroConsoleJson.java"), str(schema_file)],
                           input="".join(b.hex() + "\n" for b in bodies).encode(), capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr.decode()
    return p.stdout.decode("utf-8").split("\n")[:-1]


def _payloads(text):
    """offset -> the text after ``payload: `` in dump's text output (lines end at \\n only: a
    string's U+2028 is printed as it is, as Jackson does)."""
    return {int(line.split("offset: ", 1)[1].split()[0]): line.split(" payload: ", 1)[1]
            for line in text.split("\n") if " payload: " in line}


def _same_but_map_order(ours, theirs):
    """Equal texts, or (maps of several entries: Java prints its HashMap's order) equal JSON data."""
    return ours == theirs or json.loads(ours) == json.loads(theirs)


@pytest.mark.parametrize("decoder", ["avro", "registry"])
def test_dump_prints_what_kafka_avro_console_consumer_prints(logs, decoder):
    root, values, top = logs
    for topic, schema, raw in (("every", EVERY, values), ("top", TOP_UNION, top)):
        texts = iter(console_consumer(schema, [v[5:] for v in raw if v is not None]))
        expected = [None if v is None else next(texts) for v in raw]       # a null value is a tombstone
        got = _payloads(kcli.run("dump", root / f"{topic}-0", "--value-decoder", decoder, check=0).stdout)
        assert sorted(got) == [i for i, v in enumerate(raw) if v is not None]
        for off, text in got.items():
            assert text == expected[off], (topic, off)
        lib = kafkafmt.read_log_dir(str(root / f"{topic}-0"), value_format=decoder).typed["value"].json()
        assert lib == expected
    # what the comparison covered: Java's numbers, Jackson's escapes, union wrappers, a bare top-level union
    every_texts = "".join(console_consumer(EVERY, [v[5:] for v in values]))
    for piece in ("1.0E-5", "1.0E10", '"NaN"', '"-Infinity"', "\\u001F", '{"t.inner.Sub":', '{"string":'):
        assert piece in every_texts, piece
    assert console_consumer(TOP_UNION, [v[5:] for v in top if v is not None])[:2] == ['"x\\u0001y"', "5"]


def test_console_texts_hold_what_the_issue_saw_wrong(logs):
    root, values, _ = logs
    for decoder in ("avro", "registry"):
        texts = kafkafmt.read_log_dir(str(root / "every-0"), value_format=decoder).typed["value"].json()
        first = json.loads(texts[0])
        # epoch numbers (the console consumer converts no logical type), a union as {"branch": value}
        assert first["lt"] == int((every(0)["lt"] - datetime.datetime(1970, 1, 1)) / datetime.timedelta(milliseconds=1))
        assert first["olt"] == {"long": first["lt"] - 123}
        assert json.loads(texts[1])["opt"] == {"string": STRINGS[2]}
        assert ", " not in texts[0] and "Z\"" not in texts[0]


def test_every_text_door_gives_the_console_consumers_values(logs, tmp_path):
    """dump --json, export JSON lines and CSV, for both decoders: the same JSON data."""
    root, values, _ = logs
    expected = console_consumer(EVERY, [v[5:] for v in values])
    for decoder in ("avro", "registry"):
        rows = [json.loads(x) for x in kcli.run("dump", root / "every-0", "--json", "--value-decoder", decoder,
                                                check=0).stdout.split("\n") if '"type":"record"' in x]
        assert [r["value"] for r in rows] == [json.loads(t) for t in expected]
        lines = kcli.run("export", root, "--topics", "every", "--value-format", decoder, "--to", "-", "--format",
                         "jsonl", check=0).stdout.split("\n")[:-1]
        assert [json.loads(x)["value"] for x in lines] == [json.loads(t) for t in expected]
        out = kcli.run("export", root, "--topics", "every", "--value-format", decoder, "--to", "-", "--format",
                       "csv", check=0).stdout
        cells = [r["value"] for r in csv.DictReader(io.StringIO(out))]
        assert all(_same_but_map_order(c, t) for c, t in zip(cells, expected)) and len(cells) == len(expected)


def test_every_avro_type_prints_as_the_console_consumer_prints_it():
    """test_avro's schema of every Avro type and logical type (decimal256, durations, nanosecond and
    invalid logical types...), written by fastavro: avro_json == Avro's Java JsonEncoder."""
    import fastavro
    from test_avro import EVERYTHING, everything
    from kafkafmt.values import decode_column
    from kafkafmt.values.registry import InlineSchemaRegistry

    parsed = fastavro.parse_schema(json.loads(compact(EVERYTHING)))
    bodies = []
    for i in range(40):
        value = everything(i)
        if value["f"] not in FLOATS:             # Avro 1.12.1 (PySpark's jar) prints a float widened to a double
            value["f"] = FLOATS[i % len(FLOATS)]
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, value)
        bodies.append(out.getvalue())
    dec = decode_column(pa.array([b"\0\0\0\0\1" + b for b in bodies], pa.binary()), format="avro",
                        registry=InlineSchemaRegistry({1: compact(EVERYTHING)}), reader_schema=1)
    assert dec.error_count == 0
    expected = console_consumer(EVERYTHING, bodies)
    assert all(_same_but_map_order(a, b) for a, b in zip(dec.json(), expected)) and len(expected) == 40


def test_java_number_printing_equals_javas():
    """java_number == Java's Double.toString / Float.toString (Java 19+) on random and edge bit patterns."""
    from kafkafmt.values.avro import java_number

    major, java = _java()
    if java is None or major < 19:
        pytest.skip("no Java 19 or later (earlier Javas print some floats with one more digit)")
    r = random.Random(34)
    bits = [r.getrandbits(64) for _ in range(20000)]
    bits += [struct.unpack("<Q", struct.pack("<d", round(r.uniform(-1e6, 1e6), r.randint(0, 8))))[0]
             for _ in range(5000)]
    bits += [struct.unpack("<I", struct.pack("<f", round(r.uniform(-1e5, 1e5), r.randint(0, 5))))[0]
             for _ in range(5000)]
    edges = [5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 1e-3, 9.999999999999998e-4, 1e7,
             9999999.999999998, 1e23, 2e23, 0.1, 0.3, 1.0, 100.0, 2.0 ** -1074 * 3, 4.9e-324 * 9]
    bits += [struct.unpack("<Q", struct.pack("<d", e))[0] for e in edges]
    fedges = [1.4e-45, 1.1754944e-38, 3.4028235e38, 1e-3, 1e7, 16777216.0, 0.1, 9.999999e-4, 2.8e-45, 1e10]
    bits += [struct.unpack("<I", struct.pack("<f", e))[0] for e in fedges]
    p = subprocess.run([java, "-cp", _class_path(), str(HERE / "java" / "AvroConsoleJson.java"), "--numbers"],
                       input="".join(f"{b:x}\n" for b in bits).encode(), capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr.decode()
    wrong = []
    for b, line in zip(bits, p.stdout.decode().splitlines()):
        jd, jf = line.split()
        d = struct.unpack("<d", struct.pack("<Q", b))[0]
        f = struct.unpack("<f", struct.pack("<I", b & 0xFFFFFFFF))[0]
        if java_number(d).strip('"') != jd or java_number(f, single=True).strip('"') != jf:
            wrong.append((hex(b), java_number(d), jd, java_number(f, single=True), jf))
    assert not wrong, wrong[:5]


# -- local date-times have no zone, in every text ---------------------------------------------------

LOCAL_SCHEMA = {"type": "record", "name": "Local", "fields": [
    {"name": "lt", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
    {"name": "ltu", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}


def test_local_timestamps_are_not_utc_instants_in_any_text(logs, tmp_path):
    """Avro local-timestamp-* : the epoch number in every text (no Z), a timestamp without a zone in
    Arrow and Parquet; a JSON value's local date-time (Debezium's MicroTimestamp) printed without Z,
    an instant (Kafka Connect's Timestamp) with it."""
    root, _, _ = logs
    m = RegistryMirror()
    m.register("loc-value", LOCAL_SCHEMA)
    d = tmp_path / "logs"
    m.write(d)
    when = datetime.datetime(2024, 5, 1, 12, 30, 0, 123456)
    ser = m.serializer(LOCAL_SCHEMA, topic="loc")
    kafkafmt.write_log_dir(str(d / "loc-0"), values=[ser({"lt": when.replace(microsecond=123000), "ltu": when,
                                                          "ts": when.replace(tzinfo=UTC)})])
    millis = 1714566600123
    want = {"lt": millis, "ltu": millis * 1000 + 456, "ts": millis}
    for decoder in ("avro", "registry"):
        text = kcli.run("dump", d, "--topics", "loc", "--value-decoder", decoder, "--skip-record-metadata",
                        check=0).stdout
        assert json.loads(text.splitlines()[-1].split("payload: ", 1)[1]) == want and "Z" not in text.splitlines()[-1]
        row = json.loads([x for x in kcli.run("dump", d, "--topics", "loc", "--json", "--value-decoder", decoder,
                                              check=0).stdout.splitlines() if '"type":"record"' in x][0])
        assert row["value"] == want
        for fmt in ("jsonl", "csv"):
            out = kcli.run("export", d, "--topics", "loc", "--value-format", decoder, "--to", "-", "--format", fmt,
                           check=0).stdout
            value = json.loads(out)["value"] if fmt == "jsonl" else json.loads(next(csv.DictReader(io.StringIO(out)))["value"])
            assert value == want, (decoder, fmt)
        kcli.run("export", d, "--topics", "loc", "--value-format", decoder, "--to", tmp_path / f"{decoder}.parquet",
                 check=0)
        t = pq.read_table(tmp_path / f"{decoder}.parquet").schema.field("value").type
        assert t.field("lt").type == pa.timestamp("ms") and t.field("ltu").type == pa.timestamp("us")
        assert t.field("ts").type == pa.timestamp("ms", tz="UTC")


def test_json_values_local_date_times_print_without_a_zone():
    from kafkafmt.values import decode_column

    connect = {"type": "struct", "fields": [
        {"field": "seen", "type": "int64", "name": "io.debezium.time.MicroTimestamp"},
        {"field": "at", "type": "int64", "name": "org.apache.kafka.connect.data.Timestamp"}]}
    raw = json.dumps({"schema": connect, "payload": {"seen": 1714566600123456, "at": 1714566600123}}).encode()
    dec = decode_column(pa.array([raw], pa.binary()), format="connect-json")
    assert dec.error_count == 0, dec.error.to_pylist()
    t = dec.values.type
    assert t.field("seen").type.tz is None and t.field("at").type.tz == "UTC"
    assert json.loads(dec.json()[0]) == {"seen": "2024-05-01T12:30:00.123456", "at": "2024-05-01T12:30:00.123000Z"}
