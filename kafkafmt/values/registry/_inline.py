"""Schemas given inline (a text, a dict, or a list of them) as a registry: `InlineSchemaRegistry`.
"""
from __future__ import annotations

import json

from kafkafmt.values.registry._base import DEFAULT_CONTEXT, RegisteredSchema, TableRegistry

__all__ = ["InlineSchemaRegistry"]

class InlineSchemaRegistry(TableRegistry):
    """Schemas given directly: ``{id: schema}`` (text or parsed JSON; or a `RegisteredSchema`),
    or one schema that every id resolves to (``schema_type`` applies to all of them)."""

    def __init__(self, schemas, schema_type="AVRO", source="schema given directly"):
        self._any = None
        entries = []
        if isinstance(schemas, dict) and schemas and all(isinstance(k, int) for k in schemas):
            for sid, s in schemas.items():
                if isinstance(s, RegisteredSchema):
                    entries.append(dict(id=sid, schemaType=s.schema_type, schema=s.schema_str,
                                        references=s.references, subject=s.subject, version=s.version))
                else:
                    entries.append(dict(id=sid, schemaType=schema_type, schema=_text(s)))
        else:
            self._any = dict(id=-1, schemaType=schema_type, schema=_text(schemas))
        super().__init__(entries, source)

    def schema(self, schema_id, *, context=DEFAULT_CONTEXT):
        if self._any is not None:
            return self._registered(dict(self._any, id=schema_id))
        return super().schema(schema_id)


def _text(schema):
    if isinstance(schema, str):
        return schema
    return json.dumps(schema)
