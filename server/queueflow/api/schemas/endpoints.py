"""The wire shapes of push endpoints, addressed by name (README.md, "Push delivery")."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import msgspec
from litestar.params import PathParameter
from msgspec import UNSET, Meta, Struct, UnsetType

from queueflow.api.schemas.common import (
    NO_NUL,
    QUEUE_NAME_SCHEMA,
    TASK_NAME_SCHEMA,
    QueueName,
    RequestBody,
    TaskName,
)
from queueflow.core import endpoints, validation
from queueflow.core.types import UNCHANGED

EndpointName = Annotated[str, Meta(pattern=validation.NAME_PATTERN.pattern, min_length=1, max_length=100)]
EndpointNamePath = Annotated[str, PathParameter(pattern=validation.NAME_PATTERN.pattern, min_length=1, max_length=100)]
# Whether the host may be reached is the server's to check (`engine.endpoints`): the spec bounds the text.
Url = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=endpoints.MAX_URL_LENGTH,
        pattern=r"^[Hh][Tt][Tt][Pp][Ss]?://[^\x00]+$",
        description="An http or https URL; redirects are not followed",
        # A literal public address: an example any server accepts as it is, with no DNS to ask (a name that does not
        # resolve, or resolves to a private address, is a 400).
        examples=["https://93.184.215.14/queueflow"],
    ),
]
# Litestar documents no constraint of a list's items; `extra` puts them back (as for a lease's).
Queues = Annotated[
    list[QueueName],
    Meta(
        min_length=1,
        max_length=validation.MAX_LEASE_QUEUES,
        extra_json_schema={"extra": {"items": QUEUE_NAME_SCHEMA}},
    ),
]
TaskNames = Annotated[
    list[TaskName],
    Meta(
        min_length=1,
        max_length=endpoints.MAX_TASK_NAMES,
        extra_json_schema={"extra": {"items": TASK_NAME_SCHEMA}},
    ),
]
Concurrency = Annotated[int, Meta(ge=1, le=endpoints.MAX_CONCURRENCY)]
EndpointTimeout = Annotated[int, Meta(ge=1, le=endpoints.MAX_TIMEOUT_SECONDS)]


class CreateEndpoint(RequestBody):
    """An endpoint that receives the tenant's jobs of `queues` (of `task_names` only, if given) as signed POSTs,
    at most `concurrency` at once across every server process, each answered within `timeout_seconds`."""

    name: EndpointName
    url: Url
    queues: Queues = msgspec.field(default_factory=lambda: ["default"])
    task_names: TaskNames | None = None
    concurrency: Concurrency = 10
    timeout_seconds: EndpointTimeout = 30
    paused: bool = False

    def to_domain(self) -> endpoints.NewEndpoint:
        return endpoints.NewEndpoint(
            name=self.name,
            url=self.url,
            queues=tuple(self.queues),
            task_names=None if self.task_names is None else tuple(self.task_names),
            concurrency=self.concurrency,
            timeout_seconds=self.timeout_seconds,
            paused=self.paused,
        )


class UpdateEndpoint(RequestBody):
    """A PATCH: an absent field stays as it is; `task_names` null delivers every task of the queues."""

    url: Url | UnsetType = UNSET
    queues: Queues | UnsetType = UNSET
    task_names: TaskNames | UnsetType | None = UNSET
    concurrency: Concurrency | UnsetType = UNSET
    timeout_seconds: EndpointTimeout | UnsetType = UNSET
    paused: bool | UnsetType = UNSET

    def to_domain(self) -> endpoints.EndpointPatch:
        fields = {name: getattr(self, name) for name in self.__struct_fields__}
        for name in ("queues", "task_names"):
            if isinstance(fields[name], list):
                fields[name] = tuple(fields[name])
        return endpoints.EndpointPatch(
            **{name: UNCHANGED if value is UNSET else value for name, value in fields.items()}
        )


Secret = Annotated[str, Meta(pattern=NO_NUL)]


class Endpoint(Struct, kw_only=True):
    """A push endpoint. `secret` is in full only in the answers that make it (create, rotate-secret); any other
    read shows its prefix and last four characters. `in_flight`: deliveries awaiting an answer now; `delivered`:
    answered 2xx; `failed`: failed deliveries (another status, a time-out, a connection error), the last one's
    reason in `last_error`."""

    id: str
    tenant_id: str
    name: str
    url: str
    queues: list[str]
    task_names: list[str] | None
    concurrency: int
    timeout_seconds: int
    paused: bool
    secret: Secret
    previous_secret_until: datetime | None
    """Until when the secret replaced by the last rotation still signs deliveries (null: none does)."""
    in_flight: int
    delivered: int
    failed: int
    last_error: str | None
    last_delivery_at: datetime | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_domain(cls, endpoint: endpoints.Endpoint, *, with_secret: bool = False) -> Endpoint:
        names = [name for name in cls.__struct_fields__ if name not in ("queues", "task_names", "secret")]
        fields = {name: getattr(endpoint, name) for name in names}
        return cls(
            **fields,
            queues=list(endpoint.queues),
            task_names=None if endpoint.task_names is None else list(endpoint.task_names),
            secret=endpoint.secret if with_secret else endpoints.masked(endpoint.secret),
        )


class EndpointPage(Struct):
    items: list[Endpoint]
    next_cursor: str | None
