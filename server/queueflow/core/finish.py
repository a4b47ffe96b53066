"""The everyday advance: a step's job completed (or failed with `on_failure=continue`), decided on the rows that
finish touches — the step, its pending dependents and the workflow's counters — never on the whole workflow.

Why this shape (issue 29): an advance that read every step, decided over the snapshot and rewrote a context
holding every result cost O(n) per step, O(n²) per workflow (a 1 → 998 → 1 fan-out spent 18.5 ms of server CPU
per step), and all finishers of a workflow queued on its row lock. Here the work of one finish is its own row,
one row per dependent, and one counter, whatever the size of the workflow:

- The result is written on the step's own row (`workflow_steps.result`), guarded by `status = 'enqueued' AND
  job_id = <the reported job>`, so a replayed or late report changes nothing.
- Each step row counts its unsatisfied dependencies (`remaining`) and lists its `dependents`. A satisfied finish
  counts down its pending dependents; those that reach 0 are enqueued, their job's `_context` assembled by the
  store from the initial context and the results on the rows (in SQL, for PostgreSQL) when it inserts the job.
- The workflow row counts its unfinished steps (`Counters`); each finish decrements it in its last statement,
  and the one that reaches 0 sets the terminal status (`counted_status`).

Locking (PostgreSQL; the memory store runs each finish without an await, which is as good): a finish takes
`FOR KEY SHARE` on the workflow row first — finishers of one workflow do not block each other there — then its own
step row (the guarded update), then its pending dependents `FOR UPDATE` in name order, and updates the workflow's
counter last (a `NO KEY UPDATE`, compatible with the others' KEY SHARE, held only until its commit). Two siblings
finishing at once both lock the join's row: the second waits for the first's commit and then sees its count, so
exactly one sees it reach 0 and enqueues it. The join's `_context` is read by a statement that starts after that
lock was granted, when every dependency has committed its result (each wrote it before counting the join down),
so a fan-in step never runs with a partial `_context`. Every finisher takes its locks in the same order (its own
enqueued row; pending rows by name; the workflow row), so finishers cannot deadlock.

Structural changes — a failure under `halt` or `skip`, a workflow cancel — take the workflow row `FOR UPDATE`
first, which waits out the finishes in flight and holds off new ones, and decide on the whole snapshot
(`core.advance`): O(n), but once, and only when a step fails. `finishes_alone` tells the two apart.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from queueflow.core.advance import StepOutcome, Transition, finished_status, new_step_job, on_job_finished
from queueflow.core.errors import FieldError
from queueflow.core.jsonvalue import MAX_RESULT_DEPTH, storage_errors
from queueflow.core.types import JSON, Job
from queueflow.core.waits import DueWait, WaitEnd
from queueflow.core.workflow import OnFailure, Step, StepStatus, Workflow, WorkflowStatus


def finishes_alone(outcome: StepOutcome, on_failure: OnFailure) -> bool:
    """Whether a step's job ending with `outcome` is decided on the touched rows (`on_finish`): a completion, or
    a `continue` failure. A `halt` or `skip` failure restructures the workflow and needs its snapshot."""
    return outcome is StepOutcome.COMPLETED or on_failure is OnFailure.CONTINUE


@dataclass(frozen=True, slots=True)
class DependentRow:
    """A pending dependent's row as a finish leaves it: still `pending` with its count of unsatisfied dependencies
    down by one, or, at 0, `enqueued` with its new job or `waiting` with its due time."""

    name: str
    status: StepStatus
    remaining: int
    job_id: str | None = None
    due_at: datetime | None = None
    child_workflow_id: str | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Finish:
    """What a store writes for one finish, in this order (after the guarded update of the step's own row)."""

    status: StepStatus
    """The finished step's new status (from `enqueued`)."""
    result: JSON
    """Kept on its row: its `_context` entry (null for a `continue` failure)."""
    dependents: tuple[DependentRow, ...]
    """Its pending dependents' rows as they are after it: those counted down or made to wait in the order they were
    given (locked), then those enqueued."""
    jobs: tuple[Job, ...] = ()
    """The new jobs of the dependents it enqueued, in that order."""
    due: tuple[DueWait, ...] = ()
    """The dependents it made wait that have a signal kept: due at once, for the caller to end (a finish each)."""
    children: tuple[Step, ...] = ()
    """The child steps it made wait: the store starts their child workflows (`core.children.finish_children`)."""
    partial: bool
    """The finish was a failure: the workflow can end `partially_failed` at best."""
    unfinished: int = 1
    """By how much the workflow's count of unfinished steps goes down."""


def on_finish(
    report: StepReport,
    workflow: Workflow,
    dependents: Sequence[Step],
    now: datetime,
    job_ids: Iterator[str],
    *,
    with_context: bool = True,
) -> Finish:
    """The finish `report` of a step whose job ended alone (`finishes_alone`), given its workflow as the store read
    it and its dependents that are still pending, as the store locked them (any other dependent was skipped or
    cancelled and is left alone). A ready step is enqueued with a new job (`advance.new_step_job`), its id the
    next of `job_ids` (the store's), its `_context` the workflow's context with this step's result — or, without
    `with_context`, none: for a store that assembles it as it inserts the job (PostgreSQL's COUNT), and would
    otherwise have a fan-out's every job carry a copy of the result to no use. A ready wait step waits from `now`;
    one whose signal was kept is due at once."""
    completed = report.outcome is StepOutcome.COMPLETED
    result = report.result if completed else None
    rows: list[DependentRow] = []
    ready: list[Step] = []
    due: list[DueWait] = []
    children: list[Step] = []
    for dependent in dependents:
        if dependent.status is not StepStatus.PENDING:
            continue
        left = dependent.remaining - 1
        if left > 0:
            rows.append(DependentRow(dependent.name, StepStatus.PENDING, left))
        elif dependent.child is not None:
            rows.append(DependentRow(dependent.name, StepStatus.WAITING, 0))
            children.append(dependent)
        elif dependent.wait is None:
            ready.append(dependent)
        else:
            due_at = dependent.wait.due(now, dependent.signal is not None)
            rows.append(DependentRow(dependent.name, StepStatus.WAITING, 0, due_at=due_at))
            if dependent.signal is not None:
                due.append(
                    DueWait(
                        workflow_id=dependent.workflow_id,
                        name=dependent.name,
                        wait=dependent.wait,
                        due_at=due_at,
                        signal=dependent.signal,
                    )
                )
    jobs: list[Job] = []
    if ready:
        view = replace(workflow, context={**workflow.context, report.step: result}) if with_context else workflow
        jobs = [new_step_job(view, step, now, next(job_ids)) for step in ready]
        rows += [DependentRow(job.workflow_step_id or "", StepStatus.ENQUEUED, 0, job_id=job.id) for job in jobs]
    return Finish(
        status=finished_status(report.outcome),
        result=result,
        dependents=tuple(rows),
        jobs=tuple(jobs),
        due=tuple(due),
        children=tuple(children),
        partial=not completed,
    )


def on_report(workflow: Workflow, report: StepReport) -> Transition:
    """The finish `report` of a step whose job did not end alone (a `halt` or `skip` failure), decided on the
    workflow's snapshot as a change of the whole workflow (`advance.on_job_finished`)."""
    return on_job_finished(workflow, report.step, report.job_id, report.outcome, report.result, report.wait_end)


def counted_status(unfinished: int, partial: bool) -> WorkflowStatus | None:
    """The terminal status of a running workflow whose counters (`advance.Counters`) read so after a finish, or
    None while a step is unfinished. Never `failed` (only a halt, on the snapshot) nor `cancelled` (a cancel)."""
    if unfinished > 0:
        return None
    return WorkflowStatus.PARTIALLY_FAILED if partial else WorkflowStatus.COMPLETED


@dataclass(frozen=True, slots=True, kw_only=True)
class StepReport:
    """The job `job_id` of step `step` of workflow `workflow_id` ended with `outcome` (and `result`, completed);
    or, with no job, its wait ended, as decided on the row `wait_end` describes (`wait_report`)."""

    workflow_id: str
    step: str
    job_id: str | None
    outcome: StepOutcome
    result: JSON = None
    wait_end: WaitEnd | None = None


def wait_report(due: DueWait) -> StepReport:
    """How the wait `due` ends: with its kept signal's payload, after its sleep (null), or failed (its signal
    timed out); a child step's with its child's final context if the child completed, else failed (whichever
    way the child ended, or it could not be created)."""
    if due.wait is None:
        completed = due.child is not None and due.child.status == "completed"
        outcome = StepOutcome.COMPLETED if completed else StepOutcome.FAILED
        result = due.child.context if completed and due.child is not None else None
    elif due.signal is not None:
        outcome, result = StepOutcome.COMPLETED, due.signal.payload
    elif due.wait.seconds is not None:
        outcome, result = StepOutcome.COMPLETED, None
    else:
        outcome, result = StepOutcome.FAILED, None
    return StepReport(
        workflow_id=due.workflow_id,
        step=due.name,
        job_id=None,
        outcome=outcome,
        result=result,
        wait_end=WaitEnd(due_at=due.due_at, signalled=due.signal is not None),
    )


def result_errors(result: JSON) -> list[FieldError]:
    """Why a step's result cannot be kept: as a job's result, it must fit two levels down in a dependent's payload
    (`payload._context.<step>`)."""
    return storage_errors(result, ("result",), max_depth=MAX_RESULT_DEPTH)
