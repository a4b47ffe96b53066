"""The workflows part of the in-memory store: the `WorkflowStore` methods, on the shared `Tables`.

A workflow is kept with its `context` assembled (the initial context plus every satisfied step's result), which
a finish updates in place; a finish reaches its step and dependents by name (`_step_positions`) and counts on the
workflow's counters (`_workflow_counters`), so it costs what it touches, as in PostgreSQL (`core.finish`). No
method awaits between its checks and its writes: on one event loop that is as good as PostgreSQL's row locks.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import replace as replace_dataclass
from datetime import datetime

from msgspec.structs import replace

from queueflow.core.advance import (
    AdvanceRequest,
    ChildStart,
    Transition,
    counters,
    due_wait,
    due_waits,
    is_reported,
)
from queueflow.core.children import (
    cancel_child,
    child_ended,
    finish_children,
    parent_wait,
    record_with_children,
    retry_child,
)
from queueflow.core.errors import FieldError, ValidationError
from queueflow.core.finish import StepReport, counted_status, finishes_alone, on_finish, on_report, result_errors
from queueflow.core.growth import GrowthRequest, GrowthView
from queueflow.core.jsonvalue import storage_errors
from queueflow.core.types import CANCELLABLE, FINISHED, Job, JobStatus
from queueflow.core.waits import DueWait, KeptSignal, SignalAction
from queueflow.core.workflow import (
    ParentRef,
    SignalDelivery,
    StepStatus,
    Workflow,
    WorkflowQuery,
    WorkflowStatus,
    workflow_storage_errors,
)
from queueflow.stores.memory.state import Tables


class MemoryWorkflows(Tables):
    async def workflow_insert(
        self, workflow: Workflow, jobs: Sequence[Job], *, children: Sequence[ChildStart] = ()
    ) -> tuple[Workflow, bool]:
        inserted, created = self._insert_workflow(workflow, jobs)
        if created:
            self._start_children(children, workflow.created_at)
        return inserted, created

    def _insert_workflow(self, workflow: Workflow, jobs: Sequence[Job]) -> tuple[Workflow, bool]:
        """`workflow_insert` as one step of a larger change (a parent's step, an event's triggers): it validates
        before it writes, so a caller that checks everything first changes nothing when it fails."""
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
        self._keep(copy.deepcopy(workflow))
        if key is not None:
            self._workflow_keys[key] = workflow.id
        self._insert(jobs)
        return self._workflow_out(workflow), True

    async def workflow_get(self, workflow_id: str, *, tenant_id: str | None = None) -> Workflow | None:
        workflow = self._workflows.get(workflow_id)
        if workflow is None or (tenant_id is not None and workflow.tenant_id != tenant_id):
            return None
        return self._workflow_out(workflow)

    async def workflow_watch(self, workflow_id: str, *, tenant_id: str) -> Workflow | None:
        # Every finish is announced (`workflow_advance`): nothing to record.
        return await self.workflow_get(workflow_id, tenant_id=tenant_id)

    async def workflow_list(self, query: WorkflowQuery) -> list[Workflow]:
        tenant_id, status, after = query.tenant_id, query.status, query.after
        rows = [
            workflow
            for workflow in self._workflows.values()
            if workflow.tenant_id == tenant_id
            and (status is None or workflow.status is status)
            and (
                query.parent_id is None
                or (workflow.parent is not None and workflow.parent.workflow_id == query.parent_id)
            )
        ]
        if after is not None:
            rows = [row for row in rows if (row.created_at, row.id) < (after.created_at, after.id)]
        rows.sort(key=lambda row: (row.created_at, row.id), reverse=True)
        return [self._workflow_out(row) for row in rows[: query.limit]]

    async def workflow_advance(self, request: AdvanceRequest) -> Workflow | None:
        workflow = self._workflows.get(request.workflow_id)
        if workflow is None or (request.tenant_id is not None and workflow.tenant_id != request.tenant_id):
            return None
        snapshot = self._workflow_out(workflow)
        return self._record(workflow, snapshot, request.decide(snapshot), request.now)

    async def workflow_step_finish(self, report: StepReport, *, now: datetime) -> tuple[DueWait, ...] | None:
        workflow = self._workflows.get(report.workflow_id)
        positions = self._step_positions.get(report.workflow_id, {})
        if workflow is None or workflow.status is not WorkflowStatus.RUNNING or report.step not in positions:
            return None
        steps = workflow.steps
        step = steps[positions[report.step]]
        if not is_reported(step, report.job_id, report.wait_end):
            return None  # a repeat, a late report of a job that is not (or no longer) the step's, a stale wait end
        if not finishes_alone(report.outcome, step.on_failure):
            snapshot = self._workflow_out(workflow)
            recorded = self._record(workflow, snapshot, on_report(snapshot, report), now)
            parent_step = child_ended(recorded) if workflow.status is WorkflowStatus.RUNNING else None
            return (*due_waits(recorded, now), *([] if parent_step is None else [parent_step]))
        dependents = [steps[positions[name]] for name in step.dependents]
        job_ids = self._ids.stream("job", now)
        finish = on_finish(report, workflow, dependents, now, job_ids)
        context = {**workflow.context, step.name: finish.result}
        finish, starts = finish_children(finish, workflow, context, now, job_ids, self._ids.stream("wf", now))
        if errors := result_errors(finish.result):
            raise ValidationError.of(errors)
        self._check_insert(finish.jobs)
        # Validated: from here on nothing raises.
        steps[positions[step.name]] = replace_dataclass(step, status=finish.status, due_at=None)
        workflow.context[step.name] = copy.deepcopy(finish.result)
        for row in finish.dependents:
            position = positions[row.name]
            steps[position] = replace_dataclass(
                steps[position],
                status=row.status,
                remaining=row.remaining,
                job_id=row.job_id,
                due_at=row.due_at,
                child_workflow_id=row.child_workflow_id or steps[position].child_workflow_id,
                error=row.error,
            )
        self._insert(finish.jobs)
        self._start_children(starts, now)
        before = self._workflow_counters[workflow.id]
        after = replace_dataclass(
            before, unfinished=before.unfinished - finish.unfinished, partial=before.partial or finish.partial
        )
        self._workflow_counters[workflow.id] = after
        if (status := counted_status(after.unfinished, after.partial)) is not None:
            finished = self._workflows[workflow.id] = replace_dataclass(workflow, status=status, completed_at=now)
            self._announce_finished([workflow.id])
            if (parent := child_ended(finished)) is not None:
                return (*finish.due, parent)
        return finish.due

    async def workflow_add_steps(self, request: GrowthRequest) -> Workflow:
        job = self._jobs.get(request.job_id)
        if job is not None and request.tenant_id is not None and job.tenant_id != request.tenant_id:
            job = None
        workflow = self._workflows.get(job.workflow_id) if job is not None and job.workflow_id is not None else None
        # This store holds every step anyway: its view is the whole workflow (`needs` narrows a database's reads).
        growth = request.decide(
            None if job is None else self._out(job),
            None if workflow is None else GrowthView.whole(self._workflow_out(workflow)),
        )
        assert workflow is not None  # `decide` refuses a job of no workflow
        grown = growth.workflow
        if errors := workflow_storage_errors(grown):
            raise ValidationError.of(errors)
        # Recorded on the grown snapshot (validated before it is kept): the new steps that are ready.
        return self._record(workflow, grown, growth.transition, request.now)

    async def workflow_signal(self, signal: SignalDelivery) -> DueWait | None:
        workflow_id, payload, now = signal.workflow_id, signal.payload, signal.now
        workflow = self._workflows.get(workflow_id)
        if workflow is None or workflow.tenant_id != signal.tenant_id:
            signal.decide(None, None)
            return None
        position = next(
            (i for i, step in enumerate(workflow.steps) if step.wait is not None and step.wait.signal == signal.name),
            None,
        )
        step = None if position is None else workflow.steps[position]
        action = signal.decide(replace_dataclass(workflow, steps=[], context={}), step)
        if action is not SignalAction.KEEP or step is None or position is None:
            return None
        if errors := storage_errors(payload, ("payload",)):
            raise ValidationError.of(errors)
        waiting = step.status is StepStatus.WAITING
        kept = replace_dataclass(
            step,
            signal=KeptSignal(payload=copy.deepcopy(payload), received_at=now),
            due_at=now if waiting else step.due_at,
        )
        workflow.steps[position] = kept
        if not waiting or kept.wait is None:
            return None
        return DueWait(workflow_id=workflow_id, name=kept.name, wait=kept.wait, due_at=now, signal=kept.signal)

    async def workflow_waits_due(self, *, limit: int, now: datetime) -> list[DueWait]:
        due = [
            wait
            for workflow in self._workflows.values()
            if workflow.status is WorkflowStatus.RUNNING
            for step in workflow.steps
            if step.status is StepStatus.WAITING
            and step.due_at is not None
            and step.due_at <= now
            and (wait := due_wait(workflow.id, step)) is not None
        ]
        due.sort(key=lambda wait: wait.due_at or now)
        return due[:limit]

    async def workflow_next_wait_due(self) -> datetime | None:
        return min(
            (
                step.due_at
                for workflow in self._workflows.values()
                if workflow.status is WorkflowStatus.RUNNING
                for step in workflow.steps
                if step.status is StepStatus.WAITING and step.due_at is not None
            ),
            default=None,
        )

    async def workflow_stalled_jobs(self, *, limit: int, finished_before: datetime) -> list[Job]:
        stalled = [
            self._out(job)
            for workflow in self._workflows.values()
            if workflow.status is WorkflowStatus.RUNNING
            for step in workflow.steps
            if step.status is StepStatus.ENQUEUED
            and step.job_id is not None
            and (job := self._jobs.get(step.job_id)) is not None
            and job.status in FINISHED
            and job.completed_at is not None
            and job.completed_at < finished_before
        ]
        return stalled[:limit]

    async def workflow_children_ended(self, *, limit: int, ended_before: datetime) -> list[DueWait]:
        ended = [
            parent_wait(ParentRef(workflow_id=workflow.id, step=step.name), child.id)
            for workflow in self._workflows.values()
            if workflow.status is WorkflowStatus.RUNNING
            for step in workflow.steps
            if step.status is StepStatus.WAITING
            and step.child_workflow_id is not None
            and (child := self._workflows.get(step.child_workflow_id)) is not None
            and child.status is not WorkflowStatus.RUNNING
            and child.completed_at is not None
            and child.completed_at < ended_before
        ]
        return ended[:limit]

    async def workflow_deadlines_due(self, *, limit: int, now: datetime) -> list[str]:
        due = [
            workflow
            for workflow in self._workflows.values()
            if workflow.status is WorkflowStatus.RUNNING and workflow.deadline is not None and workflow.deadline <= now
        ]
        due.sort(key=lambda workflow: workflow.deadline or now)
        return [workflow.id for workflow in due[:limit]]

    async def workflow_next_deadline(self) -> datetime | None:
        return min(
            (
                workflow.deadline
                for workflow in self._workflows.values()
                if workflow.status is WorkflowStatus.RUNNING and workflow.deadline is not None
            ),
            default=None,
        )

    def _start_children(self, starts: Sequence[ChildStart], now: datetime) -> None:
        """Insert each new child workflow (and its own children), or retry in place the one a step made before."""
        for start in starts:
            if start.recording is not None:
                recording = start.recording
                _, created = self._insert_workflow(recording.workflow, recording.jobs)
                if created:
                    self._start_children(recording.children, now)
            elif start.retry is not None:
                self._change_child(start.retry, retry_child, now)

    def _change_child(self, child_id: str, decide: Callable[[Workflow], Transition], now: datetime) -> None:
        child = self._workflows.get(child_id)
        if child is not None:
            snapshot = self._workflow_out(child)
            self._record(child, snapshot, decide(snapshot), now)

    def _keep(self, workflow: Workflow) -> None:
        """Store `workflow` (the store's own copy) with its step positions and counters."""
        self._workflows[workflow.id] = workflow
        self._step_positions[workflow.id] = {step.name: index for index, step in enumerate(workflow.steps)}
        self._workflow_counters[workflow.id] = counters(workflow.steps)

    def _record(self, workflow: Workflow, snapshot: Workflow, transition: Transition, now: datetime) -> Workflow:
        """Record `transition` on the stored `workflow` (`advance.record` on `snapshot`, the store's own copy of
        it), validated before anything is written."""
        recording = record_with_children(
            snapshot, transition, now, self._ids.stream("job", now), self._ids.stream("wf", now)
        )
        # The finished step's result, and the new jobs, are all it writes that nobody checked.
        if errors := result_errors(transition.result):
            raise ValidationError.of(errors)
        self._check_insert(recording.jobs)
        # Its own context dict and steps list: a finish changes both in place, and `decide` saw the snapshot.
        self._keep(
            replace_dataclass(
                recording.workflow, context=dict(recording.workflow.context), steps=list(recording.workflow.steps)
            )
        )
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
            self._announce_finished([workflow.id])
        # Down the tree, after the parent (as PostgreSQL locks them): its cancelled steps' children, then the
        # children its waiting steps start.
        for child_id in recording.cancel_children:
            self._change_child(child_id, cancel_child, now)
        self._start_children(recording.children, now)
        return self._workflow_out(recording.workflow)
