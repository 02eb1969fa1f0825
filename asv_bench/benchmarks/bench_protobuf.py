"""Typed values (issue 24): Protobuf messages in the Schema Registry's wire format to Arrow columns.

kafkafmt's ``decode_column(format="protobuf")`` (the Cython kernel, one call per column) against
the ``protobuf`` package (upb, its C parser) parsing each message and building the same Arrow
column from the parsed messages the fastest honest way: attribute access into per-field lists
and ``pyarrow`` arrays from them (FLAT), ``pyarrow.array(dicts, type=<the same struct type>)``
from dicts built by attribute access (NESTED) -- not ``MessageToDict``, which is slower still.

Two messages, as the Avro benchmark's records: FLAT, 10 fields (int64, string, int32, double,
bool, google.protobuf.Timestamp, string, float, optional int64, int32); NESTED, an order with a
nested message, a repeated message, a repeated string and a map<string, int64>. Messages are
written once per process by upb with the registry framing (0x00, schema id, the message-index
array). kafkafmt is pinned to one thread (common.py). Target: >= 10x on both (``track_ratio_*``).
"""

from __future__ import annotations

from . import common
from .common import register_ratio, require_kafkafmt

RECORDS = {"flat": 100_000, "nested": 30_000}
SCHEMA = """syntax = "proto3";
package bench;
import "google/protobuf/timestamp.proto";
message Flat {
  int64 id = 1; string name = 2; int32 qty = 3; double price = 4; bool ok = 5;
  google.protobuf.Timestamp ts = 6; string category = 7; float score = 8; optional int64 parent = 9; int32 code = 10;
}
message Customer { string name = 1; optional string email = 2; int32 tier = 3; }
message Item { string sku = 1; int32 qty = 2; double price = 3; }
message Order {
  int64 id = 1; Customer customer = 2; repeated Item items = 3; repeated string tags = 4;
  map<string, int64> attrs = 5;
}
"""
_CACHE = {}


def classes():
    if "classes" not in _CACHE:
        from google.protobuf import message_factory
        from kafkafmt.values.protobuf import compile_text
        ps = compile_text(SCHEMA, "bench.proto")
        _CACHE["classes"] = {n: message_factory.GetMessageClass(ps.pool.FindMessageTypeByName(f"bench.{n}"))
                             for n in ("Flat", "Order")}
    return _CACHE["classes"]


def _message(kind, i):
    c = classes()
    if kind == "flat":
        m = c["Flat"](id=i, name=f"name-{i % 1000}", qty=i % 100, price=i * 0.25, ok=i % 2 == 0,
                      category="electronics", score=0.5, code=-i)
        m.ts.seconds = 1_767_225_600 + i
        if i % 3 == 0:
            m.parent = i - 1
        return m
    m = c["Order"](id=i, tags=["new", "promo", "gift"][: i % 3])
    m.customer.name = f"customer-{i % 500}"
    if i % 4 == 0:
        m.customer.email = f"c{i}@example.com"
    m.customer.tier = i % 3
    for j in range(i % 4 + 1):
        m.items.add(sku=f"SKU-{(i + j) % 997}", qty=j + 1, price=9.99 * (j + 1))
    for j in range(i % 3 + 1):
        m.attrs[f"k{j}"] = i * j
    return m


def data(kind):
    """(framed values, pyarrow binary array, message class, arrow type)."""
    if kind in _CACHE:
        return _CACHE[kind]
    import pyarrow as pa
    from kafkafmt.values import value_type
    cls = classes()["Flat" if kind == "flat" else "Order"]
    # the message-index array: [0] (the 0x00 shortcut) for Flat, [3] for Order (the file's 4th message)
    header = b"\x00\x00\x00\x00\x01" + (b"\x00" if kind == "flat" else b"\x02\x06")
    values = [header + _message(kind, i).SerializeToString() for i in range(RECORDS[kind])]
    arrow_type = value_type("protobuf", reader_schema=cls)
    _CACHE[kind] = (values, pa.array(values, pa.binary()), cls, arrow_type)
    return _CACHE[kind]


def kafkafmt_protobuf(kind):
    from kafkafmt.values import decode_column
    values, arr, cls, arrow_type = data(kind)
    return lambda: decode_column(arr, format="protobuf", reader_schema=cls).values


def upb_protobuf(kind):
    import pyarrow as pa
    values, arr, cls, arrow_type = data(kind)
    parse = cls.FromString
    skip = 6 if kind == "flat" else 7
    if kind == "flat":
        names = ["id", "name", "qty", "price", "ok", "category", "score", "code"]

        def run(values=values):
            msgs = [parse(v[skip:]) for v in values]
            cols = {n: [getattr(m, n) for m in msgs] for n in names}
            ts = [m.ts.seconds * 1_000_000_000 + m.ts.nanos if m.HasField("ts") else None for m in msgs]
            parent = [m.parent if m.HasField("parent") else None for m in msgs]
            arrays = []
            for f in arrow_type:
                if f.name == "ts":
                    arrays.append(pa.array(ts, pa.int64()).cast(f.type))
                elif f.name == "parent":
                    arrays.append(pa.array(parent, f.type))
                else:
                    arrays.append(pa.array(cols[f.name], f.type))
            return pa.StructArray.from_arrays(arrays, fields=list(arrow_type))
        return run

    def run(values=values):
        rows = []
        for v in values:
            m = parse(v[skip:])
            c = m.customer
            rows.append({"id": m.id,
                         "customer": {"name": c.name, "email": c.email if c.HasField("email") else None,
                                      "tier": c.tier} if m.HasField("customer") else None,
                         "items": [{"sku": it.sku, "qty": it.qty, "price": it.price} for it in m.items],
                         "tags": list(m.tags), "attrs": list(m.attrs.items())})
        return pa.array(rows, arrow_type)
    return run


def check_same(kind, n=2000):
    """kafkafmt's column equals the peer's (on the first n values)."""
    import pyarrow as pa
    from kafkafmt.values import decode_column
    values, arr, cls, arrow_type = data(kind)
    ours = decode_column(arr[:n], format="protobuf", reader_schema=cls)
    assert ours.error_count == 0
    _CACHE[kind] = (values[:n], arr[:n], cls, arrow_type)
    try:
        theirs = upb_protobuf(kind)()
    finally:
        _CACHE[kind] = (values, arr, cls, arrow_type)
    a, b = ours.values.to_pylist(), theirs.to_pylist()
    if kind == "nested":     # upb's map order is its own: compare maps as dicts
        a = [dict(r, attrs=dict(r["attrs"])) for r in a]
        b = [dict(r, attrs=dict(r["attrs"])) for r in b]
    assert a == b, f"{kind}: kafkafmt and upb disagree"
    assert isinstance(theirs, pa.Array)


register_ratio("protobuf_vs_upb", "Protobuf → Arrow × protobuf (upb)", ["flat", "nested"],
               lambda kind: (upb_protobuf(kind), kafkafmt_protobuf(kind)), family="protobuf",
               track="bench_protobuf.ProtobufRatios.track_ratio_vs_upb")


def records_per_second(kind, budget_s=None):
    t, = common.interleaved_medians([kafkafmt_protobuf(kind)], budget_s)
    return round(RECORDS[kind] / t)


common.register_value("protobuf_rate", "kafkafmt Protobuf records/s", ["flat", "nested"], records_per_second,
                      "records/s", family="protobuf", track="bench_protobuf.ProtobufRatios.track_records_per_second")


class Protobuf:
    """Times of each contender on each message kind."""

    params = ["flat", "nested"]
    param_names = ["record"]
    timeout = 600

    def setup(self, kind):
        require_kafkafmt()
        common.note_quick()
        check_same(kind)
        self.kafkafmt, self.upb = kafkafmt_protobuf(kind), upb_protobuf(kind)

    def time_kafkafmt(self, kind):
        self.kafkafmt()

    def time_upb(self, kind):
        self.upb()


class ProtobufRatios:
    """time(upb) / time(kafkafmt), interleaved in one process (common.ratio); records/s."""

    params = ["flat", "nested"]
    param_names = ["record"]
    timeout = 600

    def setup(self, kind):
        require_kafkafmt()
        common.note_quick()
        check_same(kind)

    def track_ratio_vs_upb(self, kind):
        return common.measure_registered("protobuf_vs_upb", kind)

    track_ratio_vs_upb.unit = "ratio"

    def track_records_per_second(self, kind):
        return records_per_second(kind)

    track_records_per_second.unit = "records/s"
