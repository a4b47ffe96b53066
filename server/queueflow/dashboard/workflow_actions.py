"""What a workflow's page can do besides cancelling it: send a signal to a step that waits for one (its payload
typed as JSON), and retry a workflow that ended failed, partially failed or cancelled. Each is one engine call;
what the engine refuses comes back as a message on the page, never an error page."""

from __future__ import annotations

import json
from typing import Any

from litestar import Request, post
from litestar.di import NamedDependency
from litestar.params import FromPath
from litestar.response import Redirect

from queueflow.core.errors import InvalidState, NotFound, ValidationError
from queueflow.core.workflow import Step, StepStatus, Workflow, WorkflowStatus
from queueflow.dashboard.session import Flash
from queueflow.dashboard.web import UI, redirect, tenant_of
from queueflow.engine import Engine

RETRIABLE = frozenset({WorkflowStatus.FAILED, WorkflowStatus.PARTIALLY_FAILED, WorkflowStatus.CANCELLED})
"""The workflow statuses the page offers "Retry workflow" for (the engine's own rule decides)."""
MAX_PAYLOAD_CHARS = 65_536


def open_signals(workflow: Workflow) -> list[Step]:
    """The signal steps a signal can still reach: those of a running workflow not yet done and not yet signalled."""
    if workflow.status is not WorkflowStatus.RUNNING:
        return []
    return [
        step
        for step in workflow.steps
        if step.wait is not None
        and step.wait.signal is not None
        and step.signal is None
        and step.status in (StepStatus.PENDING, StepStatus.WAITING)
    ]


@post("/workflows/{workflow_id:str}/signal", name="dashboard-workflow-signal")
async def signal_workflow(
    request: Request[Any, Any, Any], engine: NamedDependency[Engine], workflow_id: FromPath[str]
) -> Redirect:
    back = f"{UI}/workflows/{workflow_id}"
    tenant = tenant_of(request)
    await engine.get_workflow(tenant, workflow_id)  # another tenant's, or none: the 404 page, whatever the form says
    form = await request.form()
    name = str(form.get("name") or "").strip()
    text = str(form.get("payload") or "").strip()
    if not name:
        return redirect(request, back, Flash("error", "Pick the signal to send."))
    if len(text) > MAX_PAYLOAD_CHARS:
        return redirect(request, back, Flash("error", f"The payload is over {MAX_PAYLOAD_CHARS:,} characters."))
    try:
        payload = json.loads(text) if text else None
    except ValueError as exc:
        return redirect(request, back, Flash("error", f"The payload is not JSON: {exc}."))
    try:
        await engine.signal_workflow(tenant, workflow_id, name, payload)
    except (InvalidState, NotFound, ValidationError) as exc:
        return redirect(request, back, Flash("error", exc.detail))
    return redirect(request, back, Flash("ok", f"Signal {name!r} sent."))


@post("/workflows/{workflow_id:str}/retry", name="dashboard-workflow-retry")
async def retry_workflow(
    request: Request[Any, Any, Any], engine: NamedDependency[Engine], workflow_id: FromPath[str]
) -> Redirect:
    back = f"{UI}/workflows/{workflow_id}"
    try:
        await engine.retry_workflow(tenant_of(request), workflow_id)
    except InvalidState as exc:
        return redirect(request, back, Flash("error", exc.detail))
    said = "its failed, cancelled and skipped steps run again; completed steps keep their results"
    return redirect(request, back, Flash("ok", f"Workflow retried: {said}."))
