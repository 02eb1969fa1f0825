"""Schema sources behind one interface: the _schemas topic replayed, folders of schema files, inline schemas, a
live registry; `open_registry` picks one from what the user gave.

Modules: `_base` (the interface), `_topic` (the ``_schemas`` topic), `_folders`, `_inline`, `_live`, `_open`.
"""
from __future__ import annotations

from kafkafmt.values.registry._base import (DEFAULT_CONTEXT, SCHEMA_TYPES, SCHEMAS_TOPIC, RegisteredSchema,
                                            SchemaReference, SchemaRegistry, TableRegistry)
from kafkafmt.values.registry._topic import TopicSchemaRegistry, replay_schemas_topic
from kafkafmt.values.registry._folders import FolderSchemaRegistry
from kafkafmt.values.registry._inline import InlineSchemaRegistry
from kafkafmt.values.registry._live import ClientSchemaRegistry
from kafkafmt.values.registry._open import open_registry

__all__ = ["SchemaRegistry", "RegisteredSchema", "SchemaReference", "TableRegistry", "TopicSchemaRegistry",
           "FolderSchemaRegistry", "InlineSchemaRegistry", "ClientSchemaRegistry", "open_registry",
           "replay_schemas_topic", "SCHEMAS_TOPIC", "DEFAULT_CONTEXT", "SCHEMA_TYPES"]
