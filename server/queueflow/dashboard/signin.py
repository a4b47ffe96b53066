"""Signing in with a tenant key, and out. Worker keys drain queues across tenants and cannot sign in."""

from __future__ import annotations

from typing import Any

from litestar import Request, get, post
from litestar.response import Redirect, Template

from queueflow.dashboard.session import SESSION_COOKIE, Flash
from queueflow.dashboard.web import PUBLIC, SIGN_IN, UI, dashboard_of, redirect, render, safe_next


@get("/sign-in", name="dashboard-sign-in", opt=PUBLIC)
async def sign_in_page(request: Request[Any, Any, Any]) -> Template | Redirect:
    target = safe_next(request.query_params.get("next"))
    if request.state.tenant is not None:
        return redirect(request, target)
    return render(request, "sign_in.html", {"next": target, "error": None})


@post("/sign-in", name="dashboard-sign-in-submit", opt=PUBLIC)
async def sign_in(request: Request[Any, Any, Any]) -> Template | Redirect:
    dashboard = dashboard_of(request)
    form = await request.form()
    target = safe_next(str(form.get("next") or ""))
    if dashboard.development_mode:
        return redirect(request, target)
    key = str(form.get("key") or "").strip()
    identity = dashboard.keyring.identify(key) if key else None
    if identity is None:
        return render(request, "sign_in.html", {"next": target, "error": "That is not a key this server knows."},
                      status=401)  # fmt: skip
    kind, tenant = identity
    if kind != "tenant" or tenant is None:
        error = "A worker key drains queues for every tenant and cannot sign in. Use a tenant key."
        return render(request, "sign_in.html", {"next": target, "error": error}, status=403)
    response = redirect(request, target, Flash("ok", f"Signed in as tenant {tenant}."))
    response.set_cookie(dashboard.session_cookie(request, tenant))
    return response


@post("/sign-out", name="dashboard-sign-out")
async def sign_out(request: Request[Any, Any, Any]) -> Redirect:
    if dashboard_of(request).development_mode:
        return redirect(request, UI)
    response = redirect(request, SIGN_IN, Flash("ok", "Signed out."))
    response.delete_cookie(SESSION_COOKIE, path=UI)
    return response
