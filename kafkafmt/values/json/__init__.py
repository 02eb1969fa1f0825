"""JSON: JSON Schema and Connect schemas, plans for the kernel, the "json-schema", "json" and "connect-json"
formats."""
from __future__ import annotations

from kafkafmt.values.json._schema import (spec_of_json_schema, spec_of_connect)
from kafkafmt.values.json._plan import (JsonPlan, spec_of_arrow, MAX_COLUMNS)
from kafkafmt.values.json._format import (JsonSchemaFormat, JsonFormat, ConnectJsonFormat, INFER_ROWS,
                                          json_schema_spec)

__all__ = ["spec_of_json_schema", "spec_of_connect", "JsonPlan", "spec_of_arrow", "MAX_COLUMNS",
           "JsonSchemaFormat", "JsonFormat", "ConnectJsonFormat", "INFER_ROWS", "json_schema_spec"]
