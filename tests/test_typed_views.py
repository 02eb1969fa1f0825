"""Avro values read where they lie: a binary_view column (views into a segment's memory map) decodes to the
values, errors and schema ids the contiguous column gives; the readers type that way without copying the
raw bytes out; a view that points outside its buffers is refused before anything is read."""
import numpy as np
import pyarrow as pa
import pytest

import kafkafmt
from kafkafmt.record import BinaryViewColumn
from kafkafmt.values import decode_column, gather_views
from kafkafmt.values.registry import open_registry

from avro_support import RegistryMirror

ORDER = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"}, {"name": "sku", "type": "string"},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "note", "type": ["null", "string"], "default": None}]}


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    root = tmp_path_factory.mktemp("views") / "logs"
    m = RegistryMirror()
    m.register("orders-value", ORDER)
    m.write(root)
    ser = m.serializer(ORDER)
    values = [ser({"id": i, "sku": "s" * (i % 30), "tags": ["t"] * (i % 4), "note": None if i % 3 else "n"})
              for i in range(500)]
    values[7] = None                                  # a tombstone
    values[11] = b"\x00\x00"                          # shorter than the framing
    values[13] = b"plain"                             # no magic byte
    values[17] = values[16][:-3]                      # truncated
    values[19] = b""                                  # empty
    kafkafmt.write_log_dir(str(root / "orders-0"), values=values, keys=[b"k%d" % i for i in range(500)])
    return root, values


def test_a_view_column_decodes_as_the_contiguous_one(logs):
    root, values = logs
    reg = open_registry(None, roots=[str(root)])
    views = kafkafmt.read_log_dir(str(root / "orders-0"), binary="view").value
    assert isinstance(views, BinaryViewColumn) and views.null_count == 1
    want = decode_column(pa.array(values, pa.binary()), format="avro", registry=reg, topic="orders")
    got = decode_column(views, format="avro", registry=reg, topic="orders")
    assert got.values.equals(want.values) and got.schema_id.equals(want.schema_id)
    assert got.error.to_pylist() == want.error.to_pylist() and got.error_count == want.error_count == 4
    offsets, data = gather_views(views)
    assert [bytes(data[offsets[i]:offsets[i + 1]]) for i in range(len(values))] == \
        [b"" if v is None else v for v in values]


def test_the_readers_type_from_views_and_keep_the_columns_asked_for(logs):
    root, values = logs
    recs = kafkafmt.read_log_dir(str(root / "orders-0"), value_format="avro")
    kept = kafkafmt.read_log_dir(str(root / "orders-0"), value_format="avro", keep_bytes=True)
    assert recs.to_arrow().equals(kept.to_arrow())
    assert recs.to_arrow().schema.field("key").type == pa.binary()          # untyped keys: contiguous, as asked
    assert recs.key.to_pylist() == [b"k%d" % i for i in range(500)]
    viewed = kafkafmt.read_log_dir(str(root / "orders-0"), value_format="avro", binary="view")
    assert viewed.to_arrow().column("value").equals(recs.to_arrow().column("value"))


def test_a_view_outside_its_buffers_is_refused(logs):
    root, _ = logs
    views = kafkafmt.read_log_dir(str(root / "orders-0"), binary="view").value
    bad = np.array(views.views, copy=True)
    long_rows = np.flatnonzero(bad[:, :4].copy().view("<i4").reshape(-1) > 12)
    bad[long_rows[0], 12:16] = np.array([1 << 30], "<i4").view(np.uint8)
    with pytest.raises(ValueError, match="outside its buffers"):
        decode_column(BinaryViewColumn(bad, views.buffers, views.validity, views.null_count), format="avro",
                      registry=open_registry(None, roots=[str(root)]), topic="orders")
