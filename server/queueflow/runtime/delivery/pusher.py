"""Pusher: one endpoint's deliveries in this process.

Its claim loop takes slots first (`Endpoints.take_slots`: as many as the endpoint's `concurrency` leaves beside
every process's deliveries in flight), then claims that many of the tenant's due jobs of its queues (and tasks)
through the engine's ordinary lease (`Engine.lease` scoped to the tenant: priority, fairness, flow control,
sequences and limits hold as for any lessee), gives back the slots it found no job for, and delivers each job in a
task of its own. With nothing to claim it parks on the queues' wake-ups (or the next due time, or the safety
poll), as a long-polling lessee does; with no slot free, until one of its own deliveries ends or the poll
(another process's may have ended).

A delivery holds its job's lease and its slot while its request is in flight, extending both every third of the
lease; the request is bounded by the endpoint's `timeout_seconds` and the job's deadline, whichever comes first.
Its answer decides (`core.endpoints.answer_outcome`): complete with the JSON body as result, or fail with the
job's backoff (`Retry-After` honoured), or dead-letter (`QueueFlow-Retryable: false`). A process that dies
mid-request leaves the job to the janitor (its lease expires) and the slot to its hold's end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from datetime import datetime

from queueflow.core.endpoints import DeliveryVerdict, Endpoint, Outcome, answer_outcome
from queueflow.core.errors import QueueFlowError, StoreUnavailable, ValidationError
from queueflow.core.types import Job
from queueflow.engine import Engine
from queueflow.runtime.delivery.client import Sender, describe
from queueflow.runtime.wakeups import Wakeups

log = logging.getLogger("queueflow.delivery")

LEASE_SECONDS = 30.0
"""A delivery's lease (and slot hold) at most: what a dead process keeps its job (and slot) for."""
GRACE_SECONDS = 5.0
"""How much longer than the request may last a lease runs, so a request that takes all its time still answers
under the lease."""
BUSY_POLL = 1.0
"""How soon a pusher with no slot free asks again (another process's deliveries may have ended)."""

Observer = Callable[[Endpoint, str, float], None]
"""(endpoint, outcome: completed | retrying | dead_letter | lease_lost, seconds): a delivery's end, for metrics."""


class Pusher:
    def __init__(
        self,
        engine: Engine,
        wakeups: Wakeups,
        endpoint: Endpoint,
        *,
        max_body_bytes: int,
        poll: float,
        observe: Observer | None = None,
    ) -> None:
        self.engine = engine
        self.wakeups = wakeups
        self.endpoint = endpoint
        """As last read; a change takes effect with the next claim (a new queue or task set restarts the loop)."""
        self.poll = poll
        self.observe = observe
        self.sender = Sender(engine.endpoints, max_body_bytes=max_body_bytes)
        self.deliveries: set[asyncio.Task[None]] = set()
        self._freed = asyncio.Event()
        self._claiming: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._claiming = asyncio.create_task(self._claim_loop(), name=f"queueflow-push-{self.endpoint.name}")

    def update(self, endpoint: Endpoint) -> None:
        """The endpoint as read again: its queues or tasks changed restart the claim loop on them."""
        moved = (endpoint.queues, endpoint.task_names) != (self.endpoint.queues, self.endpoint.task_names)
        self.endpoint = endpoint
        if moved and self._claiming is not None:
            self._claiming.cancel()
            self.start()

    async def stop_claiming(self) -> None:
        """No new deliveries (the endpoint was paused or deleted); those in flight go on."""
        task, self._claiming = self._claiming, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def drain(self) -> None:
        """Wait for the deliveries in flight, then close the pool."""
        if self.deliveries:
            await asyncio.gather(*self.deliveries, return_exceptions=True)
        await self.sender.close()

    async def close(self) -> None:
        """The process stops: no new deliveries, and those in flight cancelled (their jobs are left to the janitor
        when their lease ends; their slots to their hold's end)."""
        await self.stop_claiming()
        for task in self.deliveries:
            task.cancel()
        await self.drain()

    # --- claiming -------------------------------------------------------------------------------------------------

    async def _claim_loop(self) -> None:
        endpoint = self.endpoint
        with self.wakeups.watching(endpoint.queues) as watch:
            while True:
                try:
                    claimed_at = self.engine.clock.now()
                    room = self.endpoint.concurrency - len(self.deliveries)
                    jobs = await self._claim(room) if room > 0 else None
                except StoreUnavailable as exc:
                    log.warning("endpoint %s: cannot claim, the store is unavailable: %s", endpoint.name, exc)
                    await watch.wait(self.poll)
                    continue
                except Exception:  # never let one bad pass end the endpoint's deliveries for good
                    log.exception("endpoint %s: claiming failed", endpoint.name)
                    await watch.wait(self.poll)
                    continue
                if jobs is None:  # no slot free: wait for one of ours, or poll for another process's
                    self._freed.clear()
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(BUSY_POLL):
                            await self._freed.wait()
                elif not jobs:
                    await watch.wait(await self._idle_wait(claimed_at))

    async def _claim(self, room: int) -> list[Job] | None:
        """The jobs claimed, each already delivering; None when no slot was free."""
        endpoint = self.endpoint
        lease = lease_seconds(endpoint)
        slots = await self.engine.endpoints.take_slots(endpoint.id, room, lease)
        if not slots:
            return None
        try:
            jobs = await self.engine.lease(
                endpoint.queues,
                max_jobs=len(slots),
                lease_seconds=lease,
                task_names=endpoint.task_names,
                scope=endpoint.tenant_id,
            )
        except BaseException:
            await _quietly(self.engine.endpoints.release_slots(slots))
            raise
        await self.engine.endpoints.release_slots(slots[len(jobs) :])
        for job, slot in zip(jobs, slots, strict=False):
            task = asyncio.create_task(self._deliver(endpoint, job, slot), name=f"queueflow-deliver-{job.id}")
            self.deliveries.add(task)
            task.add_done_callback(self._ended)
        return jobs

    def _ended(self, task: asyncio.Task[None]) -> None:
        self.deliveries.discard(task)
        self._freed.set()

    async def _idle_wait(self, claimed_at: datetime) -> float:
        wait = self.poll
        due = await self.engine.next_due(self.endpoint.queues, after=claimed_at)
        if due is not None:
            wait = min(wait, max((due - self.engine.clock.now()).total_seconds(), 0.0))
        return wait

    # --- delivering -----------------------------------------------------------------------------------------------

    async def _deliver(self, endpoint: Endpoint, job: Job, slot: str) -> None:
        started = time.monotonic()
        outcome = await self._post(endpoint, job, slot)
        # The request is over: its slot is free, and the counters (which count answers) say so before the job's
        # outcome is visible, so whoever sees the job finished sees the endpoint's counters moved too.
        await _quietly(self.engine.endpoints.delivered(endpoint.id, slot, outcome.error))
        try:
            status = await self._record(job, outcome)
        except QueueFlowError as exc:
            status = "lease_lost" if not isinstance(exc, StoreUnavailable) else "unrecorded"
            log.warning("endpoint %s: job %s's delivery could not be recorded: %s", endpoint.name, job.id, exc)
        if outcome.error is not None:
            log.warning(
                "delivery failed: endpoint=%s tenant=%s job=%s delivery=%d outcome=%s error=%s",
                endpoint.name, endpoint.tenant_id, job.id, job.delivery_count, status, outcome.error,
            )  # fmt: skip
        if self.observe is not None:
            self.observe(endpoint, status, time.monotonic() - started)

    async def _post(self, endpoint: Endpoint, job: Job, slot: str) -> Outcome:
        seconds = request_seconds(endpoint, job, self.engine.clock.now())
        holding = asyncio.create_task(self._hold(endpoint, job, slot))
        try:
            answer = await self.sender.send(endpoint, job, seconds)
        except Exception as exc:  # a time-out, a refusal, any connection error: the delivery failed
            return Outcome(DeliveryVerdict.RETRY, error=describe(exc, seconds))
        finally:
            holding.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await holding
        return answer_outcome(answer.status, answer.headers, answer.body)

    async def _hold(self, endpoint: Endpoint, job: Job, slot: str) -> None:
        """Extend the job's lease and the slot every third of the lease, for as long as the request runs (the store
        caps the lease at the job's deadline)."""
        lease = lease_seconds(endpoint)
        assert job.lease_token is not None
        while True:
            await asyncio.sleep(lease / 3)
            try:
                await self.engine.heartbeat(job.id, job.lease_token, lease_seconds=lease)
                await self.engine.endpoints.hold_slots([slot], lease)
            except QueueFlowError as exc:
                log.warning("endpoint %s: job %s's lease could not be extended: %s", endpoint.name, job.id, exc)

    async def _record(self, job: Job, outcome: Outcome) -> str:
        assert job.lease_token is not None
        if outcome.verdict is DeliveryVerdict.COMPLETE:
            try:
                await self.engine.complete(job.id, job.lease_token, outcome.result)
            except ValidationError:  # a JSON body no store can keep: the work is done all the same
                await self.engine.complete(job.id, job.lease_token, None)
            return "completed"
        failed = await self.engine.fail(
            job.id,
            job.lease_token,
            outcome.error or "the delivery failed",
            retryable=outcome.verdict is DeliveryVerdict.RETRY,
            retry_after_seconds=outcome.retry_after_seconds,
        )
        return str(failed.status)


def lease_seconds(endpoint: Endpoint) -> float:
    return min(LEASE_SECONDS, endpoint.timeout_seconds + GRACE_SECONDS)


def request_seconds(endpoint: Endpoint, job: Job, now: datetime) -> float:
    """How long the request may take: the endpoint's timeout, never past the job's deadline."""
    seconds = float(endpoint.timeout_seconds)
    deadline = job.deadline
    if deadline is not None:
        seconds = min(seconds, (deadline - now).total_seconds())
    return max(seconds, 0.001)


async def _quietly(call: object) -> None:
    """Await a bookkeeping call whose failure must not hide what the caller is doing (a slot left to its hold)."""
    try:
        await call  # type: ignore[misc]
    except QueueFlowError as exc:
        log.warning("delivery bookkeeping failed (the slot is freed when its hold ends): %s", exc)
