"""Protobuf values as the proto3 JSON mapping prints them (`kafkafmt.values._jsontext` says how): where a
message's columns hold JSON text, from its Descriptor."""
from __future__ import annotations

from kafkafmt.values._jsontext import RAW, json_texts
from kafkafmt.values.protobuf._wkt import WRAPPERS, message_field_name

__all__ = ["protobuf_json"]


def _pa():
    import pyarrow as pa

    return pa


def _proto_marks(desc, t):
    """The marks of a Protobuf message's struct type ``t`` (``desc``: its Descriptor): {field: mark}."""
    pa = _pa()

    def value_mark(f, ft):
        mt = f.message_type
        if mt is None:
            return None
        if (pa.types.is_string(ft) or pa.types.is_large_string(ft)) and mt.full_name not in WRAPPERS:
            return RAW                      # Struct & co., a message kept as JSON text past the depth
        return _proto_marks(mt, ft) if pa.types.is_struct(ft) else None

    out = {}
    for f in desc.fields:
        idx = t.get_field_index(f.name)
        if idx < 0:
            continue
        ft = t.field(idx).type
        mt = f.message_type
        if mt is not None and mt.GetOptions().map_entry and pa.types.is_map(ft):
            out[f.name] = {"{}": value_mark(mt.fields_by_name["value"], ft.item_type)}
        elif pa.types.is_list(ft) or pa.types.is_large_list(ft):
            out[f.name] = {"[]": value_mark(f, ft.value_type)}
        else:
            out[f.name] = value_mark(f, ft)
    return out


def protobuf_json(values, reader=None):
    """Each value of a Protobuf column as the proto3 JSON mapping prints it (the module docstring);
    ``reader``: its message's Descriptor, or the Descriptors of a column of several messages."""
    pa = _pa()
    t = values.type
    if isinstance(reader, tuple) and len(reader) > 1 and pa.types.is_struct(t):
        marks = {message_field_name(d): _proto_marks(d, t.field(message_field_name(d)).type) for d in reader}

        def one(conv):                          # the message the value is, as itself
            return lambda v: next(iter(conv(v).values()), {})
        return json_texts(values, marks, True, one)
    if isinstance(reader, tuple):
        reader = reader[0] if reader else None
    marks = _proto_marks(reader, t) if reader is not None and pa.types.is_struct(t) else None
    return json_texts(values, marks, True)
