"""Protobuf values: .proto schemas compiled at run time, plans, the "protobuf" formats."""
