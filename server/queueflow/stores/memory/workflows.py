"""The workflows part of the in-memory store: the `WorkflowStore` methods, on the shared `Tables`."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from datetime import datetime

from msgspec.structs import replace

from queueflow.core.advance import NewStepJob, Transition, record
from queueflow.core.errors import FieldError, ValidationError
from queueflow.core.jsonvalue import storage_errors
from queueflow.core.types import CANCELLABLE, FINISHED, Cursor, Job, JobStatus
from queueflow.core.workflow import StepStatus, Workflow, WorkflowStatus, workflow_storage_errors
from queueflow.stores.memory.state import Tables


class MemoryWorkflows(Tables):
    async def workflow_insert(self, workflow: Workflow, jobs: Sequence[Job]) -> tuple[Workflow, bool]:
        # Checked before the key is looked up, as PostgreSQL's store does: a known key does not make an
        # unstorable workflow acceptable.
        if errors := workflow_storage_errors(workflow):
            raise ValidationError.of(errors)
        self._check_insert(jobs)
        key = (workflow.tenant_id, workflow.idempotency_key) if workflow.idempotency_key is not None else None
        if key is not None and key in self._workflow_keys:
            return self._workflow_out(self._workflows[self._workflow_keys[key]]), False
        if workflow.id in self._workflows:
            raise ValidationError.of([FieldError(("id",), f"duplicate workflow id {workflow.id}")])
        self._workflows[workflow.id] = copy.deepcopy(workflow)
        if key is not None:
            self._workflow_keys[key] = workflow.id
        self._insert(jobs)
        return self._workflow_out(workflow), True

    async def workflow_get(self, workflow_id: str, tenant_id: str | None = None) -> Workflow | None:
        workflow = self._workflows.get(workflow_id)
        if workflow is None or (tenant_id is not None and workflow.tenant_id != tenant_id):
            return None
        return self._workflow_out(workflow)

    async def workflow_watch(self, workflow_id: str, tenant_id: str) -> Workflow | None:
        # Every finish is announced (`workflow_advance`): nothing to record.
        return await self.workflow_get(workflow_id, tenant_id)

    async def workflow_list(
        self, tenant_id: str, status: WorkflowStatus | None, limit: int, after: Cursor | None
    ) -> list[Workflow]:
        rows = [
            workflow
            for workflow in self._workflows.values()
            if workflow.tenant_id == tenant_id and (status is None or workflow.status is status)
        ]
        if after is not None:
            rows = [row for row in rows if (row.created_at, row.id) < (after.created_at, after.id)]
        rows.sort(key=lambda row: (row.created_at, row.id), reverse=True)
        return [self._workflow_out(row) for row in rows[:limit]]

    async def workflow_advance(
        self,
        workflow_id: str,
        decide: Callable[[Workflow], Transition],
        new_job: NewStepJob,
        now: datetime,
        tenant_id: str | None = None,
    ) -> Workflow | None:
        # No await from here on: on one event loop this is as good as the PostgreSQL store's row lock.
        workflow = self._workflows.get(workflow_id)
        if workflow is None or (tenant_id is not None and workflow.tenant_id != tenant_id):
            return None
        transition = decide(self._workflow_out(workflow))
        recording = record(self._workflow_out(workflow), transition, now, new_job)
        # What the transition merges into the context, and its new jobs, are all it writes that nobody checked.
        if errors := storage_errors(transition.context, ("context",)):
            raise ValidationError.of(errors)
        self._check_insert(recording.jobs)
        self._workflows[workflow_id] = copy.deepcopy(recording.workflow)
        self._insert(recording.jobs)
        for job_id in recording.cancel_jobs:
            job = self._jobs.get(job_id)
            if job is not None and job.status in CANCELLABLE:
                job = self._jobs[job_id] = replace(
                    job, status=JobStatus.CANCELLED, lease_token=None, locked_until=None, completed_at=now
                )
                self._announce_finished([job_id])
                self._slot_freed(job)
        if workflow.status is WorkflowStatus.RUNNING and recording.workflow.status is not WorkflowStatus.RUNNING:
            self._announce_finished([workflow_id])
        return self._workflow_out(recording.workflow)

    async def workflow_stalled_jobs(self, limit: int) -> list[Job]:
        stalled = [
            self._out(job)
            for workflow in self._workflows.values()
            if workflow.status is WorkflowStatus.RUNNING
            for step in workflow.steps
            if step.status is StepStatus.ENQUEUED
            and step.job_id is not None
            and (job := self._jobs.get(step.job_id)) is not None
            and job.status in FINISHED
        ]
        return stalled[:limit]
