#!/usr/bin/env python3
"""Atheris harness: the Protobuf kernel (kafkafmt._native.protobuf) through
kafkafmt.values._formats.decode_column, on hostile messages (issue 24).

Input: ``sel byte, then values`` -- each value ``uint16 length (0xFFFF: null), bytes``. ``sel %
len(MESSAGES)`` picks the reader message; bit 7 of sel picks the framed format ("protobuf": the
bytes carry 0x00, a schema id and the message-index array; every id resolves to the reader's
file) instead of bare messages ("protobuf-raw").

What counts as a finding: any exception (decode_column must never raise on values), an Arrow
result that does not validate, a row that is neither decoded, nor null with an error, nor a null
input; a row whose result differs when decoded alone (the rollback of a failed row must leave the
others untouched); and the differential against the protobuf runtime (upb) parsing the same bytes
with the same descriptors: a row kafkafmt decodes that the runtime refuses, a row the runtime
parses (and MessageToDict prints) that kafkafmt refuses -- but for a Timestamp / Duration outside
Arrow's ns range --, or a decoded value other than MessageToDict's.

    python fuzz/fuzz_protobuf.py --seed fuzz/corpus/protobuf    # write seeds (messages written by upb)
    python fuzz/fuzz_protobuf.py fuzz/corpus/protobuf -max_total_time=60
"""
from __future__ import annotations

import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

warnings.simplefilter("ignore")

import numpy as np  # noqa: E402,F401  (imported before instrumentation)
import pyarrow  # noqa: E402,F401
from typedfuzz import Finding, check_rows, join, main as run, split  # noqa: E402

SCHEMA = """syntax = "proto3";
package fz;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/struct.proto";
message All {
  int32 i32 = 1; int64 i64 = 2; uint32 u32 = 3; uint64 u64 = 4; sint32 s32 = 5; sint64 s64 = 6;
  fixed32 f32 = 7; fixed64 f64 = 8; sfixed32 sf32 = 9; sfixed64 sf64 = 10; float fl = 11; double db = 12;
  bool bo = 13; string st = 14; bytes by = 15; E e = 16; Sub sub = 17; repeated Sub subs = 18;
  repeated int64 ps = 19; repeated sint32 us = 20 [packed = false]; repeated string ss = 21; repeated E es = 22;
  map<string, int64> m1 = 23; map<int32, Sub> m2 = 24; map<bool, E> m3 = 25;
  oneof o { string ot = 26; Sub os = 27; int64 on = 28; }
  optional int32 opt = 29;
  google.protobuf.Timestamp ts = 30; google.protobuf.Duration du = 31;
  google.protobuf.Int64Value wi = 32; google.protobuf.StringValue ws = 33; google.protobuf.Struct js = 34;
  repeated google.protobuf.Timestamp tss = 35; repeated double pd = 36; repeated fixed32 pf = 37;
  repeated bool pb = 38;
}
message Sub { int32 x = 1; repeated string t = 2; Sub next = 3; }
enum E { Z = 0; A = 1; B = 2; }
"""
MESSAGES = ["fz.All", "fz.Sub"]
_STATE = {}


def _classes():
    if not _STATE:
        from google.protobuf import message_factory
        from kafkafmt.values.protobuf import compile_text
        ps = compile_text(SCHEMA, "fz.proto")
        for name in MESSAGES:
            d = ps.pool.FindMessageTypeByName(name)
            _STATE[name] = message_factory.GetMessageClass(d)
    return _STATE


def _indexes(b):
    """(the message-index array, the rest) of a framed body, as confluent-kafka reads it."""
    def varint(pos):
        out, shift = 0, 0
        while pos < len(b):
            c = b[pos]
            out |= (c & 0x7F) << shift
            pos += 1
            if c < 0x80:
                return (out >> 1) ^ -(out & 1), pos
            shift += 7
        return None, pos

    count, pos = varint(0)
    if count is None or count < 0:
        return None, b""
    if count == 0:
        return [0], b[pos:]
    out = []
    for _ in range(count):
        v, pos = varint(pos)
        if v is None:
            return None, b""
        out.append(v)
    return out, b[pos:]


def check(data):
    import pyarrow as pa
    from kafkafmt.values import decode_column
    from protobuf_support import expected, ours, same, to_dict

    sel, values = split(data)
    name = MESSAGES[sel % len(MESSAGES)]
    cls = _classes()[name]
    framed = bool(sel & 0x80)
    fmt = "protobuf" if framed else "protobuf-raw"
    column = pa.array(values, pa.binary())
    dec = decode_column(column, format=fmt, reader_schema=cls)
    errors = check_rows(values, dec)
    rows = dec.values.to_pylist()
    for i in range(min(len(values), 8)):
        one = decode_column(column[i:i + 1], format=fmt, reader_schema=cls)
        if one.error.to_pylist()[0] != errors[i] or not same(one.values.to_pylist(), rows[i:i + 1]):
            raise Finding(f"row {i} decodes differently alone")
    d = cls.DESCRIPTOR
    for i, v in enumerate(values):
        if v is None:
            continue
        body = v
        if framed:
            if errors[i] is not None and (len(v) < 5 or v[0] != 0 or "message-index" in errors[i]
                                          or "message indexes" in errors[i] or "magic" in errors[i]
                                          or "shorter than" in errors[i]):
                continue                                    # framing: not the runtime's business
            indexes, body = _indexes(v[5:])
            if indexes != [MESSAGES.index(d.full_name)]:
                continue                                    # another message: framing, checked above
        try:
            parsed = cls.FromString(body)
        except Exception:  # noqa: BLE001 - DecodeError
            if errors[i] is None:
                raise Finding(f"row {i}: kafkafmt decoded what the runtime refuses") from None
            continue
        try:
            want = expected(to_dict(parsed), d)
        except Exception:  # noqa: BLE001 - MessageToDict refusing a Timestamp / a Value without a kind
            continue
        if errors[i] is not None:
            if "Timestamp outside" in errors[i] or "Duration outside" in errors[i]:
                continue
            raise Finding(f"row {i}: the runtime parses it, kafkafmt says {errors[i]!r}")
        if not same(ours(rows[i], d), want):
            raise Finding(f"row {i}: {ours(rows[i], d)!r} vs the runtime's {want!r}")


def seeds():
    """Valid messages of every kind, written by upb, plus framing variants."""
    c = _classes()
    All, Sub = c["fz.All"], c["fz.Sub"]
    out = []
    msgs = []
    for i in range(4):
        m = All(i32=-i, i64=2 ** 40 * i, u32=i, u64=2 ** 63 + i, s32=-i, s64=-i, f32=i, f64=i, sf32=-i, sf64=-i,
                fl=1.5, db=-2.5, bo=i % 2 == 1, st="é" * i, by=bytes(range(i)), e=i % 3, ps=list(range(i)),
                us=list(range(i)), ss=["a"] * i, es=[1, 2], pd=[0.5] * i, pf=[i], pb=[True, False])
        m.sub.x = i
        m.subs.add(x=i).next.x = 1
        m.m1["k"] = i
        m.m2[i].t.append("t")
        m.m3[True] = 1
        if i % 3 == 0:
            m.ot = "x"
        elif i % 3 == 1:
            m.os.x = 2
        else:
            m.on = 5
        m.opt = i
        m.ts.seconds = 1_700_000_000
        m.du.seconds = -3
        m.wi.value = i
        m.ws.value = "w"
        m.js.update({"a": [1, "b", None, True]})
        m.tss.add(seconds=i)
        msgs.append(m.SerializeToString(deterministic=True))
    subs = [Sub(x=i, t=["a"], next=Sub(x=1)).SerializeToString() for i in range(3)]
    out.append(join(0, msgs + [None, b"\x08"]))
    out.append(join(1, subs + [b""]))
    out.append(join(0x80, [b"\x00\x00\x00\x00\x01\x00" + m for m in msgs] + [b"\x00\x00\x00\x00\x01\x02\x02" + subs[0]]))
    out.append(join(0x81, [b"\x00\x00\x00\x00\x01\x02\x02" + s for s in subs] + [b"\x00\x00\x00\x00\x01"]))
    return out


def _ready():
    import protobuf_support  # noqa: F401  (after kafkafmt: it imports it)
    _classes()


def main():
    run(seeds, check, ["kafkafmt.values._formats", "kafkafmt.values.protobuf._format", "kafkafmt.values.protobuf._plan",
                       "kafkafmt.values.protobuf._schema"], before=["google.protobuf"], ready=_ready)


if __name__ == "__main__":
    main()
