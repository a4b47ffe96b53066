"""OpenAPI generation: what Litestar's defaults leave out of the spec, put back.

Request Structs reject unknown fields (`forbid_unknown_fields`), and the spec must say so
(`additionalProperties: false`), or clients and fuzzers take extra fields for allowed ones.

A PATCH field typed `T | UnsetType` means "T, or absent" (`T | UnsetType | None`: T, null, or absent).
Litestar documents it as a one-member `oneOf` and, on that path, drops falsy bounds (`minimum: 0`); it is
documented as plain `T` (or `T | None`) instead, with every bound.
"""

from __future__ import annotations

from typing import Any, Union, get_type_hints

import msgspec

# Litestar exports no public base for its Struct schema plugin; subclassing it keeps every other behaviour.
from litestar._openapi.schema_generation.plugins.struct import StructSchemaPlugin
from litestar.openapi.spec import Schema
from litestar.plugins.core._msgspec import kwarg_definition_from_field
from litestar.typing import FieldDefinition
from msgspec import UnsetType


class StrictStructSchemaPlugin(StructSchemaPlugin):
    def to_openapi_schema(self, field_definition: FieldDefinition, schema_creator: Any) -> Schema:
        schema = super().to_openapi_schema(field_definition, schema_creator)
        struct = field_definition.type_
        if struct.__struct_config__.forbid_unknown_fields:
            schema.additional_properties = False
        hints = get_type_hints(struct, include_extras=True)
        info: msgspec.inspect.StructType = msgspec.inspect.type_info(struct)  # type: ignore[assignment]
        for field in info.fields:
            # msgspec reports an `T | UnsetType` field as an optional `T` with no default at all.
            if field.required or (field.default, field.default_factory) != (msgspec.NODEFAULT, msgspec.NODEFAULT):
                continue
            # Everything but UnsetType: `T | UnsetType | None` (a PATCH's "absent" and "null" both mean something)
            # stays nullable.
            kept = tuple(arg for arg in hints[field.name].__args__ if arg is not UnsetType)
            annotation = kept[0] if len(kept) == 1 else Union[kept]  # noqa: UP007 - a union built at run time
            kwarg_definition, _ = kwarg_definition_from_field(field)
            assert schema.properties is not None
            schema.properties[field.encode_name] = schema_creator.for_field_definition(
                FieldDefinition.from_annotation(annotation, name=field.encode_name, kwarg_definition=kwarg_definition)
            )
        return schema


__all__ = ["StrictStructSchemaPlugin"]
