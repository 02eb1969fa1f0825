"""An empty result has exactly the schema of a full one, through every door: a topic whose
partitions are all empty (Kafka creates a topic's partitions empty), a topic that matches no
partition, typed or not -- Records.to_arrow / to_pandas, the Arrow stream of iter_log_dirs, the
Polars scan, the command line's export and Spark."""
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kafkafmt

from avro_support import RegistryMirror

ORDER = {"type": "record", "name": "Order", "namespace": "com.acme", "fields": [
    {"name": "id", "type": "long"}, {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """A log dir with ``full`` (one partition of records) and ``empty`` (three empty partitions),
    both with the same value schema, and ``_schemas``."""
    m = RegistryMirror()
    m.register("full-value", ORDER)
    m.register("empty-value", ORDER)
    root = tmp_path_factory.mktemp("empty") / "logs"
    m.write(root)
    ser = m.serializer(ORDER, topic="full")
    kafkafmt.write_log_dir(str(root / "full-0"), keys=[b"k%d" % i for i in range(5)],
                           values=[ser({"id": i, "note": None, "at": 1_700_000_000_000 + i}) for i in range(5)],
                           headers=[[("h", b"v")]] * 5)
    for p in range(3):
        with kafkafmt.LogWriter(str(root / f"empty-{p}")):
            pass
    return root


TYPED = ({}, {"value_format": "avro"}, {"value_format": "avro", "key_format": "string"})


@pytest.mark.parametrize("typed", TYPED, ids=["bytes", "avro", "avro+string"])
def test_records_of_empty_partitions_have_a_full_reads_columns(logs, typed):
    full = kafkafmt.read_log_dirs(str(logs), topics=["full"], **typed)
    empty = kafkafmt.read_log_dirs(str(logs), topics=["empty"], **typed)
    assert len(full) == 5 and len(empty) == 0
    assert "partition" in full.columns
    assert empty.columns == full.columns
    assert empty.to_arrow().schema == full.to_arrow().schema
    f, e = full.to_pandas(), empty.to_pandas()
    assert list(e.columns) == list(f.columns)
    # (NumPy dtypes follow the values: an integer column holding nulls is float64 there)
    assert {c: e[c].dtype for c in f.columns if not f[c].isna().any()} == \
        {c: f[c].dtype for c in f.columns if not f[c].isna().any()}
    assert e["partition"].dtype == f["partition"].dtype == "int32"
    for backend in ("pyarrow", "numpy_nullable"):
        assert list(empty.to_pandas(dtype_backend=backend).dtypes) == \
            list(full.to_pandas(dtype_backend=backend).dtypes), backend
    # one empty partition read alone, and a topic that matches nothing, alike
    assert kafkafmt.read_log_dir(str(logs / "empty-1"), **typed).to_arrow().schema == full.to_arrow().schema
    with pytest.warns(kafkafmt.KafkafmtWarning, match="no partition of topic"):
        nothing = kafkafmt.read_log_dirs(str(logs), topics=["empty-x"])
    assert nothing.to_arrow().schema == kafkafmt.read_log_dirs(str(logs), topics=["full"]).to_arrow().schema


def test_a_topic_that_matches_nothing_is_typed_as_asked(logs):
    m = kafkafmt.read_log_dirs(str(logs), topics=["full"], value_format="avro").to_arrow().schema
    with pytest.warns(kafkafmt.KafkafmtWarning):
        # "empty" has a subject but no partition under this dir's copy: the type still comes from it
        got = kafkafmt.read_log_dirs(str(logs / "full-0"), topics=["empty"], value_format="avro",
                                     schema_registry=str(logs))
    assert got.to_arrow().schema == m


@pytest.mark.parametrize("typed", TYPED, ids=["bytes", "avro", "avro+string"])
def test_the_arrow_stream_and_polars(logs, typed):
    full = kafkafmt.read_log_dirs(str(logs), topics=["full"], **typed).to_arrow()
    stream = kafkafmt.iter_log_dirs(str(logs), topics=["empty"], **typed)
    assert stream.schema == full.schema
    got = stream.to_arrow()
    assert got.num_rows == 0 and got.schema == full.schema
    if not typed:
        pl = pytest.importorskip("polars")
        import kafkafmt.polars as kpl

        want = pl.from_arrow(full).schema
        assert kpl.scan_log_dirs(str(logs), topics=["empty"]).collect().schema == want
        assert kpl.scan_log_dirs(str(logs), topics=["full"]).collect().schema == want


@pytest.mark.parametrize("typed", ([], ["--value-format", "avro"]), ids=["bytes", "avro"])
def test_export(logs, tmp_path, typed):
    import kcli

    for topic in ("full", "empty"):
        for ext in ("parquet", "arrow"):
            kcli.run("export", logs, "--topics", topic, *typed, "--to", tmp_path / f"{topic}.{ext}", check=0)
    assert pq.read_schema(tmp_path / "empty.parquet") == pq.read_schema(tmp_path / "full.parquet")
    assert pq.read_table(tmp_path / "empty.parquet").num_rows == 0
    e = pa.ipc.open_file(tmp_path / "empty.arrow").read_all()
    f = pa.ipc.open_file(tmp_path / "full.arrow").read_all()
    assert e.schema == f.schema and e.num_rows == 0 and f.num_rows == 5


def test_spark(logs, spark):
    for options in ({}, {"valueFormat": "avro", "keyFormat": "string"}):
        frames = {}
        for topic in ("full", "empty"):
            reader = spark.read.format("kafka-segments").option("subscribe", topic)
            for k, v in options.items():
                reader = reader.option(k, v)
            frames[topic] = reader.load(str(logs))
        assert frames["empty"].schema == frames["full"].schema
        assert frames["empty"].collect() == [] and frames["full"].count() == 5
