"""Strict request bodies.

Litestar converts bodies with msgspec's lax mode, where `"0"` is an int and `0` a datetime. `StrictBody[T]`
is a DTO that decodes the raw bytes straight into `T` with `strict=True` instead, and still documents `T`
itself in the spec. Any body that cannot become a `T` is a 400 `validation_error`, never a 500.
"""

from __future__ import annotations

import re
from collections.abc import Generator
from typing import Any, TypeVar

import msgspec
from litestar.dto import AbstractDTO, DTOConfig, DTOFieldDefinition
from litestar.openapi.spec import Reference, Schema
from litestar.typing import FieldDefinition

from queueflow.core.errors import FieldError, ValidationError

T = TypeVar("T")


class StrictBody(AbstractDTO[T]):
    config = DTOConfig()

    def decode_bytes(self, value: bytes) -> Any:
        return decode_strict(value, self.model_type)

    @classmethod
    def create_for_field_definition(
        cls, field_definition: FieldDefinition, handler_id: str, backend_cls: Any = None
    ) -> None:
        """No transfer model is needed: the body decodes straight into the model type."""

    @classmethod
    def create_openapi_schema(
        cls, field_definition: FieldDefinition, handler_id: str, schema_creator: Any
    ) -> Reference | Schema:
        return schema_creator.for_field_definition(  # type: ignore[no-any-return]
            FieldDefinition.from_annotation(cls.model_type, kwarg_definition=field_definition.kwarg_definition)
        )

    @classmethod
    def generate_field_definitions(cls, model_type: type[Any]) -> Generator[DTOFieldDefinition, None, None]:
        yield from ()

    @classmethod
    def detect_nested_field(cls, field_definition: FieldDefinition) -> bool:
        return False


class OptionalStrictBody(StrictBody[T]):
    """`StrictBody` for a body that may be left out: no body is `T` with its defaults."""

    def decode_bytes(self, value: bytes) -> Any:
        return self.model_type() if not value.strip() else decode_strict(value, self.model_type)


def decode_strict(raw: bytes, kind: type[T]) -> T:
    """Decode JSON `raw` into `kind` with no type coercion, or raise a ValidationError naming the field."""
    if not raw.strip():
        raise ValidationError.of([FieldError((), "a JSON request body is required")])
    try:
        return msgspec.json.decode(raw, type=kind, strict=True)
    except msgspec.ValidationError as exc:
        first = exc
    except msgspec.DecodeError as exc:
        raise ValidationError.of([FieldError((), f"malformed JSON: {exc}")]) from None
    except RecursionError:
        raise ValidationError.of([FieldError((), "the JSON is nested too deeply")]) from None
    # JSON Schema's `integer` is any number without a fraction, so `3.0` is one; msgspec's strict mode wants
    # the literal `3`. The slow path retries with integral floats made ints (outside free-form JSON).
    try:
        loose = _integral(msgspec.json.decode(raw))
    except (msgspec.DecodeError, RecursionError):  # DecodeError includes msgspec.ValidationError
        raise ValidationError.of([_field_error(str(first))]) from None
    try:
        return msgspec.convert(loose, type=kind, strict=True)
    except msgspec.ValidationError as exc:
        raise ValidationError.of([_field_error(str(exc))]) from None


FREE_FORM = frozenset({"payload", "metadata", "result", "context"})
"""Fields whose value is the caller's own JSON, passed through exactly as sent."""


def _integral(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_integral(item) for item in value]
    if isinstance(value, dict):
        return {key: item if key in FREE_FORM else _integral(item) for key, item in value.items()}
    return value


def _field_error(message: str) -> FieldError:
    # msgspec says "Expected `int`, got `str` - at `$.jobs[0].priority`"; turn the path into a loc.
    text, sep, path = message.rpartition(" - at `")
    if not sep:
        text, path = message, "$"
    loc: list[str | int] = []
    for part in path.rstrip("`").removeprefix("$").replace("[", ".").replace("]", "").split("."):
        if part:
            loc.append(int(part) if part.isdigit() else part)
    unknown = re.fullmatch(r"Object contains unknown field `(.*)`", text)
    if unknown:
        return FieldError((*loc, unknown.group(1)), "is not a known field")
    return FieldError(tuple(loc), text)
