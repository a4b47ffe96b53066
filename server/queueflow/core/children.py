"""Workflows that nest and end on time: child-workflow steps and a workflow's deadline.

A child step (`"workflow": {...}` instead of `task_name` or `wait`) has no job. When its dependencies are done it
becomes `waiting` and, in the same transaction, creates its child workflow (`start_children`): same tenant, keyed
`child:<parent id>:<step>` (so a replay creates it once), its context the body's plus `parent` and the parent's
context under `parent_context`, one level deeper than its parent. A step that would create a level beyond
`MAX_DEPTH` creates nothing: it waits with a due time of now and an `error`, and its end (`finish.wait_report`)
fails it. After a retry of the parent the step retries the child it created before, in place.

    parent step  pending ──ready──▶ waiting(child) ──the child ends completed──▶ completed (the child's context)
                                       └──────────the child ends otherwise───▶ failed (on_failure applies)

The child's end reaches the parent outside the child's own transaction — no finish locks another workflow's
rows, so the only cross-workflow lock order is parent before child (a parent's cancel, halt or timeout cancels
its running children in its transaction; a parent's step starting or retrying its child). The child's terminal
status is the durable row: the process that ended it ends the parent's step next (a guarded wait end:
`advance.is_reported`), and after a crash in between the janitor's heal finds waiting child steps whose child has
ended (`WorkflowStore.workflow_children_ended`) and ends them.

A workflow's deadline (`timeout_seconds`) is a row too (`workflows.deadline`): any `worker`/`all` process's wait
timer ends a running workflow past it as a halt would (`time_out`), with `error` saying so; a retry counts a new
deadline from the retry (`advance.apply_transition`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import datetime

from queueflow.core.advance import (
    ChildStart,
    Recording,
    Transition,
    cancel_workflow,
    deadline_after,
    record,
    retry_workflow,
    settle,
)
from queueflow.core.finish import Finish
from queueflow.core.ids import IdSource
from queueflow.core.jsonvalue import job_storage_errors
from queueflow.core.types import JSON
from queueflow.core.waits import DueWait
from queueflow.core.workflow import (
    MAX_DEPTH,
    NewWorkflow,
    ParentRef,
    Step,
    StepStatus,
    Workflow,
    WorkflowStatus,
    new_steps,
    workflow_storage_errors,
)

RETRIABLE = frozenset({WorkflowStatus.FAILED, WorkflowStatus.PARTIALLY_FAILED, WorkflowStatus.CANCELLED})


def child_key(parent_id: str, step: str) -> str:
    return f"child:{parent_id}:{step}"


def too_deep(level: int) -> str:
    return f"a child workflow here would be level {level}; levels 1–{MAX_DEPTH} are allowed"


def new_workflow_recording(tenant_id: str, new: NewWorkflow, now: datetime, ids: IdSource) -> Recording:
    """A validated new workflow's rows: the workflow, running, with its deadline, its root steps enqueued as jobs
    and the children of its root child steps (`Recording.children`, inserted with it) — a new workflow is a
    snapshot like any other: settling it starts the roots. Whoever creates workflows builds them here: the engine's
    create, an event's triggers."""
    workflow_id = ids.new_id("wf", now)
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
        timeout_seconds=new.timeout_seconds,
        deadline=deadline_after(now, new.timeout_seconds),
    )
    return record_with_children(pending, settle(pending.steps), now, ids.stream("job", now), ids.stream("wf", now))


def record_with_children(
    workflow: Workflow,
    transition: Transition,
    now: datetime,
    job_ids: Iterator[str],
    workflow_ids: Iterator[str],
) -> Recording:
    """`advance.record`, and what each child step it made wait starts (`Recording.children`): its step rows then
    carry their child's id (or, too deep, a due time of now and an `error`)."""
    recording = record(workflow, transition, now, job_ids)
    waiting = [
        new
        for old, new in recording.changed
        if new.child is not None and new.status is StepStatus.WAITING and old.status is not StepStatus.WAITING
    ]
    if not waiting:
        return recording
    starts, rows = start_children(recording.workflow, waiting, recording.workflow.context, now, job_ids, workflow_ids)
    steps = [rows.get(step.name, step) for step in recording.workflow.steps]
    return replace(
        recording,
        workflow=replace(recording.workflow, steps=steps),
        changed=[(old, rows.get(new.name, new)) for old, new in recording.changed],
        children=starts,
    )


def start_children(
    parent: Workflow,
    steps: Sequence[Step],
    context: dict[str, JSON],
    now: datetime,
    job_ids: Iterator[str],
    workflow_ids: Iterator[str],
) -> tuple[list[ChildStart], dict[str, Step]]:
    """What each of `steps` (child steps of `parent` becoming `waiting`, the parent's context being `context`)
    starts, and its row as it then is."""
    starts: list[ChildStart] = []
    rows: dict[str, Step] = {}
    for step in steps:
        if step.child_workflow_id is not None:
            starts.append(ChildStart(step=step.name, retry=step.child_workflow_id))
            rows[step.name] = step
        elif parent.depth + 1 > MAX_DEPTH:
            rows[step.name] = replace(step, due_at=now, error=too_deep(parent.depth + 1))
        else:
            child = new_child(parent, step, context, now, next(workflow_ids))
            errors = workflow_storage_errors(child)
            recording = None if errors else record_with_children(child, settle(child.steps), now, job_ids, workflow_ids)
            if recording is not None:
                errors = job_storage_errors(recording.jobs)
            if errors or recording is None:
                # Its context, or its jobs' `_context` (the parent's context under `parent_context`), cannot be
                # stored: the step fails as a too-deep one does, rather than the parent's whole advance.
                why = "; ".join(f"{error.field}: {error.message}" for error in errors[:1])
                rows[step.name] = replace(step, due_at=now, error=f"the child workflow cannot be stored: {why}")
            else:
                starts.append(ChildStart(step=step.name, recording=recording))
                rows[step.name] = replace(step, child_workflow_id=child.id)
    return starts, rows


def new_child(parent: Workflow, step: Step, context: dict[str, JSON], now: datetime, child_id: str) -> Workflow:
    """The child workflow `child_id` of `parent`'s child step `step`, pending (`advance.settle` picks its roots)."""
    body = step.child
    assert body is not None
    ref = ParentRef(workflow_id=parent.id, step=step.name)
    return Workflow(
        id=child_id,
        tenant_id=parent.tenant_id,
        name=body.name,
        status=WorkflowStatus.RUNNING,
        context={**body.context, "parent": ref.to_json(), "parent_context": dict(context)},
        steps=new_steps(child_id, body),
        created_at=now,
        idempotency_key=child_key(parent.id, step.name),
        trace_context=parent.trace_context,
        parent=ref,
        depth=parent.depth + 1,
        timeout_seconds=body.timeout_seconds,
        deadline=deadline_after(now, body.timeout_seconds),
    )


def finish_children(
    finish: Finish,
    parent: Workflow,
    context: dict[str, JSON],
    now: datetime,
    job_ids: Iterator[str],
    workflow_ids: Iterator[str],
) -> tuple[Finish, list[ChildStart]]:
    """A finish (`core.finish.on_finish`) whose child steps start their children: its dependents' rows carry
    them, and a step too deep to start one is due at once (for the caller to end, failing it)."""
    if not finish.children:
        return finish, []
    starts, rows = start_children(parent, finish.children, context, now, job_ids, workflow_ids)
    dependents = tuple(
        replace(row, child_workflow_id=step.child_workflow_id, due_at=step.due_at, error=step.error)
        if (step := rows.get(row.name)) is not None
        else row
        for row in finish.dependents
    )
    due = tuple(
        DueWait(workflow_id=parent.id, name=step.name, wait=None, due_at=step.due_at, signal=None)
        for step in rows.values()
        if step.error is not None
    )
    return replace(finish, dependents=dependents, due=finish.due + due), starts


def child_ended(child: Workflow) -> DueWait | None:
    """The parent's step to end now that `child` is no longer running (None for a top workflow, or one running)."""
    if child.parent is None or child.status is WorkflowStatus.RUNNING:
        return None
    return parent_wait(child.parent, child.id)


def parent_wait(parent: ParentRef, child_id: str) -> DueWait:
    """The parent's child step as a wait whose child `child_id` ended (its `child` read before it is ended)."""
    return DueWait(
        workflow_id=parent.workflow_id,
        name=parent.step,
        wait=None,
        due_at=None,
        signal=None,
        child_workflow_id=child_id,
    )


def retry_child(child: Workflow) -> Transition:
    """A parent's retry reaching a child it created before: the child's own retry if it ended failed, partially
    failed or cancelled; nothing otherwise (a completed child then ends the step at once: `child_ended`)."""
    if child.status not in RETRIABLE:
        return Transition()
    return retry_workflow(child.steps)


def cancel_child(child: Workflow) -> Transition:
    """A parent's cancel (or halt, or timeout) reaching its child: cancelled, if it still runs."""
    if child.status is not WorkflowStatus.RUNNING:
        return Transition()
    return cancel_workflow(child.steps)


def timed_out(workflow: Workflow) -> str:
    seconds = workflow.timeout_seconds or 0.0
    return f"timed out after {seconds:g} s"


def time_out(workflow: Workflow, now: datetime) -> Transition:
    """A running workflow past its deadline ends `failed` as a halt would (its unfinished steps cancelled, their
    jobs and children too); nothing if it is not running or not yet due (a retry moved its deadline)."""
    if workflow.status is not WorkflowStatus.RUNNING or workflow.deadline is None or workflow.deadline > now:
        return Transition()
    return replace(cancel_workflow(workflow.steps), workflow_status=WorkflowStatus.FAILED, error=timed_out(workflow))
