"""The wire shapes of workflows: a DAG of steps to create, and a workflow with its steps' statuses."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from queueflow.api.schemas.common import (
    NO_NUL,
    QUEUE_NAME_SCHEMA,
    JSONObject,
    LeaseToken,
    MaxRetries,
    Priority,
    QueueName,
    RequestBody,
    TaskName,
    TimeoutSeconds,
)
from queueflow.api.schemas.jobs import Backoff, ConcurrencyKey
from queueflow.core import growth, waits, workflow

WorkflowTimeout = Annotated[float, Meta(ge=workflow.MIN_WORKFLOW_TIMEOUT, le=workflow.MAX_WORKFLOW_TIMEOUT)]
StepName = QueueName  # one naming rule (`validation.NAME_PATTERN`) for queues, steps and schedules
OnFailureName = Literal["halt", "skip", "continue"]
StepStatusName = Literal["pending", "enqueued", "waiting", "completed", "failed", "skipped", "cancelled"]
WorkflowStatusName = Literal["running", "completed", "failed", "partially_failed", "cancelled"]


class WaitSpec(RequestBody, kw_only=True):
    """`{"signal": name, "timeout_seconds"?: N}` — wait for the signal (failing after the timeout, if given) — or
    `{"seconds": N}` — wait that long. Exactly one of `signal` and `seconds`."""

    signal: StepName | None = None
    timeout_seconds: Annotated[float, Meta(ge=waits.MIN_TIMEOUT_SECONDS, le=waits.MAX_WAIT_SECONDS)] | None = None
    seconds: Annotated[float, Meta(ge=waits.MIN_SLEEP_SECONDS, le=waits.MAX_WAIT_SECONDS)] | None = None

    def to_domain(self) -> waits.Wait:
        return waits.Wait(signal=self.signal, timeout_seconds=self.timeout_seconds, seconds=self.seconds)

    @classmethod
    def from_domain(cls, wait: waits.Wait) -> WaitSpec:
        return cls(signal=wait.signal, timeout_seconds=wait.timeout_seconds, seconds=wait.seconds)


class StepWait(Struct, kw_only=True):
    """A step's wait as shown: a signal's or a sleep's (`signal`, `timeout_seconds`, `seconds`, as given), or a
    child step's (`workflow`: the child's id, alone)."""

    signal: str | UnsetType | None = UNSET
    timeout_seconds: float | UnsetType | None = UNSET
    seconds: float | UnsetType | None = UNSET
    workflow: str | UnsetType | None = UNSET


class NewWorkflowStep(RequestBody, kw_only=True):
    """A step that runs a job (`task_name`, with the job's fields), waits (`wait`) or runs a child workflow
    (`workflow`, a body as for `POST /v1/workflows`): exactly one of the three; the last two take no job field."""

    name: StepName
    task_name: TaskName | None = None
    wait: WaitSpec | None = None
    # Named `workflow` on the wire; `child` here, so that it does not hide the `workflow` module in this body.
    child: CreateWorkflow | None = msgspec.field(default=None, name="workflow")
    depends_on: Annotated[
        list[StepName],
        Meta(
            max_length=workflow.MAX_STEPS,
            # As for `queues`: Litestar documents no constraint of a list's items (step names follow the same rule).
            extra_json_schema={"extra": {"items": QUEUE_NAME_SCHEMA}},
        ),
    ] = msgspec.field(default_factory=list)
    on_failure: OnFailureName = "halt"
    # The job's fields, UNSET when not given: a wait step may give none of them.
    queue_name: QueueName | UnsetType = UNSET
    payload: JSONObject | UnsetType = UNSET
    priority: Priority | UnsetType = UNSET
    max_retries: MaxRetries | UnsetType = UNSET
    backoff: Backoff | UnsetType = UNSET
    timeout_seconds: TimeoutSeconds | UnsetType | None = UNSET
    concurrency_key: ConcurrencyKey | UnsetType | None = UNSET

    def to_domain(self, required_by: list[str] | None = None) -> workflow.NewStep:
        given = {name: getattr(self, name) for name in workflow.JOB_FIELDS if getattr(self, name) is not UNSET}
        if isinstance(given.get("backoff"), Backoff):
            given["backoff"] = given["backoff"].to_domain()
        return workflow.given_step(
            self.name,
            given
            | {
                "task_name": self.task_name,
                "wait": None if self.wait is None else self.wait.to_domain(),
                "workflow": None if self.child is None else self.child.to_domain(None),
                "required_by": list(required_by or []),
                "depends_on": self.depends_on,
                "on_failure": workflow.OnFailure(self.on_failure),
            },
        )


class CreateWorkflow(RequestBody, kw_only=True):
    """A DAG of named steps; it must have unique names, resolvable `depends_on` and no cycle (else 400)."""

    name: Annotated[str, Meta(min_length=1, max_length=200, pattern=NO_NUL)]
    context: JSONObject = msgspec.field(default_factory=dict)
    steps: Annotated[list[NewWorkflowStep], Meta(min_length=1, max_length=workflow.MAX_STEPS)]
    timeout_seconds: WorkflowTimeout | None = None
    """The workflow's deadline, counted from its creation (and from each retry): still running then, it fails."""

    def to_domain(self, idempotency_key: str | None) -> workflow.NewWorkflow:
        return workflow.NewWorkflow(
            name=self.name,
            steps=[step.to_domain() for step in self.steps],
            context=self.context,
            idempotency_key=idempotency_key,
            timeout_seconds=self.timeout_seconds,
        )


class WorkflowStep(Struct, kw_only=True):
    """A step: `task_name` and `job_id` for one that runs a job, `wait` (and, while `waiting`, `due_at`: when its
    sleep ends or its signal times out) for one that waits, `child_workflow_id` (and `wait.workflow`) for a child
    workflow step; `added_by` names the step that added it at run time; `error` why it failed where no job says."""

    name: str
    task_name: str | None
    status: StepStatusName
    job_id: str | None
    depends_on: list[str]
    on_failure: OnFailureName
    # Added in 0.2 (issue 31): not `required` in the spec, as an SDK reading an older server does not get them.
    wait: StepWait | None = None
    due_at: datetime | None = None
    added_by: str | None = None
    # Added in 0.3 (issue 44).
    child_workflow_id: str | None = None
    error: str | None = None

    @classmethod
    def from_domain(cls, step: workflow.Step) -> WorkflowStep:
        return cls(
            name=step.name,
            task_name=step.task_name,
            status=step.status.value,
            job_id=step.job_id,
            depends_on=step.depends_on,
            on_failure=step.on_failure.value,
            wait=_shown_wait(step),
            due_at=step.due_at if step.status is workflow.StepStatus.WAITING and step.wait is not None else None,
            added_by=step.added_by,
            child_workflow_id=step.child_workflow_id,
            error=step.error,
        )


def _shown_wait(step: workflow.Step) -> StepWait | None:
    if step.wait is not None:
        return StepWait(signal=step.wait.signal, timeout_seconds=step.wait.timeout_seconds, seconds=step.wait.seconds)
    if step.child is not None and step.child_workflow_id is not None:
        return StepWait(workflow=step.child_workflow_id)
    return None


class ParentRef(Struct, kw_only=True):
    """The step of another workflow whose child a workflow is."""

    workflow_id: str
    step: str


class Workflow(Struct, kw_only=True):
    """A workflow and its steps, in the order they were submitted; `context` holds each completed step's result."""

    id: str
    tenant_id: str
    name: str
    status: WorkflowStatusName
    context: JSONObject
    steps: list[WorkflowStep]
    created_at: datetime
    completed_at: datetime | None
    # Added in 0.3 (issue 44): not `required` in the spec, as an SDK reading an older server does not get them.
    parent: ParentRef | None = None
    timeout_seconds: float | None = None
    deadline: datetime | None = None
    error: str | None = None

    @classmethod
    def from_domain(cls, run: workflow.Workflow) -> Workflow:
        steps = [WorkflowStep.from_domain(step) for step in run.steps]
        return cls(
            id=run.id,
            tenant_id=run.tenant_id,
            name=run.name,
            status=run.status.value,
            context=run.context,
            steps=steps,
            created_at=run.created_at,
            completed_at=run.completed_at,
            parent=None if run.parent is None else ParentRef(workflow_id=run.parent.workflow_id, step=run.parent.step),
            timeout_seconds=run.timeout_seconds,
            deadline=run.deadline,
            error=run.error,
        )


class WorkflowPage(Struct):
    items: list[Workflow]
    next_cursor: str | None


class AddedStep(NewWorkflowStep, kw_only=True):
    required_by: Annotated[
        list[StepName],
        Meta(max_length=workflow.MAX_STEPS, extra_json_schema={"extra": {"items": QUEUE_NAME_SCHEMA}}),
    ] = msgspec.field(default_factory=list)
    """Existing `pending` steps that must now also wait for this one."""


class AddStepsRequest(RequestBody, kw_only=True):
    """Steps a running step adds to its own workflow (atomic; a repeat by the same step is safe)."""

    lease_token: LeaseToken
    steps: Annotated[list[AddedStep], Meta(min_length=1, max_length=growth.MAX_ADDED)]

    def to_domain(self) -> list[workflow.NewStep]:
        return [step.to_domain(step.required_by) for step in self.steps]


class AddedSteps(Struct):
    steps: list[WorkflowStep]


class SignalRequest(RequestBody, kw_only=True):
    """A signal's payload (any JSON; null when absent): the waiting step's result."""

    payload: Any = None
