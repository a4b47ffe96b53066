"""The schedules' calls: create, get, list, update, delete."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from queueflow_client._calls.routes import (
    CREATE_SCHEDULE,
    DELETE_SCHEDULE,
    GET_SCHEDULE,
    LIST_SCHEDULES,
    UPDATE_SCHEDULE,
)
from queueflow_client._calls.workflows import new_workflow
from queueflow_client._json import json_object
from queueflow_client._transport import Call, call
from queueflow_client.types import Page, Schedule


def _schedule_fields(given: Mapping[str, Any]) -> dict[str, Any]:
    """A schedule's fields as the API takes them: one left at None is not sent."""
    body: dict[str, Any] = {}
    for key, value in given.items():
        if value is None:
            continue
        if key == "payload":
            body[key] = json_object(value, "payload")
        elif key == "workflow":
            body[key] = new_workflow(value)
        else:
            body[key] = value
    return body


def create_schedule(name: str, given: Mapping[str, Any]) -> Call[Schedule]:
    body = {"name": name} | _schedule_fields(given)
    # Not replayable: a create that landed makes its repeat a 409 (the name is taken).
    return call(CREATE_SCHEDULE.request(body=body), Schedule.from_json, replayable=False)


def get_schedule(name: str) -> Call[Schedule]:
    return call(GET_SCHEDULE.request(name), Schedule.from_json, replayable=True)


def list_schedules(limit: int, cursor: str | None) -> Call[Page[Schedule]]:
    return call(
        LIST_SCHEDULES.request(query={"limit": limit, "cursor": cursor}),
        lambda data: Page([Schedule.from_json(item) for item in data["items"]], data.get("next_cursor")),
        replayable=True,
    )


def update_schedule(name: str, given: Mapping[str, Any]) -> Call[Schedule]:
    # PATCH: only the given fields are sent. Replayable: setting the same fields twice leaves the same schedule.
    return call(UPDATE_SCHEDULE.request(name, body=_schedule_fields(given)), Schedule.from_json, replayable=True)


def delete_schedule(name: str) -> Call[None]:
    # 204, no body. Not replayable: a delete that landed makes its repeat a 404.
    return call(DELETE_SCHEDULE.request(name), lambda data: None, replayable=False)
