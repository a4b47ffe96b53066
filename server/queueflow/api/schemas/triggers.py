"""The wire shapes of triggers (addressed by name, as schedules are) and of the events that start them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from msgspec import UNSET, Meta, Struct, UnsetType

from queueflow.api.schemas.common import NO_NUL, JSONObject, RequestBody
from queueflow.api.schemas.jobs import JobFields
from queueflow.api.schemas.schedules import ScheduleName, ScheduleNamePath
from queueflow.api.schemas.workflows import CreateWorkflow
from queueflow.core import events, triggers
from queueflow.core.definitions import new_workflow_json

TriggerName = ScheduleName  # names as schedules' names
TriggerNamePath = ScheduleNamePath
EventName = Annotated[
    str,
    Meta(pattern=triggers.EVENT_NAME.pattern, min_length=1, max_length=200, examples=["order.paid"]),
]
EventPattern = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=200,
        pattern=rf"{triggers.EVENT_NAME.pattern}|{triggers.EVENT_PREFIX.pattern}",
        description="An event name, or a prefix ending in .* (order.* matches every name starting with order.)",
        examples=["order.paid", "order.*"],
    ),
]
EventId = Annotated[str, Meta(min_length=1, max_length=255, pattern=NO_NUL)]


class CreateTrigger(RequestBody):
    """A trigger that enqueues a job (`task`, as the body of POST /v1/jobs) or starts a workflow (`workflow`, as
    the body of POST /v1/workflows) for every event it matches: exactly one of the two. `filter` (optional) holds
    top-level payload keys whose values must equal the event's, as JSON."""

    name: TriggerName
    event: EventPattern
    filter: JSONObject | UnsetType = UNSET
    task: JobFields | UnsetType = UNSET
    workflow: CreateWorkflow | UnsetType = UNSET
    enabled: bool = True

    def to_domain(self) -> triggers.NewTrigger:
        return triggers.NewTrigger(
            name=self.name,
            event=self.event,
            filter={} if isinstance(self.filter, UnsetType) else self.filter,
            task=None if isinstance(self.task, UnsetType) else self.task.to_domain(None),
            workflow=None if isinstance(self.workflow, UnsetType) else self.workflow.to_domain(None),
            enabled=self.enabled,
        )


class UpdateTrigger(RequestBody):
    """A PATCH: an absent field stays as it is. A `task` makes a workflow trigger a job trigger, a `workflow` the
    reverse (both at once: 400)."""

    event: EventPattern | UnsetType = UNSET
    filter: JSONObject | UnsetType = UNSET
    task: JobFields | UnsetType = UNSET
    workflow: CreateWorkflow | UnsetType = UNSET
    enabled: bool | UnsetType = UNSET

    def to_domain(self) -> triggers.TriggerPatch:
        return triggers.TriggerPatch(
            event=None if isinstance(self.event, UnsetType) else self.event,
            filter=None if isinstance(self.filter, UnsetType) else self.filter,
            task=None if isinstance(self.task, UnsetType) else self.task.to_domain(None),
            workflow=None if isinstance(self.workflow, UnsetType) else self.workflow.to_domain(None),
            enabled=None if isinstance(self.enabled, UnsetType) else self.enabled,
        )


class Trigger(Struct, kw_only=True):
    """A trigger: `task` (the job it enqueues, as POST /v1/jobs takes it) or `workflow` (`{name, context, steps}`),
    the other null."""

    id: str
    tenant_id: str
    name: str
    event: str
    filter: JSONObject
    task: JSONObject | None
    workflow: JSONObject | None
    enabled: bool
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_domain(cls, trigger: triggers.Trigger) -> Trigger:
        return cls(
            id=trigger.id,
            tenant_id=trigger.tenant_id,
            name=trigger.name,
            event=trigger.event,
            filter=trigger.filter,
            task=None if trigger.task is None else triggers.task_json(trigger.task),
            workflow=None if trigger.workflow is None else new_workflow_json(trigger.workflow),
            enabled=trigger.enabled,
            created_at=trigger.created_at,
            updated_at=trigger.updated_at,
        )


class TriggerPage(Struct):
    items: list[Trigger]
    next_cursor: str | None


class SendEvent(RequestBody):
    """An event: every enabled trigger it matches starts, in one transaction. With an `id` seen before (within a
    day) nothing starts again and the answer is what the first send started."""

    name: EventName
    payload: JSONObject = {}  # noqa: RUF012 - msgspec copies a mutable default per instance
    id: EventId | UnsetType = UNSET

    def to_domain(self) -> events.NewEvent:
        return events.NewEvent(
            name=self.name, payload=self.payload, id=None if isinstance(self.id, UnsetType) else self.id
        )


class StartedItem(Struct, kw_only=True, omit_defaults=True):
    """One trigger's start: `job_id` for a job trigger, `workflow_id` for a workflow trigger."""

    trigger: str
    # Absent rather than null on the wire; typed nullable so that a client's one type holds either kind.
    job_id: str | UnsetType | None = UNSET
    workflow_id: str | UnsetType | None = UNSET

    @classmethod
    def from_domain(cls, started: events.Started) -> StartedItem:
        if started.job_id is not None:
            return cls(trigger=started.trigger, job_id=started.job_id)
        return cls(trigger=started.trigger, workflow_id=started.workflow_id or "")


class EventAccepted(Struct, kw_only=True):
    """What an event started (empty when no trigger matched), in the order the triggers were created."""

    event_id: str
    started: list[StartedItem]

    @classmethod
    def from_domain(cls, event: events.Event) -> EventAccepted:
        return cls(event_id=event.id, started=[StartedItem.from_domain(item) for item in event.started])
