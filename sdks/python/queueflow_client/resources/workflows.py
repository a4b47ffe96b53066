"""`client.workflows`: DAGs of steps — create, read, wait for, list and cancel them (`Workflows` sync,
`AsyncWorkflows` async)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any

from queueflow_client import _calls
from queueflow_client._waiting import async_wait, wait
from queueflow_client.resources._base import DEFAULT_PAGE, Resource, apages, pages
from queueflow_client.types import Page, Step, Workflow, WorkflowStatus

__all__ = ["AsyncWorkflows", "Workflows"]


def _finished(workflow: Workflow) -> bool:
    return workflow.status != "running"


class Workflows(Resource):
    def create(
        self,
        name: str,
        steps: Sequence[Step | Mapping[str, Any]],
        *,
        context: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Workflow:
        """Create a DAG of steps and enqueue its root steps (ValidationError for a cycle or unknown dependency)."""
        result: Workflow = self._send(_calls.create_workflow(name, steps, context, idempotency_key))
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
        self, *, status: WorkflowStatus | None = None, limit: int = 50, cursor: str | None = None
    ) -> Page[Workflow]:
        result: Page[Workflow] = self._send(_calls.list_workflows(status, limit, cursor))
        return result

    def list(self, *, status: WorkflowStatus | None = None, page_size: int = DEFAULT_PAGE) -> Iterator[Workflow]:
        """Every workflow (with `status`, if given), newest first."""
        return pages(lambda cursor: self.list_page(status=status, limit=page_size, cursor=cursor))

    def cancel(self, workflow_id: str) -> Workflow:
        """Cancel a running workflow: every unfinished step and its job."""
        result: Workflow = self._send(_calls.cancel_workflow(workflow_id))
        return result


class AsyncWorkflows(Resource):
    """`Workflows`, awaited."""

    async def create(
        self,
        name: str,
        steps: Sequence[Step | Mapping[str, Any]],
        *,
        context: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> Workflow:
        """Create a DAG of steps and enqueue its root steps (ValidationError for a cycle or unknown dependency)."""
        result: Workflow = await self._send(_calls.create_workflow(name, steps, context, idempotency_key))
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
        self, *, status: WorkflowStatus | None = None, limit: int = 50, cursor: str | None = None
    ) -> Page[Workflow]:
        result: Page[Workflow] = await self._send(_calls.list_workflows(status, limit, cursor))
        return result

    def list(self, *, status: WorkflowStatus | None = None, page_size: int = DEFAULT_PAGE) -> AsyncIterator[Workflow]:
        """Every workflow (with `status`, if given), newest first."""
        return apages(lambda cursor: self.list_page(status=status, limit=page_size, cursor=cursor))

    async def cancel(self, workflow_id: str) -> Workflow:
        """Cancel a running workflow: every unfinished step and its job."""
        result: Workflow = await self._send(_calls.cancel_workflow(workflow_id))
        return result
