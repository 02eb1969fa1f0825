"""kafkafmt.values._formats: the formats (bytes, string, avro, registry), the inputs the facade takes, the
reader-schema choices and strict mode."""
import json

import numpy as np
import pyarrow as pa
import pytest

import kafkafmt
from kafkafmt.errors import SchemaError, SchemaNotFoundError, ValueDecodeError
from kafkafmt.record import BinaryColumn
from kafkafmt.values.registry import InlineSchemaRegistry, open_registry
from kafkafmt.values import FORMATS, ValueFormat, decode_column, get_format, register_format, value_type

from avro_support import RegistryMirror

ORDER = {"type": "record", "name": "Order", "namespace": "com.acme",
         "fields": [{"name": "id", "type": "long"}, {"name": "tag", "type": ["null", "string"], "default": None}]}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """A log dir holding _schemas (an Avro value and key schema, a PROTOBUF one) and an orders topic."""
    tmp = tmp_path_factory.mktemp("values")
    m = RegistryMirror()
    m.register("orders-value", ORDER)
    key = {"type": "record", "name": "K", "fields": [{"name": "id", "type": "long"}]}
    m.register("orders-key", key)
    proto = m.register("orders-proto", 'syntax = "proto3"; message M { int64 id = 1; }', schema_type="PROTOBUF")
    ser, kser = m.serializer(ORDER), m.serializer(key, is_key=True)
    values = [ser({"id": i, "tag": None if i % 2 else f"t{i}"}) for i in range(20)]
    values[3] = None                                             # a tombstone
    values[5] = b"\x00" + proto.to_bytes(4, "big") + b"\x08\x05"  # a PROTOBUF value
    values[7] = b"plain text"
    keys = [kser({"id": i}) for i in range(20)]
    logs = tmp / "logs"
    m.write(logs)
    kafkafmt.write_log_dir(str(logs / "orders-0"), keys=keys, values=values, compression="zstd")
    reg = open_registry(None, roots=[str(logs)])
    return m, reg, logs, values, proto


def test_formats_are_a_registry():
    assert {"bytes", "string", "avro", "registry"} <= set(FORMATS)
    assert get_format(None).name == "bytes"
    with pytest.raises(ValueError):
        get_format("yaml")

    @register_format
    class Upper(ValueFormat):
        name = "test-upper"

        def value_type(self, ctx):
            return pa.string()

        def decode(self, column, ctx):
            import pyarrow.compute as pc
            col = column.to_arrow() if hasattr(column, "to_arrow") else column
            vals = pc.utf8_upper(col.cast(pa.string()))
            n = len(vals)
            from kafkafmt.values import DecodedColumn
            return DecodedColumn(vals, pa.nulls(n, pa.int32()), pa.nulls(n, pa.string()), 0, self)

    try:
        dec = decode_column(pa.array([b"ab", None]), format="test-upper")
        assert dec.values.to_pylist() == ["AB", None]
    finally:
        del FORMATS["test-upper"]


def test_bytes_and_string(setup):
    raw = [b"abc", b"\xff\xfe", None, "é".encode(), b"", b"a\x00b"]
    dec = decode_column(pa.array(raw, pa.binary()), format=None)
    assert dec.values.to_pylist() == raw and dec.error_count == 0
    dec = decode_column(pa.array(raw, pa.binary()), format="string")
    expected = []
    for r in raw:
        try:
            expected.append(None if r is None else r.decode("utf-8"))
        except UnicodeDecodeError:
            expected.append(None)
    assert dec.values.to_pylist() == expected
    assert dec.values.type == value_type("string") == pa.string()
    bad = [r is not None and x is None for r, x in zip(raw, expected)]
    assert [e is not None for e in dec.error.to_pylist()] == bad
    assert dec.json()[0] == '"abc"' and dec.json()[2] is None


def test_inputs_of_every_kind_decode_alike(setup):
    m, reg, logs, values, _ = setup
    recs = kafkafmt.read_log_dir(str(logs / "orders-0"))
    views = kafkafmt.read_log_dir(str(logs / "orders-0"), binary="view")
    base = decode_column(recs.value, format="avro", registry=reg, topic="orders")
    arr = pa.array(values, pa.binary())
    for column in (views.value, arr, arr.cast(pa.large_binary()), arr.cast(pa.binary_view()),
                   pa.chunked_array([arr[:7], arr[7:]]), BinaryColumn.from_arrow(arr)):
        dec = decode_column(column, format="avro", registry=reg, topic="orders")
        assert dec.values.equals(base.values) and dec.error.equals(base.error)
        assert dec.schema_id.equals(base.schema_id)
    sliced = decode_column(arr[4:11], format="avro", registry=reg, topic="orders")
    assert sliced.values.equals(base.values[4:11]) and sliced.error.to_pylist() == base.error.to_pylist()[4:11]


def test_avro_and_registry_formats(setup):
    m, reg, logs, values, proto = setup
    recs = kafkafmt.read_log_dir(str(logs / "orders-0"))
    avro = decode_column(recs.value, format="avro", registry=reg, topic="orders")
    registry = decode_column(recs.value, format="registry", registry=reg, topic="orders")
    de = m.deserializer()
    for i, v in enumerate(values):
        if i in (5, 7):
            continue
        assert avro.values[i].as_py() == (de(v) if v is not None else None)
    e_avro, e_reg = avro.error.to_pylist(), registry.error.to_pylist()
    assert f"schema id {proto} is a PROTOBUF schema, not AVRO" in e_avro[5]
    assert "message-index array" in e_reg[5]        # a PROTOBUF value without its message indexes
    assert "no magic byte" in e_avro[7] and e_avro[3] is None and avro.values[3].as_py() is None
    assert avro.error_count == registry.error_count == 2
    assert avro.schema_id.to_pylist()[5] == proto and avro.schema_id.to_pylist()[7] is None
    keys = decode_column(recs.key, format="avro", registry=reg, topic="orders", is_key=True)
    assert keys.values.to_pylist() == [{"id": i} for i in range(20)]
    assert keys.values.type == value_type("avro", registry=reg, topic="orders", is_key=True)
    # the reader schema of a PROTOBUF subject: its own format's type; not an Avro one
    assert value_type("registry", registry=reg, reader_schema={"subject": "orders-proto", "version": 1}) == \
        pa.struct([pa.field("id", pa.int64(), False)])
    with pytest.raises(SchemaError):
        value_type("avro", registry=reg, reader_schema={"subject": "orders-proto", "version": 1})


def test_strict_names_file_offset_and_position(setup):
    m, reg, logs, values, _ = setup
    recs = kafkafmt.read_log_dir(str(logs / "orders-0"))
    positions = np.arange(len(recs), dtype=np.int64) * 100
    with pytest.raises(ValueDecodeError) as exc:
        decode_column(recs.value, format="avro", registry=reg, topic="orders", strict=True, file=recs.file,
                      offsets=recs.offset, positions=positions)
    err = exc.value
    assert isinstance(err, kafkafmt.KafkafmtError)
    assert err.offset == int(recs.offset[5]) and err.position == 500 and err.file == recs.file
    assert "PROTOBUF" in str(err) and "offset 5" in str(err)
    ok = decode_column(recs.value[:5], format="avro", registry=reg, topic="orders", strict=True)
    assert ok.error_count == 0


def test_reader_schema_choices(setup, tmp_path):
    m, reg, logs, values, _ = setup
    arr = pa.array(values[:3], pa.binary())
    sid = m.client.get_latest_version("orders-value").schema_id
    expected = decode_column(arr, format="avro", registry=reg, topic="orders").values
    avsc = tmp_path / "order.avsc"
    avsc.write_text(json.dumps(ORDER))
    for choice in (sid, {"id": sid}, {"version": 1}, {"subject": "orders-value", "version": "latest"},
                   "orders-value", json.dumps(ORDER), ORDER, str(avsc), reg.schema(sid)):
        dec = decode_column(arr, format="avro", registry=reg, topic="orders", reader_schema=choice)
        assert dec.values.equals(expected), choice
    narrower = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}
    assert decode_column(arr, format="avro", registry=reg, reader_schema=narrower).values.to_pylist() == \
        [{"id": 0}, {"id": 1}, {"id": 2}]
    with pytest.raises(SchemaNotFoundError):
        value_type("avro", registry=reg, topic="nope")
    with pytest.raises(SchemaNotFoundError):
        value_type("avro", registry=reg, reader_schema="no-such-subject")
    with pytest.raises(SchemaError):
        value_type("avro", registry=reg)
    # no registry: a reader schema given as a schema is every id's writer schema too
    dec = decode_column(arr, format="avro", reader_schema=ORDER)
    assert dec.values.equals(expected)
    with pytest.raises(SchemaError):
        decode_column(arr, format="avro", topic="orders")


def test_schema_source_given_as_a_path(setup):
    m, reg, logs, values, _ = setup
    arr = pa.array(values, pa.binary())
    by_path = decode_column(arr, format="avro", registry=str(logs), topic="orders")
    assert by_path.values.equals(decode_column(arr, format="avro", registry=reg, topic="orders").values)
    inline = InlineSchemaRegistry({m.client.get_latest_version("orders-value").schema_id: json.dumps(ORDER)})
    assert decode_column(arr, format="avro", registry=inline, reader_schema=ORDER).error_count == 2
