"""`client.triggers`: what an event starts — a job of a task, or a workflow — for every event whose name (or prefix:
`order.*`) and top-level payload values match; and `client.events`: sending one (`Triggers`, `Events` sync,
`AsyncTriggers`, `AsyncEvents` async).

    client.triggers.create("receipt", event="order.paid", task={"task_name": "send_receipt"})
    client.triggers.create("fulfil", event="order.*", filter={"plan": "pro"}, workflow=steps.workflow("fulfil", [...]))
    client.events.send("order.paid", {"order_id": 7}, id="order-7-paid")
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, TypedDict, Unpack

from queueflow_client import _calls
from queueflow_client.errors import ArgumentError
from queueflow_client.options import JobOptions
from queueflow_client.resources._base import DEFAULT_PAGE, Resource, apages, pages
from queueflow_client.steps import WorkflowDefinition
from queueflow_client.types import EventAccepted, Page, Trigger

__all__ = ["AsyncEvents", "AsyncTriggers", "Events", "TriggerChanges", "TriggeredWorkflow", "Triggers"]

TriggeredWorkflow = WorkflowDefinition | Mapping[str, Any]
"""A trigger's workflow: `steps.workflow(...)`, or a mapping of `name`, `steps` and `context`."""


class TriggerChanges(TypedDict, total=False):
    """What `triggers.update` may change: any field but the name (None or left out: it stays). A `task` makes a
    workflow trigger a job trigger, a `workflow` the reverse."""

    event: str | None
    filter: Mapping[str, Any] | None
    task: JobOptions | None
    workflow: TriggeredWorkflow | None
    enabled: bool | None


def _created(
    event: str,
    task: JobOptions | None,
    workflow: TriggeredWorkflow | None,
    filter: Mapping[str, Any] | None,
    enabled: bool,
) -> dict[str, Any]:
    if (task is None) == (workflow is None):
        raise ArgumentError("a trigger enqueues a job (task={...}) or starts a workflow (workflow=...): give one")
    return {"event": event, "filter": filter, "task": task, "workflow": workflow, "enabled": enabled}


def _changes(changes: Mapping[str, Any]) -> dict[str, Any]:
    unknown = set(changes) - TriggerChanges.__optional_keys__
    if unknown:
        raise TypeError(f"unknown trigger field(s): {', '.join(sorted(unknown))}")
    return dict(changes)


class Triggers(Resource):
    def create(
        self,
        name: str,
        *,
        event: str,
        task: JobOptions | None = None,
        workflow: TriggeredWorkflow | None = None,
        filter: Mapping[str, Any] | None = None,
        enabled: bool = True,
    ) -> Trigger:
        """Create a trigger: every matching event from now on enqueues `task` (a dict of `jobs.enqueue`'s
        arguments but `unique`) or starts `workflow`; a name already in use is an InvalidStateError."""
        result: Trigger = self._send(_calls.create_trigger(name, _created(event, task, workflow, filter, enabled)))
        return result

    def get(self, name: str) -> Trigger:
        result: Trigger = self._send(_calls.get_trigger(name))
        return result

    def list_page(self, *, limit: int = 50, cursor: str | None = None) -> Page[Trigger]:
        result: Page[Trigger] = self._send(_calls.list_triggers(limit, cursor))
        return result

    def list(self, *, page_size: int = DEFAULT_PAGE) -> Iterator[Trigger]:
        return pages(lambda cursor: self.list_page(limit=page_size, cursor=cursor))

    def update(self, name: str, **changes: Unpack[TriggerChanges]) -> Trigger:
        """Change the given fields (the others stay as they are)."""
        result: Trigger = self._send(_calls.update_trigger(name, _changes(changes)))
        return result

    def delete(self, name: str) -> None:
        self._send(_calls.delete_trigger(name))


class AsyncTriggers(Resource):
    """`Triggers`, awaited."""

    async def create(
        self,
        name: str,
        *,
        event: str,
        task: JobOptions | None = None,
        workflow: TriggeredWorkflow | None = None,
        filter: Mapping[str, Any] | None = None,
        enabled: bool = True,
    ) -> Trigger:
        """Create a trigger: every matching event from now on enqueues `task` (a dict of `jobs.enqueue`'s
        arguments but `unique`) or starts `workflow`; a name already in use is an InvalidStateError."""
        fields = _created(event, task, workflow, filter, enabled)
        result: Trigger = await self._send(_calls.create_trigger(name, fields))
        return result

    async def get(self, name: str) -> Trigger:
        result: Trigger = await self._send(_calls.get_trigger(name))
        return result

    async def list_page(self, *, limit: int = 50, cursor: str | None = None) -> Page[Trigger]:
        result: Page[Trigger] = await self._send(_calls.list_triggers(limit, cursor))
        return result

    def list(self, *, page_size: int = DEFAULT_PAGE) -> AsyncIterator[Trigger]:
        return apages(lambda cursor: self.list_page(limit=page_size, cursor=cursor))

    async def update(self, name: str, **changes: Unpack[TriggerChanges]) -> Trigger:
        """Change the given fields (the others stay as they are)."""
        result: Trigger = await self._send(_calls.update_trigger(name, _changes(changes)))
        return result

    async def delete(self, name: str) -> None:
        await self._send(_calls.delete_trigger(name))


class Events(Resource):
    def send(self, name: str, payload: Mapping[str, Any] | None = None, *, id: str | None = None) -> EventAccepted:
        """Send an event: every enabled trigger it matches starts, in one transaction. A repeated `id` (within the
        day events are kept) starts nothing again and answers with what the first send started; without one the
        client makes one, so its own retries are safe."""
        result: EventAccepted = self._send(_calls.send_event(name, payload, id))
        return result


class AsyncEvents(Resource):
    """`Events`, awaited."""

    async def send(
        self, name: str, payload: Mapping[str, Any] | None = None, *, id: str | None = None
    ) -> EventAccepted:
        """Send an event: every enabled trigger it matches starts, in one transaction. A repeated `id` (within the
        day events are kept) starts nothing again and answers with what the first send started; without one the
        client makes one, so its own retries are safe."""
        result: EventAccepted = await self._send(_calls.send_event(name, payload, id))
        return result
