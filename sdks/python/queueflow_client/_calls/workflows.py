"""The workflows' calls: create, get, list, cancel, signal, retry; and a step or a workflow as the API takes it
(which a schedule's workflow and the steps a running step adds take too)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from queueflow_client._calls.arguments import backoff_json, check_choice, new_idempotency_key, reject_unknown
from queueflow_client._calls.routes import (
    CANCEL_WORKFLOW,
    CREATE_WORKFLOW,
    GET_WORKFLOW,
    LIST_WORKFLOWS,
    RETRY_WORKFLOW,
    SIGNAL_WORKFLOW,
)
from queueflow_client._json import json_object
from queueflow_client._transport import Call, call
from queueflow_client.errors import ArgumentError
from queueflow_client.steps import WorkflowDefinition
from queueflow_client.types import OnFailure, Page, Step, Wait, Workflow, WorkflowStatus

STEP_OPTIONS = frozenset(field.name for field in dataclasses.fields(Step))


def _step_data(step: Step | Mapping[str, Any]) -> dict[str, Any]:
    """A step as the API takes it, checked for what the client can see: its keys, and that it has a name."""
    if isinstance(step, Step):
        return step.to_json()
    if not isinstance(step, Mapping):
        raise ArgumentError(f"a workflow step is a Step (steps.task, steps.signal, …) or a dict, not {step!r:.80}")
    data = {k: v for k, v in step.items() if v is not None}
    reject_unknown(data, STEP_OPTIONS, "workflow step")
    if "name" not in data:
        raise ArgumentError("a workflow step needs a name")
    if isinstance(data.get("wait"), Wait):
        data["wait"] = data["wait"].to_json()
    if isinstance(data.get("workflow"), WorkflowDefinition):
        data["workflow"] = data["workflow"].to_json()
    return data


def _step_fields(step: Step | Mapping[str, Any]) -> dict[str, Any]:
    """`_step_data`, also checked for a task or a wait and its `on_failure`, its payload and backoff converted."""
    data = _step_data(step)
    if "task_name" not in data and "wait" not in data and "workflow" not in data:
        raise ArgumentError(f"the workflow step {data['name']!r} needs a task_name, a wait or a workflow")
    if "on_failure" in data:
        check_choice(data["on_failure"], OnFailure, "on_failure")
    if data.get("payload") is not None:
        data["payload"] = json_object(data["payload"], f"the payload of step {data['name']!r}")
    if "backoff" in data:
        data["backoff"] = backoff_json(data["backoff"])
    return data


def _new_step(step: Step | Mapping[str, Any]) -> dict[str, Any]:
    data = _step_fields(step)
    if data.get("required_by"):
        raise ArgumentError(f"the step {data['name']!r} has required_by, which only a step added at run time has")
    return data


def added_step(step: Step | Mapping[str, Any]) -> dict[str, Any]:
    return _step_fields(step)


def new_workflow(workflow: Any) -> dict[str, Any]:
    """A schedule's workflow: a `steps.workflow(...)` definition, or a mapping of `name`, `steps`, `context`."""
    if isinstance(workflow, WorkflowDefinition):
        return _create_body(workflow.name, workflow.steps, workflow.context, workflow.timeout_seconds)
    if not isinstance(workflow, Mapping) or not isinstance(workflow.get("name"), str):
        raise ArgumentError(
            f"a schedule's workflow is steps.workflow(...) or a dict with name and steps, not {workflow!r:.80}"
        )
    reject_unknown(workflow, ("name", "steps", "context"), "workflow")
    return _create_body(workflow["name"], workflow.get("steps") or (), workflow.get("context"))


def _create_body(
    name: str,
    steps: Sequence[Step | Mapping[str, Any]],
    context: Mapping[str, Any] | None,
    timeout_seconds: float | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "steps": [_new_step(step) for step in steps]}
    if context is not None:
        body["context"] = json_object(context, "context")
    if timeout_seconds is not None:
        body["timeout_seconds"] = timeout_seconds
    return body


def create_workflow(
    name: str,
    steps: Sequence[Step | Mapping[str, Any]],
    context: Mapping[str, Any] | None,
    idempotency_key: str | None,
    timeout_seconds: float | None = None,
) -> Call[Workflow]:
    request = CREATE_WORKFLOW.request(
        headers={"Idempotency-Key": idempotency_key or new_idempotency_key()},
        body=_create_body(name, steps, context, timeout_seconds),
    )
    return call(request, Workflow.from_json, replayable=True)


def get_workflow(workflow_id: str, wait_seconds: float = 0.0) -> Call[Workflow]:
    request = GET_WORKFLOW.request(workflow_id, query={"wait_seconds": wait_seconds or None})
    return call(request, Workflow.from_json, replayable=True)


def list_workflows(
    status: WorkflowStatus | None, limit: int, cursor: str | None, parent_id: str | None = None
) -> Call[Page[Workflow]]:
    if status is not None:
        check_choice(status, WorkflowStatus, "workflow status")
    return call(
        LIST_WORKFLOWS.request(query={"status": status, "limit": limit, "cursor": cursor, "parent_id": parent_id}),
        lambda data: Page([Workflow.from_json(item) for item in data["items"]], data.get("next_cursor")),
        replayable=True,
    )


def cancel_workflow(workflow_id: str) -> Call[Workflow]:
    # Not replayable: if a first attempt landed, a repeat would answer 409 invalid_state.
    return call(CANCEL_WORKFLOW.request(workflow_id), Workflow.from_json, replayable=False)


def signal_workflow(workflow_id: str, name: str, payload: Any) -> Call[Workflow]:
    # Replayable: a repeat of a signal received with an equal payload answers 200 and changes nothing.
    request = SIGNAL_WORKFLOW.request(workflow_id, name, body={"payload": payload})
    return call(request, Workflow.from_json, replayable=True)


def retry_workflow(workflow_id: str) -> Call[Workflow]:
    # Not replayable: if a first attempt landed, the workflow is running and a repeat would answer 409.
    return call(RETRY_WORKFLOW.request(workflow_id), Workflow.from_json, replayable=False)
