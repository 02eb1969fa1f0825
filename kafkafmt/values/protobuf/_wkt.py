"""What the Protobuf plan and printer agree on: Google's well-known message types kafkafmt reads as something
else than a struct, and the name of a message's field in a column of several messages."""
from __future__ import annotations

__all__ = ["WRAPPERS", "JSON_TYPES", "message_field_name"]

#: wrapper message -> the op of its value (the kernel's ``OPS``): read as the wrapped scalar, nullable
WRAPPERS = {"google.protobuf.DoubleValue": "P_DOUBLE", "google.protobuf.FloatValue": "P_FLOAT",
            "google.protobuf.Int64Value": "P_INT64", "google.protobuf.UInt64Value": "P_UINT64",
            "google.protobuf.Int32Value": "P_INT32", "google.protobuf.UInt32Value": "P_UINT32",
            "google.protobuf.BoolValue": "P_BOOL", "google.protobuf.StringValue": "P_STRING",
            "google.protobuf.BytesValue": "P_BYTES"}
#: the messages held as their JSON text (a string column)
JSON_TYPES = ("google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue")


def message_field_name(d):
    """A message's name inside its package (``Click``, ``Envelope.Click``): its field's name in a
    column of several messages."""
    package = d.file.package
    return d.full_name[len(package) + 1:] if package else d.full_name
