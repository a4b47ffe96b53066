"""Events: what one `POST /v1/events` starts, decided without I/O for a store to record in one transaction.

A store reads the tenant's enabled triggers whose `event` is one of `triggers.event_patterns(name)` (an index
lookup per pattern), keeps those that `triggers.matches`, and records what `starts` makes of them: a pending job
per job trigger (its payload gaining `_event`, its metadata `trigger` and `event`) and a running workflow per
workflow trigger (its context gaining `event`), with ids from the store's own `IdSource`, in the triggers' order of
creation. The event is kept with what it started (`Event.started`), keyed on (tenant, id): a repeat of the id
starts nothing and answers with that.

Events are kept `EVENT_RETENTION` (a day, as Inngest keeps event ids for deduplication): long enough for any retry
of a send, and what the dashboard's last events read. Every worker-mode process's janitor deletes those older, a
bounded batch a sweep (`EventStore.event_delete_received`); so an id is idempotent for a day, not forever.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

import msgspec
from msgspec.structs import replace as replace_struct

from queueflow.core.advance import Recording
from queueflow.core.children import new_workflow_recording
from queueflow.core.errors import FieldError
from queueflow.core.ids import IdSource
from queueflow.core.jsonvalue import MAX_DEPTH, storage_errors
from queueflow.core.lifecycle import pending_row
from queueflow.core.triggers import EVENT_KEY, Trigger, event_name_errors
from queueflow.core.types import JSON, Job
from queueflow.core.validation import text_errors

EVENT_RETENTION = timedelta(days=1)
CONTEXT_EVENT = "event"
"""The context key under which a started workflow receives its event."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NewEvent:
    """What a tenant sends (`POST /v1/events`); `id` None: the server makes one (`evt_…`)."""

    name: str
    payload: dict[str, JSON] = field(default_factory=dict)
    id: str | None = None


class Started(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One trigger's start: its job's id or its workflow's. A Struct, so that a thousand of them encode in C (as a
    store keeps them: `{"trigger", "job_id"}` or `{"trigger", "workflow_id"}`)."""

    trigger: str
    job_id: str | None = None
    workflow_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """An event row: as received, and what it started (empty until a store has recorded it)."""

    tenant_id: str
    id: str
    name: str
    payload: dict[str, JSON]
    received_at: datetime
    started: tuple[Started, ...] = ()

    @property
    def created_at(self) -> datetime:
        """Listings order events by when they came (`core.cursor.Listed`)."""
        return self.received_at


@dataclass(frozen=True, slots=True, kw_only=True)
class Starts:
    """What one event starts (`starts`), for a store to write atomically."""

    jobs: list[Job]
    """One pending job per job trigger."""
    workflows: list[Recording]
    """One new workflow (with its root steps' jobs) per workflow trigger."""
    started: tuple[Started, ...]
    """Each trigger's start, in the triggers' order."""


MAX_PAYLOAD_DEPTH = MAX_DEPTH - 3
"""An event's payload sits three levels down in what a workflow trigger starts (a step job's
`_context.event.payload`): one that fits here fits in whatever any trigger starts, so no trigger can fail an event."""


def new_event_errors(event: NewEvent) -> list[FieldError]:
    errors = event_name_errors(event.name)
    if isinstance(event.payload, dict):
        errors += storage_errors(event.payload, ("payload",), max_depth=MAX_PAYLOAD_DEPTH)
    else:
        errors.append(FieldError(("payload",), "must be a JSON object"))
    if event.id is not None:
        errors += text_errors(event.id, ("id",), max_len=255)
    return errors


def event_storage_errors(event: Event) -> list[FieldError]:
    """Why a store could not keep `event` (text PostgreSQL refuses), whether or not the engine validated it."""
    errors: list[FieldError] = []
    for name in ("tenant_id", "id", "name", "payload"):
        errors += storage_errors(getattr(event, name), (name,))
    return errors


def started_job_errors(event: Event) -> list[FieldError]:
    """Why a job a trigger starts for `event` could not be stored: its payload is the trigger's task payload
    (storable) with `_event: {"payload": ...}` beside it, two levels above the event's payload."""
    return storage_errors(event.payload, ("payload",), max_depth=MAX_DEPTH - 2)


def received(tenant_id: str, event: NewEvent, now: datetime, ids: IdSource) -> Event:
    """The row of a validated event received at `now`: its own id, or a new `evt_…` one."""
    event_id = event.id if event.id is not None else ids.new_id("evt", now)
    return Event(tenant_id=tenant_id, id=event_id, name=event.name, payload=event.payload, received_at=now)


def starts(event: Event, triggers: list[Trigger], ids: IdSource) -> Starts:
    """What `event` starts: one job or workflow per trigger of `triggers` (those it matches), ordered by their
    creation, each with the event under `_event` (a job's payload) or `event` (a workflow's context)."""
    ordered = sorted(triggers, key=lambda trigger: (trigger.created_at, trigger.id))
    now, seen = event.received_at, _seen(event)
    tasks = [trigger for trigger in ordered if trigger.task is not None]
    job_ids = iter(ids.new_ids("job", now, len(tasks)))
    jobs: list[Job] = []
    workflows: list[Recording] = []
    started: list[Started] = []
    for trigger in ordered:
        if trigger.task is not None:
            task = replace_struct(
                trigger.task,
                payload={**trigger.task.payload, EVENT_KEY: seen},
                metadata={**trigger.task.metadata, "trigger": trigger.name, "event": event.id},
            )
            job = pending_row(event.tenant_id, task, now, next(job_ids))
            jobs.append(job)
            started.append(Started(trigger=trigger.name, job_id=job.id))
        elif trigger.workflow is not None:
            workflow = replace(trigger.workflow, context={**trigger.workflow.context, CONTEXT_EVENT: seen})
            recording = new_workflow_recording(event.tenant_id, workflow, now, ids)
            workflows.append(recording)
            started.append(Started(trigger=trigger.name, workflow_id=recording.workflow.id))
    return Starts(jobs=jobs, workflows=workflows, started=tuple(started))


def _seen(event: Event) -> dict[str, JSON]:
    return {"id": event.id, "name": event.name, "payload": event.payload}
