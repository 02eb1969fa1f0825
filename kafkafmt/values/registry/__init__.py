"""Schema sources behind one interface: the _schemas topic replayed, folders of schema files, inline
schemas, a live registry."""
from __future__ import annotations

from kafkafmt.values.registry._base import (SchemaRegistry, RegisteredSchema, SchemaReference, TopicSchemaRegistry,
                                               FolderSchemaRegistry, InlineSchemaRegistry, ClientSchemaRegistry,
                                               open_registry, replay_schemas_topic, SCHEMAS_TOPIC, DEFAULT_CONTEXT)

__all__ = ["SchemaRegistry", "RegisteredSchema", "SchemaReference", "TopicSchemaRegistry", "FolderSchemaRegistry",
           "InlineSchemaRegistry", "ClientSchemaRegistry", "open_registry", "replay_schemas_topic",
           "SCHEMAS_TOPIC", "DEFAULT_CONTEXT"]
