"""Typed keys and values through the readers (read_segment, read_log_dir(s), iter_log_dir(s)):
``value_format=`` / ``key_format=`` with the schemas of the ``_schemas`` topic found among the log
dirs being read. Values are written by confluent-kafka's own AvroSerializer against its mock
registry (whose ``_schemas`` topic is written as a real partition, tests/avro_support.py); the
expected values are confluent-kafka's AvroDeserializer's, read with the latest schema.
"""
import os

import numpy as np
import pyarrow as pa
import pytest

import kafkafmt
from kafkafmt.values.avro import parse_schema
from kafkafmt.log import ReportKind

from avro_support import RegistryMirror, compact, expected_pylist, plain, same

ORDER_V1 = {"type": "record", "name": "Order", "namespace": "com.acme", "fields": [
    {"name": "id", "type": "int"}, {"name": "note", "type": "string"}]}
ORDER_V2 = {"type": "record", "name": "Order", "namespace": "com.acme", "fields": [
    {"name": "id", "type": "long"}, {"name": "note", "type": "string"},
    {"name": "tags", "type": {"type": "array", "items": "string"}, "default": []},
    {"name": "price", "type": ["null", "double"], "default": None}]}
USER = {"type": "record", "name": "User", "namespace": "com.acme", "fields": [
    {"name": "name", "type": "string"}, {"name": "age", "type": "int"}]}
KEY = {"type": "record", "name": "Key", "fields": [{"name": "id", "type": "long"}]}
BAD_ROW = 13          # a value without the wire format's magic byte


def order(i):
    return {"id": i, "note": f"n{i}", "tags": ["t"] * (i % 3), "price": None if i % 2 else i / 4}


@pytest.fixture(scope="module")
def backup(tmp_path_factory):
    """A log dir with orders (two schema versions, Avro keys, a tombstone, a bad value), users and
    ``_schemas``; returns (root, mirror, orders' raw values, users' raw values)."""
    m = RegistryMirror()
    for s in (ORDER_V1, ORDER_V2):
        m.register("orders-value", s)
    m.register("orders-key", KEY)
    m.register("users-value", USER)
    root = tmp_path_factory.mktemp("typed") / "logs"
    m.write(root)
    values, keys = [], []
    for i in range(300):
        if i == BAD_ROW:
            values.append(b"not avro")
        elif i % 97 == 5:
            values.append(None)
        else:
            values.append(m.serializer(ORDER_V1 if i < 150 else ORDER_V2)(order(i)))
        keys.append(m.serializer(KEY, is_key=True)({"id": i}))
    kafkafmt.write_log_dir(str(root / "orders-0"), keys=keys, values=values, compression="zstd", batch_size=1024,
                           segment_bytes=6000)
    users = [m.serializer(USER, topic="users")({"name": f"u{i}", "age": i}) for i in range(40)]
    kafkafmt.write_log_dir(str(root / "users-0"), values=users)
    return root, m, values, users


def orders_log_dir(backup, tmp_path, partitions, per):
    """A log dir holding the backup's ``_schemas`` and ``partitions`` small partitions of orders, ``per`` values
    each (``order(10 * p + i)`` as ORDER_V2): (its root, the registry mirror)."""
    import shutil

    src, m, _, _ = backup
    root = tmp_path / "logs"
    shutil.copytree(src / "_schemas-0", root / "_schemas-0")
    for p in range(partitions):
        kafkafmt.write_log_dir(str(root / f"orders-{p}"),
                               values=[m.serializer(ORDER_V2)(order(10 * p + i)) for i in range(per)])
    return root, m


def expected(m, values, schema, topic="orders"):
    de = m.deserializer(schema, topic=topic)
    out = []
    for v in values:
        try:
            out.append(None if v is None else de(v))
        except Exception:
            out.append(None)
    return expected_pylist(out, parse_schema(compact(schema)))


def test_read_log_dir_types_values_and_keys_with_the_log_dirs_own_schemas(backup):
    root, m, values, _ = backup
    recs = kafkafmt.read_log_dir(str(root / "orders-0"), value_format="avro", key_format="avro")
    assert same(plain(recs.typed["value"].values), expected(m, values, ORDER_V2))
    table = recs.to_arrow()
    assert table.column_names[:2] == ["key", "value"]
    assert pa.types.is_struct(table.schema.field("value").type)
    assert table.column("key").to_pylist() == [{"id": i} for i in range(300)]
    assert {"keySchemaId", "keyError", "valueSchemaId", "valueError"} <= set(table.column_names)
    errors = table.column("valueError").to_pylist()
    assert [i for i, e in enumerate(errors) if e] == [BAD_ROW] and "magic" in errors[BAD_ROW]
    ids = table.column("valueSchemaId").to_pylist()
    v1_id, v2_id = (m.client.get_version("orders-value", v).schema_id for v in (1, 2))
    assert {ids[i] for i in range(150) if values[i] and i != BAD_ROW} == {v1_id}
    assert {ids[i] for i in range(150, 300) if values[i]} == {v2_id}
    # the raw bytes are dropped once typed, unless asked for
    with pytest.raises(AttributeError, match="keep_bytes=True"):
        recs.value
    kept = kafkafmt.read_log_dir(str(root / "orders-0"), value_format="avro", key_format="avro", keep_bytes=True)
    assert kept.value.to_pylist() == values and kept.to_arrow().equals(table)
    bad = [e for e in recs.report if e.kind is ReportKind.BAD_VALUE]
    assert len(bad) == 1 and bad[0].offset == BAD_ROW


def test_a_typed_read_in_chunks_is_the_whole_read(backup, monkeypatch):
    """read_log_dir types a partition chunk by chunk (letting each chunk's raw bytes go): the table is
    the one typing every value at once gives."""
    import kafkafmt.read._readers as readers

    root, m, values, _ = backup
    raw = kafkafmt.read_log_dir(str(root / "orders-0"))
    whole = kafkafmt.type_values(raw, value_format="avro", key_format="avro").to_arrow()
    monkeypatch.setattr(readers, "TYPED_CHUNK_BYTES", 2048)
    recs = kafkafmt.read_log_dir(str(root / "orders-0"), value_format="avro", key_format="avro")
    assert recs.to_arrow().column("value").num_chunks > 3
    assert recs.to_arrow().equals(whole)
    assert [e.offset for e in recs.report if e.kind is ReportKind.BAD_VALUE] == [BAD_ROW]


def test_every_reader_gives_the_same_typed_table(backup):
    root, m, values, users = backup
    whole = kafkafmt.read_log_dirs(str(root), topics=["orders"], value_format="avro").to_arrow()
    chunks = list(kafkafmt.iter_log_dirs(str(root), topics=["orders"], value_format="avro", max_bytes=4096))
    assert len(chunks) > 3
    assert pa.concat_tables([c.to_arrow() for c in chunks]).equals(whole)
    assert pa.concat_tables([c.to_arrow() for c in kafkafmt.iter_log_dir(str(root / "orders-0"),
                                                                           value_format="avro")]).equals(whole)
    whole = kafkafmt.read_log_dirs(str(root), topics=["orders", "users"], value_format="avro").to_arrow()
    one = kafkafmt.read_log_dir(str(root / "users-0"), value_format="avro").to_arrow()
    merged = whole.filter(pa.compute.equal(whole["topic"], "users")).column("value").to_pylist()
    assert [{k: r[k] for k in ("name", "age")} for r in merged] == \
        one.column("value").to_pylist() == [{"name": f"u{i}", "age": i} for i in range(40)]
    seg = sorted(os.listdir(root / "orders-0"))[0]
    first = kafkafmt.read_segment(str(root / "orders-0" / seg), value_format="avro").to_arrow()
    assert first.column("value").to_pylist() == \
        whole.column("value").to_pylist()[:first.num_rows]


def test_two_topics_of_different_records_are_one_column_with_null_fields(backup):
    root, m, values, users = backup
    t = kafkafmt.read_log_dirs(str(root), topics=["orders", "users"], value_format="avro").to_arrow()
    names = {f.name for f in t.schema.field("value").type}
    assert {"id", "note", "tags", "price", "name", "age"} <= names
    users_rows = t.filter(pa.compute.equal(t["topic"], "users")).column("value").to_pylist()
    assert all(r["id"] is None and r["name"].startswith("u") for r in users_rows)


def test_filters_and_slices_keep_typed_values_aligned(backup):
    root, m, values, _ = backup
    full = kafkafmt.read_log_dir(str(root / "orders-0"), value_format="avro")
    part = kafkafmt.read_log_dir(str(root / "orders-0"), value_format="avro", start_offset=120, end_offset=200)
    assert part.to_arrow().equals(full[120:200].to_arrow())
    rows = np.array([250, 3, 120, 7])
    assert full.take(rows).to_arrow().column("value").to_pylist() == \
        [full.to_arrow().column("value")[int(r)].as_py() for r in rows]
    mask = full.offset % 2 == 0
    assert full.filter(mask).to_arrow().column("valueSchemaId").to_pylist() == \
        full.to_arrow().column("valueSchemaId").to_pylist()[::2]


def test_strict_values_raise_naming_file_position_and_offset(backup):
    root, *_ = backup
    with pytest.raises(kafkafmt.ValueDecodeError) as info:
        kafkafmt.read_log_dir(str(root / "orders-0"), value_format="avro", value_errors="strict")
    err = info.value
    assert err.offset == BAD_ROW and err.file.endswith(".log") and err.position is not None
    assert "offset 13" in str(err)
    with open(err.file, "rb") as f:          # the position is the batch holding the value
        f.seek(err.position)
        assert int.from_bytes(f.read(8), "big") <= BAD_ROW


def test_columns_projection_keeps_the_typed_side(backup):
    root, m, values, _ = backup
    t = kafkafmt.read_log_dir(str(root / "orders-0"), value_format="avro", columns=["offset", "value"]).to_arrow()
    assert "key" not in t.column_names and same(plain(t.column("value")), expected(m, values, ORDER_V2))


def test_reader_schema_by_version_and_pandas(backup):
    root, m, values, _ = backup
    recs = kafkafmt.read_log_dir(str(root / "orders-0"), value_format="avro", value_schema={"version": 1})
    df = recs.to_pandas()
    assert list(df["value"].iloc[0]) == ["id", "note"]
    assert df["value"].iloc[0] == {"id": 0, "note": "n0"}
    arrow_df = recs.to_pandas(dtype_backend="pyarrow")
    assert str(arrow_df["value"].dtype).startswith("struct<id: int32 not null, note: string not null>")


def test_no_schemas_anywhere_is_a_clear_error(tmp_path):
    kafkafmt.write_log_dir(str(tmp_path / "orders-0"), values=[b"\x00\x00\x00\x00\x01\x02"])
    with pytest.raises(kafkafmt.SchemaRegistryError, match="_schemas"):
        kafkafmt.read_log_dirs(str(tmp_path), value_format="avro")
    # a schema given as a schema needs no registry
    recs = kafkafmt.read_log_dirs(str(tmp_path), value_format="avro", value_schema=compact(KEY))
    assert recs.to_arrow().column("value").to_pylist() == [{"id": 1}]
    # formats without schemas never look for one
    kafkafmt.write_log_dir(str(tmp_path / "names-0"), values=[b"ok", b"\xff"])
    names = kafkafmt.read_log_dirs(str(tmp_path), topics=["names"], value_format="string").to_arrow()
    assert names.column("value").to_pylist() == ["ok", None]
    assert "UTF-8" in names.column("valueError")[1].as_py()
    with pytest.raises(ValueError, match="value_errors"):
        kafkafmt.read_log_dirs(str(tmp_path), value_format="string", value_errors="ignore")
    with pytest.raises(ValueError, match="unknown value format"):
        kafkafmt.read_log_dirs(str(tmp_path), value_format="avr")


def test_schemas_from_another_log_dir(backup, tmp_path):
    root, m, values, users = backup
    kafkafmt.write_log_dir(str(tmp_path / "users-0"), values=users)
    recs = kafkafmt.read_log_dirs(str(tmp_path), value_format="avro", schema_registry=str(root))
    assert recs.to_arrow().column("value").to_pylist() == [{"name": f"u{i}", "age": i} for i in range(40)]


# -- the command line ------------------------------------------------------------------------------

def test_cli_dump_prints_values_as_the_library_types_them(backup):
    import json
    import kcli

    root, m, values, _ = backup
    lib = kafkafmt.read_log_dir(str(root / "orders-0"), value_format="avro", key_format="avro")
    texts = lib.typed["value"].json()
    out = kcli.run("dump", root, "--topics", "orders", "--json", "--value-decoder", "avro", "--key-decoder", "avro",
                   check=0).stdout
    rows = [json.loads(line) for line in out.splitlines() if '"type":"record"' in line]
    assert [r["offset"] for r in rows] == list(range(300))
    assert [None if t is None else json.loads(t) for t in texts] == [r["value"] for r in rows]
    assert [r["key"] for r in rows] == [{"id": i} for i in range(300)]
    assert [r["valueError"] is not None for r in rows] == [i == BAD_ROW for i in range(300)]
    # as text, kafka-avro-console-consumer's JSON after "payload: "
    text = kcli.run("dump", root / "orders-0", "--value-decoder", "avro", check=0).stdout
    payloads = {int(line.split("offset: ", 1)[1].split()[0]): line.split(" payload: ", 1)[1]
                for line in text.splitlines() if " payload: " in line}
    assert sorted(payloads) == [i for i in range(300) if values[i] is not None]
    assert all(payloads[i] == texts[i] for i in payloads if i != BAD_ROW)
    assert "valueError: no magic byte" in payloads[BAD_ROW]
    strict = kcli.run("dump", root / "orders-0", "--value-decoder", "avro", "--value-errors", "strict")
    assert strict.returncode == 1 and "offset 13" in strict.stderr


def test_cli_export_writes_the_librarys_typed_table(backup, tmp_path):
    import json
    import pyarrow.parquet as pq
    import kcli

    root, m, values, users = backup
    out = tmp_path / "typed.parquet"
    p = kcli.run("export", root, "--topics", "orders,users", "--value-format", "avro", "--to", out, check=0)
    assert "could not be read as avro" in p.stderr
    lib = kafkafmt.read_log_dirs(str(root), topics=["orders", "users"], value_format="avro").to_arrow()
    got = pq.read_table(out)
    for name in ("value", "valueSchemaId", "valueError", "offset", "topic"):
        assert got.column(name).to_pylist() == lib.column(name).to_pylist(), name
    lines = kcli.run("export", root / "users-0", "--value-format", "avro", "--to", "-", "--format", "jsonl",
                     check=0).stdout.splitlines()
    assert [json.loads(x)["value"] for x in lines] == [{"name": f"u{i}", "age": i} for i in range(40)]
    missing = kcli.run("export", root, "--value-format", "avro", "--to", tmp_path / "all.parquet")
    assert missing.returncode != 0 and "--topics" in missing.stderr


# -- the bundled sample ----------------------------------------------------------------------------

def test_the_samples_avro_topic_equals_fastavro(tmp_path, monkeypatch):
    import io

    import fastavro

    from kafkafmt import sample

    monkeypatch.setenv("KAFKAFMT_SAMPLE_DIR", str(tmp_path / "sample"))
    root = sample.sample_dir()
    recs = kafkafmt.read_log_dirs(root, topics=["shipments"], value_format="avro", keep_bytes=True)
    raw = recs.value.to_pylist()
    writers = {1: fastavro.parse_schema(sample.SHIPMENT_V1), 2: fastavro.parse_schema(sample.SHIPMENT_V2)}
    reader = fastavro.parse_schema(sample.SHIPMENT_V2)
    want = []
    for v in raw:
        if v[:1] != b"\x00":
            want.append(None)
            continue
        rec = fastavro.schemaless_reader(io.BytesIO(v[5:]), writers[int.from_bytes(v[1:5], "big")], reader)
        rec["shipped_at"] = int(rec["shipped_at"].timestamp() * 1000)
        want.append(rec)
    t = recs.to_arrow()
    got = plain(t.column("value"))
    assert len(got) == 2000 and got == want
    assert t.column("valueSchemaId").to_pylist().count(2) == 999 and t.column("valueError").null_count == 1999
    assert [e.kind for e in recs.report] == [ReportKind.BAD_VALUE]


def test_a_typed_stream_is_an_arrow_stream_of_the_merged_type(backup):
    root, *_ = backup
    whole = kafkafmt.read_log_dirs(str(root), topics=["orders", "users"], value_format="avro").to_arrow()
    stream = kafkafmt.iter_log_dirs(str(root), topics=["orders", "users"], value_format="avro", max_bytes=4096)
    schema = stream.schema                                   # known before reading
    got = pa.RecordBatchReader.from_stream(stream).read_all()
    assert got.schema == schema and schema.field("value").type == whole.schema.field("value").type
    for name in ("value", "valueSchemaId", "valueError", "offset", "topic"):
        assert got.column(name).to_pylist() == whole.column(name).to_pylist()


def test_records_already_decoded_are_typed_alike(backup):
    root, *_ = backup
    raw = kafkafmt.read_log_dirs(str(root), topics=["orders", "users"])
    later = kafkafmt.type_values(raw, value_format="avro")
    now = kafkafmt.read_log_dirs(str(root), topics=["orders", "users"], value_format="avro")
    assert later.to_arrow().equals(now.to_arrow())
    orders = kafkafmt.read_log_dir(str(root / "orders-0"))
    assert kafkafmt.type_values(orders, key_format="avro").to_arrow().equals(
        kafkafmt.read_log_dir(str(root / "orders-0"), key_format="avro").to_arrow())
    with pytest.raises(kafkafmt.ValueDecodeError):
        kafkafmt.type_values(raw, value_format="avro", value_errors="strict")


def test_a_typed_read_leaves_no_reference_cycle(backup):
    """A typed table's buffers go when the table goes, not at the garbage collector's next run (the column
    builder was a closure calling itself, which kept every buffer of the read: 40 MB a read of nested values).
    What the collector finds is looked at, not counted: another test's threads (a Spark gateway, a server) may
    leave garbage of their own meanwhile."""
    import gc

    root, _, _, _ = backup

    def read():
        kafkafmt.read_log_dir(str(root / "orders-0"), value_format="avro", key_format="avro").to_arrow()

    read()
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)      # (what the collector finds kept in gc.garbage, to be looked at)
    try:
        read()
        gc.collect()
        ours = [o for o in gc.garbage if _of_a_read(o)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()
    assert not ours, ours[:5]


def _of_a_read(o):
    """Whether an object the collector found is a read's: kafkafmt's functions, frames and objects, arrays and
    Arrow buffers."""
    code = getattr(o, "__code__", None) or getattr(o, "f_code", None)
    if code is not None:
        return "kafkafmt" in code.co_filename
    return type(o).__module__.startswith("kafkafmt") or isinstance(o, (np.ndarray, pa.Buffer, pa.Array))


def test_many_small_typed_partitions_are_read_in_one_pass(backup, tmp_path, units_read):
    """read_log_dirs, iter_log_dirs, the Polars scan and a lakehouse export of many small partitions with typed
    values decode their records in one pass (as untyped reads do) and type each partition's chunks as its own read types them: the values are
    confluent-kafka's deserializer's, the table and report entries those of each partition read on its own
    (a bad value's entry names its partition's segment), on one thread and on two."""
    import shutil

    src, m, _, _ = backup
    root = tmp_path / "logs"
    shutil.copytree(src / "_schemas-0", root / "_schemas-0")
    values = []
    for p in range(30):
        vals = [m.serializer(ORDER_V2)(order(100 * p + i)) for i in range(5)]
        if p == 17:
            vals[2] = b"not avro"
        kafkafmt.write_log_dir(str(root / f"orders-{p}"), values=vals, keys=[b"k%d" % i for i in range(5)])
        values += vals
    seen = units_read
    want = pa.concat_tables([kafkafmt.read_log_dir(str(root / f"orders-{p}"), value_format="avro",
                                                   schema_registry=str(root)).to_arrow() for p in range(30)])
    for threads in (1, 2):
        recs = kafkafmt.read_log_dirs(str(root), topics="orders", value_format="avro", threads=threads)
        assert recs.to_arrow().equals(want)
        assert seen["chunks"] == 30 * threads and seen["fallback"] == 0
        bad = [e for e in recs.report if e.kind is ReportKind.BAD_VALUE]
        assert [(os.path.basename(os.path.dirname(e.file)), e.offset) for e in bad] == [("orders-17", 2)]
    assert same(plain(recs.typed["value"].values), expected(m, values, ORDER_V2))
    chunks = list(kafkafmt.iter_log_dirs(str(root), topics="orders", value_format="avro"))
    assert seen["chunks"] == 90 and pa.concat_tables([c.to_arrow() for c in chunks]).equals(want)
    import kafkafmt.polars as kpl

    frame = kpl.scan_log_dirs(str(root), topics="orders", value_format="avro").collect()
    assert seen["chunks"] == 120
    assert frame["value"].to_list() == want.column("value").to_pylist()
    assert frame["partition"].to_list() == want.column("partition").to_pylist()
    from deltalake import DeltaTable

    exported = kafkafmt.export_table(str(root), str(tmp_path / "table"), format="delta", topics=["orders"],
                                     value_format="avro")
    table = DeltaTable(str(tmp_path / "table")).to_pyarrow_table().sort_by([("partition", "ascending"),
                                                                             ("offset", "ascending")])
    assert seen["chunks"] == 150 and (exported.rows, exported.dead_letters) == (149, 1)   # (value_errors="dlq")
    assert [v for v in table.column("value").to_pylist()] == [v for v in want.column("value").to_pylist() if v]


def test_the_values_of_many_small_partitions_are_typed_at_once(backup, tmp_path, monkeypatch):
    """A read of many small partitions types the values of each run of one topic's partitions in its pass with
    one call, each chunk its rows of that, when the values all read whole; a pass holding a bad value, or values
    of a format that infers its type from them (plain JSON), is typed chunk by chunk: the same table and report
    as each partition read on its own, the bad value's entry naming its partition's segment."""
    import json
    import shutil

    import kafkafmt.read._piecetyping as piecetyping
    import kafkafmt.read._readers as readers

    src, m, _, users = backup
    root = tmp_path / "logs"
    shutil.copytree(src / "_schemas-0", root / "_schemas-0")
    values = {}
    for p in range(12):
        values[p] = [m.serializer(ORDER_V1 if p % 2 else ORDER_V2)(order(10 * p + i)) for i in range(4)]
        kafkafmt.write_log_dir(str(root / f"orders-{p}"), values=values[p])
    for p in range(3):                     # (a topic without a schema, kept as bytes: a run of its own)
        kafkafmt.write_log_dir(str(root / f"plain-{p}"), values=[b"x%d" % i for i in range(3)])
    calls = {"n": 0}

    def counted(real):
        def call(*args, **kwargs):
            calls["n"] += 1
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(piecetyping, "decode_values", counted(piecetyping.decode_values))
    monkeypatch.setattr(readers, "decode_values", counted(readers.decode_values))

    def each(topics, **kw):
        parts = sorted(p for p in os.listdir(root) if p.rpartition("-")[0] in topics)
        return pa.concat_tables([kafkafmt.read_log_dir(str(root / p), schema_registry=str(root), **kw).to_arrow()
                                 for p in sorted(parts, key=lambda p: (p.rpartition("-")[0], int(p.rpartition("-")[2])))],
                                promote_options="permissive")     # (a topic kept as bytes: its values null)

    want = each(["orders", "plain"], value_format="avro", untyped_topics="bytes")
    monkeypatch.setattr(readers, "piece_typed", lambda piece, typed: None)       # (each chunk typed on its own)
    one_by_one = kafkafmt.read_log_dirs(str(root), topics=["orders", "plain"], value_format="avro",
                                        untyped_topics="bytes").to_arrow()
    monkeypatch.undo()
    monkeypatch.setattr(piecetyping, "decode_values", counted(piecetyping.decode_values))
    monkeypatch.setattr(readers, "decode_values", counted(readers.decode_values))
    for name in one_by_one.column_names:
        assert one_by_one.column(name).to_pylist() == want.column(name).to_pylist(), name
    for threads in (1, 2):
        calls["n"] = 0
        recs = kafkafmt.read_log_dirs(str(root), topics=["orders", "plain"], value_format="avro",
                                      untyped_topics="bytes", threads=threads)
        assert recs.to_arrow().equals(one_by_one) and recs.report == []
        assert calls["n"] == 2                          # (orders, then plain: one call each, not 15)
    ordered = [v for p in range(12) for v in values[p]]
    assert same(plain(recs.typed["value"].values[:48]), expected(m, ordered, ORDER_V2))
    calls["n"] = 0
    chunks = list(kafkafmt.iter_log_dirs(str(root), topics="orders", value_format="avro"))
    assert calls["n"] == 1
    assert pa.concat_tables([c.to_arrow() for c in chunks]).equals(each(["orders"], value_format="avro"))
    # each chunk's typed arrays are its own, as its own read's are (not views of the pass's: a consumer may copy
    # all that a view holds, for each chunk)
    own = [list(kafkafmt.iter_log_dir(str(root / f"orders-{p}"), value_format="avro", schema_registry=str(root)))
           for p in range(12)]
    assert [len(o) for o in own] == [1] * 12
    assert [c.typed["value"].values.get_total_buffer_size() for c in chunks] == \
        [o[0].typed["value"].values.get_total_buffer_size() for o in own]
    # a bad value: every chunk of its pass typed on its own, its entry naming its partition's segment
    kafkafmt.write_log_dir(str(root / "orders-12"), values=[values[0][0], b"not avro"])
    calls["n"] = 0
    recs = kafkafmt.read_log_dirs(str(root), topics="orders", value_format="avro", threads=1)
    assert calls["n"] == 1 + 13             # (the pass's once, then each chunk's)
    assert recs.to_arrow().equals(each(["orders"], value_format="avro"))
    bad = [e for e in recs.report if e.kind is ReportKind.BAD_VALUE]
    assert [(os.path.basename(os.path.dirname(e.file)), e.offset) for e in bad] == [("orders-12", 1)]
    # plain JSON infers its type from the values it is given: typed chunk by chunk (each partition's values
    # here infer a type of their own, merged when the chunks are joined)
    docs = [[{"n": i, **({"m": "x"} if p % 2 else {})} for i in range(3)] for p in range(4)]
    for p in range(4):
        kafkafmt.write_log_dir(str(root / f"events-{p}"), values=[json.dumps(d).encode() for d in docs[p]])
    calls["n"] = 0
    recs = kafkafmt.read_log_dirs(str(root), topics="events", value_format="json")
    assert calls["n"] == 4
    assert recs.typed["value"].values.to_pylist() == [{"m": d.get("m"), "n": d["n"]} for ds in docs for d in ds]


def test_typed_exports_lay_out_many_small_partitions_a_topic_at_a_time(backup, tmp_path, monkeypatch, capsys):
    """``export --value-format avro --to x.parquet`` and a lakehouse export lay out the typed chunks of many small
    partitions a topic at a time, not a table a chunk: the same file and table as a table a chunk gives."""

    import pyarrow.parquet as pq
    from deltalake import DeltaTable

    import kafkafmt.cli.export as cli_export
    import kafkafmt.lakehouse.export as lake_export
    from kafkafmt.cli import main

    root, m = orders_log_dir(backup, tmp_path, 10, 3)
    for p in range(4):
        kafkafmt.write_log_dir(str(root / f"plain-{p}"), values=[b"x%d" % i for i in range(2)])
    laid = []
    to_table, chunk_table = cli_export.to_table, lake_export.chunk_table
    monkeypatch.setattr(cli_export, "to_table", lambda recs, schema: laid.append(recs.topic) or to_table(recs, schema))
    monkeypatch.setattr(lake_export, "chunk_table", lambda chunk, *a: laid.append(chunk.topic) or chunk_table(chunk, *a))

    def both(tag):
        laid.clear()
        out = str(tmp_path / f"{tag}.parquet")
        assert main(["export", str(root), "--topics", "orders,plain", "--value-format", "avro", "--untyped-topics",
                     "bytes", "--to", out, "-q"]) == 0
        kafkafmt.export_table(str(root), str(tmp_path / tag), format="delta", topics=["orders"],
                              value_format="avro")
        table = DeltaTable(str(tmp_path / tag)).to_pyarrow_table().sort_by([("partition", "ascending"),
                                                                            ("offset", "ascending")])
        return list(laid), pq.read_table(out), table.drop_columns(["ingested_at"] if "ingested_at" in
                                                                  table.column_names else [])

    got = both("gathered")
    import kafkafmt.polars as kpl
    import kafkafmt.read._polars as polars_scan

    conform = polars_scan.conform_table
    monkeypatch.setattr(polars_scan, "conform_table", lambda t, schema: laid.append(t.num_rows) or conform(t, schema))
    laid.clear()
    frame = kpl.scan_log_dirs(str(root), topics=["orders", "plain"], value_format="avro", untyped_topics="bytes")
    assert frame.collect().to_arrow().select(got[1].column_names).to_pylist() == got[1].to_pylist()
    assert laid == [30, 8]
    monkeypatch.setattr(cli_export, "GATHER_ROWS", 1)          # a table a chunk, as before
    monkeypatch.setattr(lake_export, "WRITE_ROWS", 1)
    want = both("each")
    capsys.readouterr()
    assert got[0] == ["orders", "plain", "orders"]
    assert want[0] == ["orders"] * 10 + ["plain"] * 4 + ["orders"] * 10
    assert got[1].num_rows == 38 and got[1].equals(want[1]) and got[2].equals(want[2])


def test_a_partition_of_many_small_segments_types_its_values_at_once(backup, tmp_path, monkeypatch):
    """``read_log_dir`` of a partition of several small segments with typed values decodes them in one pass and
    types the values with one call: the table the segment-by-segment read gives, the values confluent-kafka's
    deserializer gives; with a bad value, each segment is typed on its own (its entry naming its segment)."""
    import shutil

    import kafkafmt.read._piecetyping as piecetyping
    import kafkafmt.read._readers as readers

    src, m, _, _ = backup
    root = tmp_path / "logs"
    shutil.copytree(src / "_schemas-0", root / "_schemas-0")
    values = [m.serializer(ORDER_V2)(order(i)) for i in range(120)]
    kafkafmt.write_log_dir(str(root / "orders-0"), values=values, segment_bytes=600, batch_size=200)
    folder = str(root / "orders-0")
    assert len([f for f in os.listdir(folder) if f.endswith(".log")]) > 5
    calls = []
    real = piecetyping.decode_values
    monkeypatch.setattr(piecetyping, "decode_values", lambda recs, typed: calls.append(len(recs)) or real(recs, typed))

    def segment_by_segment(**kw):
        monkeypatch.setattr(readers, "_SEGMENTS_AT_ONCE", [False])
        try:
            return kafkafmt.read_log_dir(folder, value_format="avro", **kw)
        finally:
            monkeypatch.setattr(readers, "_SEGMENTS_AT_ONCE", [True])

    got = kafkafmt.read_log_dir(folder, value_format="avro")
    assert calls == [120] and got.report == []
    assert got.to_arrow().equals(segment_by_segment().to_arrow())
    assert same(plain(got.typed["value"].values), expected(m, values, ORDER_V2))
    kept = kafkafmt.read_log_dir(folder, value_format="avro", keep_bytes=True)
    assert kept.value.to_pylist() == values and kept.to_arrow().equals(segment_by_segment(keep_bytes=True).to_arrow())
    values[70] = b"not avro"
    shutil.rmtree(folder)
    kafkafmt.write_log_dir(folder, values=values, segment_bytes=600, batch_size=200)
    calls.clear()
    got = kafkafmt.read_log_dir(folder, value_format="avro")
    want = segment_by_segment()
    assert got.to_arrow().equals(want.to_arrow()) and calls == [120]        # (tried at once, then segment by segment)
    assert [(e.kind, e.file, e.offset) for e in got.report] == [(e.kind, e.file, e.offset) for e in want.report]
    assert [(os.path.basename(e.file), e.offset) for e in got.report if e.kind is ReportKind.BAD_VALUE] == \
        [(sorted(f for f in os.listdir(folder) if f.endswith(".log") and int(f[:20]) <= 70)[-1], 70)]
