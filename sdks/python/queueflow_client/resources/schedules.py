"""`client.schedules`: cron schedules that enqueue a job of a task, or start a workflow, at each tick (`Schedules`
sync, `AsyncSchedules` async).

    client.schedules.create("nightly-etl", cron="0 3 * * *", workflow=steps.workflow("etl", [...]))
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, TypedDict, Unpack

from queueflow_client import _calls
from queueflow_client.errors import ArgumentError
from queueflow_client.resources._base import DEFAULT_PAGE, Resource, apages, pages
from queueflow_client.steps import WorkflowDefinition
from queueflow_client.types import Page, Schedule

__all__ = ["AsyncSchedules", "ScheduleChanges", "ScheduleOptions", "ScheduledWorkflow", "Schedules"]


ScheduledWorkflow = WorkflowDefinition | Mapping[str, Any]
"""A schedule's workflow: `steps.workflow(...)`, or a mapping of `name`, `steps` and `context`."""


class ScheduleOptions(TypedDict, total=False):
    """A schedule's fields but for its name, cron and task (None: not sent; on create, the server's default)."""

    timezone: str | None
    queue_name: str | None
    payload: Mapping[str, Any] | None
    priority: int | None
    max_retries: int | None
    enabled: bool | None


class ScheduleChanges(ScheduleOptions, total=False):
    """What `schedules.update` may change: any field but the name (None or left out: it stays)."""

    cron: str | None
    task_name: str | None
    workflow: ScheduledWorkflow | None
    """A workflow schedule's new workflow (a job schedule cannot become one)."""


def _fields(options: Mapping[str, Any], **given: Any) -> dict[str, Any]:
    """The fields given, None for not sent (on create: the server's default; on update: unchanged)."""
    unknown = set(options) - ScheduleChanges.__optional_keys__
    if unknown:
        raise TypeError(f"unknown schedule field(s): {', '.join(sorted(unknown))}")
    return {**given, **options}


def _created(
    options: Mapping[str, Any],
    cron: str,
    task_name: str | None,
    workflow: ScheduledWorkflow | None,
) -> dict[str, Any]:
    """A new schedule's fields: a job's (`task_name`) or a workflow's (`workflow`), exactly one of the two."""
    if (task_name is None) == (workflow is None):
        raise ArgumentError("a schedule enqueues a job (task_name=...) or starts a workflow (workflow=...): give one")
    return _fields(options, cron=cron, task_name=task_name, workflow=workflow)


class Schedules(Resource):
    def create(
        self,
        name: str,
        *,
        cron: str,
        task_name: str | None = None,
        workflow: ScheduledWorkflow | None = None,
        **options: Unpack[ScheduleOptions],
    ) -> Schedule:
        """Create a cron schedule that enqueues a `task_name` job, or starts a `workflow` (`steps.workflow(...)`; it
        takes no job option: each step has its own), at each occurrence; a name already in use is an
        InvalidStateError."""
        fields = _created(options, cron, task_name, workflow)
        result: Schedule = self._send(_calls.create_schedule(name, fields))
        return result

    def get(self, name: str) -> Schedule:
        result: Schedule = self._send(_calls.get_schedule(name))
        return result

    def list_page(self, *, limit: int = 50, cursor: str | None = None) -> Page[Schedule]:
        result: Page[Schedule] = self._send(_calls.list_schedules(limit, cursor))
        return result

    def list(self, *, page_size: int = DEFAULT_PAGE) -> Iterator[Schedule]:
        return pages(lambda cursor: self.list_page(limit=page_size, cursor=cursor))

    def update(self, name: str, **changes: Unpack[ScheduleChanges]) -> Schedule:
        """Change the given fields (the others stay as they are)."""
        fields = _fields(changes)
        result: Schedule = self._send(_calls.update_schedule(name, fields))
        return result

    def delete(self, name: str) -> None:
        self._send(_calls.delete_schedule(name))


class AsyncSchedules(Resource):
    """`Schedules`, awaited."""

    async def create(
        self,
        name: str,
        *,
        cron: str,
        task_name: str | None = None,
        workflow: ScheduledWorkflow | None = None,
        **options: Unpack[ScheduleOptions],
    ) -> Schedule:
        """Create a cron schedule that enqueues a `task_name` job, or starts a `workflow` (`steps.workflow(...)`; it
        takes no job option: each step has its own), at each occurrence; a name already in use is an
        InvalidStateError."""
        fields = _created(options, cron, task_name, workflow)
        result: Schedule = await self._send(_calls.create_schedule(name, fields))
        return result

    async def get(self, name: str) -> Schedule:
        result: Schedule = await self._send(_calls.get_schedule(name))
        return result

    async def list_page(self, *, limit: int = 50, cursor: str | None = None) -> Page[Schedule]:
        result: Page[Schedule] = await self._send(_calls.list_schedules(limit, cursor))
        return result

    def list(self, *, page_size: int = DEFAULT_PAGE) -> AsyncIterator[Schedule]:
        return apages(lambda cursor: self.list_page(limit=page_size, cursor=cursor))

    async def update(self, name: str, **changes: Unpack[ScheduleChanges]) -> Schedule:
        """Change the given fields (the others stay as they are)."""
        fields = _fields(changes)
        result: Schedule = await self._send(_calls.update_schedule(name, fields))
        return result

    async def delete(self, name: str) -> None:
        await self._send(_calls.delete_schedule(name))
