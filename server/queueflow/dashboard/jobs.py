"""The Queues, Jobs and Job pages, and a job's cancel and retry buttons."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from litestar import Request, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath
from litestar.plugins.htmx import HTMXRequest
from litestar.response import Redirect, Template

from queueflow.core.errors import InvalidState, ValidationError
from queueflow.core.types import CANCELLABLE, RETRIABLE, JobFilter, JobStatus, QueueMinute
from queueflow.dashboard.charts import throughput_chart
from queueflow.dashboard.horizon import horizon_warning
from queueflow.dashboard.session import Flash
from queueflow.dashboard.web import UI, redirect, render, safe_next, tenant_of
from queueflow.engine import Engine

PAGE_SIZE = 50
MAX_FILTER_CHARS = 1000
REFRESH_SECONDS = 5


@get(["/", "/queues"], name="dashboard-queues")
async def queues_page(request: HTMXRequest, engine: NamedDependency[Engine]) -> Template:
    """Every queue's counts and last hour, and a warning while the xmin horizon is held too long; an HTMX request
    (the page's own refresh) gets only the table and the warning."""
    tenant = tenant_of(request)
    stats = await engine.queue_stats(tenant)
    by_queue: dict[str, list[QueueMinute]] = defaultdict(list)
    for minute in await engine.queue_throughput(tenant):
        by_queue[minute.name].append(minute)
    now = engine.clock.now()
    queues = [
        {
            "stats": queue,
            "chart": throughput_chart(by_queue[queue.name], now),
            "completed_hour": sum(m.completed for m in by_queue[queue.name]),
            "dead_hour": sum(m.dead_lettered for m in by_queue[queue.name]),
        }
        for queue in stats
    ]
    context = {"queues": queues, "refresh_seconds": REFRESH_SECONDS, **await horizon_warning(request, engine)}
    return render(request, "_queues.html" if request.htmx else "queues.html", context)


@dataclass(frozen=True, slots=True)
class Filters:
    """A job filter as typed into a form: the values to show back, the `JobFilter`, what was wrong with it."""

    values: dict[str, str]
    where: JobFilter
    errors: list[str]

    @classmethod
    def parse(cls, query: Mapping[str, str], *, status: JobStatus | None = None) -> Filters:
        values = {
            name: query.get(name, "").strip()
            for name in ("queue", "status", "task", "metadata", "unique_key", "sequence_key")
        }
        errors = [f"The {name} filter is not valid text." for name, value in values.items() if not _text_ok(value)]
        if errors:
            return cls(values, JobFilter(status=status), errors)
        if status is None and values["status"]:
            if values["status"] in JobStatus.__members__.values():
                status = JobStatus(values["status"])
            else:
                errors.append(f"There is no status {values['status']!r}.")
        metadata = None
        if values["metadata"]:
            try:
                metadata = json.loads(values["metadata"])
            except ValueError:
                metadata = None
            if not isinstance(metadata, dict):
                errors.append('The metadata filter must be a JSON object, e.g. {"customer": 42}.')
                metadata = None
        where = JobFilter(
            queue_name=values["queue"] or None,
            status=status,
            task_name=values["task"] or None,
            metadata=metadata,
            unique_key=values["unique_key"] or None,
            sequence_key=values["sequence_key"] or None,
        )
        return cls(values, where, errors)

    def query(self, **extra: str) -> str:
        return urlencode({**{k: v for k, v in self.values.items() if v}, **extra})


def _text_ok(value: str) -> bool:
    return len(value) <= MAX_FILTER_CHARS and "\x00" not in value


@get("/jobs", name="dashboard-jobs")
async def jobs_page(request: Request[Any, Any, Any], engine: NamedDependency[Engine]) -> Template | Redirect:
    """Jobs newest first, filtered; `?id=` looks one up."""
    tenant = tenant_of(request)
    wanted = request.query_params.get("id", "").strip()
    if wanted:
        return Redirect(f"{UI}/jobs/{quote(wanted, safe='')}")
    filters = Filters.parse(request.query_params)
    context = await job_listing(engine, tenant, filters, request.query_params.get("cursor"))
    return render(request, "jobs.html", {**context, "statuses": [s.value for s in JobStatus]})


async def job_listing(engine: Engine, tenant: str, filters: Filters, cursor: str | None) -> dict[str, Any]:
    errors = list(filters.errors)
    jobs, next_cursor = [], None
    if not errors:
        try:
            page = await engine.list_jobs(tenant, filters.where, limit=PAGE_SIZE, cursor=cursor or None)
            jobs, next_cursor = page.items, page.next_cursor
        except ValidationError as exc:
            errors.append(exc.detail)
    queues = [queue.name for queue in await engine.queue_stats(tenant)]
    return {
        "jobs": jobs,
        "filters": filters.values,
        "filtered": any(filters.values.values()),
        "errors": errors,
        "queues": queues,
        "first_query": filters.query(),
        "next_query": filters.query(cursor=next_cursor) if next_cursor else None,
        "paged": bool(cursor),
    }


@get("/jobs/{job_id:str}", name="dashboard-job")
async def job_page(request: Request[Any, Any, Any], engine: NamedDependency[Engine], job_id: FromPath[str]) -> Template:
    job = await engine.get_job(tenant_of(request), job_id)
    return render(
        request,
        "job.html",
        {
            "job": job,
            "progress": getattr(job, "progress", None),
            "has_progress": hasattr(job, "progress"),
            "can_cancel": job.status in CANCELLABLE,
            "can_retry": job.status in RETRIABLE,
        },
    )


@post("/jobs/{job_id:str}/cancel", name="dashboard-job-cancel")
async def cancel_job(
    request: Request[Any, Any, Any], engine: NamedDependency[Engine], job_id: FromPath[str]
) -> Redirect:
    return await _act(request, job_id, engine.cancel_job, "Job cancelled.")


@post("/jobs/{job_id:str}/retry", name="dashboard-job-retry")
async def retry_job(
    request: Request[Any, Any, Any], engine: NamedDependency[Engine], job_id: FromPath[str]
) -> Redirect:
    return await _act(
        request, job_id, engine.retry_job, "Job replayed: it is pending again, with a fresh retry budget."
    )


@post("/jobs/{job_id:str}/resume-sequence", name="dashboard-job-resume-sequence")
async def resume_sequence(
    request: Request[Any, Any, Any], engine: NamedDependency[Engine], job_id: FromPath[str]
) -> Redirect:
    """Resume the sequence a job waits in behind a halt (its page offers this while `blocked_by` is set)."""

    async def resume(tenant_id: str, job_id: str) -> None:
        job = await engine.get_job(tenant_id, job_id)
        if job.sequence_key is None:
            raise InvalidState(f"job {job_id} is in no sequence")
        await engine.resume_sequence(tenant_id, job.sequence_key)

    return await _act(request, job_id, resume, "Sequence resumed: the jobs the halt held may run.")


async def _act(request: Request[Any, Any, Any], job_id: str, action: Any, done: str) -> Redirect:
    """Run a job action; a conflict (the job is not in a state that allows it) is a message, not an error page."""
    form = await request.form()
    back = safe_next(str(form.get("next") or f"{UI}/jobs/{job_id}"))
    try:
        await action(tenant_of(request), job_id)
    except InvalidState as exc:
        return redirect(request, back, Flash("error", exc.detail))
    return redirect(request, back, Flash("ok", done))
