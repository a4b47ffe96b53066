"""Pusher: one endpoint's deliveries in this process.

Its claim loop takes slots first (`Endpoints.take_slots`: as many as the endpoint's `concurrency` leaves beside
every process's deliveries in flight), then claims that many of the tenant's due jobs of its queues (and tasks)
through the engine's ordinary lease (`Engine.lease` scoped to the tenant: priority, fairness, flow control,
sequences and limits hold as for any lessee), gives back the slots it found no job for, and delivers each job in a
task of its own. With nothing to claim it parks on the queues' wake-ups (or the next due time, or the safety
poll), as a long-polling lessee does; with no slot free, until one of its own deliveries ends or the poll
(another process's may have ended).

A delivery holds its job's lease and its slot while its request is in flight, the pusher extending those of every
request in flight together every third of the longest lease (`_hold_loop`); the request is bounded by the
endpoint's `timeout_seconds` and the job's deadline, whichever comes first.
Its answer decides (`core.endpoints.answer_outcome`): complete with the JSON body as result, or fail with the
job's backoff (`Retry-After` honoured), or dead-letter (`QueueFlow-Retryable: false`), recorded with the answers of
the deliveries that ended beside it in one ack (and their slots and counters in one statement). A process that dies
mid-request leaves the job to the janitor (its lease expires) and the slot to its hold's end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from queueflow.core.endpoints import DeliveryVerdict, Endpoint, Outcome, answer_outcome
from queueflow.core.errors import QueueFlowError, StoreUnavailable
from queueflow.core.jsonvalue import result_errors
from queueflow.core.types import AckOutcome, Completion, FailureRequest, HeldLease, Job
from queueflow.core.validation import MAX_BATCH
from queueflow.engine import Engine
from queueflow.runtime.delivery.client import Sender, describe
from queueflow.runtime.wakeups import Wakeups, Watch

log = logging.getLogger("queueflow.delivery")

LEASE_SECONDS = 30.0
"""A delivery's lease (and slot hold) at most: what a dead process keeps its job (and slot) for."""
GRACE_SECONDS = 5.0
"""How much longer than the request may last a lease runs, so a request that takes all its time still answers
under the lease."""
RECORD_SECONDS = 0.005
"""How long the recorder waits for more deliveries to end before it records those that have (`Pusher._flush`)."""
GATHER_SECONDS = 0.005
"""How long a pusher with a few slots free waits for more deliveries to end before it claims (`Pusher._gather`)."""
HOLD_EVERY = LEASE_SECONDS / 3
"""How often the requests in flight have their leases and slots extended (`Pusher._hold_loop`)."""
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
        self._requests: dict[str, _InFlight] = {}
        """The requests in flight, by job id: their leases and slots, which `_hold_loop` extends."""
        self._holding: asyncio.Task[None] | None = None
        self._unrecorded: list[_Answered] = []
        """Deliveries answered (or failed) whose outcome is not recorded yet: they still hold their slots."""
        self._to_record = asyncio.Event()
        self._freed = asyncio.Event()
        self._claiming: asyncio.Task[None] | None = None
        self._recording: asyncio.Task[None] | None = None
        self._stopping = False
        self._closing = False
        self._watch: Watch | None = None
        """The claim loop's watch on the endpoint's queues, while it has one."""

    def start(self) -> None:
        self._recording = asyncio.create_task(self._record_loop(), name=f"queueflow-record-{self.endpoint.name}")
        self._claiming = asyncio.create_task(self._claim_loop(), name=f"queueflow-push-{self.endpoint.name}")
        self._holding = asyncio.create_task(self._hold_loop(), name=f"queueflow-hold-{self.endpoint.name}")

    def update(self, endpoint: Endpoint) -> None:
        """The endpoint as read again; new queues or tasks are watched and claimed from the claim loop's next pass."""
        self.endpoint = endpoint
        self._wake()

    async def stop_claiming(self) -> None:
        """No new deliveries (the endpoint was paused or deleted); those in flight go on. A claim in progress is
        not cancelled but completed (its jobs delivered, its unused slots given back): cancelled, the slots it had
        taken would stay held until their hold ended, and its jobs until their lease did."""
        task, self._claiming = self._claiming, None
        if task is not None:
            self._stopping = True
            self._wake()
            await task

    def _wake(self) -> None:
        self._freed.set()
        if self._watch is not None:
            self._watch.event.set()

    async def drain(self) -> None:
        """Wait for the deliveries in flight, record their outcomes, then close the pool."""
        if self.deliveries:
            await asyncio.gather(*self.deliveries, return_exceptions=True)
        holding, self._holding = self._holding, None
        if holding is not None:  # no request is left to hold
            holding.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await holding
        # The recorder ends once it has recorded what is left (cancelled, it could cut an ack short).
        task, self._recording = self._recording, None
        self._closing = True
        self._to_record.set()
        if task is not None:
            await task
        await self._flush()
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
        while not self._stopping:
            endpoint = self.endpoint
            with self.wakeups.watching(endpoint.queues) as watch:
                self._watch = watch
                while not self._stopping and _same_work(endpoint, self.endpoint):
                    await self._claim_pass(watch)
            self._watch = None

    async def _claim_pass(self, watch: Watch) -> None:
        """Claim as much as there is room for, or wait: for a slot, for work, or for the safety poll."""
        try:
            await self._gather()
            self._freed.clear()  # before the claim: a slot freed while it runs wakes the wait below at once
            claimed_at = self.engine.clock.now()
            room = self.endpoint.concurrency - len(self.deliveries) - len(self._unrecorded)
            jobs = await self._claim(room) if room > 0 else None
        except StoreUnavailable as exc:
            log.warning("endpoint %s: cannot claim, the store is unavailable: %s", self.endpoint.name, exc)
            await watch.wait(self.poll)
            return
        except Exception:  # never let one bad pass end the endpoint's deliveries for good
            log.exception("endpoint %s: claiming failed", self.endpoint.name)
            await watch.wait(self.poll)
            return
        if self._stopping:
            return
        if jobs is None:  # no slot free: wait for one of ours, or poll for another process's
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(BUSY_POLL):
                    await self._freed.wait()
        elif not jobs:
            await watch.wait(await self._idle_wait(claimed_at))

    async def _gather(self) -> None:
        """While deliveries run and only a few slots are free, wait a moment (`GATHER_SECONDS`) for more of them to
        end: a backlog is then claimed a batch at a time (one slot transaction and one claim for several jobs),
        not one job per ended delivery."""
        batch = max(1, self.endpoint.concurrency // 4)
        deadline = asyncio.get_running_loop().time() + GATHER_SECONDS
        while self.deliveries and 0 < self.endpoint.concurrency - len(self.deliveries) - len(self._unrecorded) < batch:
            self._freed.clear()
            try:
                async with asyncio.timeout_at(deadline):
                    await self._freed.wait()
            except TimeoutError:
                return

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
        for job, slot in zip(jobs, slots, strict=False):
            task = asyncio.create_task(self._deliver(endpoint, job, slot), name=f"queueflow-deliver-{job.id}")
            self.deliveries.add(task)
            task.add_done_callback(self._ended)
        # The slots no job was found for go back while the requests are on their way, not before they start (on an
        # idle endpoint that round trip was a sixth of enqueue → delivery received).
        await _quietly(self.engine.endpoints.release_slots(slots[len(jobs) :]))
        return jobs

    def _ended(self, task: asyncio.Task[None]) -> None:
        # Its slot is freed when its outcome is recorded (`_flush`, which wakes the claim loop), not now.
        self.deliveries.discard(task)

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
        self._unrecorded.append(_Answered(endpoint, job, slot, outcome, time.monotonic() - started))
        self._to_record.set()

    async def _post(self, endpoint: Endpoint, job: Job, slot: str) -> Outcome:
        seconds = request_seconds(endpoint, job, self.engine.clock.now())
        assert job.lease_token is not None
        self._requests[job.id] = _InFlight(job.id, job.lease_token, slot, lease_seconds(endpoint))
        try:
            answer = await self.sender.send(endpoint, job, seconds)
        except Exception as exc:  # a time-out, a refusal, any connection error: the delivery failed
            return Outcome(DeliveryVerdict.RETRY, error=describe(exc, seconds))
        finally:
            del self._requests[job.id]
        return answer_outcome(answer.status, answer.headers, answer.body)

    async def _hold_loop(self) -> None:
        """Every `HOLD_EVERY` seconds, extend the lease and the slot of every request in flight, all in one
        heartbeat and one slot statement per lease length (the store caps a lease at its job's deadline). A request
        lasts at most the endpoint's `timeout_seconds`, and its lease that plus `GRACE_SECONDS` up to
        `LEASE_SECONDS`: only a request of a longer timeout needs it, and a tick every third of the longest lease
        reaches each before its lease ends. One loop, not a task per delivery: that was a task, a timer and a
        cancellation for every request, nearly all of which ended before their first extension."""
        while True:
            await asyncio.sleep(HOLD_EVERY)
            await self.hold_in_flight()

    async def hold_in_flight(self) -> None:
        """One tick of the hold: every request in flight has its lease and slot extended from now."""
        by_lease: dict[float, list[_InFlight]] = {}
        for request in self._requests.values():
            by_lease.setdefault(request.lease_seconds, []).append(request)
        for lease, requests in by_lease.items():
            for start in range(0, len(requests), MAX_BATCH):
                await self._extend(requests[start : start + MAX_BATCH], lease)

    async def _extend(self, requests: list[_InFlight], lease: float) -> None:
        try:
            results = await self.engine.heartbeat_many(
                [HeldLease(request.job_id, request.lease_token) for request in requests], lease_seconds=lease
            )
            await self.engine.endpoints.hold_slots([request.slot for request in requests], lease)
        except QueueFlowError as exc:
            log.warning("endpoint %s: %d leases could not be extended: %s", self.endpoint.name, len(requests), exc)
            return
        for result in results:
            if result.locked_until is None:
                log.warning("endpoint %s: job %s's lease was lost in flight", self.endpoint.name, result.id)

    # --- recording ------------------------------------------------------------------------------------------------

    async def _record_loop(self) -> None:
        """Record the deliveries that ended, a batch at a time: those that end within `RECORD_SECONDS` of each other
        share one statement for their slots and counters and one ack for their jobs (as a worker's batched ack)."""
        while True:
            await self._to_record.wait()
            self._to_record.clear()
            if not self._closing:
                await asyncio.sleep(RECORD_SECONDS)
            try:
                await self._flush()
            except Exception:  # never let one bad batch end the endpoint's recording for good
                log.exception("endpoint %s: recording deliveries failed", self.endpoint.name)
            if self._closing:
                return

    async def _flush(self) -> None:
        batch, self._unrecorded = self._unrecorded, []
        if not batch:
            return
        # The requests are over: their slots are free, and the counters (which count answers) say so before the
        # jobs' outcomes are visible, so whoever sees a job finished sees the endpoint's counters moved too.
        await _quietly(
            self.engine.endpoints.finished(self.endpoint.id, [(item.slot, item.outcome.error) for item in batch])
        )
        self._freed.set()
        statuses = await self._ack(batch)
        for item in batch:
            status = statuses.get(item.job.id, "unrecorded")
            if item.outcome.error is not None:
                log.warning(
                    "delivery failed: endpoint=%s tenant=%s job=%s delivery=%d outcome=%s error=%s",
                    item.endpoint.name, item.endpoint.tenant_id, item.job.id, item.job.delivery_count, status,
                    item.outcome.error,
                )  # fmt: skip
            if self.observe is not None:
                self.observe(item.endpoint, status, item.seconds)

    async def _ack(self, batch: list[_Answered]) -> dict[str, str]:
        """Complete and fail the batch's jobs in one ack; each job's status after it (`lease_lost` where the lease
        was gone)."""
        complete: list[Completion] = []
        fail: list[FailureRequest] = []
        for item in batch:
            token, outcome = item.job.lease_token or "", item.outcome
            if outcome.verdict is DeliveryVerdict.COMPLETE:
                # A JSON body no store can keep is no result, but the work is done all the same.
                result = None if result_errors(outcome.result, ()) else outcome.result
                complete.append(Completion(item.job.id, token, result))
            else:
                fail.append(
                    FailureRequest(
                        job_id=item.job.id,
                        lease_token=token,
                        error=outcome.error or "the delivery failed",
                        retryable=outcome.verdict is DeliveryVerdict.RETRY,
                        retry_after_seconds=outcome.retry_after_seconds,
                    )
                )
        try:
            results = await self.engine.ack(complete, fail)
        except QueueFlowError as exc:
            log.warning("endpoint %s: %d deliveries could not be recorded: %s", self.endpoint.name, len(batch), exc)
            return {}
        return {
            result.id: str(result.status) if result.outcome is AckOutcome.OK else "lease_lost" for result in results
        }


@dataclass(frozen=True, slots=True)
class _Answered:
    endpoint: Endpoint
    job: Job
    slot: str
    outcome: Outcome
    seconds: float
    """From the claim's hand-over to the answer (or its absence)."""


@dataclass(frozen=True, slots=True)
class _InFlight:
    job_id: str
    lease_token: str
    slot: str
    lease_seconds: float


def _same_work(endpoint: Endpoint, now: Endpoint) -> bool:
    return (endpoint.queues, endpoint.task_names) == (now.queues, now.task_names)


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
