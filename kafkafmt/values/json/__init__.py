"""JSON values: JSON Schema and Connect schemas, plans, the "json", "json-schema" and "connect-json" formats."""
