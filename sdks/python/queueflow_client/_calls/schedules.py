"""The schedules' calls: create, get, list, update, delete."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from queueflow_client._calls.workflows import new_workflow
from queueflow_client._generated.api.schedules import create_schedule as create_schedule_operation
from queueflow_client._generated.api.schedules import delete_schedule as delete_schedule_operation
from queueflow_client._generated.api.schedules import get_schedule as get_schedule_operation
from queueflow_client._generated.api.schedules import list_schedules as list_schedules_operation
from queueflow_client._generated.api.schedules import update_schedule as update_schedule_operation
from queueflow_client._generated.models import (
    CreateSchedule,
    CreateSchedulePayload,
    UpdateSchedule,
    UpdateSchedulePayload,
)
from queueflow_client._generated.types import UNSET
from queueflow_client._json import json_object
from queueflow_client._transport import Call, call
from queueflow_client.types import Page, Schedule


def _schedule_fields(given: Mapping[str, Any], payload_type: Any) -> dict[str, Any]:
    """The keyword arguments of a generated schedule body: a field left at None is UNSET, so it is not sent."""
    body: dict[str, Any] = {}
    for key, value in given.items():
        if value is None and key == "workflow":
            continue  # a job schedule's: its generated default is unset already
        if value is None:
            body[key] = UNSET
        elif key == "payload":
            body[key] = payload_type.from_dict(json_object(value, "payload"))
        elif key == "workflow":
            body[key] = new_workflow(value)
        else:
            body[key] = value
    return body


def create_schedule(name: str, given: Mapping[str, Any]) -> Call[Schedule]:
    body = CreateSchedule(name=name, **_schedule_fields(given, CreateSchedulePayload))
    # Not replayable: a create that landed makes its repeat a 409 (the name is taken).
    return call(create_schedule_operation, Schedule.from_json, replayable=False, body=body)


def get_schedule(name: str) -> Call[Schedule]:
    return call(get_schedule_operation, Schedule.from_json, name, replayable=True)


def list_schedules(limit: int, cursor: str | None) -> Call[Page[Schedule]]:
    return call(
        list_schedules_operation,
        lambda data: Page([Schedule.from_json(item) for item in data["items"]], data.get("next_cursor")),
        replayable=True,
        limit=limit,
        cursor=cursor if cursor is not None else UNSET,
    )


def update_schedule(name: str, given: Mapping[str, Any]) -> Call[Schedule]:
    # PATCH: only the given fields are sent. Replayable: setting the same fields twice leaves the same schedule.
    body = UpdateSchedule(**_schedule_fields(given, UpdateSchedulePayload))
    return call(update_schedule_operation, Schedule.from_json, name, replayable=True, body=body)


def delete_schedule(name: str) -> Call[None]:
    # 204, no body. Not replayable: a delete that landed makes its repeat a 404.
    return call(delete_schedule_operation, lambda data: None, name, replayable=False)
