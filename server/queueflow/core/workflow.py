"""Workflows: a DAG of named steps, each run as one job or a wait (`core.waits`). The types, the rules a new
workflow must pass, and the job a step becomes.

    step      pending ──dependencies satisfied──▶ enqueued ──its job completes──────▶ completed
                 │                  │                ├──its job dead-letters───▶ failed
                 │                  │                └──its job is cancelled──▶ cancelled
                 │                  ├──a wait step──▶ waiting ──signal or time──▶ completed | failed (timeout)
                 │                  └──a child step──▶ waiting ──its child workflow ends──▶ completed | failed
                 ├──an upstream `skip` failure──▶ skipped
                 └──a `halt` failure or a workflow cancel──▶ cancelled  (enqueued and waiting steps too)
    workflow  running ──nothing left to schedule──▶ completed | failed | partially_failed | cancelled
              failed | partially_failed | cancelled ──retry──▶ running (`advance.retry_workflow`)

Steps added at run time by a running step (`core.growth`) are steps like these, with `added_by` naming the adder.
A child step's workflow, and a workflow's deadline, are `core.children`.

How a workflow advances from one of these states to the next is `core.advance`; the graph checks are `core.dag`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from queueflow.core.dag import dependency_errors
from queueflow.core.errors import FieldError
from queueflow.core.jsonvalue import storage_errors
from queueflow.core.types import JSON, BackoffPolicy, Cursor, NewJob
from queueflow.core.validation import Loc, name_errors, new_job_errors, number_errors, object_errors, text_errors
from queueflow.core.waits import KeptSignal, SignalAction, Wait, wait_errors

MAX_STEPS = 10_000
MAX_DEPTH = 10
"""The deepest level of a child workflow: a top workflow is level 0, its children level 1."""
MIN_WORKFLOW_TIMEOUT = 1.0
MAX_WORKFLOW_TIMEOUT = 31_536_000.0
CONTEXT_KEY = "_context"
"""The payload key under which a step's job receives the workflow's context; reserved in step payloads."""


class OnFailure(StrEnum):
    HALT = "halt"
    SKIP = "skip"
    CONTINUE = "continue"


class StepStatus(StrEnum):
    PENDING = "pending"
    ENQUEUED = "enqueued"
    WAITING = "waiting"
    COMPLETED = "completed"
    FAILED = "failed"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"


UNFINISHED_STEPS = frozenset({StepStatus.PENDING, StepStatus.ENQUEUED, StepStatus.WAITING})
RETRIED_STEPS = frozenset({StepStatus.FAILED, StepStatus.CANCELLED, StepStatus.SKIPPED})
"""What a workflow's retry sends back to `pending`."""
FAILED_STEPS = frozenset({StepStatus.FAILED, StepStatus.CANCELLED})
"""A step's job ended in failure (dead-lettered or cancelled): its `on_failure` applies."""


class WorkflowStatus(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    PARTIALLY_FAILED = "partially_failed"
    CANCELLED = "cancelled"


JOB_FIELDS = (
    "payload", "queue_name", "priority", "max_retries", "backoff", "timeout_seconds", "concurrency_key"
)  # fmt: skip
"""A step's fields that only a step with a job may carry."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NewStep:
    """A step to run a job (`task_name`), to wait (`wait`) or to run a child workflow (`workflow`): exactly one."""

    name: str
    task_name: str | None = None
    wait: Wait | None = None
    workflow: NewWorkflow | None = None
    job_fields: frozenset[str] = frozenset()
    """The job fields the caller gave (the API's body): a wait step may give none, not even at its default."""
    required_by: list[str] = field(default_factory=list)
    """Existing steps that must now also wait for this one (only for a step added at run time, `core.growth`)."""
    payload: dict[str, JSON] = field(default_factory=dict)
    depends_on: list[str] = field(default_factory=list)
    on_failure: OnFailure = OnFailure.HALT
    queue_name: str = "default"
    priority: int = 0
    max_retries: int = 3
    backoff: BackoffPolicy = field(default_factory=BackoffPolicy)
    timeout_seconds: float | None = None
    concurrency_key: str | None = None


def given_step(name: str, given: Mapping[str, Any]) -> NewStep:
    """The step `name` of the fields a caller gave, each by its field's name, the others at their default: the
    job fields among them are its `job_fields`, so a wait step that names one is refused even at its default."""
    return NewStep(name=name, job_fields=frozenset(given.keys() & _JOB_FIELDS), **given)


_JOB_FIELDS = frozenset(JOB_FIELDS)


@dataclass(frozen=True, slots=True, kw_only=True)
class NewWorkflow:
    """What a caller asks to run. Validated by `new_workflow_errors`."""

    name: str
    steps: list[NewStep]
    context: dict[str, JSON] = field(default_factory=dict)
    idempotency_key: str | None = None
    trace_context: dict[str, str] | None = None
    """W3C trace context of the request that created it; every step's job inherits it."""
    timeout_seconds: float | None = None
    """Its deadline, counted from its creation (and from each retry)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ParentRef:
    """The step of another workflow whose child a workflow is."""

    workflow_id: str
    step: str

    def to_json(self) -> dict[str, JSON]:
        return {"workflow_id": self.workflow_id, "step": self.step}


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """A workflow_steps row, keyed on (workflow_id, name); `idx` is its position in the submitted list."""

    workflow_id: str
    name: str
    idx: int
    task_name: str | None
    status: StepStatus
    depends_on: list[str]
    on_failure: OnFailure
    payload: dict[str, JSON]
    queue_name: str
    priority: int
    max_retries: int
    backoff: BackoffPolicy
    timeout_seconds: float | None
    job_id: str | None = None
    concurrency_key: str | None = None
    dependents: tuple[str, ...] = ()
    """The steps that depend on this one (the reverse of their `depends_on`), in submitted order: whom a finish
    of this step touches."""
    remaining: int = 0
    """How many of `depends_on` are not yet satisfied; a pending step is ready at 0."""
    wait: Wait | None = None
    """A wait step's wait (it has no job)."""
    due_at: datetime | None = None
    """A `waiting` step's due time (`Wait.due`)."""
    signal: KeptSignal | None = None
    """A signal step's received signal, kept (from before it waited, too)."""
    added_by: str | None = None
    """The step that added this one at run time; None for a step declared at creation."""
    added_as: dict[str, JSON] | None = None
    """The definition it was added with (`definitions.step_definition`): a repeated add of the same step compares it."""
    child: NewWorkflow | None = None
    """A child step's workflow (it has no job)."""
    child_workflow_id: str | None = None
    """The child workflow it created; kept through a retry, which retries that child in place."""
    error: str | None = None
    """Why the step failed, where no job says so (a child that would be too deep)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Workflow:
    id: str
    tenant_id: str
    name: str
    status: WorkflowStatus
    context: dict[str, JSON]
    """The caller's initial context, with every satisfied step's result under its name (`advance.satisfied`):
    stores keep the results on the step rows and assemble this when they read a workflow."""
    steps: list[Step]
    created_at: datetime
    completed_at: datetime | None = None
    idempotency_key: str | None = None
    trace_context: dict[str, str] | None = None
    parent: ParentRef | None = None
    depth: int = 0
    """Its level: 0 for a top workflow, its parent's plus one for a child."""
    timeout_seconds: float | None = None
    deadline: datetime | None = None
    """When a running workflow times out: `created_at` (or its last retry) plus `timeout_seconds`."""
    error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkflowQuery:
    """What a listing asks of the store (`WorkflowStore.workflow_list`): up to `limit` of the tenant's workflows,
    with `status` (any, if None), newest first, strictly after `after`."""

    tenant_id: str
    status: WorkflowStatus | None = None
    parent_id: str | None = None
    """Only the children of this workflow, if given."""
    limit: int
    after: Cursor | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SignalDelivery:
    """A signal for a workflow (`WorkflowStore.workflow_signal`): `name` with `payload`, for `tenant_id`'s workflow
    `workflow_id`, which `decide` (a pure function of the workflow and the step the store locked: `waits.on_signal`)
    has kept or not, at `now`."""

    workflow_id: str
    tenant_id: str
    name: str
    payload: JSON
    decide: Callable[[Workflow | None, Step | None], SignalAction]
    now: datetime


def new_workflow_errors(workflow: NewWorkflow, level: int = 0) -> list[FieldError]:
    """Every problem with `workflow` (at `level`: 0 for a top workflow, deeper for a child step's body), each
    located at its field (`steps.3.depends_on.0`)."""
    errors = text_errors(workflow.name, ("name",), max_len=200)
    errors += object_errors(workflow.context, ("context",))
    if workflow.idempotency_key is not None:
        errors += text_errors(workflow.idempotency_key, ("idempotency_key",), max_len=255)
    if workflow.timeout_seconds is not None:
        errors += number_errors(
            workflow.timeout_seconds, ("timeout_seconds",), MIN_WORKFLOW_TIMEOUT, MAX_WORKFLOW_TIMEOUT
        )
    steps = workflow.steps
    if not isinstance(steps, list | tuple) or not 1 <= len(steps) <= MAX_STEPS:
        # Beyond the limit nothing else is checked: the count alone decides, at a bounded cost.
        return [*errors, FieldError(("steps",), f"must hold 1–{MAX_STEPS} steps")]
    for index, step in enumerate(steps):
        errors += step_errors(step, ("steps", index), level)
        if step.required_by:
            errors.append(FieldError(("steps", index, "required_by"), "only a step added at run time has it"))
    errors += dependency_errors(
        [step.name for step in steps],
        [step.depends_on if isinstance(step.depends_on, list | tuple) else [] for step in steps],
    )
    return errors + signal_errors([(("steps", index), step) for index, step in enumerate(steps)], set())


def signal_errors(steps: list[tuple[Loc, NewStep]], taken: set[str]) -> list[FieldError]:
    """Signal names are unique within a workflow: none of `steps` may reuse one of another, or one in `taken`."""
    errors: list[FieldError] = []
    seen = set(taken)
    for loc, step in steps:
        signal = step.wait.signal if isinstance(step.wait, Wait) else None
        if signal is None:
            continue
        if signal in seen:
            errors.append(FieldError((*loc, "wait", "signal"), f"another step of the workflow waits for {signal!r}"))
        seen.add(signal)
    return errors


def step_errors(step: NewStep, loc: Loc, level: int = 0) -> list[FieldError]:
    """The rules of one step on its own, in a workflow at `level`; how steps refer to each other is
    `dag.dependency_errors`."""
    errors = name_errors(step.name, (*loc, "name"))
    if sum(kind is not None for kind in (step.task_name, step.wait, step.workflow)) != 1:
        errors.append(FieldError(loc, "a step has exactly one of a task_name, a wait and a workflow"))
    elif step.wait is not None:
        errors += wait_errors(step.wait, (*loc, "wait"))
        errors += [FieldError((*loc, name), "a wait step has no job") for name in _job_fields(step)]
    elif step.workflow is not None:
        errors += _child_errors(step.workflow, (*loc, "workflow"), level + 1)
        errors += [FieldError((*loc, name), "a child workflow step has no job") for name in _job_fields(step)]
    else:
        errors += new_job_errors(_job(step, step.payload), loc)
    if isinstance(step.payload, dict) and CONTEXT_KEY in step.payload:
        errors.append(FieldError((*loc, "payload", CONTEXT_KEY), "is reserved for the workflow's context"))
    if not isinstance(step.on_failure, OnFailure):
        errors.append(FieldError((*loc, "on_failure"), "must be one of halt, skip, continue"))
    if not isinstance(step.depends_on, list | tuple):
        errors.append(FieldError((*loc, "depends_on"), "must be a list of step names"))
    return errors


def _child_errors(child: NewWorkflow, loc: Loc, level: int) -> list[FieldError]:
    """A child step's workflow body, which would run at `level`."""
    if not isinstance(child, NewWorkflow):
        return [FieldError(loc, "must be a workflow: {name, context, steps}")]
    if level > MAX_DEPTH:
        return [FieldError(loc, f"a child workflow would be level {level}; levels 1–{MAX_DEPTH} are allowed")]
    return [FieldError((*loc, *error.loc), error.message) for error in new_workflow_errors(child, level)]


_DEFAULT = NewStep(name="", task_name="")


def _job_fields(step: NewStep) -> list[str]:
    """The job fields a step gives: named as given, or set to other than their default."""
    return [name for name in JOB_FIELDS if name in step.job_fields or getattr(step, name) != getattr(_DEFAULT, name)]


def new_steps(workflow_id: str, workflow: NewWorkflow) -> list[Step]:
    """The step rows of a validated new workflow, all pending (`advance.settle` then picks the roots), each with
    its dependents and its count of dependencies to wait for. Linear in steps plus edges."""
    dependents: dict[str, list[str]] = {step.name: [] for step in workflow.steps}
    for step in workflow.steps:
        for dependency in step.depends_on:
            dependents[dependency].append(step.name)
    return [
        pending_step(workflow_id, step, index, dependents[step.name], len(step.depends_on))
        for index, step in enumerate(workflow.steps)
    ]


def pending_step(
    workflow_id: str,
    step: NewStep,
    idx: int,
    dependents: Sequence[str],
    remaining: int,
    *,
    added_by: str | None = None,
    added_as: dict[str, JSON] | None = None,
) -> Step:
    """The `pending` row of a new step (declared at creation, or added by the step `added_by` as `added_as`): its
    place, the steps that depend on it, and how many of its dependencies it still waits for."""
    return Step(
        workflow_id=workflow_id,
        name=step.name,
        idx=idx,
        task_name=step.task_name,
        status=StepStatus.PENDING,
        depends_on=list(step.depends_on),
        on_failure=step.on_failure,
        payload=dict(step.payload),
        queue_name=step.queue_name,
        priority=step.priority,
        max_retries=step.max_retries,
        backoff=step.backoff,
        timeout_seconds=step.timeout_seconds,
        concurrency_key=step.concurrency_key,
        dependents=tuple(dependents),
        remaining=remaining,
        wait=step.wait,
        added_by=added_by,
        added_as=added_as,
        child=step.workflow,
    )


def step_payload(payload: dict[str, JSON], context: dict[str, JSON]) -> dict[str, JSON]:
    """A step job's payload: the step's own, plus the workflow's context as it is when the step is enqueued."""
    return {**payload, CONTEXT_KEY: dict(context)}


def step_job(step: Step, context: dict[str, JSON]) -> NewJob:
    """The job that runs `step` (the store links it to the step by `workflow_id` and `workflow_step_id`)."""
    return _job(step, step_payload(step.payload, context))


def _job(step: NewStep | Step, payload: dict[str, JSON]) -> NewJob:
    return NewJob(
        task_name=step.task_name or "",
        queue_name=step.queue_name,
        payload=payload,
        priority=step.priority,
        max_retries=step.max_retries,
        backoff=step.backoff,
        timeout_seconds=step.timeout_seconds,
        concurrency_key=step.concurrency_key,
    )


def workflow_storage_errors(workflow: Workflow) -> list[FieldError]:
    """Why `workflow` cannot be stored (its text and JSON; a validated new workflow has none of these)."""
    errors = storage_errors(workflow.context, ("context",))
    for name in ("id", "tenant_id", "name", "idempotency_key"):
        value = getattr(workflow, name)
        if value is not None:
            errors += storage_errors(value, (name,))
    for index, step in enumerate(workflow.steps):
        loc = ("steps", index)
        errors += storage_errors(step.payload, (*loc, "payload"))
        errors += storage_errors([step.name, step.task_name or "", step.queue_name], loc)
        errors += storage_errors(list(step.depends_on), (*loc, "depends_on"))
    return errors
