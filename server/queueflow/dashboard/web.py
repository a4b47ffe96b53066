"""What every dashboard page shares: who is signed in, the CSRF check, rendering with the layout's context,
flash messages after a redirect, and error pages.

Handlers read `request.state.tenant` (set by `before_request`) and act only through the `Engine`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol
from urllib.parse import urlencode

from litestar import Request, Response
from litestar.datastructures import Cookie
from litestar.exceptions import HTTPException
from litestar.plugins.htmx import HTMXRequest
from litestar.response import Redirect, Template
from litestar.status_codes import HTTP_303_SEE_OTHER

from queueflow.core.errors import Conflict, NotFound, QueueFlowError, StoreUnavailable, ValidationError
from queueflow.core.types import Page
from queueflow.dashboard.session import (
    CSRF_COOKIE,
    CSRF_FIELD,
    CSRF_HEADER,
    FLASH_COOKIE,
    SESSION_COOKIE,
    SESSION_LIFETIME,
    Flash,
    Signer,
    new_browser_id,
)
from queueflow.ports import Clock

UI = "/ui"
SIGN_IN = f"{UI}/sign-in"
PUBLIC = {"dashboard": "public"}
"""The `opt` of the pages that need no session (sign-in)."""


class Keys(Protocol):
    """Who a key is (the API's `Keyring`, handed in by the app so this package never imports the API)."""

    development_mode: bool

    def identify(self, key: str) -> tuple[str, str | None] | None:
        """("tenant", tenant id) or ("worker", None) for a known key; None for an unknown one."""
        ...


@dataclass(frozen=True, slots=True)
class Dashboard:
    signer: Signer
    keyring: Keys
    clock: Clock
    default_tenant: str
    """Who every request is in development mode."""
    horizon_warning: timedelta = timedelta(seconds=300)
    """How long one backend may hold the xmin horizon before the Queues page warns (`--horizon-warning-seconds`)."""

    @property
    def development_mode(self) -> bool:
        return self.keyring.development_mode

    def hook(self) -> Callable[[HTMXRequest], Awaitable[Response[Any] | None]]:
        """`before_request` as a plain function: Litestar deep-copies its handlers' hooks, and a copied bound
        method would carry a copy of this object (and of its clock)."""

        async def before_request(request: HTMXRequest) -> Response[Any] | None:
            return await self.before_request(request)

        return before_request

    async def before_request(self, request: HTMXRequest) -> Response[Any] | None:
        """Identify the browser and the tenant; refuse a POST without the form's CSRF token; send a visitor
        who is not signed in to the sign-in page."""
        request.state.dashboard = self
        browser = request.cookies.get(CSRF_COOKIE)
        request.state.new_browser = None
        if not browser:
            browser = request.state.new_browser = new_browser_id()
        request.state.browser = browser
        request.state.csrf = self.signer.csrf_token(browser)
        request.state.tenant = (
            self.default_tenant
            if self.development_mode
            else self.signer.tenant(request.cookies.get(SESSION_COOKIE), self.clock.now())
        )
        if request.method == "POST":
            form = await request.form()
            submitted = form.get(CSRF_FIELD) or request.headers.get(CSRF_HEADER)
            if not self.signer.csrf_ok(request.cookies.get(CSRF_COOKIE), str(submitted) if submitted else None):
                return error_page(request, 403, "This form has expired or did not come from this dashboard. "
                                  "Reload the page and try again.")  # fmt: skip
        if request.state.tenant is None and request.route_handler.opt.get("dashboard") != "public":
            target = f"{SIGN_IN}?{urlencode({'next': _here(request)})}"
            if request.htmx:
                return Response("", headers={"HX-Redirect": target})
            return Redirect(target, status_code=HTTP_303_SEE_OTHER)
        return None

    def session_cookie(self, request: Request[Any, Any, Any], tenant: str) -> Cookie:
        return _cookie(
            request,
            SESSION_COOKIE,
            self.signer.session(tenant, self.clock.now()),
            int(SESSION_LIFETIME.total_seconds()),
        )


def dashboard_of(request: Request[Any, Any, Any]) -> Dashboard:
    dashboard: Dashboard = request.state.dashboard
    return dashboard


def tenant_of(request: Request[Any, Any, Any]) -> str:
    tenant: str = request.state.tenant
    return tenant


def render(
    request: Request[Any, Any, Any], template: str, context: Mapping[str, Any] | None = None, *, status: int = 200
) -> Template:
    """A page, with what the layout needs; a flash message left by the last redirect is shown once."""
    dashboard = dashboard_of(request)
    cookies = []
    flash = dashboard.signer.read_flash(request.cookies.get(FLASH_COOKIE))
    if FLASH_COOKIE in request.cookies:
        cookies.append(_cookie(request, FLASH_COOKIE, "", 0))
    if getattr(request.state, "new_browser", None):
        cookies.append(_cookie(request, CSRF_COOKIE, request.state.new_browser, None))
    full = {
        "tenant": getattr(request.state, "tenant", None),
        "csrf": getattr(request.state, "csrf", ""),
        "csrf_field": CSRF_FIELD,
        "development_mode": dashboard.development_mode,
        "flash": flash,
        "now": dashboard.clock.now(),
        "path": request.url.path,
        **(context or {}),
    }
    return Template(template_name=template, context=full, status_code=status, cookies=cookies)


async def list_page(
    request: Request[Any, Any, Any], template: str, name: str, fetch: Callable[[str | None], Awaitable[Page[Any]]]
) -> Template:
    """A paged list (schedules, endpoints): the page `fetch(cursor)` answers for the request's `?cursor=`, as `name`,
    with the link to the next one; a cursor that is not one of ours is said on the page, not a 400."""
    cursor = request.query_params.get("cursor") or None
    errors: list[str] = []
    items: list[Any] = []
    next_cursor = None
    try:
        page = await fetch(cursor)
        items, next_cursor = page.items, page.next_cursor
    except ValidationError as exc:
        errors.append(exc.detail)
    next_query = urlencode({"cursor": next_cursor}) if next_cursor else None
    return render(request, template, {name: items, "errors": errors, "next_query": next_query, "paged": bool(cursor)})


def redirect(request: Request[Any, Any, Any], path: str, flash: Flash | None = None) -> Redirect:
    """303 to `path` (after a form), carrying `flash` for the next page."""
    cookies = []
    if flash is not None:
        cookies.append(_cookie(request, FLASH_COOKIE, dashboard_of(request).signer.flash(flash), 60))
    return Redirect(path, status_code=HTTP_303_SEE_OTHER, cookies=cookies)


def safe_next(target: str | None) -> str:
    """A redirect target from a form or link: only a dashboard path, never another site."""
    if target and target.startswith(f"{UI}/") and not target.startswith("//") and "\\" not in target:
        return target
    return UI


def error_page(request: Request[Any, Any, Any], status: int, message: str) -> Template:
    titles = {400: "That didn't work", 403: "Not allowed", 404: "Not found", 409: "Conflict", 503: "Unavailable"}
    return render(request, "error.html", {"status": status, "title": titles.get(status, "Error"), "message": message},
                  status=status)  # fmt: skip


def domain_error(request: Request[Any, Any, Any], exc: Exception) -> Template:
    """A QueueFlow error in a page: the page says what went wrong, with the API's status code."""
    status = 500
    if isinstance(exc, NotFound):
        status = 404
    elif isinstance(exc, ValidationError):
        status = 400
    elif isinstance(exc, Conflict):
        status = 409
    elif isinstance(exc, StoreUnavailable):
        status = 503
    detail = exc.detail if isinstance(exc, QueueFlowError) else "Something went wrong."
    return error_page(request, status, detail)


def http_error(request: Request[Any, Any, Any], exc: HTTPException) -> Template:
    return error_page(request, exc.status_code, exc.detail)


EXCEPTION_HANDLERS = {QueueFlowError: domain_error, HTTPException: http_error}


def _cookie(request: Request[Any, Any, Any], key: str, value: str, max_age: int | None) -> Cookie:
    return Cookie(
        key=key,
        value=value,
        max_age=max_age,
        path=UI,
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )


def _here(request: Request[Any, Any, Any]) -> str:
    query = request.url.query
    return request.url.path + (f"?{query}" if query else "")
