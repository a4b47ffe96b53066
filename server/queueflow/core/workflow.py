"""Workflows: a DAG of named steps, each run as one job. The types, the rules a new workflow must pass, and the
job a step becomes.

    step      pending ──dependencies satisfied──▶ enqueued ──its job completes──────▶ completed
                 │                                   ├──its job dead-letters───▶ failed
                 │                                   └──its job is cancelled──▶ cancelled
                 ├──an upstream `skip` failure──▶ skipped
                 └──a `halt` failure or a workflow cancel──▶ cancelled  (enqueued steps and their jobs too)
    workflow  running ──nothing left to schedule──▶ completed | failed | partially_failed | cancelled

How a workflow advances from one of these states to the next is `core.advance`; the graph checks are `core.dag`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from queueflow.core.dag import dependency_errors
from queueflow.core.errors import FieldError
from queueflow.core.jsonvalue import storage_errors
from queueflow.core.types import JSON, BackoffPolicy, NewJob
from queueflow.core.validation import Loc, name_errors, new_job_errors, object_errors, text_errors

MAX_STEPS = 10_000
CONTEXT_KEY = "_context"
"""The payload key under which a step's job receives the workflow's context; reserved in step payloads."""


class OnFailure(StrEnum):
    HALT = "halt"
    SKIP = "skip"
    CONTINUE = "continue"


class StepStatus(StrEnum):
    PENDING = "pending"
    ENQUEUED = "enqueued"
    COMPLETED = "completed"
    FAILED = "failed"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"


UNFINISHED_STEPS = frozenset({StepStatus.PENDING, StepStatus.ENQUEUED})
FAILED_STEPS = frozenset({StepStatus.FAILED, StepStatus.CANCELLED})
"""A step's job ended in failure (dead-lettered or cancelled): its `on_failure` applies."""


class WorkflowStatus(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    PARTIALLY_FAILED = "partially_failed"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True, kw_only=True)
class NewStep:
    name: str
    task_name: str
    payload: dict[str, JSON] = field(default_factory=dict)
    depends_on: list[str] = field(default_factory=list)
    on_failure: OnFailure = OnFailure.HALT
    queue_name: str = "default"
    priority: int = 0
    max_retries: int = 3
    backoff: BackoffPolicy = field(default_factory=BackoffPolicy)
    timeout_seconds: float | None = None
    concurrency_key: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NewWorkflow:
    """What a caller asks to run. Validated by `new_workflow_errors`."""

    name: str
    steps: list[NewStep]
    context: dict[str, JSON] = field(default_factory=dict)
    idempotency_key: str | None = None
    trace_context: dict[str, str] | None = None
    """W3C trace context of the request that created it; every step's job inherits it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """A workflow_steps row, keyed on (workflow_id, name); `idx` is its position in the submitted list."""

    workflow_id: str
    name: str
    idx: int
    task_name: str
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


def new_workflow_errors(workflow: NewWorkflow) -> list[FieldError]:
    """Every problem with `workflow`, each located at its field (`steps.3.depends_on.0`)."""
    errors = text_errors(workflow.name, ("name",), max_len=200)
    errors += object_errors(workflow.context, ("context",))
    if workflow.idempotency_key is not None:
        errors += text_errors(workflow.idempotency_key, ("idempotency_key",), max_len=255)
    steps = workflow.steps
    if not isinstance(steps, list | tuple) or not 1 <= len(steps) <= MAX_STEPS:
        # Beyond the limit nothing else is checked: the count alone decides, at a bounded cost.
        return [*errors, FieldError(("steps",), f"must hold 1–{MAX_STEPS} steps")]
    for index, step in enumerate(steps):
        errors += step_errors(step, ("steps", index))
    errors += dependency_errors(
        [step.name for step in steps],
        [step.depends_on if isinstance(step.depends_on, list | tuple) else [] for step in steps],
    )
    return errors


def step_errors(step: NewStep, loc: Loc) -> list[FieldError]:
    """The rules of one step on its own; how steps refer to each other is `dag.dependency_errors`."""
    errors = name_errors(step.name, (*loc, "name"))
    errors += new_job_errors(_job(step, step.payload), loc)
    if isinstance(step.payload, dict) and CONTEXT_KEY in step.payload:
        errors.append(FieldError((*loc, "payload", CONTEXT_KEY), "is reserved for the workflow's context"))
    if not isinstance(step.on_failure, OnFailure):
        errors.append(FieldError((*loc, "on_failure"), "must be one of halt, skip, continue"))
    if not isinstance(step.depends_on, list | tuple):
        errors.append(FieldError((*loc, "depends_on"), "must be a list of step names"))
    return errors


def new_steps(workflow_id: str, workflow: NewWorkflow) -> list[Step]:
    """The step rows of a validated new workflow, all pending (`advance.settle` then picks the roots), each with
    its dependents and its count of dependencies to wait for. Linear in steps plus edges."""
    dependents: dict[str, list[str]] = {step.name: [] for step in workflow.steps}
    for step in workflow.steps:
        for dependency in step.depends_on:
            dependents[dependency].append(step.name)
    return [
        Step(
            workflow_id=workflow_id,
            name=step.name,
            idx=index,
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
            dependents=tuple(dependents[step.name]),
            remaining=len(step.depends_on),
        )
        for index, step in enumerate(workflow.steps)
    ]


def step_payload(payload: dict[str, JSON], context: dict[str, JSON]) -> dict[str, JSON]:
    """A step job's payload: the step's own, plus the workflow's context as it is when the step is enqueued."""
    return {**payload, CONTEXT_KEY: dict(context)}


def step_job(step: Step, context: dict[str, JSON]) -> NewJob:
    """The job that runs `step` (the store links it to the step by `workflow_id` and `workflow_step_id`)."""
    return _job(step, step_payload(step.payload, context))


def _job(step: NewStep | Step, payload: dict[str, JSON]) -> NewJob:
    return NewJob(
        task_name=step.task_name,
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
        errors += storage_errors([step.name, step.task_name, step.queue_name], loc)
        errors += storage_errors(list(step.depends_on), (*loc, "depends_on"))
    return errors
