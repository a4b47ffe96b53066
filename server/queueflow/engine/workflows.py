"""Workflow use cases (`Engine.workflows`): create, read, list, cancel, and advance when a step's job finishes.

`core.advance` decides, the store records (`WorkflowStore.workflow_advance`, under the workflow's row lock).
The engine advances a workflow after every write that finishes a step's job: complete, fail and ack (a
dead-letter), cancel_job, and the janitor's reclaim. A crash between the job's write and that advancement
leaves a step `enqueued` whose job has finished; the janitor replays those (`heal`).

A job cancelled *by its workflow* (a halt, a workflow cancel) is cancelled inside the advancement that
decided it, and reports nothing: its step is already `cancelled`, so even a replayed report is a no-op.

A DLQ replay (`retry_job`) of a step's job reopens nothing: the step keeps the status its job's first ending
gave it, the workflow has already acted on it (skipped or ran the dependents, or halted), and the replayed
job's outcome reaches neither the step nor the context. Replay the whole workflow instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime

from msgspec.structs import replace

from queueflow.core.advance import StepOutcome, Transition, cancel_workflow, on_step_finished, record, settle
from queueflow.core.backoff import RandomSource
from queueflow.core.cursor import page, page_after
from queueflow.core.errors import InvalidState, NotFound, StoreUnavailable, ValidationError
from queueflow.core.ids import new_id
from queueflow.core.lifecycle import pending_job
from queueflow.core.types import FINISHED, Job, JobStatus, Page
from queueflow.core.workflow import (
    NewWorkflow,
    Step,
    Workflow,
    WorkflowStatus,
    new_steps,
    new_workflow_errors,
    step_job,
)
from queueflow.ports import Clock, Store

log = logging.getLogger("queueflow.workflows")

_OUTCOMES = {
    JobStatus.COMPLETED: StepOutcome.COMPLETED,
    JobStatus.DEAD_LETTER: StepOutcome.FAILED,
    JobStatus.CANCELLED: StepOutcome.CANCELLED,
}


class Workflows:
    def __init__(self, store: Store, clock: Clock, rng: RandomSource) -> None:
        self.store = store
        self.clock = clock
        self.rng = rng

    async def create(self, tenant_id: str, new: NewWorkflow) -> tuple[Workflow, bool]:
        """Validate the DAG and store it with its root steps' jobs; a known idempotency key returns the original."""
        if errors := new_workflow_errors(new):
            raise ValidationError.of(errors)
        now = self.clock.now()
        workflow_id = new_id("wf", now, self.rng)
        pending = Workflow(
            id=workflow_id,
            tenant_id=tenant_id,
            name=new.name,
            status=WorkflowStatus.RUNNING,
            context=dict(new.context),
            steps=new_steps(workflow_id, new),
            created_at=now,
            idempotency_key=new.idempotency_key,
            trace_context=new.trace_context,
        )
        # A new workflow is a snapshot like any other: settling it enqueues the roots.
        recording = record(pending, settle(pending.steps), now, self._step_job_maker(now))
        return await self.store.workflow_insert(recording.workflow, recording.jobs)

    async def get(self, tenant_id: str, workflow_id: str) -> Workflow:
        workflow = await self.store.workflow_get(workflow_id, tenant_id)
        if workflow is None:
            raise NotFound(f"no workflow {workflow_id}")
        return workflow

    async def list(
        self, tenant_id: str, status: WorkflowStatus | None = None, *, limit: int = 50, cursor: str | None = None
    ) -> Page[Workflow]:
        after = page_after(limit, cursor)
        return page(await self.store.workflow_list(tenant_id, status, limit + 1, after), limit)

    async def cancel(self, tenant_id: str, workflow_id: str) -> Workflow:
        """Cancel every unfinished step (and its job; a running one's worker gets lease_lost) and the workflow."""

        def decide(workflow: Workflow) -> Transition:
            if workflow.status is not WorkflowStatus.RUNNING:
                raise InvalidState(
                    f"workflow {workflow_id} is {workflow.status}; only running workflows can be cancelled"
                )
            return cancel_workflow(workflow.steps)

        now = self.clock.now()
        cancelled = await self.store.workflow_advance(
            workflow_id, decide, self._step_job_maker(now), now, tenant_id=tenant_id
        )
        if cancelled is None:
            raise NotFound(f"no workflow {workflow_id}")
        return cancelled

    async def on_jobs_finished(self, jobs: Sequence[Job | None]) -> int:
        """Advance the workflow of every finished step job among `jobs`; returns how many were advanced.

        The jobs' own writes are done: an advancement the store cannot make now is logged and left to the
        janitor's `heal`, so the caller (a worker's complete) is not told to retry a write that succeeded.
        """
        advanced = 0
        for job in jobs:
            if job is None or job.workflow_id is None or job.workflow_step_id is None or job.status not in FINISHED:
                continue
            now = self.clock.now()
            try:
                await self.store.workflow_advance(job.workflow_id, _on_finished(job), self._step_job_maker(now), now)
            except StoreUnavailable as exc:
                log.warning(
                    "workflow %s not advanced after job %s (the janitor will): %s", job.workflow_id, job.id, exc
                )
                continue
            advanced += 1
        return advanced

    async def heal(self, limit: int) -> int:
        """Replay up to `limit` lost advancements (see the module docstring); returns how many were replayed."""
        stalled = await self.store.workflow_stalled_jobs(limit)
        return await self.on_jobs_finished(stalled)

    def _step_job_maker(self, now: datetime) -> Callable[[Workflow, Step], Job]:
        def new_job(workflow: Workflow, step: Step) -> Job:
            row = pending_job(workflow.tenant_id, step_job(step, workflow.context), now, self.rng)
            return replace(
                row, workflow_id=workflow.id, workflow_step_id=step.name, trace_context=workflow.trace_context
            )

        return new_job


def _on_finished(job: Job) -> Callable[[Workflow], Transition]:
    def decide(workflow: Workflow) -> Transition:
        step = next((step for step in workflow.steps if step.name == job.workflow_step_id), None)
        if workflow.status is not WorkflowStatus.RUNNING or step is None or step.job_id != job.id:
            return Transition()  # a report for a finished workflow, or for a job that is not the step's
        return on_step_finished(workflow.steps, step.name, _OUTCOMES[job.status], job.result)

    return decide
