"""How a workflow advances: pure decisions over a snapshot of its steps, which a store records.

Order (the reference page's): a finished step's result is merged into the context first, then the step is marked
finished, then every step that became ready is claimed and enqueued. Whoever sees a dependency completed therefore
also sees its result, and a fan-in step never runs with a partial `_context`.

Readiness: a pending step is ready when every dependency is *satisfied*: completed, or failed/cancelled with
`on_failure=continue`.

A step's job ends in failure when it dead-letters (the step is `failed`) or is cancelled (`cancelled`); either way
the step's `on_failure` applies:
    halt      every unfinished step, pending or enqueued, is cancelled (enqueued steps' jobs too), and the workflow
              is `failed` at once.
    skip      every pending step that depends on it, directly or not, is skipped; other branches go on.
    continue  its dependents run as if it had completed; its context entry is `null`.
When nothing is left to schedule the workflow's status follows from its steps (`derive_status`).

Recording a Transition
    A store records a transition on a snapshot it read under the workflow's row lock, in the transaction that
    writes it, through `record`: `apply_transition` moves each named step only if it is still in one of the
    statuses its change expects (`StepChange.expect`), the workflow's terminal status and `completed_at` are set
    only while it is `running` (the first terminal status wins), a job is made for each step that went
    pending → enqueued, and the jobs of steps that went enqueued → cancelled are cancelled. Because every
    advancement of one workflow holds its lock, two workers finishing the two parents of a join advance one
    after the other and the join is enqueued once, with the whole `_context`.

    Replaying a transition is harmless: on the new snapshot no expected status matches, so nothing moves and no
    job is made. That is what the janitor's self-heal relies on after a crash between a job's write and its
    workflow's advancement: `settle` on a fresh snapshot schedules whatever was left behind.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Protocol

from queueflow.core.types import JSON, Job
from queueflow.core.workflow import (
    FAILED_STEPS,
    UNFINISHED_STEPS,
    OnFailure,
    Step,
    StepStatus,
    Workflow,
    WorkflowStatus,
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


FINISH_FROM = frozenset({StepStatus.ENQUEUED})
SKIP_FROM = frozenset({StepStatus.PENDING})
CANCEL_FROM = UNFINISHED_STEPS
ENQUEUE_FROM = frozenset({StepStatus.PENDING})

_FINISHED_AS = {
    StepOutcome.COMPLETED: StepStatus.COMPLETED,
    StepOutcome.FAILED: StepStatus.FAILED,
    StepOutcome.CANCELLED: StepStatus.CANCELLED,
}


@dataclass(frozen=True, slots=True)
class StepChange:
    """Move step `name` to `status`, if it is still in one of the statuses `expect`."""

    name: str
    status: StepStatus
    expect: frozenset[StepStatus]


@dataclass(frozen=True, slots=True, kw_only=True)
class Transition:
    """What a store records for one advancement, in this order (see the module docstring for the guards)."""

    context: dict[str, JSON] = field(default_factory=dict)
    """Entries to merge into the workflow's context, before any step changes."""
    finished: StepChange | None = None
    """The reported step: enqueued → completed | failed | cancelled."""
    skip: tuple[str, ...] = ()
    """pending → skipped."""
    cancel: tuple[str, ...] = ()
    """pending | enqueued → cancelled; the enqueued ones' jobs are cancelled too."""
    enqueue: tuple[str, ...] = ()
    """pending → enqueued, each with a new job (`workflow.step_job`) built from the merged context."""
    workflow_status: WorkflowStatus | None = None
    """The workflow's terminal status, when nothing is left to schedule; None while it runs on."""

    def changes(self) -> list[StepChange]:
        changes = [] if self.finished is None else [self.finished]
        changes += [StepChange(name, StepStatus.SKIPPED, SKIP_FROM) for name in self.skip]
        changes += [StepChange(name, StepStatus.CANCELLED, CANCEL_FROM) for name in self.cancel]
        changes += [StepChange(name, StepStatus.ENQUEUED, ENQUEUE_FROM) for name in self.enqueue]
        return changes


@dataclass(frozen=True, slots=True)
class _State:
    name: str
    status: StepStatus
    depends_on: Sequence[str]
    on_failure: OnFailure


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
    ready = [name for name in ready_steps(steps) if name not in skip]
    changed = {name: StepStatus.SKIPPED for name in skip} | {name: StepStatus.ENQUEUED for name in ready}
    projected = [_with_status(step, changed.get(step.name, step.status)) for step in steps]
    return Transition(skip=skip, enqueue=tuple(ready), workflow_status=derive_status(projected))


def on_step_finished(steps: Sequence[StepState], name: str, outcome: StepOutcome, result: JSON = None) -> Transition:
    """What a store records when the job of step `name` ends with `outcome` (and `result`, when completed).

    A report for a step that is no longer enqueued (a repeat, or a step a halt or a cancel got to first) records
    nothing for that step; the rest of the snapshot is settled as usual.
    """
    step = next((step for step in steps if step.name == name), None)
    if step is None:
        raise KeyError(f"the workflow has no step {name!r}")
    if step.status not in FINISH_FROM:
        return settle(steps)
    status = _FINISHED_AS[outcome]
    if outcome is StepOutcome.COMPLETED:
        context: dict[str, JSON] = {name: result}
    elif step.on_failure is OnFailure.CONTINUE:
        context = {name: None}
    else:
        context = {}
    after = settle([_with_status(other, status) if other.name == name else other for other in steps])
    return replace(after, context=context, finished=StepChange(name, status, FINISH_FROM))


def cancel_workflow(steps: Sequence[StepState]) -> Transition:
    """A cancel of the whole workflow: every unfinished step is cancelled (with its job), the workflow too."""
    cancel = tuple(step.name for step in steps if step.status in UNFINISHED_STEPS)
    return Transition(cancel=cancel, workflow_status=WorkflowStatus.CANCELLED)


def apply_transition(workflow: Workflow, transition: Transition, now: datetime) -> tuple[Workflow, list[StepChange]]:
    """`workflow` with `transition` recorded as a store records it (the guards above), and the changes that applied.

    Jobs are the store's part: it inserts one for each applied enqueue and cancels those of applied cancels that
    left `enqueued`.
    """
    rows = {step.name: step for step in workflow.steps}
    applied: list[StepChange] = []
    for change in transition.changes():
        row = rows.get(change.name)
        if row is not None and row.status in change.expect:
            rows[change.name] = replace(row, status=change.status)
            applied.append(change)
    status, completed_at = workflow.status, workflow.completed_at
    if transition.workflow_status is not None and status is WorkflowStatus.RUNNING:
        status, completed_at = transition.workflow_status, now
    updated = replace(
        workflow,
        context={**workflow.context, **transition.context},
        steps=list(rows.values()),
        status=status,
        completed_at=completed_at,
    )
    return updated, applied


@dataclass(frozen=True, slots=True, kw_only=True)
class Recording:
    """Everything a store writes for one transition on a snapshot it holds locked (see `record`)."""

    workflow: Workflow
    """The workflow as it is after the transition, with the new jobs' ids on their steps."""
    changed: list[tuple[Step, Step]]
    """(before, after) of every step row whose status changed, in submitted order."""
    jobs: list[Job]
    """One new job per step that went pending → enqueued."""
    cancel_jobs: list[str]
    """Ids of the jobs of steps that went enqueued → cancelled; the store cancels them if unfinished."""


NewStepJob = Callable[[Workflow, Step], Job]
"""Builds the job that runs a step, from the workflow as it is once the transition's context is merged."""


def record(workflow: Workflow, transition: Transition, now: datetime, new_job: NewStepJob) -> Recording:
    """What recording `transition` on the locked snapshot `workflow` writes: `apply_transition` plus the jobs.

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
            job = new_job(updated, step)
            jobs.append(job)
            step = replace(step, job_id=job.id)
        steps.append(step)
    updated = replace(updated, steps=steps)
    changed = [(before[step.name], step) for step in steps if step.status is not before[step.name].status]
    cancel_jobs = [
        old.job_id
        for old, new in changed
        if old.status is StepStatus.ENQUEUED and new.status is StepStatus.CANCELLED and old.job_id is not None
    ]
    return Recording(workflow=updated, changed=changed, jobs=jobs, cancel_jobs=cancel_jobs)


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
    return _State(step.name, status, step.depends_on, step.on_failure)
