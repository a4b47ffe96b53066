"""`client.workflows`: DAGs of steps — create, read, wait for, list, cancel, signal and retry them (`Workflows`
sync, `AsyncWorkflows` async)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any

from queueflow_client import _calls
from queueflow_client._transport import Call
from queueflow_client._waiting import async_wait, wait
from queueflow_client.errors import ArgumentError
from queueflow_client.resources._base import DEFAULT_PAGE, Resource, apages, pages
from queueflow_client.steps import WorkflowDefinition
from queueflow_client.types import Page, Step, Workflow, WorkflowStatus

__all__ = ["AsyncWorkflows", "Workflows"]


def _finished(workflow: Workflow) -> bool:
    return workflow.status != "running"


def _create(
    name: str | WorkflowDefinition,
    steps: Sequence[Step | Mapping[str, Any]] | None,
    context: Mapping[str, Any] | None,
    idempotency_key: str | None,
) -> Call[Workflow]:
    """`create(definition)` or `create(name, steps, context=...)`: the two ways to say the same workflow."""
    if isinstance(name, WorkflowDefinition):
        if steps is not None or context is not None:
            raise ArgumentError("a WorkflowDefinition holds its steps and context: pass it alone")
        return _calls.create_workflow(name.name, name.steps, name.context, idempotency_key, name.timeout_seconds)
    if steps is None:
        raise ArgumentError("create(name, steps) needs the steps (or pass a steps.workflow(...) definition)")
    return _calls.create_workflow(name, steps, context, idempotency_key)


class Workflows(Resource):
    def create(
        self,
        name: str | WorkflowDefinition,
        steps: Sequence[Step | Mapping[str, Any]] | None = None,
        *,
        context: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Workflow:
        """Create a DAG of steps and enqueue its root steps (ValidationError for a cycle or unknown dependency):
        `create(steps.workflow("etl", [...]))`, or `create("etl", [...], context=...)`."""
        result: Workflow = self._send(_create(name, steps, context, idempotency_key))
        return result

    def get(self, workflow_id: str) -> Workflow:
        return self._get(workflow_id)

    def _get(self, workflow_id: str, wait_seconds: float = 0.0) -> Workflow:
        result: Workflow = self._send(_calls.get_workflow(workflow_id, wait_seconds))
        return result

    def wait(self, workflow_id: str, *, timeout: float | None = None) -> Workflow:
        """The workflow once it is no longer running, answered as soon as it finishes; TimeoutError after `timeout`."""
        return wait(
            lambda seconds: self._get(workflow_id, seconds), _finished, timeout, self._chunk, f"workflow {workflow_id}"
        )

    def list_page(
        self,
        *,
        status: WorkflowStatus | None = None,
        limit: int = 50,
        cursor: str | None = None,
        parent_id: str | None = None,
    ) -> Page[Workflow]:
        result: Page[Workflow] = self._send(_calls.list_workflows(status, limit, cursor, parent_id))
        return result

    def list(
        self, *, status: WorkflowStatus | None = None, parent_id: str | None = None, page_size: int = DEFAULT_PAGE
    ) -> Iterator[Workflow]:
        """Every workflow (with `status`, if given; only `parent_id`'s children, if given), newest first."""
        return pages(lambda cursor: self.list_page(status=status, limit=page_size, cursor=cursor, parent_id=parent_id))

    def cancel(self, workflow_id: str) -> Workflow:
        """Cancel a running workflow: every unfinished step and its job."""
        result: Workflow = self._send(_calls.cancel_workflow(workflow_id))
        return result

    def signal(self, workflow_id: str, name: str, payload: Any = None) -> Workflow:
        """Send the signal `name` with `payload` (any JSON; it becomes the waiting step's result): a step waiting
        for it completes now and the workflow advances before the answer; one not yet waiting keeps it. The same
        signal sent again with an equal payload changes nothing. NotFoundError if no step waits for `name`;
        InvalidStateError for another payload than the one received, a workflow no longer running, or a step that
        can no longer wait (skipped, cancelled, timed out)."""
        result: Workflow = self._send(_calls.signal_workflow(workflow_id, name, payload))
        return result

    def retry(self, workflow_id: str) -> Workflow:
        """Run a failed, partially failed or cancelled workflow again: its failed, cancelled and skipped steps go
        back to pending (completed ones keep their results) and its ready steps are enqueued as new jobs before the
        answer. InvalidStateError for a workflow in any other status."""
        result: Workflow = self._send(_calls.retry_workflow(workflow_id))
        return result


class AsyncWorkflows(Resource):
    """`Workflows`, awaited."""

    async def create(
        self,
        name: str | WorkflowDefinition,
        steps: Sequence[Step | Mapping[str, Any]] | None = None,
        *,
        context: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Workflow:
        """Create a DAG of steps and enqueue its root steps (ValidationError for a cycle or unknown dependency):
        `create(steps.workflow("etl", [...]))`, or `create("etl", [...], context=...)`."""
        result: Workflow = await self._send(_create(name, steps, context, idempotency_key))
        return result

    async def get(self, workflow_id: str) -> Workflow:
        result: Workflow = await self._send(_calls.get_workflow(workflow_id))
        return result

    # `timeout`, not asyncio.timeout: the same method, with the same argument, as the sync client's.
    async def wait(self, workflow_id: str, *, timeout: float | None = None) -> Workflow:  # noqa: ASYNC109
        """The workflow once it is no longer running, answered as soon as it finishes; TimeoutError after `timeout`."""
        return await async_wait(
            lambda seconds: self._send(_calls.get_workflow(workflow_id, seconds)),
            _finished,
            timeout,
            self._chunk,
            f"workflow {workflow_id}",
        )

    async def list_page(
        self,
        *,
        status: WorkflowStatus | None = None,
        limit: int = 50,
        cursor: str | None = None,
        parent_id: str | None = None,
    ) -> Page[Workflow]:
        result: Page[Workflow] = await self._send(_calls.list_workflows(status, limit, cursor, parent_id))
        return result

    def list(
        self, *, status: WorkflowStatus | None = None, parent_id: str | None = None, page_size: int = DEFAULT_PAGE
    ) -> AsyncIterator[Workflow]:
        """Every workflow (with `status`, if given; only `parent_id`'s children, if given), newest first."""
        return apages(lambda cursor: self.list_page(status=status, limit=page_size, cursor=cursor, parent_id=parent_id))

    async def cancel(self, workflow_id: str) -> Workflow:
        """Cancel a running workflow: every unfinished step and its job."""
        result: Workflow = await self._send(_calls.cancel_workflow(workflow_id))
        return result

    async def signal(self, workflow_id: str, name: str, payload: Any = None) -> Workflow:
        """Send the signal `name` with `payload` (any JSON; it becomes the waiting step's result): a step waiting
        for it completes now and the workflow advances before the answer; one not yet waiting keeps it. The same
        signal sent again with an equal payload changes nothing. NotFoundError if no step waits for `name`;
        InvalidStateError for another payload than the one received, a workflow no longer running, or a step that
        can no longer wait (skipped, cancelled, timed out)."""
        result: Workflow = await self._send(_calls.signal_workflow(workflow_id, name, payload))
        return result

    async def retry(self, workflow_id: str) -> Workflow:
        """Run a failed, partially failed or cancelled workflow again: its failed, cancelled and skipped steps go
        back to pending (completed ones keep their results) and its ready steps are enqueued as new jobs before the
        answer. InvalidStateError for a workflow in any other status."""
        result: Workflow = await self._send(_calls.retry_workflow(workflow_id))
        return result
