"""The triggers' calls (create, get, list, update, delete) and the event's (send)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from queueflow_client._calls.arguments import new_idempotency_key
from queueflow_client._calls.jobs import job_fields
from queueflow_client._calls.routes import (
    CREATE_TRIGGER,
    DELETE_TRIGGER,
    GET_TRIGGER,
    LIST_TRIGGERS,
    SEND_EVENT,
    UPDATE_TRIGGER,
)
from queueflow_client._calls.workflows import new_workflow
from queueflow_client._json import json_object
from queueflow_client._transport import Call, call
from queueflow_client.types import EventAccepted, Page, Trigger


def _trigger_fields(given: Mapping[str, Any]) -> dict[str, Any]:
    """A trigger's fields as the API takes them: one left at None is not sent."""
    body: dict[str, Any] = {}
    for key, value in given.items():
        if value is None:
            continue
        if key == "filter":
            body[key] = json_object(value, "filter")
        elif key == "task":
            body[key] = job_fields(value, "task.")
        elif key == "workflow":
            body[key] = new_workflow(value)
        else:
            body[key] = value
    return body


def create_trigger(name: str, given: Mapping[str, Any]) -> Call[Trigger]:
    # Not replayable: a create that landed makes its repeat a 409 (the name is taken).
    return call(
        CREATE_TRIGGER.request(body={"name": name} | _trigger_fields(given)), Trigger.from_json, replayable=False
    )


def get_trigger(name: str) -> Call[Trigger]:
    return call(GET_TRIGGER.request(name), Trigger.from_json, replayable=True)


def list_triggers(limit: int, cursor: str | None) -> Call[Page[Trigger]]:
    return call(
        LIST_TRIGGERS.request(query={"limit": limit, "cursor": cursor}),
        lambda data: Page([Trigger.from_json(item) for item in data["items"]], data.get("next_cursor")),
        replayable=True,
    )


def update_trigger(name: str, given: Mapping[str, Any]) -> Call[Trigger]:
    # PATCH: only the given fields are sent. Replayable: setting the same fields twice leaves the same trigger.
    return call(UPDATE_TRIGGER.request(name, body=_trigger_fields(given)), Trigger.from_json, replayable=True)


def delete_trigger(name: str) -> Call[None]:
    # 204, no body. Not replayable: a delete that landed makes its repeat a 404.
    return call(DELETE_TRIGGER.request(name), lambda data: None, replayable=False)


def send_event(name: str, payload: Mapping[str, Any] | None, event_id: str | None) -> Call[EventAccepted]:
    # An event without an id gets one here, as an enqueue gets its idempotency key: a send retried after a lost
    # answer then starts nothing twice, and answers with what the first one started.
    body: dict[str, Any] = {
        "name": name,
        "payload": json_object(payload or {}, "payload"),
        "id": event_id if event_id is not None else new_idempotency_key(),
    }
    return call(SEND_EVENT.request(body=body), EventAccepted.from_json, replayable=True)
