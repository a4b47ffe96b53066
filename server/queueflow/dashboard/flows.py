"""The Workflows and Schedules pages, and their buttons (cancel a workflow; enable, disable, delete a schedule);
a workflow's signal and retry forms post to `workflow_actions`."""

from __future__ import annotations

from collections import Counter
from typing import Any
from urllib.parse import urlencode

from litestar import Request, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath
from litestar.response import Redirect, Template

from queueflow.core.errors import InvalidState, ValidationError
from queueflow.core.schedule import SchedulePatch
from queueflow.core.workflow import WorkflowStatus
from queueflow.dashboard.charts import dag_chart, level_chart
from queueflow.dashboard.session import Flash
from queueflow.dashboard.steps import SMALL, STATUSES, StepQuery, bands, step_levels, step_page
from queueflow.dashboard.web import UI, list_page, redirect, render, tenant_of
from queueflow.dashboard.workflow_actions import RETRIABLE, open_signals
from queueflow.engine import Engine

PAGE_SIZE = 50


@get("/workflows", name="dashboard-workflows")
async def workflows_page(request: Request[Any, Any, Any], engine: NamedDependency[Engine]) -> Template:
    wanted = request.query_params.get("status", "")
    status = WorkflowStatus(wanted) if wanted in WorkflowStatus.__members__.values() else None
    cursor = request.query_params.get("cursor") or None
    errors: list[str] = [f"There is no workflow status {wanted!r}."] if wanted and status is None else []
    workflows, next_cursor = [], None
    try:
        page = await engine.list_workflows(tenant_of(request), status, limit=PAGE_SIZE, cursor=cursor)
        workflows, next_cursor = page.items, page.next_cursor
    except ValidationError as exc:
        errors.append(exc.detail)
    rows = [{"workflow": wf, "steps": Counter(str(step.status) for step in wf.steps)} for wf in workflows]
    return render(
        request,
        "workflows.html",
        {
            "rows": rows,
            "status": wanted if status else "",
            "statuses": [s.value for s in WorkflowStatus],
            "errors": errors,
            "next_query": urlencode({"status": wanted, "cursor": next_cursor}) if next_cursor else None,
            "paged": bool(cursor),
        },
    )


@get("/workflows/{workflow_id:str}", name="dashboard-workflow")
async def workflow_page(
    request: Request[Any, Any, Any], engine: NamedDependency[Engine], workflow_id: FromPath[str]
) -> Template:
    """The workflow's DAG (step by step, or by level once it is large) and its steps, a page at a time."""
    workflow = await engine.get_workflow(tenant_of(request), workflow_id)
    query = StepQuery.parse(request.query_params)
    levels = step_levels(workflow.steps)
    boxes = bands(workflow.steps, levels)
    here = f"{UI}/workflows/{workflow_id}"
    if len(workflow.steps) <= SMALL:
        dag = dag_chart(workflow, f"{UI}/jobs/")
    else:
        dag = level_chart(boxes, lambda band: f"{here}?{query.query(level=band.key)}#steps")
    return render(
        request,
        "workflow.html",
        {
            "workflow": workflow,
            "dag": dag,
            "drawn_by_level": len(workflow.steps) > SMALL,
            "levels": 1 + max(levels.values(), default=-1),
            "totals": Counter(str(step.status) for step in workflow.steps),
            "statuses": STATUSES,
            "query": query,
            "table": step_page(workflow.steps, levels, query),
            "here": here,
            "signals": open_signals(workflow),
            "retriable": workflow.status in RETRIABLE,
        },
    )


@post("/workflows/{workflow_id:str}/cancel", name="dashboard-workflow-cancel")
async def cancel_workflow(
    request: Request[Any, Any, Any], engine: NamedDependency[Engine], workflow_id: FromPath[str]
) -> Redirect:
    back = f"{UI}/workflows/{workflow_id}"
    try:
        await engine.cancel_workflow(tenant_of(request), workflow_id)
    except InvalidState as exc:
        return redirect(request, back, Flash("error", exc.detail))
    return redirect(request, back, Flash("ok", "Workflow cancelled, with every unfinished step."))


@get("/schedules", name="dashboard-schedules")
async def schedules_page(request: Request[Any, Any, Any], engine: NamedDependency[Engine]) -> Template:
    tenant = tenant_of(request)
    return await list_page(
        request,
        "schedules.html",
        "schedules",
        lambda cursor: engine.list_schedules(tenant, limit=PAGE_SIZE, cursor=cursor),
    )


@post("/schedules/{name:str}/enable", name="dashboard-schedule-enable")
async def enable_schedule(
    request: Request[Any, Any, Any], engine: NamedDependency[Engine], name: FromPath[str]
) -> Redirect:
    return await _patch(request, engine, name, enabled=True)


@post("/schedules/{name:str}/disable", name="dashboard-schedule-disable")
async def disable_schedule(
    request: Request[Any, Any, Any], engine: NamedDependency[Engine], name: FromPath[str]
) -> Redirect:
    return await _patch(request, engine, name, enabled=False)


async def _patch(request: Request[Any, Any, Any], engine: Engine, name: str, *, enabled: bool) -> Redirect:
    back = f"{UI}/schedules"
    try:
        await engine.update_schedule(tenant_of(request), name, SchedulePatch(enabled=enabled))
    except InvalidState as exc:
        return redirect(request, back, Flash("error", exc.detail))
    said = "enabled: it fires from its next occurrence on" if enabled else "disabled: it fires no more until enabled"
    return redirect(request, back, Flash("ok", f"Schedule {name!r} {said}."))


@post("/schedules/{name:str}/delete", name="dashboard-schedule-delete")
async def delete_schedule(
    request: Request[Any, Any, Any], engine: NamedDependency[Engine], name: FromPath[str]
) -> Redirect:
    await engine.delete_schedule(tenant_of(request), name)
    return redirect(request, f"{UI}/schedules", Flash("ok", f"Schedule {name!r} deleted; the jobs it made stay."))
