"""What every resource's wire shapes share: the field types (with the constraints the spec documents), the strict
request base, and the operations routes' answer."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from litestar.params import PathParameter
from msgspec import UNSET, Meta, Struct, UnsetType

from queueflow.core import validation

NO_NUL = r"^[^\x00]*$"
"""PostgreSQL text cannot hold NUL; saying so in the spec keeps generated clients and fuzzers honest."""

QueueName = Annotated[str, Meta(pattern=validation.NAME_PATTERN.pattern, min_length=1, max_length=100)]
QUEUE_NAME_SCHEMA = {"type": "string", "pattern": validation.NAME_PATTERN.pattern, "minLength": 1, "maxLength": 100}
TaskName = Annotated[str, Meta(min_length=1, max_length=200, pattern=NO_NUL)]
TASK_NAME_SCHEMA = {"type": "string", "minLength": 1, "maxLength": 200, "pattern": NO_NUL}
LeaseToken = Annotated[str, Meta(min_length=1, max_length=255, pattern=NO_NUL)]
IdempotencyKey = Annotated[str, Meta(min_length=1, max_length=255, pattern=NO_NUL)]
ErrorText = Annotated[str, Meta(max_length=65_536, pattern=NO_NUL)]
Priority = Annotated[int, Meta(ge=-1000, le=1000)]
MaxRetries = Annotated[int, Meta(ge=0, le=100)]
DelaySeconds = Annotated[
    float,
    # Litestar drops a falsy bound (ge=0) from an optional field's schema; `extra` puts it back.
    Meta(ge=0, le=validation.MAX_DELAY_SECONDS, extra_json_schema={"extra": {"minimum": 0}}),
]
TimeoutSeconds = Annotated[float, Meta(ge=1, le=validation.MAX_TIMEOUT_SECONDS)]
LeaseSeconds = Annotated[float, Meta(ge=1, le=validation.MAX_LEASE_SECONDS)]
AwareDateTime = Annotated[datetime, Meta(tz=True)]
JSONObject = dict[str, Any]
JobStatusName = Literal["pending", "running", "retrying", "completed", "dead_letter", "cancelled"]

ID_PATTERN = r"^[A-Za-z0-9_]{1,64}$"
"""Ids are `job_` + 26 base32 characters; anything far from that shape is not one of ours."""
JobId = Annotated[str, Meta(pattern=ID_PATTERN, min_length=1, max_length=64)]
JobIdPath = Annotated[str, PathParameter(pattern=ID_PATTERN, min_length=1, max_length=64)]


class RequestBody(Struct, forbid_unknown_fields=True, kw_only=True):
    """Request bodies reject unknown fields, so a typo is a 400 rather than a silently ignored option."""


class Health(Struct):
    status: Literal["ok", "unavailable"]
    version: str | UnsetType = UNSET
    """The server's version (`queueflow --version`), always sent. Added in 0.2.0, so not `required` in the spec:
    an SDK reading a 0.1 server, which does not send it, reads it as absent (docs/compatibility.md)."""
