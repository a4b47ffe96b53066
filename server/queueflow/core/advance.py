"""How a workflow advances on a snapshot of all its steps: a creation, a cancel, and a step failure that
restructures the workflow (`halt`, `skip`). The everyday advance — a step completed, or failed with `continue` —
is `core.finish`, which reads only what the finished step touches.

Results live on the step rows; a workflow's `context` is the caller's initial context plus every satisfied step's
result, assembled when it is read, so a finish writes one result, never the whole context (`core.finish`).

Readiness: a pending step is ready when every dependency is *satisfied*: completed, or failed/cancelled with
`on_failure=continue`. Each step row counts its unsatisfied dependencies (`Step.remaining`).

A ready step that runs a job is enqueued; a ready wait step becomes `waiting` with its due time (`core.waits`),
a ready child step `waiting` for the child workflow it starts (`core.children`).

A step's job ends in failure when it dead-letters (the step is `failed`) or is cancelled (`cancelled`); a wait
step fails when its signal times out. Either way the step's `on_failure` applies:
    halt      every unfinished step, pending or enqueued, is cancelled (enqueued steps' jobs too), and the workflow
              is `failed` at once.
    skip      every pending step that depends on it, directly or not, is skipped; other branches go on.
    continue  its dependents run as if it had completed; its context entry is `null`.
When nothing is left to schedule the workflow's status follows from its steps (`derive_status`).

Recording a Transition
    A store records a transition on a snapshot it read under the workflow's exclusive row lock (which waits out
    every finish in flight, see `core.finish`), in the transaction that writes it, through `record`:
    `apply_transition` moves each named step only if it is still in one of the statuses its change expects
    (`StepChange.expect`), the workflow's terminal status and `completed_at` are set only while it is `running`
    (the first terminal status wins), a job is made for each step that went pending → enqueued, and the jobs of
    steps that went enqueued → cancelled are cancelled. The workflow's counters (`counters`) are recomputed from
    the recorded steps.

    Replaying a transition is harmless: on the new snapshot no expected status matches, so nothing moves and no
    job is made.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Protocol

from msgspec.structs import replace as replace_struct

from queueflow.core.lifecycle import pending_row
from queueflow.core.types import JSON, Job
from queueflow.core.waits import DueWait, Wait, WaitEnd, is_due
from queueflow.core.workflow import (
    FAILED_STEPS,
    RETRIED_STEPS,
    UNFINISHED_STEPS,
    NewWorkflow,
    OnFailure,
    Step,
    StepStatus,
    Workflow,
    WorkflowStatus,
    step_job,
)


class StepOutcome(StrEnum):
    """How a step's job ended."""

    COMPLETED = "completed"
    FAILED = "failed"
    """The job dead-lettered."""
    CANCELLED = "cancelled"


class StepState(Protocol):
    """What the decisions read of a step; `workflow.Step` is one."""

    @property
    def name(self) -> str: ...
    @property
    def status(self) -> StepStatus: ...
    @property
    def depends_on(self) -> Sequence[str]: ...
    @property
    def on_failure(self) -> OnFailure: ...
    @property
    def wait(self) -> Wait | None: ...
    @property
    def child(self) -> NewWorkflow | None: ...


FINISH_FROM = frozenset({StepStatus.ENQUEUED, StepStatus.WAITING})
SKIP_FROM = frozenset({StepStatus.PENDING})
CANCEL_FROM = UNFINISHED_STEPS
ENQUEUE_FROM = frozenset({StepStatus.PENDING})

_FINISHED_AS = {
    StepOutcome.COMPLETED: StepStatus.COMPLETED,
    StepOutcome.FAILED: StepStatus.FAILED,
    StepOutcome.CANCELLED: StepStatus.CANCELLED,
}


def finished_status(outcome: StepOutcome) -> StepStatus:
    """The status a step's job ending with `outcome` gives the step (from `enqueued`)."""
    return _FINISHED_AS[outcome]


@dataclass(frozen=True, slots=True)
class StepChange:
    """Move step `name` to `status`, if it is still in one of the statuses `expect`."""

    name: str
    status: StepStatus
    expect: frozenset[StepStatus]


@dataclass(frozen=True, slots=True, kw_only=True)
class Transition:
    """What a store records for one advancement, in this order (see the module docstring for the guards)."""

    finished: StepChange | None = None
    """The reported step: enqueued → completed | failed | cancelled."""
    result: JSON = None
    """The finished step's result, kept on its row (its `_context` entry if it is satisfied; null otherwise)."""
    skip: tuple[str, ...] = ()
    """pending → skipped."""
    cancel: tuple[str, ...] = ()
    """pending | enqueued → cancelled; the enqueued ones' jobs are cancelled too."""
    enqueue: tuple[str, ...] = ()
    """pending → enqueued, each with a new job (`workflow.step_job`) built from the merged context."""
    wait: tuple[str, ...] = ()
    """pending → waiting (wait steps), each with its due time (`Wait.due`)."""
    reopen: tuple[str, ...] = ()
    """failed | cancelled | skipped → pending (a retry), before the changes above; no job, no due time."""
    rerun: bool = False
    """The workflow goes back to `running` (a retry), its completed_at cleared."""
    workflow_status: WorkflowStatus | None = None
    """The workflow's terminal status, when nothing is left to schedule; None while it runs on."""
    error: str | None = None
    """Why the workflow ends (with `workflow_status`): a timeout's."""

    def changes(self) -> list[StepChange]:
        changes = [] if self.finished is None else [self.finished]
        changes += [StepChange(name, StepStatus.PENDING, RETRIED_STEPS) for name in self.reopen]
        changes += [StepChange(name, StepStatus.SKIPPED, SKIP_FROM) for name in self.skip]
        changes += [StepChange(name, StepStatus.CANCELLED, CANCEL_FROM) for name in self.cancel]
        changes += [StepChange(name, StepStatus.ENQUEUED, ENQUEUE_FROM) for name in self.enqueue]
        changes += [StepChange(name, StepStatus.WAITING, ENQUEUE_FROM) for name in self.wait]
        return changes


@dataclass(frozen=True, slots=True, kw_only=True)
class AdvanceRequest:
    """A change of the whole workflow (`WorkflowStore.workflow_advance`: a cancel, a retry): `decide`, a pure
    function of the snapshot the store read under the workflow's exclusive lock, picks the transition the store
    records at `now`. Of `tenant_id`'s workflow only, if given."""

    workflow_id: str
    decide: Callable[[Workflow], Transition]
    tenant_id: str | None = None
    now: datetime


@dataclass(frozen=True, slots=True)
class _State:
    name: str
    status: StepStatus
    depends_on: Sequence[str]
    on_failure: OnFailure
    wait: Wait | None
    child: NewWorkflow | None = None


def satisfied(step: StepState) -> bool:
    """Whether `step` lets its dependents run."""
    return step.status is StepStatus.COMPLETED or (
        step.status in FAILED_STEPS and step.on_failure is OnFailure.CONTINUE
    )


def ready_steps(steps: Sequence[StepState]) -> list[str]:
    """Pending steps whose dependencies are all satisfied, in submitted order (roots, on a new workflow).

    This is readiness alone; `settle` also applies the failure policies (after a `halt` nothing is ready).
    """
    by_name = {step.name: step for step in steps}
    return [
        step.name
        for step in steps
        if step.status is StepStatus.PENDING and all(satisfied(by_name[name]) for name in step.depends_on)
    ]


def derive_status(steps: Sequence[StepState]) -> WorkflowStatus | None:
    """The workflow status its steps imply, or None while a step is pending or enqueued.

    Never `cancelled`: that one is set by `cancel_workflow`, and kept by the store's running-only guard.
    """
    if any(step.status in UNFINISHED_STEPS for step in steps):
        return None
    if any(_halts(step) for step in steps):
        return WorkflowStatus.FAILED
    if all(step.status is StepStatus.COMPLETED for step in steps):
        return WorkflowStatus.COMPLETED
    return WorkflowStatus.PARTIALLY_FAILED


def settle(steps: Sequence[StepState]) -> Transition:
    """Everything a snapshot calls for with no new event: the creation of a workflow, or the janitor's self-heal.

    Settling a settled snapshot yields a transition with no step changes.
    """
    if any(_halts(step) for step in steps):
        cancel = tuple(step.name for step in steps if step.status in UNFINISHED_STEPS)
        return Transition(cancel=cancel, workflow_status=WorkflowStatus.FAILED)
    skip = _downstream_of_skips(steps)
    waits = {step.name for step in steps if step.wait is not None or step.child is not None}
    ready = [name for name in ready_steps(steps) if name not in skip]
    enqueue = tuple(name for name in ready if name not in waits)
    wait = tuple(name for name in ready if name in waits)
    changed = (
        {name: StepStatus.SKIPPED for name in skip}
        | {name: StepStatus.ENQUEUED for name in enqueue}
        | {name: StepStatus.WAITING for name in wait}
    )
    projected = [_with_status(step, changed.get(step.name, step.status)) for step in steps]
    return Transition(skip=skip, enqueue=enqueue, wait=wait, workflow_status=derive_status(projected))


def retry_workflow(steps: Sequence[StepState]) -> Transition:
    """A retry of a workflow that ended: every failed, cancelled or skipped step back to pending (completed ones
    keep their results), the workflow running again, and what is then ready enqueued or waiting (`settle`)."""
    reopen = tuple(step.name for step in steps if step.status in RETRIED_STEPS)
    projected = [_with_status(step, StepStatus.PENDING) if step.name in reopen else step for step in steps]
    after = settle(projected)
    return replace(after, reopen=reopen, rerun=True)


def on_step_finished(steps: Sequence[StepState], name: str, outcome: StepOutcome, result: JSON = None) -> Transition:
    """What a store records when the job of step `name` ends with `outcome` (and `result`, when completed).

    A report for a step that is no longer enqueued or waiting (a repeat, or a step a halt or a cancel got to
    first) records nothing for that step; the rest of the snapshot is settled as usual.
    """
    step = next((step for step in steps if step.name == name), None)
    if step is None:
        raise KeyError(f"the workflow has no step {name!r}")
    if step.status not in FINISH_FROM:
        return settle(steps)
    status = finished_status(outcome)
    after = settle([_with_status(other, status) if other.name == name else other for other in steps])
    kept = result if outcome is StepOutcome.COMPLETED else None
    return replace(after, finished=StepChange(name, status, frozenset({step.status})), result=kept)


def on_job_finished(
    workflow: Workflow,
    name: str,
    job_id: str | None,
    outcome: StepOutcome,
    result: JSON,
    wait_end: WaitEnd | None = None,
) -> Transition:
    """`on_step_finished` for the job `job_id` of step `name` (None: the end of a wait, decided on `wait_end`):
    nothing for a report about a workflow that is no longer running, or about a step that is not as reported
    (`is_reported`)."""
    step = next((step for step in workflow.steps if step.name == name), None)
    if workflow.status is not WorkflowStatus.RUNNING or step is None or not is_reported(step, job_id, wait_end):
        return Transition()
    return on_step_finished(workflow.steps, name, outcome, result)


def is_reported(step: Step, job_id: str | None, wait_end: WaitEnd | None) -> bool:
    """Whether `step` is as its end was reported: enqueued with the job `job_id`, or (no job) waiting as read
    when its end was decided — the same due time, and a signal kept or not alike. A stale report (a timeout read
    before a signal came, a due time from before a retry) matches nothing, so of two racing ends one is recorded."""
    if job_id is not None:
        return step.status is StepStatus.ENQUEUED and step.job_id == job_id
    return (
        wait_end is not None
        and step.status is StepStatus.WAITING
        and step.due_at == wait_end.due_at
        and (step.signal is not None) == wait_end.signalled
    )


def cancel_workflow(steps: Sequence[StepState]) -> Transition:
    """A cancel of the whole workflow: every unfinished step is cancelled (with its job), the workflow too."""
    cancel = tuple(step.name for step in steps if step.status in UNFINISHED_STEPS)
    return Transition(cancel=cancel, workflow_status=WorkflowStatus.CANCELLED)


def apply_transition(workflow: Workflow, transition: Transition, now: datetime) -> tuple[Workflow, list[StepChange]]:
    """`workflow` with `transition` recorded as a store records it (the guards above), and the changes that applied.

    A finished step that is satisfied puts its result into the context and counts down its pending dependents'
    `remaining`. Jobs are the store's part: it inserts one for each applied enqueue and cancels those of applied
    cancels that left `enqueued`.
    """
    rows = {step.name: step for step in workflow.steps}
    applied: list[StepChange] = []
    for change in transition.changes():
        row = rows.get(change.name)
        if row is not None and row.status in change.expect:
            if change.status is StepStatus.WAITING and row.wait is not None:
                row = replace(row, due_at=row.wait.due(now, row.signal is not None))
            elif change.status is StepStatus.PENDING:
                # A child step keeps its child: its retry retries that child in place (`core.children`).
                row = replace(row, job_id=None, due_at=None, error=None)
            elif change.status is not StepStatus.ENQUEUED:
                row = replace(row, due_at=None)
            rows[change.name] = replace(row, status=change.status)
            applied.append(change)
    for change in applied:
        row = rows[change.name]
        if change.status is StepStatus.PENDING and row.status is StepStatus.PENDING:
            # Reopened by a retry: it waits for every dependency that is not satisfied now.
            left = sum(not satisfied(rows[name]) for name in row.depends_on)
            rows[change.name] = replace(row, remaining=left)
    context = workflow.context
    reopened = [change.name for change in applied if change.status is StepStatus.PENDING]
    if reopened:
        # A retried step's result (null, for a `continue` failure) leaves the context until it is satisfied again.
        context = {key: value for key, value in context.items() if key not in reopened}
    finished = transition.finished
    if finished is not None and finished in applied and satisfied(rows[finished.name]):
        context = {**context, finished.name: transition.result}
        for name in rows[finished.name].dependents:
            dependent = rows[name]
            if dependent.status in (StepStatus.PENDING, StepStatus.ENQUEUED) and dependent.remaining > 0:
                rows[name] = replace(dependent, remaining=dependent.remaining - 1)
    status, completed_at = workflow.status, workflow.completed_at
    error, deadline = workflow.error, workflow.deadline
    if transition.rerun and status is not WorkflowStatus.RUNNING:
        status, completed_at, error = WorkflowStatus.RUNNING, None, None
        deadline = deadline_after(now, workflow.timeout_seconds)
    if transition.workflow_status is not None and status is WorkflowStatus.RUNNING:
        status, completed_at, error = transition.workflow_status, now, transition.error
    updated = replace(
        workflow,
        context=context,
        steps=list(rows.values()),
        status=status,
        completed_at=completed_at,
        error=error,
        deadline=deadline,
    )
    return updated, applied


@dataclass(frozen=True, slots=True)
class Counters:
    """What a workflow row counts of its steps, so that a finish can tell the workflow is done without reading
    them (`core.finish`)."""

    unfinished: int
    """Steps pending, enqueued or waiting."""
    partial: bool
    """Some step ended other than completed: once nothing is unfinished the workflow is `partially_failed`."""


def counters(steps: Sequence[StepState]) -> Counters:
    return Counters(
        unfinished=sum(step.status in UNFINISHED_STEPS for step in steps),
        partial=any(step.status not in UNFINISHED_STEPS and step.status is not StepStatus.COMPLETED for step in steps),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Recording:
    """Everything a store writes for one transition on a snapshot it holds locked (see `record`)."""

    workflow: Workflow
    """The workflow as it is after the transition, with the new jobs' ids on their steps."""
    changed: list[tuple[Step, Step]]
    """(before, after) of every step row that changed (status, job, remaining), in submitted order."""
    jobs: list[Job]
    """One new job per step that went pending → enqueued."""
    cancel_jobs: list[str]
    """Ids of the jobs of steps that went enqueued → cancelled; the store cancels them if unfinished."""
    counters: Counters
    """The workflow's counters, recomputed from its recorded steps."""
    cancel_children: list[str] = field(default_factory=list)
    """Ids of the child workflows of child steps that went waiting → cancelled: the store cancels them (and theirs)
    in the same transaction, if running."""
    children: list[ChildStart] = field(default_factory=list)
    """The child workflows of child steps that went pending → waiting (`core.children.record_with_children`)."""


def new_step_job(workflow: Workflow, step: Step, now: datetime, job_id: str) -> Job:
    """∅ → pending: the job `job_id` that runs `step` of `workflow`, linked to it, its payload's `_context` the
    workflow's context as given (once the transition's results are merged)."""
    row = pending_row(workflow.tenant_id, step_job(step, workflow.context), now, job_id)
    return replace_struct(
        row, workflow_id=workflow.id, workflow_step_id=step.name, trace_context=workflow.trace_context
    )


def record(workflow: Workflow, transition: Transition, now: datetime, job_ids: Iterator[str]) -> Recording:
    """What recording `transition` on the locked snapshot `workflow` writes: `apply_transition` plus the jobs, each
    with the next of `job_ids` (the store's: `IdSource.stream`).

    Both stores record through this, so they differ only in how they write it: a snapshot read under the
    workflow's lock is the row's real state, and each changed row is written guarded by its status `before`.
    """
    updated, applied = apply_transition(workflow, transition, now)
    before = {step.name: step for step in workflow.steps}
    enqueued = {change.name for change in applied if change.status is StepStatus.ENQUEUED}
    jobs: list[Job] = []
    steps: list[Step] = []
    for step in updated.steps:
        if step.name in enqueued:
            job = new_step_job(updated, step, now, next(job_ids))
            jobs.append(job)
            step = replace(step, job_id=job.id)
        steps.append(step)
    updated = replace(updated, steps=steps)
    changed = [(before[step.name], step) for step in steps if step != before[step.name]]
    cancel_jobs = [
        old.job_id
        for old, new in changed
        if old.status is StepStatus.ENQUEUED and new.status is StepStatus.CANCELLED and old.job_id is not None
    ]
    cancel_children = [
        old.child_workflow_id
        for old, new in changed
        if old.status is StepStatus.WAITING and new.status is StepStatus.CANCELLED and old.child_workflow_id
    ]
    return Recording(
        workflow=updated,
        changed=changed,
        jobs=jobs,
        cancel_jobs=cancel_jobs,
        counters=counters(updated.steps),
        cancel_children=cancel_children,
    )


def _halts(step: StepState) -> bool:
    return step.status in FAILED_STEPS and step.on_failure is OnFailure.HALT


def _downstream_of_skips(steps: Sequence[StepState]) -> tuple[str, ...]:
    """Pending steps that depend, directly or not, on a `skip` failure."""
    dependents: dict[str, list[str]] = {step.name: [] for step in steps}
    for step in steps:
        for dependency in step.depends_on:
            dependents[dependency].append(step.name)
    blocked = [step.name for step in steps if step.status in FAILED_STEPS and step.on_failure is OnFailure.SKIP]
    reached = set(blocked)
    while blocked:
        for dependent in dependents[blocked.pop()]:
            if dependent not in reached:
                reached.add(dependent)
                blocked.append(dependent)
    return tuple(step.name for step in steps if step.name in reached and step.status is StepStatus.PENDING)


def _with_status(step: StepState, status: StepStatus) -> _State:
    return _State(step.name, status, step.depends_on, step.on_failure, step.wait, step.child)


def due_waits(workflow: Workflow, now: datetime) -> list[DueWait]:
    """The workflow's waiting steps to end now (due, or with a signal kept): after a change of the whole workflow,
    which reads it all anyway."""
    found = [due_wait(workflow.id, step) for step in workflow.steps if step.status is StepStatus.WAITING]
    return [due for due in found if due is not None and is_due(due, now)]


def due_wait(workflow_id: str, step: Step) -> DueWait | None:
    """`step` as a wait to end, if it is a wait step (or a child step, which is due only when it could not create
    its child)."""
    if step.wait is None and step.child is None:
        return None
    return DueWait(
        workflow_id=workflow_id,
        name=step.name,
        wait=step.wait,
        due_at=step.due_at,
        signal=step.signal,
        child_workflow_id=step.child_workflow_id,
    )


def deadline_after(start: datetime, timeout_seconds: float | None) -> datetime | None:
    """A workflow's deadline when it (re)starts at `start`."""
    return None if timeout_seconds is None else start + timedelta(seconds=timeout_seconds)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChildStart:
    """What a child step that went pending → waiting starts, in its parent's transaction: a new child workflow
    (`recording`, which the store inserts with its jobs and its own children), or a retry in place of the child it
    created before (`retry`)."""

    step: str
    recording: Recording | None = None
    retry: str | None = None
