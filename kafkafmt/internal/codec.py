"""One generic reader and writer for Kafka's message encodings, driven by `kafkafmt.internal.schemas`.

Classic versions: int16-length strings (-1 null), int32-length bytes and arrays (-1 null).
Flexible versions: unsigned-varint length+1 (0 null) for strings, bytes and arrays, and a tagged-field
section (uvarint count, then uvarint tag, uvarint size, data) at the end of every struct.
Every length is checked against the bytes that remain before anything is allocated; an error (a
`kafkafmt.errors.ValueDecodeError`: the key or value does not decode as its message) names the message,
version and field that failed.
"""
from __future__ import annotations

import base64
import json
import struct
import warnings

from kafkafmt.errors import ValueDecodeError
from kafkafmt.internal.schemas import in_versions

__all__ = ["decode_message", "encode_message", "to_json_data", "read_uvarint",
           "write_uvarint", "uuid_text", "MAX_ARRAY_LENGTH"]

#: an array longer than this is corrupt whatever the bytes left (Kafka's own limit is the buffer)
MAX_ARRAY_LENGTH = 1 << 24

_FIXED = {"bool": 1, "int8": 1, "int16": 2, "uint16": 2, "int32": 4, "int64": 8, "float64": 8, "uuid": 16}
_STRUCT = {"int8": struct.Struct(">b"), "int16": struct.Struct(">h"), "uint16": struct.Struct(">H"),
           "int32": struct.Struct(">i"), "int64": struct.Struct(">q"), "float64": struct.Struct(">d")}


def read_uvarint(buf, pos, end):
    result = shift = 0
    while True:
        if pos >= end:
            raise ValueDecodeError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 28:
            raise ValueDecodeError("varint longer than 5 bytes")


def write_uvarint(out, value):
    value &= 0xFFFFFFFF
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


class _Reader:
    __slots__ = ("buf", "pos", "end", "msg", "version", "flexible")

    def __init__(self, buf, pos, end, msg, version, flexible):
        self.buf, self.pos, self.end = buf, pos, end
        self.msg, self.version, self.flexible = msg, version, flexible

    def fail(self, field, what):
        raise ValueDecodeError(f"{self.msg} v{self.version} field {field}: {what}")

    def fixed(self, type, field):
        n = _FIXED[type]
        if self.pos + n > self.end:
            self.fail(field, f"truncated ({type} needs {n} bytes, {self.end - self.pos} left)")
        p = self.pos
        self.pos = p + n
        if type == "bool":
            return self.buf[p] != 0
        if type == "uuid":
            return bytes(self.buf[p:p + 16])
        return _STRUCT[type].unpack_from(self.buf, p)[0]

    def uvarint(self, field):
        try:
            v, self.pos = read_uvarint(self.buf, self.pos, self.end)
        except ValueDecodeError as e:
            self.fail(field, str(e))
        return v

    def length(self, field, nullable, kind):
        """Length of a string/bytes/array, or -1 for null."""
        if self.flexible:
            n = self.uvarint(field) - 1
        elif kind == "string":
            n = self.fixed("int16", field)
        else:
            n = self.fixed("int32", field)
        if n < -1:
            self.fail(field, f"negative length {n}")
        if n == -1 and not nullable:
            self.fail(field, "non-nullable field was serialized as null")
        return n

    def blob(self, n, field, what):
        if n > self.end - self.pos:
            self.fail(field, f"{what} length {n} exceeds the {self.end - self.pos} bytes left")
        p = self.pos
        self.pos = p + n
        return self.buf[p:p + n]


def _min_size(f, flexible):
    """Fewest bytes one element of array field f can take (for the array length cap)."""
    elem = f.elem
    if elem in _FIXED:
        return _FIXED[elem]
    if elem in ("string", "bytes"):
        return 1 if flexible else (2 if elem == "string" else 4)
    return 1  # a struct: at least its tag section (flexible) or its first field


def _read_value(r, f, type, nullable):
    if type in _FIXED:
        return r.fixed(type, f.name)
    if type == "string":
        n = r.length(f.name, nullable, "string")
        if n < 0:
            return None
        raw = r.blob(n, f.name, "string")
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            r.fail(f.name, "string is not valid UTF-8")
    if type == "bytes":
        n = r.length(f.name, nullable, "bytes")
        return None if n < 0 else bytes(r.blob(n, f.name, "bytes"))
    if type == "{}":
        if nullable:
            flag = r.fixed("int8", f.name)
            if flag < 0:
                return None
        return _read_struct(r, f.fields)
    # arrays
    n = r.length(f.name, nullable, "array")
    if n < 0:
        return None
    if n > MAX_ARRAY_LENGTH or n * _min_size(f, r.flexible) > r.end - r.pos:
        r.fail(f.name, f"array length {n} exceeds the {r.end - r.pos} bytes left")
    if f.elem:
        return [_read_value(r, f, f.elem, False) for _ in range(n)]
    return [_read_struct(r, f.fields) for _ in range(n)]


def _read_struct(r, fields):
    out = {}
    v = r.version
    tagged = {}
    for f in fields:
        if not in_versions(f.versions, v):
            continue
        if r.flexible and in_versions(f.tagged, v):
            tagged[f.tag] = f
            continue
        out[f.name] = _read_value(r, f, f.type, in_versions(f.nullable, v))
    if r.flexible:
        count = r.uvarint("tagged fields")
        if count > r.end - r.pos:
            r.fail("tagged fields", f"{count} tagged fields in {r.end - r.pos} bytes")
        for _ in range(count):
            tag = r.uvarint("tagged fields")
            size = r.uvarint("tagged fields")
            if size > r.end - r.pos:
                r.fail("tagged fields", f"tag {tag} size {size} exceeds the {r.end - r.pos} bytes left")
            f = tagged.get(tag)
            if f is None:  # unknown tag: skipped, as Kafka does
                r.pos += size
                continue
            end, r.end = r.end, r.pos + size
            out[f.name] = _read_value(r, f, f.type, in_versions(f.nullable, v))
            r.pos, r.end = r.end, end
    return out


def decode_message(msg, version, buf, pos=0, end=None):
    """Decode one `Message` at `version` from buf[pos:end]; returns (dict, position after it).

    Tagged fields absent from the data are absent from the dict (their default applies).
    """
    if end is None:
        end = len(buf)
    r = _Reader(buf, pos, end, msg.name, version, in_versions(msg.flexible, version))
    out = _read_struct(r, msg.fields)
    return out, r.pos


# --- writer ----------------------------------------------------------------------------------------

def _write_value(out, f, type, value, version, flexible, nullable):
    if type in _FIXED:
        if type == "bool":
            out.append(1 if value else 0)
        elif type == "uuid":
            b = bytes(value)
            if len(b) != 16:
                raise ValueError(f"{f.name}: a uuid is 16 bytes")
            out += b
        else:
            out += _STRUCT[type].pack(value)
        return
    if type in ("string", "bytes") or type.startswith("[]"):
        if value is None:
            if not nullable:
                raise ValueError(f"{f.name} is not nullable in version {version}")
            if flexible:
                out.append(0)
            else:
                out += (b"\xff\xff" if type == "string" else b"\xff\xff\xff\xff")
            return
        if type == "string":
            value = value.encode("utf-8") if isinstance(value, str) else bytes(value)
        n = len(value)
        if flexible:
            write_uvarint(out, n + 1)
        else:
            out += struct.pack(">h" if type == "string" else ">i", n)
        if type in ("string", "bytes"):
            out += value
        elif f.elem:
            for item in value:
                _write_value(out, f, f.elem, item, version, flexible, False)
        else:
            for item in value:
                _write_struct(out, f.fields, item, version, flexible)
        return
    if type == "{}":
        if nullable:
            if value is None:
                out.append(0xFF)
                return
            out.append(1)
        _write_struct(out, f.fields, value, version, flexible)
        return
    raise ValueError(f"unknown type {type}")


def _write_struct(out, fields, values, version, flexible, extra_tags=None):
    tagged = []
    for f in fields:
        if not in_versions(f.versions, version):
            continue
        if flexible and in_versions(f.tagged, version):
            if f.name in values and values[f.name] != f.default:
                tagged.append(f)
            continue
        _write_value(out, f, f.type, values.get(f.name, f.default), version, flexible,
                     in_versions(f.nullable, version))
    if flexible:
        items = []
        for f in tagged:
            body = bytearray()
            _write_value(body, f, f.type, values[f.name], version, flexible, in_versions(f.nullable, version))
            items.append((f.tag, bytes(body)))
        items += list((extra_tags or {}).items())
        items.sort()
        write_uvarint(out, len(items))
        for tag, body in items:
            write_uvarint(out, tag)
            write_uvarint(out, len(body))
            out += body


def encode_message(msg, version, values, *, extra_tags=None):
    """Bytes of `values` (a dict by field name, missing fields take their default) as `msg` at
    `version`. `extra_tags` ({tag: bytes}) adds raw tagged fields to the top-level struct (flexible
    versions only), to write what a newer writer would."""
    if not in_versions(msg.valid, version):
        raise ValueError(f"{msg.name} has no version {version}")
    out = bytearray()
    _write_struct(out, msg.fields, values, version, in_versions(msg.flexible, version), extra_tags)
    return bytes(out)


# --- JSON as Kafka's generated converters write it -----------------------------------------------

def uuid_text(b):
    """A uuid as Kafka prints it: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(bytes(b)).decode("ascii").rstrip("=")


def _json_value(f, type, value):
    if value is None:
        return None
    if type == "uuid":
        return uuid_text(value)
    if type == "bytes":
        return base64.b64encode(value).decode("ascii")
    if type == "{}":
        return _json_struct(f.fields, value)
    if type.startswith("[]"):
        if f.elem:
            return [_json_value(f, f.elem, v) for v in value]
        return [_json_struct(f.fields, v) for v in value]
    return value


def _json_struct(fields, values):
    out = {}
    for f in fields:
        if f.name in values:
            out[f.json_name] = _json_value(f, f.type, values[f.name])
    return out


def to_json_data(msg, values):
    """The ``data`` object Kafka's JSON converter prints for a decoded message (first letter of each
    field name lower-cased, uuids in Kafka's base64, bytes in base64, tagged fields only when set)."""
    return _json_struct(msg.fields, values)


def json_text(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def __getattr__(name):
    if name == "SchemaError":      # this error's former name (kafkafmt.SchemaError is another idea)
        warnings.warn("kafkafmt.internal.SchemaError is kafkafmt.ValueDecodeError: catch that (kafkafmt.SchemaError "
                      "is about schemas themselves)", DeprecationWarning, stacklevel=2)
        return ValueDecodeError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
