"""The Triggers page: the tenant's triggers (what each event name or prefix starts), and the last events (kept a
day) with what each started, linked to its jobs and workflows."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from litestar import Request, get
from litestar.di import NamedDependency
from litestar.response import Template

from queueflow.core.errors import ValidationError
from queueflow.dashboard.web import render, tenant_of
from queueflow.engine import Engine

PAGE_SIZE = 50
LAST_EVENTS = 50


@get("/triggers", name="dashboard-triggers")
async def triggers_page(request: Request[Any, Any, Any], engine: NamedDependency[Engine]) -> Template:
    cursor = request.query_params.get("cursor") or None
    tenant = tenant_of(request)
    errors: list[str] = []
    triggers, next_cursor = [], None
    try:
        page = await engine.triggers.list(tenant, limit=PAGE_SIZE, cursor=cursor)
        triggers, next_cursor = page.items, page.next_cursor
    except ValidationError as exc:
        errors.append(exc.detail)
    events = (await engine.triggers.events(tenant, limit=LAST_EVENTS)).items
    return render(
        request,
        "triggers.html",
        {
            "triggers": triggers,
            "events": events,
            "errors": errors,
            "next_query": urlencode({"cursor": next_cursor}) if next_cursor else None,
            "paged": bool(cursor),
        },
    )
