"""The dead-letter queue: what ended there, and replaying it, one job or every job a filter matches."""

from __future__ import annotations

from typing import Any

from litestar import Request, get, post
from litestar.di import NamedDependency
from litestar.response import Redirect, Template

from queueflow.core.errors import InvalidState, NotFound
from queueflow.core.types import JobStatus
from queueflow.dashboard.jobs import Filters, job_listing
from queueflow.dashboard.session import Flash
from queueflow.dashboard.web import UI, redirect, render, tenant_of
from queueflow.engine import MAX_PAGE, Engine

REPLAY_BATCH = 100
REPLAY_BATCHES_PER_REQUEST = 10
"""One press replays at most 1,000 jobs, so a request never runs for minutes; the page says what is left."""
COUNT_LIMIT = 10_000


@get("/dead-letters", name="dashboard-dead-letters")
async def dead_letters_page(request: Request[Any, Any, Any], engine: NamedDependency[Engine]) -> Template:
    tenant = tenant_of(request)
    filters = Filters.parse(request.query_params, status=JobStatus.DEAD_LETTER)
    context = await job_listing(engine, tenant, filters, request.query_params.get("cursor"))
    matching = await count_matching(engine, tenant, filters) if not context["errors"] else 0
    return render(request, "dead_letters.html", {**context, "matching": matching, "count_limit": COUNT_LIMIT})


async def count_matching(engine: Engine, tenant: str, filters: Filters) -> int:
    """How many dead letters match (up to COUNT_LIMIT): from the queue counts when only a queue is chosen."""
    where = filters.where
    if where.task_name is None and where.metadata is None:
        return sum(
            queue.dead_letter
            for queue in await engine.queue_stats(tenant)
            if where.queue_name is None or queue.name == where.queue_name
        )
    counted, cursor = 0, None
    while counted < COUNT_LIMIT:
        page = await engine.list_jobs(tenant, where, limit=MAX_PAGE, cursor=cursor)
        counted += len(page.items)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    return min(counted, COUNT_LIMIT)


@post("/dead-letters/replay", name="dashboard-dead-letters-replay")
async def replay_matching(request: Request[Any, Any, Any], engine: NamedDependency[Engine]) -> Redirect:
    """Replay every dead letter the form's filter matches, in batches, and say how many."""
    tenant = tenant_of(request)
    form = await request.form()
    filters = Filters.parse({name: str(form.get(name) or "") for name in ("queue", "task", "metadata")},
                            status=JobStatus.DEAD_LETTER)  # fmt: skip
    back = f"{UI}/dead-letters?{filters.query()}"
    if filters.errors:
        return redirect(request, back, Flash("error", " ".join(filters.errors)))
    replayed = 0
    for _ in range(REPLAY_BATCHES_PER_REQUEST):
        # Always the first page: replayed jobs leave the dead-letter queue, so it holds the next batch.
        batch = (await engine.list_jobs(tenant, filters.where, limit=REPLAY_BATCH)).items
        if not batch:
            break
        for job in batch:
            try:
                await engine.retry_job(tenant, job.id)
                replayed += 1
            except (InvalidState, NotFound):
                pass  # replayed or deleted by someone else meanwhile
    left = await count_matching(engine, tenant, filters)
    text = f"Replayed {replayed:,} dead-lettered job{'s' if replayed != 1 else ''}."
    if left:
        text += f" {left:,} still match: replay again to continue."
    return redirect(request, back, Flash("ok" if replayed else "error", text))
