"""The workflow use cases as `Engine` offers them: the one way into `Workflows` from outside the engine.

`Engine` mixes these in; its `Workflows` (`_workflows`) is its own, so the HTTP routes, the dashboard and the
runtime's loops reach a workflow through these methods alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from queueflow.core.errors import NotFound
from queueflow.core.types import JSON, Page
from queueflow.core.workflow import NewStep, NewWorkflow, Step, Workflow, WorkflowStatus
from queueflow.engine.workflows import Workflows
from queueflow.ports import Store


class WorkflowFacade:
    store: Store
    _workflows: Workflows

    # ---- tenant side ------------------------------------------------------------------------------------

    async def create_workflow(self, tenant_id: str, workflow: NewWorkflow) -> tuple[Workflow, bool]:
        """Store a validated DAG and enqueue its root steps; a known idempotency key returns the original."""
        return await self._workflows.create(tenant_id, workflow)

    async def get_workflow(self, tenant_id: str, workflow_id: str) -> Workflow:
        return await self._workflows.get(tenant_id, workflow_id)

    async def watch_workflow(self, tenant_id: str, workflow_id: str) -> Workflow:
        """The workflow, with its finish announced to every process from now on (`WorkflowStore.workflow_watch`)."""
        workflow = await self.store.workflow_watch(workflow_id, tenant_id=tenant_id)
        if workflow is None:
            raise NotFound(f"no workflow {workflow_id}")
        return workflow

    async def list_workflows(
        self,
        tenant_id: str,
        status: WorkflowStatus | None = None,
        *,
        limit: int = 50,
        cursor: str | None = None,
        parent_id: str | None = None,
    ) -> Page[Workflow]:
        return await self._workflows.list(tenant_id, status, limit=limit, cursor=cursor, parent_id=parent_id)

    async def cancel_workflow(self, tenant_id: str, workflow_id: str) -> Workflow:
        """Cancel a running workflow: every unfinished step and its job; InvalidState once it has finished."""
        return await self._workflows.cancel(tenant_id, workflow_id)

    async def retry_workflow(self, tenant_id: str, workflow_id: str) -> Workflow:
        """Re-run a workflow that ended failed, partially_failed or cancelled; InvalidState for any other."""
        return await self._workflows.retry(tenant_id, workflow_id)

    async def signal_workflow(self, tenant_id: str, workflow_id: str, name: str, payload: JSON) -> Workflow:
        """Deliver the signal `name`: the step waiting for it completes with `payload` as its result, now if it
        waits, else when it would."""
        return await self._workflows.signal(tenant_id, workflow_id, name, payload)

    # ---- worker side ------------------------------------------------------------------------------------

    async def add_steps(
        self, job_id: str, lease_token: str, steps: Sequence[NewStep], *, scope: str | None = None
    ) -> tuple[Step, ...]:
        """The running step's job `job_id` adds `steps` to its workflow, under its lease; the listed steps as they
        are once recorded. `scope`: as for the other worker calls (`Engine.lease`)."""
        return await self._workflows.add_steps(job_id, lease_token, steps, scope)

    # ---- maintenance ------------------------------------------------------------------------------------

    async def end_due_waits(self, limit: int) -> int:
        """End up to `limit` waits that are due, and up to `limit` workflows past their deadline; how many ended
        here (each ends once, whoever ends it)."""
        return await self._workflows.end_due_waits(limit) + await self._workflows.end_due_deadlines(limit)

    async def next_wait_due(self) -> datetime | None:
        """When the next wait or workflow deadline is due (None: none is), so a timer can sleep until then."""
        return await self._workflows.next_wait_due()
