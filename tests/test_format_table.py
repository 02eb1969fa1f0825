"""The table of value formats: one more format -- a toy one, in a module of this test's own -- reaches every
door (the library's readers, the Arrow stream, the command line's choices, help, export and dump, Spark's
options and reads) through the table alone: registered in this process (`register_format`) or installed
(the ``kafkafmt.value_formats`` entry point, which reaches other processes)."""
import json
import os
import sys
import textwrap
import zipfile

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kafkafmt
from kafkafmt.values import (BUILTIN_FORMATS, ENTRY_POINTS, FORMATS, ValueFormat, format_names, format_of_type,
                             get_format, needs_schema, register_format)

import kcli
from avro_support import RegistryMirror

# The toy format: values are text; it reads them upper-cased, and values starting with "!" are per-record
# errors. It types values only (not keys), and needs no schema.
TOY = "toy-upper"
TOY_MODULE = textwrap.dedent('''
    import pyarrow as pa
    import pyarrow.compute as pc

    from kafkafmt.values import DecodedColumn, ValueFormat, column_parts


    class ToyFormat(ValueFormat):
        name = "toy-upper"
        summary = "text, upper-cased (a test's toy)"
        sides = ("value",)

        def value_type(self, ctx):
            return pa.string()

        def decode(self, column, ctx):
            column = column_parts(column)[0].cast(pa.string())
            bad = pc.fill_null(pc.starts_with(column, "!"), False)
            values = pc.if_else(bad, pa.scalar(None, pa.string()), pc.utf8_upper(column))
            error = pc.if_else(bad, pa.scalar("starts with !"), pa.scalar(None, pa.string()))
            n = len(column)
            return DecodedColumn(values, pa.nulls(n, pa.int32()), error, n - error.null_count, self)

        def json(self, decoded):
            return [None if v is None else '{"toy": "%s"}' % v for v in decoded.values.to_pylist()]
''')
VALUES = [b"alpha", b"!bad", None, b"gamma", b"delta"]
EXPECTED = ["ALPHA", None, None, "GAMMA", "DELTA"]


def _write_toy(folder):
    """The toy format's module and a distribution's metadata naming it in the entry-point group."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kafkafmt_toyfmt.py").write_text(TOY_MODULE)
    info = folder / "kafkafmt_toyfmt-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kafkafmt-toyfmt\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINTS}]\n{TOY} = kafkafmt_toyfmt:ToyFormat\n")
    return folder


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    root = tmp_path_factory.mktemp("toy") / "logs"
    kafkafmt.write_log_dir(str(root / "notes-0"), keys=[b"k%d" % i for i in range(len(VALUES))], values=VALUES)
    kafkafmt.write_log_dir(str(root / "notes-1"), values=[b"epsilon"])
    return root


@pytest.fixture(scope="module")
def toy_path(tmp_path_factory):
    """The toy installed in a folder put on sys.path (and PYTHONPATH for subprocesses), its table entry
    dropped afterwards."""
    folder = _write_toy(tmp_path_factory.mktemp("toyfmt"))
    sys.path.insert(0, str(folder))
    try:
        yield folder
    finally:
        sys.path.remove(str(folder))
        FORMATS.pop(TOY, None)
        sys.modules.pop("kafkafmt_toyfmt", None)


def test_the_builtin_formats_are_the_table_and_declare_what_doors_need():
    assert set(BUILTIN_FORMATS) <= set(FORMATS)
    for name in BUILTIN_FORMATS:
        cls = FORMATS[name]
        assert issubclass(cls, ValueFormat) and cls.name == name and cls.summary
        assert set(cls.sides) <= {"key", "value"}
    # the registry hands each registered type to the format declaring it
    assert {t: format_of_type(t) for t in ("AVRO", "PROTOBUF", "JSON")} == {
        "AVRO": "avro", "PROTOBUF": "protobuf", "JSON": "json-schema"}
    assert [n for n in format_names() if needs_schema(n)] == ["avro", "json-schema", "protobuf", "protobuf-raw",
                                                             "registry"]
    assert not needs_schema(None)
    with pytest.raises(ValueError, match="unknown value format 'yaml': one of avro, bytes, connect-json"):
        get_format("yaml")


def test_the_guide_lists_every_builtin_format():
    import pathlib
    import re

    page = (pathlib.Path(__file__).parent.parent / "docs" / "guide" / "typed-values.md").read_text()
    table = page.split("## Formats", 1)[1].split("\n\n", 2)[1]
    assert set(re.findall(r'`"([a-z-]+)"`', table)) == set(BUILTIN_FORMATS)


def test_a_format_without_schemas_opens_no_registry(tmp_path):
    """connect-json values carry their schema: a log dir without _schemas reads (it wanted a registry)."""
    envelope = {"schema": {"type": "struct", "fields": [{"field": "n", "type": "int32"}]}, "payload": {"n": 3}}
    kafkafmt.write_log_dir(str(tmp_path / "t-0"), values=[json.dumps(envelope).encode()])
    recs = kafkafmt.read_log_dirs(str(tmp_path), value_format="connect-json")
    assert recs.to_arrow().column("value").to_pylist() == [{"n": 3}]


def _check_library(logs):
    recs = kafkafmt.read_log_dir(str(logs / "notes-0"), value_format=TOY)
    table = recs.to_arrow()
    assert table.column("value").to_pylist() == EXPECTED
    assert table.column("valueError").to_pylist() == [None, "starts with !", None, None, None]
    assert recs.typed["value"].json()[0] == '{"toy": "ALPHA"}'
    seg = kafkafmt.read_segment(str(logs / "notes-0" / "00000000000000000000.log"), value_format=TOY)
    assert seg.to_arrow().column("value").to_pylist() == EXPECTED
    both = kafkafmt.read_log_dirs(str(logs), value_format=TOY)
    assert sorted(v for v in both.to_arrow().column("value").to_pylist() if v) == ["ALPHA", "DELTA", "EPSILON",
                                                                                  "GAMMA"]
    chunks = list(kafkafmt.iter_log_dir(str(logs / "notes-0"), value_format=TOY))
    assert [v for c in chunks for v in c.to_arrow().column("value").to_pylist()] == EXPECTED
    # the Arrow stream: its schema known before reading, then the values
    reader = pa.RecordBatchReader.from_stream(kafkafmt.iter_log_dirs(str(logs), topics=["notes"], value_format=TOY))
    assert reader.schema.field("value").type == pa.string()
    assert sorted(v for v in reader.read_all().column("value").to_pylist() if v) == ["ALPHA", "DELTA", "EPSILON",
                                                                                    "GAMMA"]
    assert kafkafmt.type_values(kafkafmt.read_log_dir(str(logs / "notes-0")), value_format=TOY).to_arrow().column(
        "value").to_pylist() == EXPECTED
    # what it declares: values only
    with pytest.raises(ValueError, match=f"format '{TOY}' does not type keys"):
        kafkafmt.read_log_dir(str(logs / "notes-0"), key_format=TOY)


def test_a_format_registered_in_this_process_reaches_the_library(logs):
    ns = {}
    exec(compile(TOY_MODULE, "toy", "exec"), ns)
    assert TOY not in format_names()
    register_format(ns["ToyFormat"])
    try:
        assert TOY in format_names("value") and TOY not in format_names("key")
        _check_library(logs)
    finally:
        del FORMATS[TOY]
    with pytest.raises(ValueError, match="unknown value format"):
        kafkafmt.read_log_dir(str(logs / "notes-0"), value_format=TOY)


def test_an_installed_format_reaches_the_library(logs, toy_path):
    _check_library(logs)


def test_an_installed_format_reaches_the_command_line(logs, toy_path, tmp_path):
    env = {"PYTHONPATH": str(toy_path) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    # (wide help lines: argparse may break a line at the hyphen of the toy's name)
    help_text = kcli.run("export", "--help", env={**env, "COLUMNS": "1000"}, check=0).stdout
    assert f"{TOY}: text, upper-cased (a test's toy)" in " ".join(help_text.split())
    out = tmp_path / "notes.jsonl"
    kcli.run("export", logs, "--topics", "notes", "--partitions", "0", "--value-format", TOY, "--to", out,
             env=env, check=0)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["value"] for r in rows] == [None if v is None else {"toy": v} for v in EXPECTED]
    assert [r["valueError"] for r in rows] == [None, "starts with !", None, None, None]
    kcli.run("export", logs, "--value-format", TOY, "--to", tmp_path / "notes.parquet", env=env, check=0)
    assert sorted(v for v in pq.read_table(tmp_path / "notes.parquet").column("value").to_pylist() if v) == [
        "ALPHA", "DELTA", "EPSILON", "GAMMA"]
    dump = kcli.run("dump", logs / "notes-0", "--value-decoder", TOY, env=env, check=0).stdout
    assert 'payload: {"toy": "GAMMA"}' in dump
    # values only: --key-format does not offer it
    p = kcli.run("export", logs, "--key-format", TOY, "--to", tmp_path / "k.jsonl", env=env)
    assert p.returncode == 2 and "invalid choice" in p.stderr


def test_a_command_looks_the_installed_formats_up_only_when_a_format_is_named(logs):
    """Building ``dump``'s parser does not scan the installed packages' entry points (tens of milliseconds a
    run); naming a format does, and an unknown one is still refused with the formats listed."""
    import subprocess

    code = textwrap.dedent("""
        import contextlib, io, sys
        import importlib.metadata as metadata
        calls, real = [], metadata.entry_points
        metadata.entry_points = lambda **kw: calls.append(kw) or real(**kw)
        from kafkafmt.cli import main
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
            try:
                rc = main(sys.argv[1:])
            except SystemExit as e:
                rc = e.code
        print(rc, len(calls), "invalid choice: 'yaml'" in err.getvalue() and "(choose from 'avro'" in err.getvalue())
    """)

    def run(*args):
        p = subprocess.run([sys.executable, "-c", code, "dump", str(logs / "notes-0"), *args],
                           capture_output=True, text=True, check=True)
        rc, calls, refused = p.stdout.split()
        return int(rc), int(calls) > 0, refused == "True"

    assert run() == (0, False, False)
    assert run("--value-decoder", "string") == (0, True, False)
    assert run("--value-decoder", "yaml") == (2, True, True)


def test_an_installed_format_reaches_spark(logs, toy_path, spark, tmp_path):
    from kafkafmt.spark.options import OptionError, parse

    archive = tmp_path / "toyfmt.zip"              # the toy, installed, for Spark's Python workers
    with zipfile.ZipFile(archive, "w") as z:
        for p in toy_path.rglob("*"):
            if p.is_file():
                z.write(p, p.relative_to(toy_path).as_posix())
    spark.sparkContext.addPyFile(str(archive))
    import kafkafmt.spark

    kafkafmt.spark.register(spark)                 # (a source takes the Python files added before it)
    df = (spark.read.format("kafka-segments").option("subscribe", "notes").option("valueFormat", TOY)
          .option("mode", "PERMISSIVE").load(str(logs)))
    assert df.schema["value"].dataType.simpleString() == "string"
    rows = df.orderBy("partition", "offset").select("value", "valueError").collect()
    assert [r.value for r in rows] == EXPECTED + ["EPSILON"]
    assert rows[1].valueError == "starts with !"
    with pytest.raises(OptionError, match="keyformat must be one of"):
        parse({"keyFormat": TOY, "subscribe": "notes", "path": str(logs)})


def test_registry_text_of_topics_of_two_types_is_each_formats_own(tmp_path):
    """Two topics read together with the "registry" format, one Avro and one Protobuf: each row is printed
    by the format that read it (Avro unions as {"string": ...}, Protobuf as its JSON mapping)."""
    m = RegistryMirror()
    avro = {"type": "record", "name": "Note", "fields": [{"name": "tag", "type": ["null", "string"]}]}
    m.register("a-value", avro)
    proto = m.register("p-value", 'syntax = "proto3"; message Note { string tag = 1; }', schema_type="PROTOBUF")
    m.write(tmp_path)
    kafkafmt.write_log_dir(str(tmp_path / "a-0"), values=[m.serializer(avro, topic="a")({"tag": "x"})])
    kafkafmt.write_log_dir(str(tmp_path / "p-0"), values=[b"\x00" + proto.to_bytes(4, "big") + b"\x00\x0a\x01y"])
    recs = kafkafmt.read_log_dirs(str(tmp_path), topics=["a", "p"], value_format="registry")
    assert recs.typed["value"].error_count == 0
    texts = dict(zip(recs.topic.tolist(), recs.typed["value"].json()))
    assert texts == {"a": '{"tag":{"string":"x"}}', "p": '{"tag": "y"}'}
