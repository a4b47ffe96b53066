"""The workflows' calls: create, get, list, cancel, signal, retry; and a step or a workflow as the API takes it
(which a schedule's workflow and the steps a running step adds take too)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from queueflow_client._calls.arguments import backoff_model, new_idempotency_key, reject_unknown
from queueflow_client._generated.api.workflows import cancel_workflow as cancel_workflow_operation
from queueflow_client._generated.api.workflows import create_workflow as create_workflow_operation
from queueflow_client._generated.api.workflows import get_workflow as get_workflow_operation
from queueflow_client._generated.api.workflows import list_workflows as list_workflows_operation
from queueflow_client._generated.api.workflows import retry_workflow as retry_workflow_operation
from queueflow_client._generated.api.workflows import signal_workflow as signal_workflow_operation
from queueflow_client._generated.models import (
    AddedStep,
    CreateWorkflow,
    CreateWorkflowContext,
    ListWorkflowsStatusType1,
    NewWorkflowStep,
    SignalRequest,
)
from queueflow_client._generated.types import UNSET
from queueflow_client._json import json_object
from queueflow_client._transport import Call, call
from queueflow_client.errors import ArgumentError
from queueflow_client.steps import WorkflowDefinition
from queueflow_client.types import Page, Step, Wait, Workflow, WorkflowStatus

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
    return data


def _step_fields(step: Step | Mapping[str, Any]) -> tuple[dict[str, Any], Any]:
    """A step's fields for a generated step model, and its backoff as the generated core's."""
    data = _step_data(step)
    if "task_name" not in data and "wait" not in data:
        raise ArgumentError(f"the workflow step {data['name']!r} needs a task_name or a wait")
    backoff = data.pop("backoff", None)
    if data.get("payload") is not None:
        data["payload"] = json_object(data["payload"], f"the payload of step {data['name']!r}")
    return data, backoff_model(backoff)


def _new_step(step: Step | Mapping[str, Any]) -> NewWorkflowStep:
    data, backoff = _step_fields(step)
    if data.get("required_by"):
        raise ArgumentError(f"the step {data['name']!r} has required_by, which only a step added at run time has")
    # from_dict leaves every key the step lacks UNSET, so the server's defaults apply to it.
    new = NewWorkflowStep.from_dict(data)
    new.backoff = backoff
    return new


def added_step(step: Step | Mapping[str, Any]) -> AddedStep:
    data, backoff = _step_fields(step)
    added = AddedStep.from_dict(data)
    added.backoff = backoff
    return added


def new_workflow(workflow: Any) -> CreateWorkflow:
    """A schedule's workflow: a `steps.workflow(...)` definition, or a mapping of `name`, `steps`, `context`."""
    if isinstance(workflow, WorkflowDefinition):
        return _create_body(workflow.name, workflow.steps, workflow.context)
    if not isinstance(workflow, Mapping) or not isinstance(workflow.get("name"), str):
        raise ArgumentError(
            f"a schedule's workflow is steps.workflow(...) or a dict with name and steps, not {workflow!r:.80}"
        )
    reject_unknown(workflow, ("name", "steps", "context"), "workflow")
    return _create_body(workflow["name"], workflow.get("steps") or (), workflow.get("context"))


def _create_body(
    name: str, steps: Sequence[Step | Mapping[str, Any]], context: Mapping[str, Any] | None
) -> CreateWorkflow:
    return CreateWorkflow(
        name=name,
        steps=[_new_step(step) for step in steps],
        context=CreateWorkflowContext.from_dict(json_object(context, "context")) if context is not None else UNSET,
    )


def create_workflow(
    name: str, steps: Sequence[Step | Mapping[str, Any]], context: Mapping[str, Any] | None, idempotency_key: str | None
) -> Call[Workflow]:
    body = _create_body(name, steps, context)
    return call(
        create_workflow_operation,
        Workflow.from_json,
        replayable=True,
        body=body,
        idempotency_key=idempotency_key or new_idempotency_key(),
    )


def get_workflow(workflow_id: str, wait_seconds: float = 0.0) -> Call[Workflow]:
    return call(
        get_workflow_operation, Workflow.from_json, workflow_id, replayable=True, wait_seconds=wait_seconds or UNSET
    )


def list_workflows(status: WorkflowStatus | None, limit: int, cursor: str | None) -> Call[Page[Workflow]]:
    return call(
        list_workflows_operation,
        lambda data: Page([Workflow.from_json(item) for item in data["items"]], data.get("next_cursor")),
        replayable=True,
        status=ListWorkflowsStatusType1(status) if status is not None else UNSET,
        limit=limit,
        cursor=cursor if cursor is not None else UNSET,
    )


def cancel_workflow(workflow_id: str) -> Call[Workflow]:
    # Not replayable: if a first attempt landed, a repeat would answer 409 invalid_state.
    return call(cancel_workflow_operation, Workflow.from_json, workflow_id, replayable=False)


def signal_workflow(workflow_id: str, name: str, payload: Any) -> Call[Workflow]:
    # Replayable: a repeat of a signal received with an equal payload answers 200 and changes nothing.
    body = SignalRequest(payload=payload)
    return call(signal_workflow_operation, Workflow.from_json, workflow_id, name, replayable=True, body=body)


def retry_workflow(workflow_id: str) -> Call[Workflow]:
    # Not replayable: if a first attempt landed, the workflow is running and a repeat would answer 409.
    return call(retry_workflow_operation, Workflow.from_json, workflow_id, replayable=False)
