"""The Endpoints page (push delivery), and its buttons: pause, resume, rotate the secret.

A rotation's answer is a page of its own that shows the new secret once (as the API's answer does): it is never put
in a flash message, which travels in a cookie."""

from __future__ import annotations

from typing import Any

from litestar import Request, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath
from litestar.response import Redirect, Template

from queueflow.core.endpoints import EndpointPatch
from queueflow.core.errors import InvalidState
from queueflow.dashboard.session import Flash
from queueflow.dashboard.web import UI, list_page, redirect, render, tenant_of
from queueflow.engine import Engine

PAGE_SIZE = 50


@get("/endpoints", name="dashboard-endpoints")
async def endpoints_page(request: Request[Any, Any, Any], engine: NamedDependency[Engine]) -> Template:
    tenant = tenant_of(request)
    return await list_page(
        request,
        "endpoints.html",
        "endpoints",
        lambda cursor: engine.endpoints.list(tenant, limit=PAGE_SIZE, cursor=cursor),
    )


@post("/endpoints/{name:str}/pause", name="dashboard-endpoint-pause")
async def pause_endpoint(
    request: Request[Any, Any, Any], engine: NamedDependency[Engine], name: FromPath[str]
) -> Redirect:
    return await _pause(request, engine, name, paused=True)


@post("/endpoints/{name:str}/resume", name="dashboard-endpoint-resume")
async def resume_endpoint(
    request: Request[Any, Any, Any], engine: NamedDependency[Engine], name: FromPath[str]
) -> Redirect:
    return await _pause(request, engine, name, paused=False)


async def _pause(request: Request[Any, Any, Any], engine: Engine, name: str, *, paused: bool) -> Redirect:
    back = f"{UI}/endpoints"
    try:
        await engine.endpoints.update(tenant_of(request), name, EndpointPatch(paused=paused))
    except InvalidState as exc:
        return redirect(request, back, Flash("error", exc.detail))
    said = "paused: no new deliveries (those in flight finish)" if paused else "resumed: deliveries start again"
    return redirect(request, back, Flash("ok", f"Endpoint {name!r} {said}."))


@post("/endpoints/{name:str}/rotate-secret", name="dashboard-endpoint-rotate")
async def rotate_endpoint_secret(
    request: Request[Any, Any, Any], engine: NamedDependency[Engine], name: FromPath[str]
) -> Template:
    endpoint = await engine.endpoints.rotate_secret(tenant_of(request), name)
    return render(request, "endpoint_secret.html", {"endpoint": endpoint})
