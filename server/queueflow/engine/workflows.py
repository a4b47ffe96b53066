"""Workflow use cases (`Engine.workflows`): create, read, list, cancel, and advance when a step's job finishes.

`core` decides, the store records: a step's finish through `WorkflowStore.workflow_step_finish` (`core.finish`:
it touches the step, its dependents and the workflow's counters), a cancel through `workflow_advance` (the whole
snapshot under the workflow's exclusive lock, `core.advance`). The engine advances a workflow after every write
that finishes a step's job: complete, fail and ack (a dead-letter), cancel_job, and the janitor's reclaim. A crash
between the job's write and that advance leaves a step `enqueued` whose job has finished; the janitor replays
those (`heal`) once they are older than `EngineSettings.heal_after`, so it never races an advance in flight.

A job cancelled *by its workflow* (a halt, a workflow cancel) is cancelled inside the advancement that
decided it, and reports nothing: its step is already `cancelled`, so even a replayed report is a no-op.

A DLQ replay (`retry_job`) of a step's job reopens nothing: the step keeps the status its job's first ending
gave it, the workflow has already acted on it (skipped or ran the dependents, or halted), and the replayed
job's outcome reaches neither the step nor the context. Replay the whole workflow instead.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from functools import partial

from queueflow.core.advance import (
    AdvanceRequest,
    StepOutcome,
    Transition,
    cancel_workflow,
    due_waits,
    retry_workflow,
)
from queueflow.core.children import (
    RETRIABLE,
    child_ended,
    new_workflow_recording,
    parent_wait,
    time_out,
)
from queueflow.core.cursor import page, page_after
from queueflow.core.errors import InvalidState, LeaseLost, NotFound, StoreUnavailable, ValidationError
from queueflow.core.finish import StepReport, result_errors, wait_report
from queueflow.core.growth import Growth, GrowthRequest, GrowthView, grow, needs
from queueflow.core.ids import IdSource
from queueflow.core.jsonvalue import MAX_RESULT_DEPTH, storage_errors
from queueflow.core.lifecycle import holds_lease
from queueflow.core.types import FINISHED, JSON, Ended, Job, JobStatus, Page
from queueflow.core.waits import ChildEnd, DueWait, SignalAction, on_signal
from queueflow.core.workflow import (
    NewStep,
    NewWorkflow,
    ParentRef,
    SignalDelivery,
    Step,
    StepStatus,
    Workflow,
    WorkflowQuery,
    WorkflowStatus,
    new_workflow_errors,
)
from queueflow.engine.settings import EngineSettings
from queueflow.ports import Clock, Store

log = logging.getLogger("queueflow.workflows")


ADVANCES_AT_ONCE = 4
"""Step finishes of one ack (or one heal) that run side by side, each on a connection of its own."""

_OUTCOMES = {
    JobStatus.COMPLETED: StepOutcome.COMPLETED,
    JobStatus.DEAD_LETTER: StepOutcome.FAILED,
    JobStatus.CANCELLED: StepOutcome.CANCELLED,
}


def step_report(job: Job | None) -> StepReport | None:
    """What a finished step's job reports to its workflow; None for a job of no step, or one not finished."""
    if job is None or job.workflow_id is None or job.workflow_step_id is None or job.status not in FINISHED:
        return None
    result = job.result if job.status is JobStatus.COMPLETED else None
    return StepReport(
        workflow_id=job.workflow_id,
        step=job.workflow_step_id,
        job_id=job.id,
        outcome=_OUTCOMES[job.status],
        result=result,
    )


def completed_step_report(ended: Ended | None, result: JSON) -> StepReport | None:
    """What a completed step's job reports, from its completion (the worker's `result`): no need to read its row."""
    if ended is None or ended.workflow_id is None or ended.workflow_step_id is None:
        return None
    return StepReport(
        workflow_id=ended.workflow_id,
        step=ended.workflow_step_id,
        job_id=ended.id,
        outcome=StepOutcome.COMPLETED,
        result=result,
    )


class Workflows:
    def __init__(self, store: Store, clock: Clock, ids: IdSource, settings: EngineSettings) -> None:
        self.store = store
        self.clock = clock
        self.ids = ids
        self.settings = settings

    async def create(self, tenant_id: str, new: NewWorkflow) -> tuple[Workflow, bool]:
        """Validate the DAG and store it with its root steps' jobs; a known idempotency key returns the original."""
        if errors := new_workflow_errors(new):
            raise ValidationError.of(errors)
        now = self.clock.now()
        recording = new_workflow_recording(tenant_id, new, now, self.ids)
        workflow, created = await self.store.workflow_insert(
            recording.workflow, recording.jobs, children=recording.children
        )
        if created and (due := due_waits(workflow, now)):
            # A root child step that could not start its child fails now, not at the wait timer's next pass.
            await self._end_due(due)
            workflow = await self.get(tenant_id, workflow.id)
        return workflow, created

    async def get(self, tenant_id: str, workflow_id: str) -> Workflow:
        workflow = await self.store.workflow_get(workflow_id, tenant_id=tenant_id)
        if workflow is None:
            raise NotFound(f"no workflow {workflow_id}")
        return workflow

    async def list(
        self,
        tenant_id: str,
        status: WorkflowStatus | None = None,
        *,
        limit: int = 50,
        cursor: str | None = None,
        parent_id: str | None = None,
    ) -> Page[Workflow]:
        after = page_after(limit, cursor)
        query = WorkflowQuery(tenant_id=tenant_id, status=status, parent_id=parent_id, limit=limit + 1, after=after)
        return page(await self.store.workflow_list(query), limit)

    async def cancel(self, tenant_id: str, workflow_id: str) -> Workflow:
        """Cancel every unfinished step (and its job; a running one's worker gets lease_lost) and the workflow."""

        def decide(workflow: Workflow) -> Transition:
            if workflow.status is not WorkflowStatus.RUNNING:
                raise InvalidState(
                    f"workflow {workflow_id} is {workflow.status}; only running workflows can be cancelled"
                )
            return cancel_workflow(workflow.steps)

        request = AdvanceRequest(workflow_id=workflow_id, decide=decide, tenant_id=tenant_id, now=self.clock.now())
        cancelled = await self.store.workflow_advance(request)
        if cancelled is None:
            raise NotFound(f"no workflow {workflow_id}")
        await self._ended(cancelled)
        return cancelled

    async def on_jobs_finished(self, jobs: Sequence[Job | None]) -> tuple[StepReport, ...]:
        """Advance the workflow of every finished step job among `jobs` (`on_steps_finished`)."""
        return await self.on_steps_finished([report for job in jobs if (report := step_report(job)) is not None])

    async def on_steps_finished(self, reports: Sequence[StepReport]) -> tuple[StepReport, ...]:
        """Advance the workflow of each finished step; returns the reports it recorded, in their order.

        Up to `ADVANCES_AT_ONCE` advances run at once: an ack of many steps' outcomes waited for each finish's round
        trips in turn. Finishes are safe side by side, of one workflow too (`core.finish`'s lock order).

        The jobs' own writes are done: an advance the store cannot make now is logged and left to the
        janitor's `heal`, so the caller (a worker's complete) is not told to retry a write that succeeded.
        """
        gate = asyncio.Semaphore(ADVANCES_AT_ONCE)

        async def advance(report: StepReport) -> bool:
            async with gate:
                now = self.clock.now()
                try:
                    due = await self.store.workflow_step_finish(report, now=now)
                except StoreUnavailable as exc:
                    log.warning(
                        "workflow %s not advanced after step %s (the janitor will): %s",
                        report.workflow_id, report.step, exc,
                    )  # fmt: skip
                    return False
            if due:
                # Waits made ready with their signal kept end now, each a finish of its own (after a crash
                # here, the due-wait sweep ends them: they are due); so does a parent's step whose child this
                # finish ended (after a crash, the janitor's heal: `core.children`).
                await self._end_due(due)
            return due is not None

        recorded = await asyncio.gather(*(advance(report) for report in reports))
        return tuple(report for report, ok in zip(reports, recorded, strict=True) if ok)

    async def add_steps(
        self, job_id: str, lease_token: str, steps: Sequence[NewStep], scope: str | None
    ) -> tuple[Step, ...]:
        """The running step's job `job_id` adds `steps` to its workflow (`core.growth`); the listed steps as they
        are once recorded. 404 for an unknown job, 409 lease_lost unless the lease is held, 409 for a job of no
        workflow."""
        now = self.clock.now()

        def decide(job: Job | None, view: GrowthView | None) -> Growth:
            if job is None:
                raise NotFound(f"no job {job_id}")
            if not holds_lease(job, lease_token, now):
                raise LeaseLost(f"job {job_id}: this lease token does not hold it (stale, expired or finished)")
            if view is None or job.workflow_step_id is None:
                raise InvalidState(f"job {job_id} is not a workflow step")
            if view.workflow.status is not WorkflowStatus.RUNNING:
                raise InvalidState(f"workflow {view.workflow.id} is {view.workflow.status}")
            return grow(view, job.workflow_step_id, steps)

        request = GrowthRequest(job_id=job_id, tenant_id=scope, needs=needs(steps), decide=decide, now=now)
        recorded: Workflow | None = await self.store.workflow_add_steps(request)
        if recorded is not None and (due := due_waits(recorded, now)):
            await self._end_due(due)
            recorded = await self.store.workflow_get(recorded.id)
        if recorded is None:
            raise StoreUnavailable(f"the workflow of job {job_id} vanished")
        by_name = {step.name: step for step in recorded.steps}
        return tuple(by_name[step.name] for step in steps)

    async def signal(self, tenant_id: str, workflow_id: str, name: str, payload: JSON) -> Workflow:
        """Deliver the signal `name` (`core.waits.on_signal`): a waiting step completes now and the workflow
        advances before this returns; a pending one keeps it for when it would wait."""
        # It becomes the step's result: stored as one (`core.finish.result_errors`), at the body's field.
        if errors := storage_errors(payload, ("payload",), max_depth=MAX_RESULT_DEPTH):
            raise ValidationError.of(errors)

        def decide(workflow: Workflow | None, step: Step | None) -> SignalAction:
            if workflow is None:
                raise NotFound(f"no workflow {workflow_id}")
            status = None if step is None else step.status.value
            return on_signal(
                workflow.status is WorkflowStatus.RUNNING, name, status, None if step is None else step.signal, payload
            )

        request = SignalDelivery(
            workflow_id=workflow_id,
            tenant_id=tenant_id,
            name=name,
            payload=payload,
            decide=decide,
            now=self.clock.now(),
        )
        due = await self.store.workflow_signal(request)
        if due is not None:
            await self._end_due([due])
        return await self.get(tenant_id, workflow_id)

    async def retry(self, tenant_id: str, workflow_id: str) -> Workflow:
        """Re-run a workflow that ended failed, partially_failed or cancelled (`core.advance.retry_workflow`)."""

        def decide(workflow: Workflow) -> Transition:
            if workflow.status not in RETRIABLE:
                raise InvalidState(
                    f"workflow {workflow_id} is {workflow.status}; only a failed, partially failed or cancelled"
                    " workflow can be retried"
                )
            return retry_workflow(workflow.steps)

        now = self.clock.now()
        request = AdvanceRequest(workflow_id=workflow_id, decide=decide, tenant_id=tenant_id, now=now)
        retried = await self.store.workflow_advance(request)
        if retried is None:
            raise NotFound(f"no workflow {workflow_id}")
        if due := due_waits(retried, now):
            await self._end_due(due)
            return await self.get(tenant_id, workflow_id)
        # A child retried in place that had completed (or had run on) ends its step now, if it has ended.
        waiting = [
            parent_wait(ParentRef(workflow_id=retried.id, step=step.name), step.child_workflow_id)
            for step in retried.steps
            if step.status is StepStatus.WAITING and step.child_workflow_id is not None
        ]
        if waiting and await self._end_due(waiting):
            return await self.get(tenant_id, workflow_id)
        return retried

    async def end_due_waits(self, limit: int) -> int:
        """End up to `limit` waits that are due (a sleep over, a signal's timeout passed, a kept signal not yet
        acted on); how many ended here (another process may end some first: each ends once)."""
        due = await self.store.workflow_waits_due(limit=limit, now=self.clock.now())
        return len(await self._end_due(due))

    async def next_wait_due(self) -> datetime | None:
        """The next wait or workflow deadline due (the wait timer sleeps until it)."""
        wait, deadline = await self.store.workflow_next_wait_due(), await self.store.workflow_next_deadline()
        return min((due for due in (wait, deadline) if due is not None), default=None)

    async def end_due_deadlines(self, limit: int) -> int:
        """End up to `limit` running workflows past their deadline (`core.children.time_out`); how many ended here.

        Up to `ADVANCES_AT_ONCE` at once, as an ack's step finishes: one by one, 200 deadlines that fell within a
        second waited for each other's round trips, and the last ended well past its second."""
        now = self.clock.now()
        gate = asyncio.Semaphore(ADVANCES_AT_ONCE)

        async def end(workflow_id: str) -> bool:
            async with gate:
                request = AdvanceRequest(workflow_id=workflow_id, decide=partial(time_out, now=now), now=now)
                workflow = await self.store.workflow_advance(request)
            if workflow is None or workflow.status is not WorkflowStatus.FAILED or workflow.completed_at != now:
                return False
            await self._ended(workflow)
            return True

        due = await self.store.workflow_deadlines_due(limit=limit, now=now)
        return sum(await asyncio.gather(*(end(workflow_id) for workflow_id in due)))

    async def _ended(self, workflow: Workflow) -> None:
        """After a change of the whole workflow: if it ended a child workflow, end its parent's step."""
        if (due := child_ended(workflow)) is not None:
            await self._end_due([due])

    async def _end_due(self, due: Sequence[DueWait]) -> tuple[StepReport, ...]:
        """End each of `due`: a wait's end, or a child step's once its child is read (a child still running, or
        gone, ends nothing)."""
        reports: list[StepReport] = []
        for wait in due:
            if wait.wait is None and wait.child_workflow_id is not None and wait.child is None:
                child = await self.store.workflow_get(wait.child_workflow_id)
                if child is None or child.status is WorkflowStatus.RUNNING:
                    continue
                status = child.status.value
                if child.status is WorkflowStatus.COMPLETED and result_errors(child.context):
                    # Its final context cannot be kept as the step's result: the step fails instead of never ending.
                    log.warning("child workflow %s completed with a context too deep to keep as a result", child.id)
                    status = WorkflowStatus.FAILED.value
                wait = replace(wait, child=ChildEnd(status=status, context=child.context))
            reports.append(wait_report(wait))
        return await self.on_steps_finished(reports)

    async def heal(self, limit: int) -> int:
        """Replay up to `limit` advances that were really missed: step jobs that finished more than
        `settings.heal_after` ago while their step is still `enqueued` (see the module docstring). Returns how
        many steps it recorded, and logs each workflow's healed steps."""
        finished_before = self.clock.now() - self.settings.heal_after
        healed = await self.on_jobs_finished(
            await self.store.workflow_stalled_jobs(limit=limit, finished_before=finished_before)
        )
        healed += await self._end_due(
            await self.store.workflow_children_ended(limit=limit, ended_before=finished_before)
        )
        by_workflow: dict[str, list[str]] = {}
        for report in healed:
            by_workflow.setdefault(report.workflow_id, []).append(report.step)
        for workflow_id, steps in by_workflow.items():
            log.warning("healed workflow %s: advanced after its steps %s (their advance was missed)",
                        workflow_id, ", ".join(steps))  # fmt: skip
        return len(healed)
