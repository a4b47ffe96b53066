"""What an operator sees: Prometheus metrics (one registry per app) and one structured log line per request."""

from __future__ import annotations

import json
import logging
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Protocol

from litestar.enums import ScopeType
from litestar.types import ASGIApp, HTTPScope, Message, Receive, Scope, Send
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from queueflow import __version__
from queueflow.api.auth import header
from queueflow.core.endpoints import Endpoint
from queueflow.core.events import Event
from queueflow.core.flow import HELD_BACK_REASONS
from queueflow.core.pressure import Pressure
from queueflow.core.types import Enqueued, Job, JobStatus, QueueStats
from queueflow.settings import AccessLog

access_log = logging.getLogger("queueflow.access")

MAX_CHILDREN = 1000
"""The most children (label values) one metric keeps at hand (`Children`)."""

DEPTH_STATES = ("pending", "scheduled", "running", "retrying", "completed", "dead_letter", "cancelled")


class Queued(Protocol):
    """Anything that put a job on a queue: the job itself, or the workflow step it runs."""

    @property
    def queue_name(self) -> str: ...


class Children:
    """A metric's children by their label values, each looked up once: `labels()` takes a lock and builds its key
    on every call (4 % of a single-job request's server CPU, py-spy). Bounded, since clients choose label values
    (queue names, methods): past MAX_CHILDREN, a new one is `labels()`'s own lookup each time."""

    def __init__(self, metric: Any) -> None:
        self._metric = metric
        self._known: dict[tuple[str, ...], Any] = {}

    def __call__(self, *values: str) -> Any:
        child = self._known.get(values)
        if child is None:
            child = self._metric.labels(*values)
            if len(self._known) < MAX_CHILDREN:
                self._known[values] = child
        return child


class Metrics:
    """The app's instruments, on a registry of its own so that any number of apps can live in one process."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "queueflow_http_requests", "HTTP requests served", ["method", "route", "status"], registry=self.registry
        )
        self.latency = Histogram(
            "queueflow_http_request_duration_seconds",
            "HTTP request latency",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.enqueued = Counter("queueflow_jobs_enqueued", "Jobs inserted", ["queue"], registry=self.registry)
        self.unique = Counter(
            "queueflow_jobs_unique",
            "Enqueues a unique rule resolved to an existing job, by queue and outcome (skipped, replaced)",
            ["queue", "outcome"],
            registry=self.registry,
        )
        self.expired = Counter(
            "queueflow_jobs_expired",
            "Jobs dead-lettered by the timer, not started by their expires_at, by queue",
            ["queue"],
            registry=self.registry,
        )
        self.completed = Counter("queueflow_jobs_completed", "Jobs completed", ["queue"], registry=self.registry)
        self.failed = Counter(
            "queueflow_jobs_failed", "Failed deliveries reported by workers", ["queue"], registry=self.registry
        )
        self.dead_lettered = Counter(
            "queueflow_jobs_dead_lettered", "Jobs moved to the dead-letter queue", ["queue"], registry=self.registry
        )
        self.depth = Gauge(
            "queueflow_queue_depth", "Jobs by queue and state", ["queue", "state"], registry=self.registry
        )
        self.held_back = Gauge(
            "queueflow_jobs_held_back",
            "Due jobs flow control holds back, by queue and reason (paused, concurrency, key_concurrency, rate)",
            ["queue", "reason"],
            registry=self.registry,
        )
        self.table_live = Gauge(
            "queueflow_table_live_tuples",
            "Live rows per QueueFlow table (statistics' estimate)",
            ["table"],
            registry=self.registry,
        )
        self.table_dead = Gauge(
            "queueflow_table_dead_tuples",
            "Dead rows per QueueFlow table, not yet vacuumed",
            ["table"],
            registry=self.registry,
        )
        self.table_size = Gauge(
            "queueflow_table_size_bytes",
            "Bytes on disk per QueueFlow table, with its indexes and TOAST",
            ["table"],
            registry=self.registry,
        )
        self.oldest_transaction = Gauge(
            "queueflow_oldest_transaction_age_seconds",
            "Age of the oldest open transaction in the database (0: none)",
            registry=self.registry,
        )
        self.oldest_xmin = Gauge(
            "queueflow_oldest_xmin_age_seconds",
            "How long the backend with the oldest xmin has held the vacuum horizon, since its transaction began",
            registry=self.registry,
        )
        self.oldest_xmin_transactions = Gauge(
            "queueflow_oldest_xmin_age_transactions",
            "Transaction ids assigned since the oldest xmin: whose dead rows vacuum may not remove",
            registry=self.registry,
        )
        self.lease_waiters = Gauge(
            "queueflow_lease_waiters", "Long-polling lease requests parked in this process", registry=self.registry
        )
        self.lease_wait = Histogram(
            "queueflow_lease_wait_seconds",
            "How long a job waited between becoming due and being leased",
            ["queue"],
            buckets=(0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, float("inf")),
            registry=self.registry,
        )
        self.deliveries = Histogram(
            "queueflow_push_delivery_duration_seconds",
            "Push deliveries by endpoint (tenant/name) and outcome (the job's status after it: completed, retrying,"
            " dead_letter; lease_lost when the lease was gone), with their latency from the POST to the answer",
            ["endpoint", "outcome"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, float("inf")),
            registry=self.registry,
        )
        self.events = Counter(
            "queueflow_events_received", "Events received (a repeated event id not counted)", registry=self.registry
        )
        self.trigger_starts = Counter(
            "queueflow_trigger_starts",
            "Jobs and workflows started by events, by trigger and kind (job, workflow)",
            ["trigger", "kind"],
            registry=self.registry,
        )
        self._trigger_starts = Children(self.trigger_starts)
        # The per-job instruments' children (never cleared, unlike the gauges, so a child stays valid).
        self._enqueued, self._completed = Children(self.enqueued), Children(self.completed)
        self._failed, self._dead_lettered = Children(self.failed), Children(self.dead_lettered)
        self._lease_wait = Children(self.lease_wait)
        self._unique = Children(self.unique)
        self._expired = Children(self.expired)
        self._deliveries = Children(self.deliveries)

    def delivery_ended(self, endpoint: Endpoint, outcome: str, seconds: float) -> None:
        """A push delivery ended (`runtime.delivery`'s observer): its count and latency, by endpoint and outcome."""
        self._deliveries(f"{endpoint.tenant_id}/{endpoint.name}", outcome).observe(seconds)

    def event_received(self, event: Event) -> None:
        """A new event, and what it started."""
        self.events.inc()
        for started in event.started:
            self._trigger_starts(started.trigger, "job" if started.job_id is not None else "workflow").inc()

    def jobs_enqueued(self, jobs: Iterable[Queued]) -> None:
        for queue, count in _by_queue(jobs).items():
            self._enqueued(queue).inc(count)

    def jobs_unique(self, results: Iterable[Enqueued]) -> None:
        """Count the enqueues a `unique` rule skipped or replaced, by the existing job's queue."""
        counts: dict[tuple[str, str], int] = defaultdict(int)
        for result in results:
            if result.unique is not None:
                counts[result.job.queue_name, result.unique.value] += 1
        for (queue, outcome), count in counts.items():
            self._unique(queue, outcome).inc(count)

    def jobs_expired(self, jobs: Iterable[Job]) -> None:
        """Count the jobs the timer expired (`runtime.waits`), by queue; each is a dead-lettered job too."""
        for queue, count in _by_queue(jobs).items():
            self._expired(queue).inc(count)
            self._dead_lettered(queue).inc(count)

    def jobs_leased(self, jobs: Iterable[Job]) -> None:
        for job in jobs:
            if job.started_at is not None:
                self._lease_wait(job.queue_name).observe(max((job.started_at - job.scheduled_at).total_seconds(), 0.0))

    def job_settled(self, queue: str, status: JobStatus, count: int = 1) -> None:
        """Count a worker's outcome by the status it left the job in: completed, retrying or dead_letter."""
        if status is JobStatus.COMPLETED:
            self._completed(queue).inc(count)
            return
        self._failed(queue).inc(count)
        if status is JobStatus.DEAD_LETTER:
            self._dead_lettered(queue).inc(count)

    def jobs_settled(self, outcomes: Iterable[tuple[str, JobStatus]]) -> None:
        """`job_settled` for a batch: one count per queue and status, not per job."""
        counts: dict[tuple[str, JobStatus], int] = defaultdict(int)
        for outcome in outcomes:
            counts[outcome] += 1
        for (queue, status), count in counts.items():
            self.job_settled(queue, status, count)

    def set_depth(self, stats: Iterable[QueueStats]) -> None:
        """Replace the depth gauge with `stats` (summed over tenants that share a queue name)."""
        totals: dict[tuple[str, str], int] = defaultdict(int)
        for queue in stats:
            for state in DEPTH_STATES:
                totals[queue.name, state] += getattr(queue, state)
        self.depth.clear()
        for (queue_name, state), count in totals.items():
            self.depth.labels(queue_name, state).set(count)

    def set_held_back(self, held: dict[tuple[str, str], int]) -> None:
        """Replace the held-back gauge with `held` (by queue and reason); a reason that holds nothing reads 0."""
        self.held_back.clear()
        for queue_name in {queue for queue, _ in held}:
            for reason in HELD_BACK_REASONS:
                self.held_back.labels(queue_name, reason).set(held.get((queue_name, reason), 0))

    def set_pressure(self, pressure: Pressure, now: datetime) -> None:
        """Replace the table gauges with `pressure`'s tables, and the horizon's with its ages at `now`."""
        for gauge in (self.table_live, self.table_dead, self.table_size):
            gauge.clear()
        for table in pressure.tables:
            self.table_live.labels(table.table).set(table.live_tuples)
            self.table_dead.labels(table.table).set(table.dead_tuples)
            self.table_size.labels(table.table).set(table.size_bytes)
        self.oldest_transaction.set(pressure.oldest_transaction_age(now))
        self.oldest_xmin.set(pressure.horizon_age(now))
        self.oldest_xmin_transactions.set(pressure.horizon.age_transactions if pressure.horizon else 0)

    def render(self) -> bytes:
        return generate_latest(self.registry)


def _by_queue(jobs: Iterable[Queued]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for job in jobs:
        counts[job.queue_name] += 1
    return counts


VERSION_HEADER = (b"queueflow-version", __version__.encode())
"""On every answer, routed or not: which server version answered (a rolling deploy runs two at once)."""


class Observe:
    """ASGI wrapper around the whole app: every request, routed or not, is counted, timed and logged once."""

    def __init__(
        self, app: ASGIApp, metrics: Metrics, skip: Sequence[str] = (), access_log: AccessLog = "errors"
    ) -> None:
        self.app = app
        self.metrics = metrics
        self.skip = frozenset(skip)
        # The lowest status that gets a log line: every request is counted and timed in the metrics anyway, so
        # by default only the ones an operator must look at (4xx, 5xx) pay for formatting and logging.
        self.log_from = {"all": 0, "errors": 400, "off": None}[access_log]
        self._requests, self._latency = Children(metrics.requests), Children(metrics.latency)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_and_watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), VERSION_HEADER]
            await send(message)

        try:
            await self.app(scope, receive, send_and_watch)
        finally:
            self._record(scope, status, time.perf_counter() - started)

    def _record(self, scope: HTTPScope, status: int, duration: float) -> None:
        method = scope["method"]
        route = scope.get("path_template") or "unmatched"
        if route not in self.skip:
            code = str(status)
            self._requests(method, route, code).inc()
            self._latency(method, route, code).observe(duration)
        if self.log_from is None or status < self.log_from or not access_log.isEnabledFor(logging.INFO):
            return
        state: dict[str, Any] = scope.get("state") or {}
        access_log.info(
            json.dumps(
                {
                    "method": method,
                    "path": scope["path"],
                    "route": route,
                    "status": status,
                    "duration_ms": round(duration * 1000, 3),
                    "tenant": state.get("tenant"),
                    "user_agent": header(scope, b"user-agent"),
                },
                ensure_ascii=True,
            )
        )
