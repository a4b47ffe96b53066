"""A workflow's definition as JSON: what a schedule keeps of the workflow it starts, and what an added step is
compared by when its addition is repeated (`core.growth`). `new_workflow_from_json` reads back exactly what
`new_workflow_json` wrote; a definition is validated as a new workflow before it is ever written."""

from __future__ import annotations

from typing import Any, cast

from queueflow.core.types import JSON, BackoffPolicy
from queueflow.core.waits import Wait
from queueflow.core.workflow import NewStep, NewWorkflow, OnFailure


def step_definition(step: NewStep) -> dict[str, JSON]:
    """Everything the caller said of `step` but its name (a wait step has no job field)."""
    shape: dict[str, JSON] = {
        "depends_on": list(step.depends_on),
        "required_by": list(step.required_by),
        "on_failure": step.on_failure.value,
    }
    if step.wait is not None:
        shape["wait"] = step.wait.to_json()
        return shape
    return shape | {
        "task_name": step.task_name,
        "payload": step.payload,
        "queue_name": step.queue_name,
        "priority": step.priority,
        "max_retries": step.max_retries,
        "backoff": step.backoff.to_json(),
        "timeout_seconds": step.timeout_seconds,
        "concurrency_key": step.concurrency_key,
    }


def new_workflow_json(workflow: NewWorkflow) -> dict[str, JSON]:
    """`workflow`'s name, context and steps (not its idempotency key or trace context: those are per run)."""
    steps: list[JSON] = [{"name": step.name, **step_definition(step)} for step in workflow.steps]
    return {"name": workflow.name, "context": dict(workflow.context), "steps": steps}


def new_workflow_from_json(data: dict[str, Any]) -> NewWorkflow:
    return NewWorkflow(name=data["name"], context=dict(data["context"]), steps=[_step(step) for step in data["steps"]])


def _step(data: dict[str, Any]) -> NewStep:
    common: dict[str, Any] = {
        "name": data["name"],
        "depends_on": list(data["depends_on"]),
        "required_by": list(data.get("required_by", [])),
        "on_failure": OnFailure(data["on_failure"]),
    }
    if data.get("wait") is not None:
        return NewStep(wait=Wait.from_json(data["wait"]), **common)
    return NewStep(
        task_name=data["task_name"],
        payload=cast(dict[str, JSON], data["payload"]),
        queue_name=data["queue_name"],
        priority=data["priority"],
        max_retries=data["max_retries"],
        backoff=BackoffPolicy.from_json(data["backoff"]),
        timeout_seconds=data["timeout_seconds"],
        concurrency_key=data["concurrency_key"],
        **common,
    )
