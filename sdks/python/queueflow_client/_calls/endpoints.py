"""The push endpoints' calls: create, get, list, update, rotate the secret, delete."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from queueflow_client._calls.routes import (
    CREATE_ENDPOINT,
    DELETE_ENDPOINT,
    GET_ENDPOINT,
    LIST_ENDPOINTS,
    ROTATE_ENDPOINT_SECRET,
    UPDATE_ENDPOINT,
)
from queueflow_client._transport import Call, call
from queueflow_client.types import Endpoint, Page

UNSET: Any = object()
"""A field left out of a PATCH (`task_names=None` is sent: every task of the queues)."""


def _endpoint_fields(given: Mapping[str, Any], *, patch: bool) -> dict[str, Any]:
    """The fields as the API takes them: None is not sent on create (the server's default); on update UNSET is
    not sent, and None only for `task_names`."""
    body: dict[str, Any] = {}
    for key, value in given.items():
        if value is UNSET or (value is None and not (patch and key == "task_names")):
            continue
        body[key] = list(value) if key in ("queues", "task_names") and value is not None else value
    return body


def create_endpoint(name: str, url: str, given: Mapping[str, Any]) -> Call[Endpoint]:
    body = {"name": name, "url": url} | _endpoint_fields(given, patch=False)
    # Not replayable: a create that landed makes its repeat a 409 (the name is taken).
    return call(CREATE_ENDPOINT.request(body=body), Endpoint.from_json, replayable=False)


def get_endpoint(name: str) -> Call[Endpoint]:
    return call(GET_ENDPOINT.request(name), Endpoint.from_json, replayable=True)


def list_endpoints(limit: int, cursor: str | None) -> Call[Page[Endpoint]]:
    return call(
        LIST_ENDPOINTS.request(query={"limit": limit, "cursor": cursor}),
        lambda data: Page([Endpoint.from_json(item) for item in data["items"]], data.get("next_cursor")),
        replayable=True,
    )


def update_endpoint(name: str, given: Mapping[str, Any]) -> Call[Endpoint]:
    # Replayable: setting the same fields twice leaves the same endpoint.
    return call(UPDATE_ENDPOINT.request(name, body=_endpoint_fields(given, patch=True)), Endpoint.from_json,
                replayable=True)  # fmt: skip


def rotate_endpoint_secret(name: str) -> Call[Endpoint]:
    # Not replayable: a rotation that landed and is repeated would push the first new secret out at once.
    return call(ROTATE_ENDPOINT_SECRET.request(name), Endpoint.from_json, replayable=False)


def delete_endpoint(name: str) -> Call[None]:
    # 204, no body. Not replayable: a delete that landed makes its repeat a 404.
    return call(DELETE_ENDPOINT.request(name), lambda data: None, replayable=False)
