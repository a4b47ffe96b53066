"""A queue's flow control: its page, the Pause / Resume button, and the form that sets or clears its limits. The
page also says how long the queue keeps its finished jobs (its retention, or the server's default).

Every change goes through `Engine.configure_queue`, the call behind `PATCH /v1/queues/{name}`, so the page and
the API accept exactly the same values. The form turns its text into numbers; what is not a number, and what the
engine's check (`core.flow.patch_errors`) refuses, the page shows beside the form (400), and nothing changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from litestar import Request, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath
from litestar.response import Redirect, Template

from queueflow.core.errors import FieldError, NotFound
from queueflow.core.flow import (
    MAX_LIMIT,
    MAX_RATE_JOBS,
    MAX_RATE_SECONDS,
    MIN_RATE_SECONDS,
    QueueSettings,
    QueueSettingsPatch,
    RateLimit,
    patch_errors,
)
from queueflow.core.retention import retention_of
from queueflow.dashboard.look import limits, retention
from queueflow.dashboard.session import Flash
from queueflow.dashboard.web import UI, redirect, render, safe_next, tenant_of
from queueflow.engine import Engine

FIELDS = {
    "concurrency_limit": "Running at once",
    "key_concurrency_limit": "Running per key",
    "rate_limit": "Rate limit",
}
"""The form's fields (and the engine's error locations) as the page names them."""
RATE_FIELDS = ("rate_jobs", "rate_per_seconds")
FORM_FIELDS = ("concurrency_limit", "key_concurrency_limit", *RATE_FIELDS)
BOUNDS = {
    "limit": MAX_LIMIT,
    "rate_jobs": MAX_RATE_JOBS,
    "min_seconds": MIN_RATE_SECONDS,
    "max_seconds": int(MAX_RATE_SECONDS),
}
"""For the form's hint and the browser's own checks; the engine's are the ones that count."""


@get("/queues/{name:str}", name="dashboard-queue")
async def queue_page(request: Request[Any, Any, Any], engine: NamedDependency[Engine], name: FromPath[str]) -> Template:
    """A queue's flow control as it is, with Pause / Resume and the limits form filled in."""
    queue = await engine.get_queue(tenant_of(request), name)
    return _page(request, engine, name, queue.settings, form_values(queue.settings), [])


@post("/queues/{name:str}/pause", name="dashboard-queue-pause")
async def pause_queue(
    request: Request[Any, Any, Any], engine: NamedDependency[Engine], name: FromPath[str]
) -> Redirect:
    await engine.configure_queue(tenant_of(request), name, QueueSettingsPatch(paused=True))
    said = "paused: none of its jobs is leased until you resume it; enqueueing and running jobs go on"
    return await _back(request, Flash("ok", f"Queue {name!r} {said}."))


@post("/queues/{name:str}/resume", name="dashboard-queue-resume")
async def resume_queue(
    request: Request[Any, Any, Any], engine: NamedDependency[Engine], name: FromPath[str]
) -> Redirect:
    await engine.configure_queue(tenant_of(request), name, QueueSettingsPatch(paused=False))
    return await _back(request, Flash("ok", f"Queue {name!r} resumed: its jobs are leased again."))


@post("/queues/{name:str}/limits", name="dashboard-queue-limits")
async def set_limits(
    request: Request[Any, Any, Any], engine: NamedDependency[Engine], name: FromPath[str]
) -> Template | Redirect:
    """Set or clear all three limits at once (an empty field clears one); pausing is left as it is."""
    tenant = tenant_of(request)
    form = await request.form()
    values = {field: str(form.get(field) or "").strip() for field in FORM_FIELDS}
    patch, errors = parse_limits(values)
    if errors:
        try:
            settings = (await engine.get_queue(tenant, name)).settings
        except NotFound:  # a queue with no jobs that nobody configured yet: as it would be
            settings = QueueSettings()
        return _page(request, engine, name, settings, values, [_said(error) for error in errors], status=400)
    settings = (await engine.configure_queue(tenant, name, patch)).settings
    said = limits(settings) or "no limits"
    return redirect(request, f"{UI}/queues/{name}", Flash("ok", f"Queue {name!r} limits saved: {said}."))


def parse_limits(values: Mapping[str, str]) -> tuple[QueueSettingsPatch, list[FieldError]]:
    """The form's text as a patch of the three limits (empty: no limit), and everything wrong with it: what is
    not a number, and what the engine would refuse (its own check, run here too so that the page names every bad
    field at once, in the form's order)."""
    errors: list[FieldError] = []

    def number(field: str, kind: type[int] | type[float], loc: tuple[str, ...]) -> Any:
        try:
            return kind(values[field]) if values[field] else None
        except ValueError:
            errors.append(FieldError(loc, "must be a whole number" if kind is int else "must be a number"))
            return None

    concurrency = number("concurrency_limit", int, ("concurrency_limit",))
    per_key = number("key_concurrency_limit", int, ("key_concurrency_limit",))
    jobs = number("rate_jobs", int, ("rate_limit", "jobs"))
    per_seconds = number("rate_per_seconds", float, ("rate_limit", "per_seconds"))
    rate = None
    if all(values[field] for field in RATE_FIELDS):
        rate = RateLimit(jobs, per_seconds) if jobs is not None and per_seconds is not None else None
    elif any(values[field] for field in RATE_FIELDS):
        errors.append(FieldError(("rate_limit",), "needs both the jobs and the seconds, or neither for no limit"))
    patch = QueueSettingsPatch(concurrency_limit=concurrency, key_concurrency_limit=per_key, rate_limit=rate)
    order = list(FIELDS)
    return patch, sorted(errors + patch_errors(patch), key=lambda error: order.index(str(error.loc[0])))


def form_values(settings: QueueSettings) -> dict[str, str]:
    """The form filled in with `settings` (empty where there is no limit)."""
    rate = settings.rate_limit

    def text(value: float | None) -> str:
        # Exact, so that saving the form again changes nothing: 60.0 as "60", never 1.2345678 as "1.23457".
        return "" if value is None else str(int(value)) if float(value).is_integer() else repr(value)

    return {
        "concurrency_limit": text(settings.concurrency_limit),
        "key_concurrency_limit": text(settings.key_concurrency_limit),
        "rate_jobs": text(rate.jobs if rate else None),
        "rate_per_seconds": text(rate.per_seconds if rate else None),
    }


def _said(error: FieldError) -> str:
    """A field's error in the page's words: "Running at once must be between 1 and 100000, or null"."""
    label = FIELDS.get(str(error.loc[0]), error.field)
    part = {"jobs": " (jobs)", "per_seconds": " (seconds)"}.get(str(error.loc[-1]), "") if len(error.loc) > 1 else ""
    return f"{label}{part} {error.message}."


def _page(
    request: Request[Any, Any, Any],
    engine: Engine,
    name: str,
    settings: QueueSettings,
    values: Mapping[str, str],
    errors: list[str],
    *,
    status: int = 200,
) -> Template:
    context = {
        "name": name,
        "settings": settings,
        "retention": retention(settings, engine.settings.retention),
        "retains": retention_of(settings.retention_seconds, engine.settings.retention) is not None,
        "values": values,
        "errors": errors,
        "labels": FIELDS,
        "bounds": BOUNDS,
    }
    return render(request, "queue.html", context, status=status)


async def _back(request: Request[Any, Any, Any], flash: Flash) -> Redirect:
    """After Pause or Resume: back to the page the button was on."""
    form = await request.form()
    return redirect(request, safe_next(str(form.get("next") or f"{UI}/queues")), flash)
