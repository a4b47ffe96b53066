"""Worker routes: lease (with long-polling), heartbeat, complete, fail, the batched heartbeat and ack, and release."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from litestar import Controller, Request, post
from litestar.params import JSONBody
from msgspec import UNSET

from queueflow.api.auth import WORKER, worker_scope
from queueflow.api.body import StrictBody
from queueflow.api.problems import problem_responses
from queueflow.api.schemas.common import JobIdPath
from queueflow.api.schemas.jobs import Job
from queueflow.api.schemas.worker import (
    AckRequest,
    AckResult,
    AckResults,
    CompleteRequest,
    FailRequest,
    Heartbeat,
    HeartbeatBatch,
    HeartbeatRequest,
    HeartbeatResult,
    HeartbeatResults,
    LeasedJob,
    LeasedJobs,
    LeaseRequest,
    ReleaseRequest,
    ReleaseResults,
)
from queueflow.api.schemas.workflows import AddedSteps, AddStepsRequest, WorkflowStep
from queueflow.api.services import services_of
from queueflow.api.tracing import link_leased
from queueflow.core import types as domain
from queueflow.engine import Engine
from queueflow.runtime import leasing
from queueflow.runtime.leasing import LeaseAsk
from queueflow.runtime.wakeups import Wakeups, Watch
from queueflow.settings import Settings

WORKER_ERRORS = (400, 401, 403, 413, 503)


async def lease_or_wait(
    engine: Engine,
    wakeups: Wakeups,
    request: LeaseRequest,
    settings: Settings,
    client: Departure | None = None,
    scope: str | None = None,
    claiming: Callable[[], object] = leasing.never,
) -> list[domain.Job]:
    """Claim now; if nothing is claimable, park until one of the queues gets work, the next delayed job or retry
    of those queues becomes due, or `wait_seconds` pass (`runtime.leasing.lease_or_wait`, which the in-process
    runner's idle waits share).

    A server that is shutting down (`wakeups.closing`) answers a parked poll at once with no jobs, so it never
    waits one out; a lease whose `client` has gone claims nothing more, since no one would receive (and complete)
    the jobs.
    """
    ask = LeaseAsk(request.queues, request.max_jobs, request.lease_seconds, request.task_names, scope)
    if client is not None and client.gone:
        return []
    if not request_waits(request, settings):
        return await ask.claim(engine)
    deadline = time.monotonic() + min(request.wait_seconds, settings.lease_wait_limit)
    # Watching from before the first claim, so work that arrives between a claim and the wait is never missed.
    with wakeups.watching(request.queues) as watch:
        if client is not None:
            client.wakes(watch)
        return await leasing.lease_or_wait(
            engine,
            watch,
            ask,
            safety_poll=settings.safety_poll,
            deadline=deadline,
            stopped=lambda: wakeups.closing or (client is not None and client.gone),
            claiming=claiming,
        )


def request_waits(request: LeaseRequest, settings: Settings) -> bool:
    """Whether a lease that finds nothing to claim waits for work (a long-poll) rather than answers at once."""
    return request.wait_seconds > 0 and settings.lease_wait_limit > 0


class Departure:
    """Watches a long-poll's connection: `gone` once its client disconnected, which also wakes its watch."""

    def __init__(self) -> None:
        self.gone = False
        self._watch: Watch | None = None

    def wakes(self, watch: Watch) -> None:
        self._watch = watch
        if self.gone:
            watch.event.set()

    async def watch(self, http: Request[Any, Any, Any]) -> None:
        # The body has been read, so the next ASGI message is the disconnect (the server sends it at once when
        # the client closes the connection).
        while (await http.receive())["type"] != "http.disconnect":
            pass
        self.gone = True
        if self._watch is not None:
            self._watch.event.set()


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
    async def lease_jobs(self, data: JSONBody[LeaseRequest], request: Request[Any, Any, Any]) -> LeasedJobs:
        """Claim up to `max_jobs` jobs; with `wait_seconds`, long-poll until work arrives."""
        services = services_of(request)
        engine, wakeups, settings = services.engine, services.wakeups, services.settings
        # A worker that stops may close a lease request whose claim is under way, and a claim answered into a closed
        # connection strands its jobs until their leases expire, at the cost of a retry each: so a lease watches its
        # client. A long-poll does from the start (a departure ends its wait). One that does not wait needs to know
        # only once its claim has taken jobs: a client that left during the claim has had its disconnect taken in
        # by then (uvicorn answers `receive` at once after one), and an empty claim has nothing to hand back, so an
        # empty lease starts no watcher at all (its task, its cancellation and their loop turns: about a tenth of
        # an empty lease's server CPU).
        client = Departure()
        waits = request_waits(data, settings)
        watcher = asyncio.create_task(client.watch(request)) if waits else None
        # When the claim that answers began, after the request arrived: the worker counts its leases from its
        # sending plus this (on the server's monotonic clock, a duration: the two machines' clocks never meet).
        arrived = claimed = time.monotonic()

        def claiming() -> None:
            nonlocal claimed
            claimed = time.monotonic()

        try:
            jobs = await lease_or_wait(engine, wakeups, data, settings, client, worker_scope(request), claiming)
            if jobs:
                watcher = watcher or asyncio.create_task(client.watch(request))
                # The last moment to notice a departure: nothing suspends between here and the answer's write.
                # One turn of the loop lets the watcher take in a disconnect that arrived with the claim's end.
                await asyncio.sleep(0)
        finally:
            if watcher is not None:
                watcher.cancel()
        if jobs and client.gone:
            # The client left before its answer went out: no one will receive these. Handed back uncounted, as
            # they were before this claim, they go to the next lessee now instead of waiting out their lease.
            # (A client that leaves once the answer is on its way loses it: nothing the server sees tells that
            # apart from a client that read it and then closed, so a worker must not close a lease in flight.)
            await engine.hand_back(jobs)
            jobs = []
        services.metrics.jobs_leased(jobs)
        link_leased(jobs)
        claimed_after = claimed - arrived
        return LeasedJobs([LeasedJob.from_domain(job, claimed_after) for job in jobs])

    @post(
        "/jobs/{job_id:str}/heartbeat",
        operation_id="heartbeatJob",
        dto=StrictBody[HeartbeatRequest],
        return_dto=None,
        status_code=200,
        responses=problem_responses(*WORKER_ERRORS, 404, 409),
    )
    async def heartbeat_job(
        self,
        job_id: JobIdPath,
        data: JSONBody[HeartbeatRequest],
        request: Request[Any, Any, Any],
    ) -> Heartbeat:
        """Extend a held lease (never past the delivery's timeout)."""
        services = services_of(request)
        job = await services.engine.heartbeat(
            job_id,
            data.lease_token,
            lease_seconds=data.lease_seconds,
            scope=worker_scope(request),
            progress=domain.UNCHANGED if data.progress is UNSET else data.progress,
        )
        assert job.locked_until is not None  # a held lease always has an end
        return Heartbeat(job.locked_until)

    @post(
        "/heartbeat",
        operation_id="heartbeatJobs",
        dto=StrictBody[HeartbeatBatch],
        return_dto=None,
        status_code=200,
        responses=problem_responses(*WORKER_ERRORS),
    )
    async def heartbeat_jobs(self, data: JSONBody[HeartbeatBatch], request: Request[Any, Any, Any]) -> HeartbeatResults:
        """Extend many held leases at once, recording each one's `progress` if given; each item is extended or
        `lease_lost` on its own."""
        services = services_of(request)
        results = await services.engine.heartbeat_many(
            data.to_domain(), lease_seconds=data.lease_seconds, scope=worker_scope(request)
        )
        return HeartbeatResults([HeartbeatResult.from_domain(result) for result in results])

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
        job_id: JobIdPath,
        data: JSONBody[CompleteRequest],
        request: Request[Any, Any, Any],
    ) -> Job:
        """Complete a leased job with its result."""
        services = services_of(request)
        job = await services.engine.complete(job_id, data.lease_token, data.result, scope=worker_scope(request))
        services.metrics.job_settled(job.queue_name, job.status)
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
        job_id: JobIdPath,
        data: JSONBody[FailRequest],
        request: Request[Any, Any, Any],
    ) -> Job:
        """Record a failed delivery: retry with backoff while budget is left, else dead-letter."""
        services = services_of(request)
        job = await services.engine.fail(
            job_id,
            data.lease_token,
            data.error,
            retryable=data.retryable,
            retry_after_seconds=data.retry_after_seconds,
            scope=worker_scope(request),
        )
        services.metrics.job_settled(job.queue_name, job.status)
        return Job.from_domain(job)

    @post(
        "/ack",
        operation_id="ackJobs",
        dto=StrictBody[AckRequest],
        return_dto=None,
        status_code=200,
        responses=problem_responses(*WORKER_ERRORS),
    )
    async def ack_jobs(self, data: JSONBody[AckRequest], request: Request[Any, Any, Any]) -> AckResults:
        """Complete and fail many jobs at once; each item succeeds or is `lease_lost` on its own."""
        services = services_of(request)
        results = await services.engine.ack(
            [domain.Completion(item.id, item.lease_token, item.result) for item in data.complete],
            [item.to_domain(item.id) for item in data.fail],
            scope=worker_scope(request),
        )
        services.metrics.jobs_settled(
            (result.queue_name, result.status)
            for result in results
            if result.outcome is domain.AckOutcome.OK and result.queue_name and result.status
        )
        return AckResults([AckResult.from_domain(result) for result in results])

    @post(
        "/release",
        operation_id="releaseJobs",
        dto=StrictBody[ReleaseRequest],
        return_dto=None,
        status_code=200,
        responses=problem_responses(*WORKER_ERRORS),
    )
    async def release_jobs(self, data: JSONBody[ReleaseRequest], request: Request[Any, Any, Any]) -> ReleaseResults:
        """Give back held jobs not started: each is claimable again at once, as before that delivery (no retry
        counted), or `lease_lost` on its own."""
        services = services_of(request)
        results = await services.engine.release(data.to_domain(), scope=worker_scope(request))
        return ReleaseResults([AckResult.from_domain(result) for result in results])

    @post(
        "/jobs/{job_id:str}/steps",
        operation_id="addWorkflowSteps",
        dto=StrictBody[AddStepsRequest],
        return_dto=None,
        status_code=201,
        responses=problem_responses(*WORKER_ERRORS, 404, 409),
    )
    async def add_workflow_steps(
        self,
        job_id: JobIdPath,
        data: JSONBody[AddStepsRequest],
        request: Request[Any, Any, Any],
    ) -> AddedSteps:
        """Add steps to the workflow of the running step whose job this is (the lease must be held): atomic, and
        safe to repeat (steps this step added before with the same definition are left as they are)."""
        services = services_of(request)
        steps = await services.engine.add_steps(job_id, data.lease_token, data.to_domain(), scope=worker_scope(request))
        return AddedSteps([WorkflowStep.from_domain(step) for step in steps])
