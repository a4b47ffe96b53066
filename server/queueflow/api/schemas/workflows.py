"""The wire shapes of workflows: a DAG of steps to create, and a workflow with its steps' statuses."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import msgspec
from msgspec import Meta, Struct

from queueflow.api.schemas.common import NO_NUL, QUEUE_NAME_SCHEMA, JSONObject, QueueName, RequestBody
from queueflow.api.schemas.jobs import TaskFields
from queueflow.core import workflow

StepName = QueueName  # one naming rule (`validation.NAME_PATTERN`) for queues, steps and schedules
OnFailureName = Literal["halt", "skip", "continue"]
StepStatusName = Literal["pending", "enqueued", "waiting", "completed", "failed", "skipped", "cancelled"]
WorkflowStatusName = Literal["running", "completed", "failed", "partially_failed", "cancelled"]


class NewWorkflowStep(TaskFields, kw_only=True):
    name: StepName
    depends_on: Annotated[
        list[StepName],
        Meta(
            max_length=workflow.MAX_STEPS,
            # As for `queues`: Litestar documents no constraint of a list's items (step names follow the same rule).
            extra_json_schema={"extra": {"items": QUEUE_NAME_SCHEMA}},
        ),
    ] = msgspec.field(default_factory=list)
    on_failure: OnFailureName = "halt"

    def to_domain(self) -> workflow.NewStep:
        return workflow.NewStep(
            name=self.name,
            task_name=self.task_name,
            payload=self.payload,
            depends_on=self.depends_on,
            on_failure=workflow.OnFailure(self.on_failure),
            queue_name=self.queue_name,
            priority=self.priority,
            max_retries=self.max_retries,
            backoff=self.backoff.to_domain(),
            timeout_seconds=self.timeout_seconds,
            concurrency_key=self.concurrency_key,
        )


class CreateWorkflow(RequestBody, kw_only=True):
    """A DAG of named steps; it must have unique names, resolvable `depends_on` and no cycle (else 400)."""

    name: Annotated[str, Meta(min_length=1, max_length=200, pattern=NO_NUL)]
    context: JSONObject = msgspec.field(default_factory=dict)
    steps: Annotated[list[NewWorkflowStep], Meta(min_length=1, max_length=workflow.MAX_STEPS)]

    def to_domain(self, idempotency_key: str | None) -> workflow.NewWorkflow:
        return workflow.NewWorkflow(
            name=self.name,
            steps=[step.to_domain() for step in self.steps],
            context=self.context,
            idempotency_key=idempotency_key,
        )


class WorkflowStep(Struct, kw_only=True):
    name: str
    task_name: str | None
    status: StepStatusName
    job_id: str | None
    depends_on: list[str]
    on_failure: OnFailureName


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

    @classmethod
    def from_domain(cls, run: workflow.Workflow) -> Workflow:
        steps = [
            WorkflowStep(
                name=step.name,
                task_name=step.task_name,
                status=step.status.value,
                job_id=step.job_id,
                depends_on=step.depends_on,
                on_failure=step.on_failure.value,
            )
            for step in run.steps
        ]
        return cls(
            id=run.id,
            tenant_id=run.tenant_id,
            name=run.name,
            status=run.status.value,
            context=run.context,
            steps=steps,
            created_at=run.created_at,
            completed_at=run.completed_at,
        )


class WorkflowPage(Struct):
    items: list[Workflow]
    next_cursor: str | None
