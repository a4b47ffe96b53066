"""Operations routes (no credential): liveness, readiness and Prometheus metrics."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from litestar import Request, Response, get
from litestar.openapi.datastructures import ResponseSpec

from queueflow import __version__
from queueflow.api.problems import problem_responses
from queueflow.api.schemas.common import Health
from queueflow.api.services import services_of
from queueflow.core.errors import QueueFlowError

log = logging.getLogger("queueflow.api")

PROMETHEUS_TEXT = "text/plain; version=0.0.4"

DEPTH_REFRESH_SECONDS = 0.5
"""The longest a scrape waits to refresh the queue depths and the database's pressure (`core.pressure`). With every
pooled connection busy (or the database slow) the scrape still answers within a second, with the values it has: a
scrape that times out is how an operator loses the metrics that would show why."""


@get("/healthz", operation_id="health", tags=["operations"], security=[])
async def health() -> Health:
    """Liveness: 200 while the process runs."""
    return Health("ok", __version__)


@get("/readyz", operation_id="ready", tags=["operations"], security=[], responses=problem_responses(503))
async def ready(request: Request[Any, Any, Any]) -> Health:
    """Readiness: 200 when the database answers, else 503."""
    services = services_of(request)
    await services.engine.ping()
    return Health("ok", __version__)


@get(
    "/metrics",
    operation_id="metrics",
    tags=["operations"],
    security=[],
    media_type=PROMETHEUS_TEXT,
    responses={
        200: ResponseSpec(
            str, description="Prometheus text exposition format", media_type="text/plain", generate_examples=False
        )
    },
)
async def prometheus_metrics(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Prometheus metrics: HTTP traffic, job outcomes by queue, queue depth, lease wait time, parked leases."""
    services = services_of(request)
    engine, metrics = services.engine, services.metrics
    metrics.lease_waiters.set(services.wakeups.waiting)
    try:
        async with asyncio.timeout(DEPTH_REFRESH_SECONDS):
            # Pressure first, and kept even if the depths then run out of time: it costs about a millisecond, where
            # the depth counts grow with the jobs table (250 ms at 300,000 jobs), and most when it is bloated — which
            # is what the pressure shows.
            metrics.set_pressure(await engine.pressure(), engine.clock.now())
            stats = [queue for tenant in services.settings.tenants for queue in await engine.queue_stats(tenant)]
            held = await engine.held_back()
    except QueueFlowError as exc:
        # The process's own counters are still worth scraping while the database is away.
        log.warning("queue depth not refreshed: %s", exc.detail)
    except TimeoutError:
        log.warning("queue depth not refreshed: no answer from the database within %s s", DEPTH_REFRESH_SECONDS)
    else:
        metrics.set_depth(stats)
        metrics.set_held_back(held)
    return Response(metrics.render(), media_type=PROMETHEUS_TEXT)
