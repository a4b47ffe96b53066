"""Triggers: what an event starts, and which triggers an event matches.

A trigger names an event (`order.paid`) or a prefix of names (`order.*`: every name that starts with `order.`, not
`order` itself), an optional `filter` on the event payload's top-level values, and what it starts: a job (`task`,
the body of `POST /v1/jobs`) or a workflow (`workflow`, the body of `POST /v1/workflows`), exactly one of the two.

Matching stays cheap with thousands of triggers because an event never reads the triggers it cannot match: the
patterns an event name can match are the name itself and one prefix per dot in it (`a.b.c` → `a.b.c`, `a.*`,
`a.b.*`: `event_patterns`, at most 101 for a 200-character name), and a store looks up exactly those keys in its
index on (tenant, event) of enabled triggers — an index scan per pattern, whatever the number of triggers with other
names. Only the triggers read that way are held to their `filter` (`matches`).

A filter matches when every key is in the payload and its value there equals the filter's as JSON (`same_json`,
PostgreSQL's `jsonb =`): `"3"` is not `3`, `true` is not `1`, `1` is `1.0` (one kind of number, as in jsonb), an
object equals only an object with the same keys and equal values, an array only an equal array in the same order.
A key absent from the payload never matches, not even a filter value of `null`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from queueflow.core.definitions import new_workflow_json
from queueflow.core.errors import FieldError
from queueflow.core.jsonvalue import same_json, storage_errors
from queueflow.core.types import JSON, BackoffPolicy, NewJob
from queueflow.core.validation import name_errors, new_job_errors, object_errors
from queueflow.core.workflow import NewWorkflow, new_workflow_errors

EVENT_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,200}$")
"""An event's name, and a trigger's exact `event`."""
EVENT_PREFIX = re.compile(r"^[A-Za-z0-9_.:-]{1,198}\.\*$")
"""A trigger's `event` that names a prefix: `order.*` matches every name starting with `order.`."""
WILDCARD = "*"
EVENT_KEY = "_event"
"""The payload key under which a started job receives its event (a started workflow's context: `event`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NewTrigger:
    """What a tenant asks to keep (`POST /v1/triggers`): validated by `trigger_errors`."""

    name: str
    event: str
    filter: dict[str, JSON] = field(default_factory=dict)
    task: NewJob | None = None
    workflow: NewWorkflow | None = None
    enabled: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class Trigger:
    """A trigger row: `task` or `workflow` is what it starts (the other is None)."""

    id: str
    tenant_id: str
    name: str
    event: str
    filter: dict[str, JSON]
    task: NewJob | None
    workflow: NewWorkflow | None
    enabled: bool
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class TriggerPatch:
    """A PATCH body: None leaves a field as it is. A `task` makes a workflow trigger a job trigger, a `workflow` the
    reverse; both at once is a 400. The name is the trigger's address and does not change."""

    event: str | None = None
    filter: dict[str, JSON] | None = None
    task: NewJob | None = None
    workflow: NewWorkflow | None = None
    enabled: bool | None = None


# --- validation --------------------------------------------------------------------------------------------


def event_name_errors(name: str, loc: tuple[str | int, ...] = ("name",)) -> list[FieldError]:
    if not isinstance(name, str) or not EVENT_NAME.fullmatch(name):
        return [FieldError(loc, "must match ^[A-Za-z0-9_.:-]{1,200}$")]
    return []


def pattern_errors(pattern: str, loc: tuple[str | int, ...] = ("event",)) -> list[FieldError]:
    if isinstance(pattern, str) and (EVENT_NAME.fullmatch(pattern) or EVENT_PREFIX.fullmatch(pattern)):
        return []
    return [FieldError(loc, "must be an event name (^[A-Za-z0-9_.:-]{1,200}$) or a prefix ending in .* (order.*)")]


def trigger_errors(trigger: NewTrigger) -> list[FieldError]:
    errors = name_errors(trigger.name, ("name",))
    errors += pattern_errors(trigger.event)
    errors += object_errors(trigger.filter, ("filter",))
    if (trigger.task is None) == (trigger.workflow is None):
        errors.append(FieldError((), "a trigger starts either a task or a workflow"))
    elif trigger.task is not None:
        errors += new_job_errors(trigger.task, ("task",))
        if isinstance(trigger.task.payload, dict) and EVENT_KEY in trigger.task.payload:
            errors.append(FieldError(("task", "payload", EVENT_KEY), "is reserved for the event"))
        if trigger.task.unique is not None:
            # An event inserts its triggers' jobs in its own statements, outside the key locks a unique rule needs:
            # refused rather than stored and ignored.
            errors.append(FieldError(("task", "unique"), "is not supported on a trigger's task"))
        for name in ("expires_at", "expires_in_seconds"):
            if getattr(trigger.task, name) is not None:
                # The same: an event's jobs are inserted without the engine's check of a deadline against their
                # scheduled_at, and a fixed expires_at would pass for every later event.
                errors.append(FieldError(("task", name), "is not supported on a trigger's task"))
    elif trigger.workflow is not None:
        errors += [replace(error, loc=("workflow", *error.loc)) for error in new_workflow_errors(trigger.workflow)]
    if not isinstance(trigger.enabled, bool):
        errors.append(FieldError(("enabled",), "must be a boolean"))
    return errors


def patched(trigger: Trigger, patch: TriggerPatch, now: datetime) -> Trigger:
    """`trigger` with `patch` applied at `now` (check `trigger_errors(as_new(...))` of the result)."""
    changes: dict[str, Any] = {
        name: value for name in TriggerPatch.__dataclass_fields__ if (value := getattr(patch, name)) is not None
    }
    if patch.task is not None and patch.workflow is None:
        changes["workflow"] = None
    elif patch.workflow is not None and patch.task is None:
        changes["task"] = None
    return replace(trigger, **changes, updated_at=now)


def as_new(trigger: Trigger) -> NewTrigger:
    return NewTrigger(**{name: getattr(trigger, name) for name in NewTrigger.__dataclass_fields__})


def trigger_storage_errors(trigger: Trigger) -> list[FieldError]:
    """Why a store could not keep `trigger` (text PostgreSQL refuses), whether or not the engine validated it."""
    errors: list[FieldError] = []
    for name in ("tenant_id", "name", "event", "filter"):
        errors += storage_errors(getattr(trigger, name), (name,))
    if trigger.task is not None:
        errors += storage_errors(task_json(trigger.task), ("task",))
    if trigger.workflow is not None:
        errors += storage_errors(new_workflow_json(trigger.workflow), ("workflow",))
    return errors


# --- matching ----------------------------------------------------------------------------------------------


def event_patterns(name: str) -> list[str]:
    """Every trigger `event` that can match an event called `name`: the name, and `<prefix>.*` for each dot in it
    (`a.b.c` → `a.b.c`, `a.*`, `a.b.*`). A store looks these up in its index instead of reading every trigger."""
    return [name] + [f"{name[: index + 1]}{WILDCARD}" for index, char in enumerate(name) if char == "."]


def pattern_matches(pattern: str, name: str) -> bool:
    if pattern.endswith(".*"):
        return name.startswith(pattern[:-1])
    return pattern == name


def filter_matches(filter: dict[str, JSON], payload: dict[str, JSON]) -> bool:
    """Every key of `filter` is in `payload` with a value equal as JSON (see the module's docstring)."""
    return all(key in payload and same_json(payload[key], value) for key, value in filter.items())


def matches(trigger: Trigger, name: str, payload: dict[str, JSON]) -> bool:
    """Whether the event `name` with `payload` starts `trigger`."""
    return trigger.enabled and pattern_matches(trigger.event, name) and filter_matches(trigger.filter, payload)


# --- the task as JSON (how a store keeps it, and how the API shows it) --------------------------------------

TASK_FIELDS = (
    "task_name",
    "queue_name",
    "payload",
    "priority",
    "run_at",
    "delay_seconds",
    "max_retries",
    "backoff",
    "timeout_seconds",
    "metadata",
    "concurrency_key",
)
"""The fields of `POST /v1/jobs`'s body, which a job trigger's `task` is."""


def task_json(task: NewJob) -> dict[str, JSON]:
    fields: dict[str, JSON] = {name: getattr(task, name) for name in TASK_FIELDS}
    fields["backoff"] = task.backoff.to_json()
    fields["run_at"] = None if task.run_at is None else task.run_at.isoformat()
    return fields


def task_from_json(data: dict[str, Any]) -> NewJob:
    """The task `task_json` wrote (a stored trigger's: validated before it was written)."""
    fields = {name: data[name] for name in TASK_FIELDS if name in data}
    fields["backoff"] = BackoffPolicy.from_json(data["backoff"])
    if data.get("run_at") is not None:
        fields["run_at"] = datetime.fromisoformat(data["run_at"])
    if fields.get("timeout_seconds") is not None:
        fields["timeout_seconds"] = float(fields["timeout_seconds"])
    if fields.get("delay_seconds") is not None:
        fields["delay_seconds"] = float(fields["delay_seconds"])
    return NewJob(**fields)
