"""OpenAPI generation: what Litestar's defaults leave out of the spec, put back.

Request Structs reject unknown fields (`forbid_unknown_fields`), and the spec must say so
(`additionalProperties: false`), or clients and fuzzers take extra fields for allowed ones.
"""

from __future__ import annotations

from typing import Any

# Litestar exports no public base for its Struct schema plugin; subclassing it keeps every other behaviour.
from litestar._openapi.schema_generation.plugins.struct import StructSchemaPlugin
from litestar.openapi.spec import Schema
from litestar.typing import FieldDefinition


class StrictStructSchemaPlugin(StructSchemaPlugin):
    def to_openapi_schema(self, field_definition: FieldDefinition, schema_creator: Any) -> Schema:
        schema = super().to_openapi_schema(field_definition, schema_creator)
        if field_definition.type_.__struct_config__.forbid_unknown_fields:
            schema.additional_properties = False
        return schema


__all__ = ["StrictStructSchemaPlugin"]
