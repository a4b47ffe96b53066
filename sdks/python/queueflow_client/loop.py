"""`WorkerLoop`: the one lease/run/ack loop behind every Python worker — the SDK's `Worker` (jobs over HTTP) and
the server's in-process runner (jobs straight from its engine). Each supplies a `LeaseSource`; everything else is
here, written once:

- **slots and prefetch**: at most `concurrency` tasks run at once, and more jobs are leased ahead and wait their
  turn, so a free slot never waits for a round trip. How many: by default as many as the slots get through in
  two lease round trips (measured: tasks' durations and leases' round trips, averaged), at most 1000 — so short
  tasks are claimed by the hundred and long ones hardly ahead at all (a job waiting here is one another worker
  cannot take); `prefetch=n` fixes it at n. A lease asks for many jobs at once and only once half the places
  are free, so a busy worker sends few, large claims.
- **batched acks**: an outcome is queued when its task ends and its slot is freed at once; the queue is sent in
  one call when it reaches `ack_batch` or `ack_interval` after its first item, whichever comes first, one call
  at a time. A job whose outcome is still queued when the process dies is delivered again once its lease expires
  (at-least-once, as after any crash).
- **batched heartbeats**: every `heartbeat_every` one call extends every lease held, waiting ones included. A
  lease found lost (the job was cancelled, or reclaimed after expiring) tells its task: an async task is
  cancelled, a sync one sees `ctx.cancelled`; a waiting job is dropped. Nothing it does afterwards is recorded.
- **graceful drain**: `stop()` stops leasing (a parked lease is interrupted through its source, which must not
  lose what it claims), runs every job already held, records the outcomes and returns. With `drain_seconds`,
  tasks still running after that long are cancelled and their jobs left to their leases' expiry.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from queueflow_client.tasks import Delivery, Fatal, JobContext, Retry, TaskRegistry

__all__ = ["LeaseSource", "LeasedDelivery", "Outcome", "WorkerLoop"]

log = logging.getLogger("queueflow_client.worker")

MAX_BATCH = 1000
"""The most items the server takes in one lease, ack or heartbeat."""
SMOOTHING = 0.2
"""The weight of the newest sample in the running averages of task durations and lease round trips."""


class LeasedDelivery(Delivery, Protocol):
    """A leased job as a source hands it out: a `Delivery` with the token its claim minted."""

    @property
    def lease_token(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one delivery ended, to record: completed with `result` when `error` is None, else failed."""

    job_id: str
    lease_token: str
    result: Any = None
    error: str | None = None
    retryable: bool = True
    retry_after_seconds: float | None = None


class LeaseSource(Protocol):
    """Where a `WorkerLoop` gets jobs and records what became of them."""

    async def lease(self, max_jobs: int) -> Sequence[LeasedDelivery]:
        """Up to `max_jobs` jobs; when none is claimable, wait a while for work (possibly answering none).
        After `interrupt()` it answers at once, and never loses a job it claimed: what it claims it returns."""
        ...

    def interrupt(self) -> None:
        """The loop is stopping: a waiting `lease` answers now, and later ones answer none."""
        ...

    async def ack(self, outcomes: Sequence[Outcome]) -> Sequence[bool]:
        """Record the outcomes (at most `MAX_BATCH`); per item, whether the lease still held the job."""
        ...

    async def heartbeat(self, leases: Sequence[tuple[str, str]]) -> Sequence[bool]:
        """Extend the leases, (job id, token) pairs (at most `MAX_BATCH`); per item, whether it still held."""
        ...

    async def progress(self, job_id: str, token: str, value: Any) -> bool:
        """Extend one lease now and record `value` as its job's progress; whether it still held."""
        ...


class _Running:
    __slots__ = ("ctx", "dropped", "job", "started", "token")

    def __init__(self, job: LeasedDelivery, token: str, ctx: JobContext, started: float) -> None:
        self.job, self.token, self.ctx, self.started = job, token, ctx, started
        self.dropped = False
        """True when the outcome is not to be recorded (the lease was lost, or the drain ran out)."""


class _LoopLease:
    """What `ctx.heartbeat()` and `ctx.progress()` call: one heartbeat of this job's lease, now."""

    __slots__ = ("job_id", "loop", "token")

    def __init__(self, loop: WorkerLoop, job_id: str, token: str) -> None:
        self.loop, self.job_id, self.token = loop, job_id, token

    async def heartbeat(self) -> bool:
        (held,) = await self.loop.source.heartbeat([(self.job_id, self.token)])
        return held

    async def progress(self, value: Any) -> bool:
        return await self.loop.source.progress(self.job_id, self.token, value)


class WorkerLoop:
    def __init__(
        self,
        source: LeaseSource,
        tasks: TaskRegistry,
        *,
        concurrency: int = 10,
        prefetch: int | None = None,
        lease_seconds: float = 30.0,
        heartbeat_every: float | None = None,
        ack_batch: int = 100,
        ack_interval: float = 0.01,
        drain_seconds: float | None = None,
        error_pause: float = 1.0,
        name: str = "worker",
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if prefetch is not None and prefetch < 0:
            raise ValueError("prefetch must be at least 0")
        self.source = source
        self.tasks = tasks
        self.concurrency = concurrency
        self.prefetch = prefetch
        """None: adaptive (see the module docstring)."""
        self.heartbeat_every = heartbeat_every if heartbeat_every is not None else lease_seconds / 3
        self.ack_batch = max(1, min(ack_batch, MAX_BATCH))
        self.ack_interval = ack_interval
        self.drain_seconds = drain_seconds
        self.error_pause = error_pause
        self.name = name
        self.peak_held = 0
        """The most jobs held at once so far, waiting ones included (for tests and metrics)."""
        self.peak_running = 0
        self.ack_batches: list[int] = []
        """The size of every ack sent (for tests and metrics)."""
        self._waiting: deque[LeasedDelivery] = deque()
        self._running: dict[asyncio.Task[Any], _Running] = {}
        self._leases: dict[str, str] = {}  # job id → token, for every job held until its outcome is recorded
        self._outcomes: list[Outcome] = []
        self._room = asyncio.Event()
        self._idle = asyncio.Event()
        self._ack_due = asyncio.Event()
        self._ack_full = asyncio.Event()
        self._last_ack = False
        self._stopping = False
        self._tasks: list[asyncio.Task[None]] = []
        self._task_seconds: float | None = None
        self._lease_seconds: float | None = None

    @property
    def ahead(self) -> int:
        """How many jobs to hold beyond the running ones now."""
        if self.prefetch is not None:
            return self.prefetch
        if self._task_seconds is None or self._lease_seconds is None:
            return self.concurrency
        burn = self.concurrency / max(self._task_seconds, 1e-6)  # jobs a second the slots get through
        return min(MAX_BATCH, int(2 * burn * self._lease_seconds) + 1)

    @property
    def capacity(self) -> int:
        """The most jobs to hold: running and waiting."""
        return self.concurrency + self.ahead

    def _room_for_lease(self) -> int:
        """How many jobs to ask for now: 0 until half the places are free (so claims come in batches)."""
        capacity = self.capacity
        want = min(capacity - self.held, MAX_BATCH)
        return want if want >= max(1, capacity // 2) or (want > 0 and not self.held) else 0

    @property
    def held(self) -> int:
        """Jobs leased whose task has not ended: running, or waiting for a slot."""
        return len(self._waiting) + len(self._running)

    @property
    def running(self) -> int:
        return len(self._running)

    async def start(self) -> None:
        if self._tasks:
            return
        self._tasks = [
            asyncio.create_task(self._lease_loop(), name=f"queueflow-{self.name}-lease"),
            asyncio.create_task(self._ack_loop(), name=f"queueflow-{self.name}-acks"),
            asyncio.create_task(self._heartbeat_loop(), name=f"queueflow-{self.name}-heartbeats"),
        ]

    async def stop(self) -> None:
        """Stop leasing, run every job held, record the outcomes (see the module docstring), then return."""
        if not self._tasks:
            return
        lease_task, ack_task, heartbeat_task = self._tasks
        self._stopping = True
        self._room.set()
        self.source.interrupt()
        await _settled(lease_task)
        if self.held:
            log.info("%s: finishing %d held jobs", self.name, self.held)
            self._idle.clear()
            if self.held:
                try:
                    async with asyncio.timeout(self.drain_seconds):
                        await self._idle.wait()
                except TimeoutError:
                    self._abandon()
        self._last_ack = True
        self._ack_due.set()
        self._ack_full.set()
        await _settled(ack_task)
        heartbeat_task.cancel()
        await _settled(heartbeat_task)
        self._tasks = []

    def _abandon(self) -> None:
        late = len(self._running) + len(self._waiting)
        log.warning("%s: %d jobs outlived the %.0f s drain; their leases expire", self.name, late, self.drain_seconds)
        for job in self._waiting:
            self._leases.pop(job.id, None)
        self._waiting.clear()
        for task, running in self._running.items():
            running.dropped = True
            running.ctx.lose()
            task.cancel()

    # ---- leasing ---------------------------------------------------------------------------------------

    async def _lease_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._stopping:
            want = self._room_for_lease()
            if not want:
                self._room.clear()
                await self._room.wait()
                continue
            began = loop.time()
            try:
                jobs = await self.source.lease(want)
            except Exception as exc:
                log.warning("%s: lease failed (retrying in %.0f s): %s", self.name, self.error_pause, exc)
                self._room.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.error_pause):
                        await _until(self._room, lambda: self._stopping)
                continue
            if len(jobs) == want:  # a full answer did not wait for work: it times the round trip
                self._lease_seconds = _average(self._lease_seconds, min(loop.time() - began, 1.0))
            for job in jobs:
                self._take(job)

    def _take(self, job: LeasedDelivery) -> None:
        token = job.lease_token or ""
        self._leases[job.id] = token
        if len(self._running) < self.concurrency:
            self._start(job, token)
        else:
            self._waiting.append(job)
        self.peak_held = max(self.peak_held, self.held)

    def _start(self, job: LeasedDelivery, token: str) -> None:
        function = self.tasks.function(job.task_name)
        if function is None:
            known = ", ".join(self.tasks.names) or "none"
            log.error("%s: job %s is a %r, which this worker does not run (it knows: %s)", self.name, job.id,
                      job.task_name, known)  # fmt: skip
            message = f"no task named {job.task_name!r} is registered in this worker (it knows: {known})"
            self._record(Outcome(job.id, token, error=message, retryable=False))
            return
        ctx = JobContext(job, _LoopLease(self, job.id, token))
        work = asyncio.create_task(self.tasks.invoke(function, job, ctx))
        self._running[work] = _Running(job, token, ctx, asyncio.get_running_loop().time())
        self.peak_running = max(self.peak_running, len(self._running))
        work.add_done_callback(self._finished)

    def _finished(self, work: asyncio.Task[Any]) -> None:
        running = self._running.pop(work)
        job_id = running.job.id
        if running.dropped or running.ctx.cancelled:
            if self._leases.get(job_id) == running.token:
                del self._leases[job_id]
            if running.ctx.cancelled and not running.dropped:
                log.info("job %s: the lease was lost (cancelled or reclaimed); its result is dropped", job_id)
        else:
            self._record(_outcome(job_id, running.token, work))
            seconds = asyncio.get_running_loop().time() - running.started
            self._task_seconds = _average(self._task_seconds, seconds)
        while self._waiting and len(self._running) < self.concurrency:
            job = self._waiting.popleft()
            self._start(job, job.lease_token or "")
        if not self.held:
            self._idle.set()
        if not self._room.is_set() and self._room_for_lease():
            self._room.set()

    # ---- outcomes --------------------------------------------------------------------------------------

    def _record(self, outcome: Outcome) -> None:
        self._outcomes.append(outcome)
        self._ack_due.set()
        if len(self._outcomes) >= self.ack_batch:
            self._ack_full.set()

    async def _ack_loop(self) -> None:
        while True:
            await self._ack_due.wait()
            if len(self._outcomes) < self.ack_batch and not self._stopping and self.ack_interval > 0:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.ack_interval):
                        await self._ack_full.wait()
            self._ack_due.clear()
            self._ack_full.clear()
            while self._outcomes:
                batch, self._outcomes = self._outcomes[:MAX_BATCH], self._outcomes[MAX_BATCH:]
                await self._send(batch)
            if self._last_ack:
                return

    async def _send(self, batch: list[Outcome]) -> None:
        self.ack_batches.append(len(batch))
        try:
            held: Sequence[bool | None] = await self.source.ack(batch)
        except Exception:
            # Left to the leases' expiry: the janitor reclaims the jobs and they are delivered again.
            log.exception("%s: could not record %d outcomes", self.name, len(batch))
            held = [None] * len(batch)
        for outcome, ok in zip(batch, held, strict=True):
            if self._leases.get(outcome.job_id) == outcome.lease_token:
                del self._leases[outcome.job_id]
            if ok is None:
                continue
            if not ok:
                log.warning("job %s: the lease was lost before the outcome could be recorded", outcome.job_id)
            self.tasks.recorded(outcome, held=ok)

    # ---- heartbeats ------------------------------------------------------------------------------------

    async def _heartbeat_loop(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_every)
            held = list(self._leases.items())
            for start in range(0, len(held), MAX_BATCH):
                chunk = held[start : start + MAX_BATCH]
                try:
                    alive = await self.source.heartbeat(chunk)
                except Exception as exc:  # unreachable for now: try again next time; the leases may still hold
                    log.warning("%s: heartbeat failed: %s", self.name, exc)
                    continue
                for (job_id, token), ok in zip(chunk, alive, strict=True):
                    if not ok:
                        self._lost(job_id, token)

    def _lost(self, job_id: str, token: str) -> None:
        if self._leases.get(job_id) != token:
            return  # settled meanwhile
        for task, running in self._running.items():
            if running.job.id == job_id and running.token == token:
                running.ctx.lose()
                task.cancel()  # a sync task's thread cannot be stopped: it has `ctx.cancelled` to look at
                return
        for job in self._waiting:
            if job.id == job_id:
                self._waiting.remove(job)
                del self._leases[job_id]
                log.info("job %s: the lease was lost while it waited for a slot", job_id)
                return


def _average(current: float | None, sample: float) -> float:
    return sample if current is None else current + SMOOTHING * (sample - current)


def _outcome(job_id: str, token: str, work: asyncio.Task[Any]) -> Outcome:
    if work.cancelled():
        return Outcome(job_id, token, error="the task was cancelled")
    exc = work.exception()
    if exc is None:
        result = work.result()
        if result is not None:
            try:
                json.dumps(result, allow_nan=False)
            except (TypeError, ValueError) as problem:
                return Outcome(job_id, token, error=f"the task's result is not JSON: {problem}", retryable=False)
        return Outcome(job_id, token, result=result)
    if isinstance(exc, Retry):
        return Outcome(job_id, token, error=str(exc), retry_after_seconds=exc.after)
    if isinstance(exc, Fatal):
        return Outcome(job_id, token, error=str(exc) or "fatal", retryable=False)
    return Outcome(job_id, token, error=f"{type(exc).__name__}: {exc}")


async def _until(event: asyncio.Event, condition: Any) -> None:
    while not condition():
        await event.wait()
        event.clear()


async def _settled(task: asyncio.Task[None]) -> None:
    with contextlib.suppress(asyncio.CancelledError):
        try:
            await task
        except Exception:
            log.exception("a worker loop had failed")
