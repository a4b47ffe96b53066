"""Worker routes: lease (with long-polling), heartbeat, complete, fail and the batched ack."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from litestar import Controller, Request, post
from litestar.di import NamedDependency
from litestar.params import JSONBody

from queueflow.api.auth import WORKER
from queueflow.api.body import StrictBody
from queueflow.api.observe import Metrics
from queueflow.api.problems import problem_responses
from queueflow.api.schemas import (
    AckRequest,
    AckResult,
    AckResults,
    CompleteRequest,
    FailRequest,
    Heartbeat,
    HeartbeatRequest,
    Job,
    JobIdPath,
    LeasedJob,
    LeasedJobs,
    LeaseRequest,
)
from queueflow.core import types as domain
from queueflow.engine import Engine
from queueflow.runtime.wakeups import Wakeups
from queueflow.settings import Settings

WORKER_ERRORS = (400, 401, 403, 413, 503)


async def lease_or_wait(
    engine: Engine, wakeups: Wakeups, request: LeaseRequest, settings: Settings, client: Departure | None = None
) -> list[domain.Job]:
    """Claim now; if nothing is claimable, park until one of the queues gets work or `wait_seconds` pass.

    The deadline is wall-clock (monotonic) time, not the engine's clock: a long-poll is about the caller's
    patience. Each wait is capped at the safety poll, so a lost wake-up costs at most that long. A server that is
    shutting down (`wakeups.closing`) answers a parked poll at once with no jobs, so it never waits one out; a
    poll whose `client` has gone claims nothing more, since no one would receive (and complete) the jobs.
    """
    deadline = time.monotonic() + min(request.wait_seconds, settings.lease_wait_limit)
    parked = client.woken if client is not None else None
    while True:
        jobs = await engine.lease(request.queues, max_jobs=request.max_jobs, lease_seconds=request.lease_seconds)
        remaining = deadline - time.monotonic()
        if jobs or remaining <= 0 or wakeups.closing or (client is not None and client.gone):
            return jobs
        # No await between the empty claim and parking, so an insert on this event loop cannot slip between.
        if parked is not None:
            parked.clear()
        await wakeups.wait(request.queues, min(remaining, settings.safety_poll), event=parked)
        if wakeups.closing or (client is not None and client.gone):
            return []


class Departure:
    """Watches a long-poll's connection: `gone` once its client disconnected, which also sets `woken`."""

    def __init__(self) -> None:
        self.gone = False
        self.woken = asyncio.Event()

    async def watch(self, http: Request[Any, Any, Any]) -> None:
        # The body has been read, so the next ASGI message is the disconnect (the server sends it at once when
        # the client closes the connection).
        while (await http.receive())["type"] != "http.disconnect":
            pass
        self.gone = True
        self.woken.set()


class WorkerController(Controller):
    path = "/worker"
    tags = ("worker",)
    opt = WORKER

    @post(
        "/lease",
        operation_id="leaseJobs",
        dto=StrictBody[LeaseRequest],
        return_dto=None,
        status_code=200,
        responses=problem_responses(*WORKER_ERRORS),
    )
    async def lease_jobs(
        self,
        engine: NamedDependency[Engine],
        metrics: NamedDependency[Metrics],
        wakeups: NamedDependency[Wakeups],
        settings: NamedDependency[Settings],
        data: JSONBody[LeaseRequest],
        request: Request[Any, Any, Any],
    ) -> LeasedJobs:
        """Claim up to `max_jobs` jobs; with `wait_seconds`, long-poll until work arrives."""
        if data.wait_seconds > 0:
            client = Departure()
            watcher = asyncio.create_task(client.watch(request))
            try:
                jobs = await lease_or_wait(engine, wakeups, data, settings, client)
            finally:
                watcher.cancel()
        else:
            jobs = await lease_or_wait(engine, wakeups, data, settings)
        metrics.jobs_leased(jobs)
        return LeasedJobs([LeasedJob.from_domain(job) for job in jobs])

    @post(
        "/jobs/{job_id:str}/heartbeat",
        operation_id="heartbeatJob",
        dto=StrictBody[HeartbeatRequest],
        return_dto=None,
        status_code=200,
        responses=problem_responses(*WORKER_ERRORS, 404, 409),
    )
    async def heartbeat_job(
        self, engine: NamedDependency[Engine], job_id: JobIdPath, data: JSONBody[HeartbeatRequest]
    ) -> Heartbeat:
        """Extend a held lease (never past the delivery's timeout)."""
        job = await engine.heartbeat(job_id, data.lease_token, lease_seconds=data.lease_seconds)
        assert job.locked_until is not None  # a held lease always has an end
        return Heartbeat(job.locked_until)

    @post(
        "/jobs/{job_id:str}/complete",
        operation_id="completeJob",
        dto=StrictBody[CompleteRequest],
        return_dto=None,
        status_code=200,
        responses=problem_responses(*WORKER_ERRORS, 404, 409),
    )
    async def complete_job(
        self,
        engine: NamedDependency[Engine],
        metrics: NamedDependency[Metrics],
        job_id: JobIdPath,
        data: JSONBody[CompleteRequest],
    ) -> Job:
        """Complete a leased job with its result."""
        job = await engine.complete(job_id, data.lease_token, data.result)
        metrics.job_settled(job.queue_name, job.status)
        return Job.from_domain(job)

    @post(
        "/jobs/{job_id:str}/fail",
        operation_id="failJob",
        dto=StrictBody[FailRequest],
        return_dto=None,
        status_code=200,
        responses=problem_responses(*WORKER_ERRORS, 404, 409),
    )
    async def fail_job(
        self,
        engine: NamedDependency[Engine],
        metrics: NamedDependency[Metrics],
        job_id: JobIdPath,
        data: JSONBody[FailRequest],
    ) -> Job:
        """Record a failed delivery: retry with backoff while budget is left, else dead-letter."""
        job = await engine.fail(
            job_id, data.lease_token, data.error, retryable=data.retryable, retry_after_seconds=data.retry_after_seconds
        )
        metrics.job_settled(job.queue_name, job.status)
        return Job.from_domain(job)

    @post(
        "/ack",
        operation_id="ackJobs",
        dto=StrictBody[AckRequest],
        return_dto=None,
        status_code=200,
        responses=problem_responses(*WORKER_ERRORS),
    )
    async def ack_jobs(
        self, engine: NamedDependency[Engine], metrics: NamedDependency[Metrics], data: JSONBody[AckRequest]
    ) -> AckResults:
        """Complete and fail many jobs at once; each item succeeds or is `lease_lost` on its own."""
        results = await engine.ack(
            [domain.Completion(item.id, item.lease_token, item.result) for item in data.complete],
            [item.to_domain(item.id) for item in data.fail],
        )
        for result in results:
            if result.outcome is domain.AckOutcome.OK and result.queue_name and result.status:
                metrics.job_settled(result.queue_name, result.status)
        return AckResults([AckResult.from_domain(result) for result in results])
