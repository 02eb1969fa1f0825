"""Test helpers for Protobuf values: schemas compiled by protoc (grpcio-tools), the registry's
``_schemas`` topic mirrored from confluent-kafka's mock registry, and the conversion of the
protobuf runtime's ``MessageToDict`` output into what kafkafmt's Arrow values give.

* `compile_protos` runs protoc (the reference compiler, not kafkafmt's parser) over ``.proto``
  texts and returns generated message classes.
* `proto_text` prints a ``FileDescriptorProto`` as the Schema Registry stores a Protobuf schema
  (its canonical printout: fully-qualified ``.pkg.Msg`` type names, map fields as ``repeated
  .pkg.Msg.XEntry`` plus a nested ``option map_entry = true`` message) -- the text protoc itself
  refuses.
* `mirror_registry` writes what a registry would have written to ``_schemas`` for every
  subject-version confluent-kafka's serializers registered in its mock (ids and versions from the
  mock; the schema text as the registry prints it).
* `expected` turns ``MessageToDict(m, preserving_proto_field_name=True,
  always_print_fields_with_no_presence=True)`` into kafkafmt's Arrow shape by the descriptor
  alone (a field MessageToDict leaves out -- one with presence not set, a oneof member not set -- is
  null; Timestamps and Durations as nanoseconds cut to the column's unit: a Timestamp floored, a
  Duration toward zero); `ours` turns kafkafmt's ``to_pylist()`` into comparable values (maps as
  dicts, temporal values as integers, JSON texts parsed).
"""
from __future__ import annotations

import base64
import datetime
import decimal
import json
import os
import tempfile

import numpy as np
from google.protobuf import descriptor_pb2, json_format, message_factory
from grpc_tools import protoc

import kafkafmt

_TYPES = {1: "double", 2: "float", 3: "int64", 4: "uint64", 5: "int32", 6: "fixed64", 7: "fixed32", 8: "bool",
          9: "string", 12: "bytes", 13: "uint32", 15: "sfixed32", 16: "sfixed64", 17: "sint32", 18: "sint64"}
_WIDE = {3, 4, 6, 16, 18}


def compile_protos(files):
    """{file name: .proto text} -> (classes by full name, {file name: FileDescriptorProto}) via protoc."""
    with tempfile.TemporaryDirectory() as d:
        for name, text in files.items():
            path = os.path.join(d, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        inc = os.path.join(os.path.dirname(protoc.__file__), "_proto")
        out = os.path.join(d, "set.pb")
        rc = protoc.main(["protoc", f"-I{d}", f"-I{inc}", f"--descriptor_set_out={out}", "--include_imports"]
                         + [os.path.join(d, n) for n in files])
        assert rc == 0, f"protoc failed on {list(files)}"
        with open(out, "rb") as f:
            fds = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    classes = message_factory.GetMessages(list(fds.file))
    return classes, {f.name: f for f in fds.file}


# ------------------------------------------------------------------------------------------------
# the registry's printout of a schema

def proto_text(fdp):
    """The Schema Registry's canonical text of a FileDescriptorProto."""
    lines = [f'syntax = "{fdp.syntax or "proto2"}";']
    if fdp.package:
        lines.append(f"package {fdp.package};")
    lines.append("")
    for dep in fdp.dependency:
        lines.append(f'import "{dep}";')
    if fdp.dependency:
        lines.append("")
    proto3 = fdp.syntax == "proto3"
    for m in fdp.message_type:
        lines += _message_text(m, proto3, "")
        lines.append("")
    for e in fdp.enum_type:
        lines += _enum_text(e, "")
        lines.append("")
    return "\n".join(lines)


def _enum_text(e, ind):
    out = [f"{ind}enum {e.name} {{"]
    if e.options.allow_alias:
        out.append(f"{ind}  option allow_alias = true;")
    for v in e.value:
        out.append(f"{ind}  {v.name} = {v.number};")
    out.append(f"{ind}}}")
    return out


def _field_text(f, proto3):
    label = {3: "repeated ", 2: "required "}.get(f.label, "")
    if f.label == 1 and (not proto3 or f.proto3_optional):
        label = "optional "
    t = _TYPES.get(f.type) or f.type_name
    opts = []
    if f.options.HasField("packed"):
        opts.append(f"packed = {'true' if f.options.packed else 'false'}")
    if f.HasField("default_value"):
        dv = f.default_value
        opts.append(f'default = "{dv}"' if f.type in (9, 12) else f"default = {dv}")
    tail = f" [{', '.join(opts)}]" if opts else ""
    return f"{label}{t} {f.name} = {f.number}{tail};"


def _message_text(m, proto3, ind):
    out = [f"{ind}message {m.name} {{"]
    inner = ind + "  "
    if m.options.map_entry:
        out.append(f"{inner}option map_entry = true;")
        out.append(inner)
    real = {i for i, o in enumerate(m.oneof_decl)
            if not any(f.proto3_optional and f.oneof_index == i for f in m.field)}
    done = set()
    for f in m.field:
        if f.HasField("oneof_index") and f.oneof_index in real:
            k = f.oneof_index
            if k in done:
                continue
            done.add(k)
            out.append(f"{inner}oneof {m.oneof_decl[k].name} {{")
            for g in m.field:
                if g.HasField("oneof_index") and g.oneof_index == k:
                    out.append(f"{inner}  {_field_text(g, True)}")
            out.append(f"{inner}}}")
        else:
            out.append(inner + _field_text(f, proto3))
    for n in m.nested_type:
        out += _message_text(n, proto3, inner)
    for e in m.enum_type:
        out += _enum_text(e, inner)
    out.append(f"{ind}}}")
    return out


def mirror_registry(client, log_dir, text=proto_text, extra=()):
    """Write ``<log_dir>/_schemas-0``: one SCHEMA record per subject-version of confluent-kafka's
    mock registry, in id order, the schema text as the registry prints it (``text``, for
    PROTOBUF); ``extra``: more (key, value) records appended."""
    regs = []
    for subject in client.get_subjects():
        for v in client.get_versions(subject):
            rs = client.get_version(subject, v)
            regs.append((rs.schema_id, subject, v, rs.schema))
    records = [(b'{"keytype":"NOOP","magic":0}', None)]
    for sid, subject, v, s in sorted(regs, key=lambda r: (r[0], r[1], r[2])):
        body = s.schema_str
        if s.schema_type == "PROTOBUF":
            body = text(descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(body)))
        value = {"subject": subject, "version": v, "id": sid, "schemaType": s.schema_type or "AVRO"}
        if s.references:
            value["references"] = [{"name": r.name, "subject": r.subject, "version": r.version}
                                   for r in s.references]
        value["schema"] = body
        value["deleted"] = False
        key = {"keytype": "SCHEMA", "subject": subject, "version": v, "magic": 1}
        records.append((json.dumps(key, separators=(",", ":")).encode(),
                        json.dumps(value, separators=(",", ":")).encode()))
    records += list(extra)
    path = f"{log_dir}/_schemas-0"
    with kafkafmt.LogWriter(path) as w:
        w.append(keys=[k for k, _ in records], values=[v for _, v in records],
                 timestamps=list(range(1, len(records) + 1)))
    return path


# ------------------------------------------------------------------------------------------------
# MessageToDict -> kafkafmt's Arrow shape

def to_dict(m):
    return json_format.MessageToDict(m, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)


def _ns_of_timestamp(s):
    body = s[:-1]
    frac = 0
    if "." in body:
        body, f = body.split(".")
        frac = int(f.ljust(9, "0"))
    dt = datetime.datetime.fromisoformat(body).replace(tzinfo=datetime.timezone.utc)
    secs = (dt - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)) // datetime.timedelta(seconds=1)
    return secs * 1_000_000_000 + frac


def _ns_of_duration(s):
    return int(decimal.Decimal(s[:-1]) * 1_000_000_000)


def _scalar(v, f):
    t = f.type
    if t in _WIDE or t in (16, 18):
        return int(v)
    if t in (1, 2):
        if isinstance(v, str):
            v = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[v]
        return float(np.float32(v)) if t == 2 else float(v)
    if t == 12:
        return base64.b64decode(v)
    if t == 14:
        return v if isinstance(v, str) else str(v)
    return v


#: nanoseconds per unit of the Timestamp / Duration columns `expected` cuts to (kafkafmt's time_unit)
UNIT_NS = {"us": 1000, "ns": 1}


def _value(v, f, unit):
    mt = f.message_type
    if mt is None:
        return _scalar(v, f)
    name = mt.full_name
    if name == "google.protobuf.Timestamp":
        return _ns_of_timestamp(v) // UNIT_NS[unit] * UNIT_NS[unit]
    if name == "google.protobuf.Duration":
        ns = _ns_of_duration(v)
        return (abs(ns) // UNIT_NS[unit] * UNIT_NS[unit]) * (1 if ns >= 0 else -1)
    if name.startswith("google.protobuf.") and name.endswith("Value") and name not in (
            "google.protobuf.Value", "google.protobuf.ListValue"):
        return _scalar(v, mt.fields_by_name["value"])
    if name in ("google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue"):
        return v
    return expected(v, mt, unit)


def expected(d, desc, unit="us"):
    """MessageToDict output ``d`` of a message of type ``desc`` in kafkafmt's shape (a oneof's
    members are fields of the message, as MessageToDict shows them: the one set, the others null),
    read with ``time_unit=unit``."""
    out = {}
    for f in desc.fields:
        if f.type == 10:
            continue
        if f.name not in d:
            out[f.name] = None
            continue
        v = d[f.name]
        if f.is_repeated and f.message_type is not None and f.message_type.GetOptions().map_entry:
            kf, vf = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
            out[f.name] = {_key(k, kf): _value(x, vf, unit) for k, x in v.items()}
        elif f.is_repeated:
            out[f.name] = [_value(x, f, unit) for x in v]
        else:
            out[f.name] = _value(v, f, unit)
    return out


def _key(k, f):
    if f.type == 8:
        return k == "true"
    if f.type == 9:
        return k
    return int(k)


def ours(v, desc):
    """kafkafmt's to_pylist() value of a message of type ``desc`` in the same shape."""
    if v is None:
        return None
    out = {}
    for name, x in v.items():
        f = desc.fields_by_name[name]
        if f.is_repeated and f.message_type is not None and f.message_type.GetOptions().map_entry:
            vf = f.message_type.fields_by_name["value"]
            out[name] = {k: _ours_value(y, vf) for k, y in x}
        elif f.is_repeated:
            out[name] = [_ours_value(y, f) for y in x]
        else:
            out[name] = _ours_value(x, f)
    return out


def _ours_value(x, f):
    if x is None:
        return None
    mt = f.message_type
    if mt is None:
        return x
    name = mt.full_name
    if name == "google.protobuf.Timestamp":
        return x.value if hasattr(x, "value") else _pd_ns(x)
    if name == "google.protobuf.Duration":
        return x.value if hasattr(x, "value") else int(x / datetime.timedelta(microseconds=1)) * 1000
    if name in ("google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue"):
        return json.loads(x)
    if name.startswith("google.protobuf.") and name.endswith("Value"):
        return x
    return ours(x, mt)


def _pd_ns(x):
    delta = x - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    return (delta.days * 86400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


def same(a, b):
    """Deep equality with NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (a != a and b != b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b
