"""The readers' options: one frozen object (kafkafmt.read.ReadOptions) behind the five readers' signatures,
each option taken by every reader it applies to, with one default and one documented meaning, and each
reaching the read in every reader that takes it (a probe per option: the option changes what is read)."""
import dataclasses
import inspect
import json
import os
import pathlib
import shutil
import uuid

import numpy as np
import pyarrow as pa
import pytest

import kafkafmt
from kafkafmt.errors import UnsupportedLayoutError
from kafkafmt.read import READERS, ReadOptions, reader_options
from kafkafmt.read._options import OPTION_DOCS

from s3server import s3  # noqa: F401  (pytest fixture)

FIELDS = {f.name: f for f in dataclasses.fields(ReadOptions)}


def test_the_readers_signatures_are_the_options():
    """Every reader takes, keyword-only, exactly the options of ReadOptions that apply to it, in its order and
    with its defaults; no **kwargs; the chunked readers also take ``report`` (a list to fill, not an option)."""
    taken = set()
    for name in READERS:
        params = inspect.signature(getattr(kafkafmt, name)).parameters
        assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()), name
        kw = [p for p in params.values() if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name != "report"]
        assert [p.name for p in kw] == reader_options(name), name
        for p in kw:
            assert p.default == FIELDS[p.name].default and type(p.default) is type(FIELDS[p.name].default), \
                (name, p.name)
        assert ("report" in params) == name.startswith("iter_"), name
        taken |= {p.name for p in kw}
    assert taken == set(FIELDS)          # no option that no reader takes
    # the meanings that were ambiguous: one each
    assert "keys" not in reader_options("read_log_dirs") and "tiered_keys" in reader_options("read_log_dir")
    assert "tiered_keys" in reader_options("iter_log_dir")


def test_each_reader_documents_each_of_its_options_with_the_shared_text():
    """One numpydoc entry per option (or group of options), the same text in every reader that takes it."""
    for name in READERS:
        doc = getattr(kafkafmt, name).__doc__
        assert "%(" not in doc, name
        mine = set(reader_options(name))
        for names, kind, text in OPTION_DOCS:
            shown = [n for n in names if n in mine]
            if shown:
                entry = f"    {', '.join(shown)} : {kind}\n" + "".join(f"        {t}\n" for t in text.split("\n"))
                assert entry in doc, (name, names)
            else:
                assert not any(f"    {n} : " in doc or f"    {n}, " in doc for n in names), (name, names)
    assert {n for names, _, _ in OPTION_DOCS for n in names} == set(FIELDS)


def test_the_options_object():
    opts = ReadOptions.of({"isolation": "read_committed", "folder": "x", "tiered_keys": {"k": "SECRET"},
                           "storage_options": {"secret": "SECRET"}})
    assert opts.isolation == "read_committed" and opts.tiered_keys == {"k": "SECRET"}
    assert "SECRET" not in repr(opts)                # secrets stay out of logs and plans
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.isolation = "read_uncommitted"
    assert opts.replace(columns=["offset"]).decode_options().values is False
    assert ReadOptions(values=False).decode_options().values is False        # read_segment's spelling


# -- every option reaches the read ----------------------------------------------------------------------------

class Where:
    """What a probe reads: partition ``topic-partition`` under ``root`` -- through the partition folder
    (read_log_dir, iter_log_dir), the root with ``topics=`` (read_log_dirs, iter_log_dirs) or the segment
    holding offset ``at`` (read_segment)."""

    def __init__(self, root, topic, partition=0, at=0, folder=None):
        self.root, self.topic, self.partition, self.at = str(root), topic, partition, at
        self.folder = folder or os.path.join(self.root, f"{topic}-{partition}")

    def segment(self):
        segs = kafkafmt.list_segments(self.folder)
        return [s for s in segs if s.base_offset <= self.at][-1].log


def read(reader, where, **options):
    """The records ``reader`` reads of ``where`` with ``options``: one Records (chunks concatenated; the
    chunk count as ``.chunks``)."""
    func = getattr(kafkafmt, reader)
    if reader in ("read_log_dirs", "iter_log_dirs"):
        out = func(where.root, topics=[where.topic], partitions=[where.partition], **options)
    elif reader == "read_segment":
        out = func(where.segment(), **options)
    else:
        out = func(where.folder, **options)
    if not reader.startswith("iter_"):
        return out
    chunks = list(out)
    recs = kafkafmt.Records.concat(chunks) if chunks else None
    return _Chunks(recs, len(chunks), sum(1 for c in chunks if not len(c)))


@dataclasses.dataclass
class _Chunks:
    recs: object
    chunks: int
    empty: int

    def __getattr__(self, name):
        return getattr(self.recs, name)

    def __len__(self):
        return len(self.recs)


def _flip_value_digit(folder):
    """Change one digit of an uncompressed value in a payments partition folder: its batch's CRC no longer
    matches, its structure stays whole. Returns the base offset of the segment changed."""
    for seg in kafkafmt.list_segments(str(folder)):
        log = pathlib.Path(seg.log)
        data = bytearray(log.read_bytes())
        at = data.find(b'"amount": ')
        if at >= 0:
            at += len(b'"amount": ')
            data[at] = ord("1") if data[at] != ord("1") else ord("2")
            log.write_bytes(bytes(data))
            return seg.base_offset
    raise AssertionError(f"no uncompressed payment value in {folder}")


@pytest.fixture(scope="module")
def places(sample, tmp_path_factory, s3):
    """The sample, and what some probes need besides: a damaged copy of payments-0, two copies of it in two
    log dirs, shipments-0 alone (without the _schemas topic), an encrypted Aiven upload of orders-0, the
    sample's orders-0 in S3."""
    from test_tiered import _id, _write_local, aiven_layout_objects
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.hazmat.primitives import serialization

    tmp = tmp_path_factory.mktemp("read-options")
    shutil.copytree(sample / "payments-0", tmp / "damaged" / "payments-0")
    damaged = Where(tmp / "damaged", "payments", at=_flip_value_digit(tmp / "damaged" / "payments-0"))
    for copy in ("a", "b"):
        shutil.copytree(sample / "payments-0", tmp / "copies" / copy / "payments-0")
    shutil.copytree(sample / "shipments-0", tmp / "lone" / "shipments-0")
    for copy, n, source in (("old", 1, "clicks-0"), ("new", 2, "payments-0")):  # two incarnations of payments
        folder = shutil.copytree(sample / source, tmp / "incarnations" / copy / "payments-0")
        kafkafmt.log.sidefiles.write_partition_metadata(str(folder / "partition.metadata"), uuid.UUID(int=n))
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    tid = _id(77)
    _write_local(tmp / "aiven", aiven_layout_objects(str(sample / "orders-0"), "orders", 0, tid, chunk_size=16 << 10,
                                                     compress=True, encrypt_with=("kek-9", private.public_key())))
    bucket = s3.bucket()
    s3.upload_dir(str(sample / "orders-0"), bucket, "logs/orders-0")
    _shapes(tmp / "shapes")
    return {"sample": sample, "tmp": tmp, "pem": pem, "s3": s3, "bucket": bucket, "damaged": damaged,
            "aiven": Where(tmp / "aiven", "orders", folder=str(tmp / "aiven" / f"orders-{tid}" / "0"))}


NODE = {"type": "record", "name": "Node", "fields": [{"name": "v", "type": "int"},
                                                    {"name": "next", "type": ["null", "Node"], "default": None}]}
DOC = {"type": "object", "properties": {"at": {"type": "string", "format": "date-time"}}}


def _shapes(root):
    """A log dir whose topic ``nodes`` holds recursive Avro records and ``docs`` JSON Schema documents
    with a date-time of year 1 and a property outside their schema (for the shaping options' probes)."""
    from avro_support import RegistryMirror

    m = RegistryMirror()
    m.register("nodes-value", NODE)
    sid = m.register("docs-value", json.dumps(DOC), "JSON")
    m.write(root)
    ser = m.serializer(NODE, topic="nodes")
    kafkafmt.write_log_dir(str(root / "nodes-0"), values=[ser({"v": 1, "next": {"v": 2, "next": None}})])
    doc = json.dumps({"at": "0001-01-01T00:00:00Z", "more": 1}).encode()
    kafkafmt.write_log_dir(str(root / "docs-0"), values=[b"\0" + sid.to_bytes(4, "big") + doc])


def _same_records(a, b):
    assert a.offset.tolist() == b.offset.tolist() and a.value.to_pylist() == b.value.to_pylist()


def _probe_start_offset(reader, p):
    assert read(reader, Where(p["sample"], "orders"), start_offset=1000).offset[0] == 1000


def _probe_end_offset(reader, p):
    assert read(reader, Where(p["sample"], "orders"), end_offset=1000).offset[-1] == 999


def _probe_start_timestamp(reader, p):
    full = kafkafmt.read_segment(Where(p["sample"], "orders").segment(), keys=False, values=False, headers=False)
    t = int(full.timestamp[100])
    want = int(np.flatnonzero(np.asarray(full.timestamp) >= t)[0])           # Kafka's offsets-for-times
    assert read(reader, Where(p["sample"], "orders"), start_timestamp=t).offset[0] == want


def _probe_end_timestamp(reader, p):
    full = kafkafmt.read_segment(Where(p["sample"], "orders").segment(), keys=False, values=False, headers=False)
    t = int(full.timestamp[100])
    first_at = int(np.flatnonzero(np.asarray(full.timestamp) >= t)[0])
    assert read(reader, Where(p["sample"], "orders"), end_timestamp=t).offset[-1] == first_at - 1


def _probe_isolation(reader, p):
    where = Where(p["sample"], "payments")
    assert len(read(reader, where)) == 120 and len(read(reader, where, isolation="read_committed")) == 100


def _probe_columns(reader, p):
    got = read(reader, Where(p["sample"], "orders"), columns=["offset"])
    assert "value" not in got.columns and "key" not in got.columns and "headers" not in got.columns


def _probe_column_flag(name, column):
    def probe(reader, p):
        assert column in read(reader, Where(p["sample"], "orders")).columns
        assert column not in read(reader, Where(p["sample"], "orders"), **{name: False}).columns
    return probe


def _probe_errors(reader, p):
    where = p["damaged"]
    with pytest.raises(kafkafmt.CrcError):
        read(reader, where)
    got = read(reader, where, errors="salvage")
    intact = read(reader, Where(p["sample"], "payments", at=where.at))
    assert any(e.is_damage for e in got.report) and 0 < len(got) < len(intact)


def _probe_verify_crc(reader, p):
    where = p["damaged"]
    got = read(reader, where, verify_crc=False)
    intact = read(reader, Where(p["sample"], "payments", at=where.at))
    assert not np.asarray(got.batches["crc_valid"]).all() and len(got) == len(intact)


def _probe_include_control(reader, p):
    where = Where(p["sample"], "payments", at=45)          # read_segment: the segment with a commit marker
    assert len(read(reader, where, include_control=True)) > len(read(reader, where))


def _probe_max_decompressed(reader, p):
    with pytest.raises(kafkafmt.DecompressionLimitError):
        read(reader, Where(p["sample"], "orders"), max_decompressed=1)


def _probe_max_batch_bytes(reader, p):
    with pytest.raises(kafkafmt.CorruptRecordError, match="max_batch_bytes"):
        read(reader, Where(p["sample"], "orders"), max_batch_bytes=100)


def _probe_max_bytes(reader, p):
    where = Where(p["sample"], "orders")
    assert read(reader, where, max_bytes=4 << 10).chunks > read(reader, where).chunks


def _probe_keep_empty(reader, p):
    # one batch per chunk, read committed: the chunks of the aborted transaction hold no records
    where = Where(p["sample"], "payments")
    kept = read(reader, where, isolation="read_committed", max_bytes=1, keep_empty=True)
    assert kept.empty > 0 and read(reader, where, isolation="read_committed", max_bytes=1).empty == 0


def _probe_threads(reader, p):
    with pytest.raises(ValueError, match="threads must be a positive number"):
        read(reader, Where(p["sample"], "orders"), threads=-1)


def _probe_binary(reader, p):
    got = read(reader, Where(p["sample"], "orders"), binary="view")
    assert got.to_arrow()["value"].type == pa.binary_view()


def _probe_topic(reader, p):
    assert read(reader, Where(p["sample"], "orders"), topic="renamed").topic == "renamed"


def _probe_partition(reader, p):
    assert read(reader, Where(p["sample"], "orders"), partition=7).partition == 7


def _probe_storage_options(reader, p):
    s3, bucket = p["s3"], p["bucket"]
    where = Where(f"s3://{bucket}/logs", "orders")
    where.segment = lambda: f"s3://{bucket}/logs/orders-0/{0:020d}.log"
    # options that point the read elsewhere (the same live server under another path: a bucket that is not
    # there, answered at once -- an unreachable endpoint would only show the S3 client's retries) fail the read
    with pytest.raises(kafkafmt.KafkafmtError, match="no such|not found"):
        read(reader, where, storage_options=s3.options(endpoint=f"{s3.endpoint}/elsewhere"))
    _same_records(read(reader, where, storage_options=s3.storage_options), read(reader, Where(p["sample"], "orders")))


def _probe_filesystem(reader, p):
    import pyarrow.fs as pafs

    fs = pafs.SubTreeFileSystem(str(p["sample"]), pafs.LocalFileSystem())
    where = Where("", "orders", folder="orders-0")
    where.segment = lambda: f"orders-0/{0:020d}.log"
    _same_records(read(reader, where, filesystem=fs), read(reader, Where(p["sample"], "orders")))


def _probe_tiered_keys(reader, p):
    where = p["aiven"]
    if reader == "read_segment":        # the log object of the upload of segment 0
        where = Where(where.root, where.topic, folder=where.folder)
        where.segment = lambda: sorted(pathlib.Path(where.folder).glob("*.log"))[0]
    with pytest.raises(UnsupportedLayoutError, match="kek-9"):
        read(reader, where)
    _same_records(read(reader, where, tiered_keys={"kek-9": p["pem"]}), read(reader, Where(p["sample"], "orders")))


def _probe_replicas(reader, p):
    where = Where(p["tmp"] / "copies", "payments")
    assert len(read(reader, where)) == 120 and len(read(reader, where, replicas="all")) == 240


def _probe_topic_id(reader, p):
    where = Where(p["tmp"] / "incarnations", "payments")
    with pytest.raises(kafkafmt.IncarnationError):
        read(reader, where)
    new = kafkafmt.read_partition_metadata(str(p["tmp"] / "incarnations" / "new" / "payments-0" / "partition.metadata"))
    got = read(reader, where, topic_id=new["topic_id"])
    assert len(got) == 120 and {e.kind for e in got.report} == {kafkafmt.ReportKind.STRAY}


def _probe_value_format(reader, p):
    assert "valueSchemaId" in read(reader, Where(p["sample"], "shipments"), value_format="avro").columns


def _probe_key_format(reader, p):
    assert "keySchemaId" in read(reader, Where(p["sample"], "shipments"), key_format="string").columns


def _probe_schema_registry(reader, p):
    where = Where(p["tmp"] / "lone", "shipments")
    with pytest.raises(kafkafmt.SchemaRegistryError):
        read(reader, where, value_format="avro")
    got = read(reader, where, value_format="avro", schema_registry=str(p["sample"]))
    assert got.to_arrow()["value"][0]["order_id"].as_py().startswith("o-")


def _probe_value_schema(reader, p):
    where = Where(p["sample"], "shipments")
    v1 = read(reader, where, value_format="avro", value_schema={"version": 1})
    assert v1.to_arrow().schema.field("value").type.names == ["order_id", "carrier", "weight_kg", "shipped_at"]


def _probe_key_schema(reader, p):
    where = Where(p["sample"], "shipments")
    with pytest.raises(kafkafmt.SchemaNotFoundError, match="shipments-key"):
        read(reader, where, key_format="avro")
    got = read(reader, where, key_format="avro", key_schema={"type": "string"})      # plain keys: bad values
    assert got.to_arrow()["keyError"].null_count == 0


def _probe_value_errors(reader, p):
    where = Where(p["sample"], "shipments", at=1234)            # the sample's one value not in the wire format
    with pytest.raises(kafkafmt.ValueDecodeError, match="1234"):
        read(reader, where, value_format="avro", value_errors="strict")


def _probe_untyped_topics(reader, p):
    where = Where(p["sample"], "orders")
    with pytest.raises(kafkafmt.SchemaNotFoundError):
        read(reader, where, value_format="avro")
    assert "valueBytes" in read(reader, where, value_format="avro", untyped_topics="bytes").columns


def _probe_keep_bytes(reader, p):
    where = Where(p["sample"], "shipments")
    with pytest.raises(AttributeError, match="keep_bytes=True"):
        read(reader, where, value_format="avro").value
    kept = read(reader, where, value_format="avro", keep_bytes=True)
    assert kept.value.to_pylist() == read(reader, where).value.to_pylist()
    assert "valueSchemaId" in kept.columns


def _probe_recursive_fields_max_depth(reader, p):
    where = Where(p["tmp"] / "shapes", "nodes")
    assert pa.types.is_struct(read(reader, where, value_format="avro").to_arrow()["value"].type.field("next").type)
    cut = read(reader, where, value_format="avro", recursive_fields_max_depth=1).to_arrow()["value"]
    assert json.loads(cut[0]["next"].as_py()) == {"v": 2, "next": None}


def _probe_time_unit(reader, p):
    where = Where(p["tmp"] / "shapes", "docs")
    assert read(reader, where, value_format="json-schema").to_arrow()["value"][0]["at"].as_py().year == 1
    ns = read(reader, where, value_format="json-schema", time_unit="ns").to_arrow()
    assert ns["value"][0]["at"].as_py() is None and "at" in ns["valueError"][0].as_py()


def _probe_additional_properties(reader, p):
    where = Where(p["tmp"] / "shapes", "docs")
    kept = read(reader, where, value_format="json-schema").to_arrow()["value"][0]["additionalProperties"]
    assert json.loads(kept.as_py()) == {"more": 1}
    assert read(reader, where, value_format="json-schema", additional_properties="drop").to_arrow()[
        "value"].type.names == ["at"]


PROBES = {
    "start_offset": _probe_start_offset, "end_offset": _probe_end_offset, "start_timestamp": _probe_start_timestamp,
    "end_timestamp": _probe_end_timestamp, "isolation": _probe_isolation, "columns": _probe_columns,
    "keys": _probe_column_flag("keys", "key"), "values": _probe_column_flag("values", "value"),
    "headers": _probe_column_flag("headers", "headers"), "errors": _probe_errors, "verify_crc": _probe_verify_crc,
    "include_control": _probe_include_control, "max_decompressed": _probe_max_decompressed,
    "max_batch_bytes": _probe_max_batch_bytes, "max_bytes": _probe_max_bytes, "keep_empty": _probe_keep_empty,
    "threads": _probe_threads, "binary": _probe_binary, "topic": _probe_topic, "partition": _probe_partition,
    "storage_options": _probe_storage_options, "filesystem": _probe_filesystem, "tiered_keys": _probe_tiered_keys,
    "replicas": _probe_replicas, "topic_id": _probe_topic_id, "value_format": _probe_value_format, "key_format": _probe_key_format,
    "schema_registry": _probe_schema_registry, "value_schema": _probe_value_schema, "key_schema": _probe_key_schema,
    "value_errors": _probe_value_errors, "untyped_topics": _probe_untyped_topics, "keep_bytes": _probe_keep_bytes,
    "recursive_fields_max_depth": _probe_recursive_fields_max_depth, "time_unit": _probe_time_unit,
    "additional_properties": _probe_additional_properties,
}


def test_every_option_has_a_probe():
    assert set(PROBES) == set(FIELDS)


@pytest.mark.filterwarnings("ignore::kafkafmt.KafkafmtWarning")
@pytest.mark.parametrize("reader, option", [(r, o) for r in READERS for o in reader_options(r)])
def test_the_option_reaches_the_read(reader, option, places):
    PROBES[option](reader, places)
