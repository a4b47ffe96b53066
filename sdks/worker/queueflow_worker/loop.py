"""`WorkerLoop`: the one lease/run/ack loop behind every Python worker — the SDK's `Worker` (jobs over HTTP) and
the server's in-process runner (jobs straight from its engine). Each supplies a `LeaseSource` and a `TaskRunner`
(the SDK's `TaskRegistry`); everything else is here, written once:

- **slots and prefetch**: at most `concurrency` tasks run at once, and more jobs are leased ahead and wait their
  turn, so a free slot never waits for a round trip. How many: by default as many as the slots get through in two
  lease round trips (measured: tasks' durations and leases' round trips, averaged; estimated again as each lease
  answers), at most 1000 — so short tasks are claimed by the hundred and long ones hardly ahead at all (a job
  waiting here is one another worker cannot take); `prefetch=n` fixes it at n. A lease asks for many jobs at once
  and only once half the places are free, so a busy worker sends few, large claims. While the backlog is deep (the
  last lease came back full), `LEASES_IN_FLIGHT` leases overlap, each asked once a quarter of the places are free:
  one claim's round trip no longer bounds how fast a worker can take jobs (a single stream of 500-job claims capped
  the in-process runner at ~10,000 jobs/s, starved for jobs 40% of the time with a core to spare). A source's
  `lease` must allow that many calls at once; when a lease comes back short, one lease at a time again, so an idle
  worker parks one.
- **batched acks**: an outcome is queued when its task ends and its slot is freed at once; the queue is sent in
  one call when it reaches `ack_batch` or `ack_interval` after its first item, whichever comes first, one call
  at a time — or at once when no more outcomes can join it soon: no job is held any more, or leasing waits for
  these acks (a capacity below `ack_batch`, as with few slots and slow tasks, stalled every capacity of jobs for
  `ack_interval`). A job whose outcome is still queued when the process dies is delivered again once its lease expires
  (at-least-once, as after any crash). While a whole capacity of outcomes waits for its acks (a slow store), no
  more jobs are leased: they would only wait with them.
- **batched heartbeats**: every `heartbeat_every` one call extends every lease held, waiting ones included. A
  lease found lost (the job was cancelled, or reclaimed after expiring) tells its task: an async task is
  cancelled, a sync one sees `ctx.cancelled`; a waiting job is dropped. Nothing it does afterwards is recorded.
- **graceful drain**: `stop()` stops leasing (a parked lease is interrupted through its source, which must not
  lose what it claims), runs every job already held, records the outcomes and returns. With `drain_seconds`,
  tasks still running after that long are cancelled and their jobs left to their leases' expiry; `quit()` does
  that at once (a second Ctrl-C), and the outcomes already queued are still recorded.
- **logs a person can read** (logger `queueflow_client.worker`, the name users configure, kept from when this loop
  was part of the SDK): a startup line (name, queues, tasks,
  concurrency), and per job one line on `queueflow_client.worker.jobs` (task, job id, delivery, outcome,
  duration): at `job_log_level` (INFO) when it completed or asked to retry, at WARNING with the traceback when it
  failed. The traceback is stored with the failure too (`error_message`: the one-line summary first, at most
  `MAX_ERROR_CHARS`). The line's arguments are formatted only when the level is enabled.
- **fatal errors**: an exception of a `fatal` class from the source (a rejected key: 401, 403) stops leasing at
  once and is handed to `on_fatal`, instead of being retried every `error_pause` forever.
- **unknown tasks**: a source leases only the tasks the registry has (`task_names`); a job of another task that
  arrives anyway is dead-lettered with a message naming the tasks this worker knows, and the first of each task
  name is logged at WARNING.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from queueflow_worker.context import JobContext, Retry
from queueflow_worker.outcomes import MAX_ERROR_CHARS, Outcome, error_text, fate, outcome_of
from queueflow_worker.ports import LeasedDelivery, LeaseSource, TaskRunner

__all__ = ["MAX_ERROR_CHARS", "LeaseSource", "LeasedDelivery", "Outcome", "TaskRunner", "WorkerLoop", "error_text"]

log = logging.getLogger("queueflow_client.worker")
job_log = logging.getLogger("queueflow_client.worker.jobs")
"""One line per job; a busy worker's INFO lines are many, so they have a logger of their own to silence."""

MAX_BATCH = 1000
"""The most items the server takes in one lease, ack or heartbeat."""
ACK_BATCHES_KEPT = 1000
"""How many of the latest ack sizes `WorkerLoop.ack_batches` keeps."""
LEASES_IN_FLIGHT = 2
"""How many leases overlap while the backlog is deep (see the module docstring)."""
SMOOTHING = 0.2
"""The weight of the newest sample in the running averages of task durations and lease round trips."""


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
        tasks: TaskRunner,
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
        queues: Sequence[str] = (),
        fatal: tuple[type[Exception], ...] = (),
        on_fatal: Callable[[Exception], None] | None = None,
        job_log_level: int = logging.INFO,
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
        self.queues = list(queues)
        """For the startup line only: the source decides what it leases."""
        self.fatal = fatal
        self.on_fatal = on_fatal
        self.job_log_level = job_log_level
        self.failure: Exception | None = None
        """The fatal error that stopped the loop, if one did."""
        self.stranded_threads = 0
        """Sync tasks abandoned while still running in their threads (by `quit()` or the drain's end)."""
        self._unknown_tasks: set[str] = set()
        self.peak_held = 0
        """The most jobs held at once so far, waiting ones included (for tests and metrics)."""
        self.peak_running = 0
        self.ack_batches: deque[int] = deque(maxlen=ACK_BATCHES_KEPT)
        """The sizes of the last `ACK_BATCHES_KEPT` acks sent, oldest first (for tests and metrics): bounded, so a
        worker that runs for days does not grow by a number per ack."""
        self._waiting: deque[LeasedDelivery] = deque()
        self._running: dict[asyncio.Task[Any], _Running] = {}
        self._leases: dict[str, str] = {}  # job id → token, for every job held until its outcome is recorded
        self._outcomes: list[Outcome] = []
        self._unacked = 0
        """Outcomes recorded whose ack has not answered yet: queued, or being sent."""
        self._room = asyncio.Event()
        self._idle = asyncio.Event()
        self._ack_due = asyncio.Event()
        self._ack_full = asyncio.Event()
        self._last_ack = False
        self._stopping = False
        self._leasing: set[asyncio.Task[None]] = set()
        """The leases in flight."""
        self._asked = 0
        """How many jobs the leases in flight asked for: places taken until they answer."""
        self._deep = False
        """Whether a lease came back full since the last overlapping lease was sent: the backlog is deep, so the
        next lease may overlap one in flight."""
        self._lease_failed = False
        self._tasks: list[asyncio.Task[None]] = []
        self._task_seconds: float | None = None
        self._lease_seconds: float | None = None
        self._capacity = self._estimate()
        self._loop: asyncio.AbstractEventLoop | None = None
        """The loop `start()` ran on: asyncio.get_running_loop() asks the OS for the process id each time."""

    @property
    def ahead(self) -> int:
        """How many jobs to hold beyond the running ones now."""
        return self._capacity - self.concurrency

    @property
    def capacity(self) -> int:
        """The most jobs to hold: running and waiting. Estimated anew as each lease answers, not as each task
        ends: it is read for every job, and the estimate moves little from one job to the next."""
        return self._capacity

    def _estimate(self) -> int:
        if self.prefetch is not None:
            return self.concurrency + self.prefetch
        if self._task_seconds is None or self._lease_seconds is None:
            return 2 * self.concurrency
        burn = self.concurrency / max(self._task_seconds, 1e-6)  # jobs a second the slots get through
        return self.concurrency + min(MAX_BATCH, int(2 * burn * self._lease_seconds) + 1)

    def _room_for_lease(self) -> int:
        """How many jobs to ask for now: 0 until half the places are free (so claims come in batches), or, while
        the backlog is deep and fewer than `LEASES_IN_FLIGHT` leases are in flight, a quarter."""
        overlap = LEASES_IN_FLIGHT if self._deep else 1
        capacity = self._capacity
        if len(self._leasing) >= overlap or self._unacked >= capacity:
            # A whole capacity of outcomes waits for its acks (a slow or unreachable store): more jobs would
            # only wait too, their leases running out, so leasing waits until acks catch up.
            return 0
        want = min(capacity - self.held - self._asked, MAX_BATCH)
        least = max(1, capacity // (2 * overlap))
        return want if want >= least or (want > 0 and not self.held and not self._asked) else 0

    def _offer_room(self) -> None:
        """Wake the lease loop if it waits and there is room for a lease now (a slot or an ack came free)."""
        if not self._room.is_set() and self._room_for_lease():
            self._room.set()

    @property
    def _running_loop(self) -> asyncio.AbstractEventLoop:
        assert self._loop is not None, "the loop runs only once started"
        return self._loop

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
        self._loop = asyncio.get_running_loop()
        log.info(
            "%s: started; queues: %s; tasks: %s; concurrency %d",
            self.name,
            ", ".join(self.queues) or "-",
            ", ".join(self.tasks.names) or "none",
            self.concurrency,
        )
        self._tasks = [
            asyncio.create_task(self._lease_loop(), name=f"queueflow-{self.name}-lease"),
            asyncio.create_task(self._ack_loop(), name=f"queueflow-{self.name}-acks"),
            asyncio.create_task(self._heartbeat_loop(), name=f"queueflow-{self.name}-heartbeats"),
        ]

    async def stop(self, *, hint: str = "") -> None:
        """Stop leasing, run every job held, record the outcomes (see the module docstring), then return.
        `hint` ends the "finishing N jobs" line (e.g. how to quit sooner)."""
        if not self._tasks:
            return
        lease_task, ack_task, heartbeat_task = self._tasks
        self._stopping = True
        self._room.set()
        self.source.interrupt()
        await _settled(lease_task)
        if self.held:
            grace = f" (up to {self.drain_seconds:g} s)" if self.drain_seconds is not None else ""
            log.info("%s: finishing %d jobs%s%s", self.name, self.held, grace, hint)
            self._idle.clear()
            if self.held:
                try:
                    async with asyncio.timeout(self.drain_seconds):
                        await self._idle.wait()
                except TimeoutError:
                    self._abandon(f"outlived the {self.drain_seconds:g} s drain")
        self._last_ack = True
        self._ack_due.set()
        self._ack_full.set()
        await _settled(ack_task)
        heartbeat_task.cancel()
        await _settled(heartbeat_task)
        self._tasks = []

    def quit(self) -> None:
        """Stop now (a second Ctrl-C): held jobs are abandoned to their leases' expiry, as when the drain runs
        out; a `stop()` under way then records the outcomes already queued and returns."""
        self._stopping = True
        self._room.set()
        self.source.interrupt()
        if self.held:
            self._abandon("abandoned by a quit")
        self._idle.set()

    def _abandon(self, why: str) -> None:
        late = [r for r in self._running.values() if not r.dropped]
        if not late and not self._waiting:
            return
        log.warning(
            "%s: %d jobs %s; their leases expire and they are delivered again",
            self.name,
            len(late) + len(self._waiting),
            why,
        )
        for job in self._waiting:
            self._leases.pop(job.id, None)
        self._waiting.clear()
        for task, running in self._running.items():
            if running.dropped:
                continue
            running.dropped = True
            running.ctx.lose()
            task.cancel()
            function = self.tasks.function(running.job.task_name)
            if not inspect.iscoroutinefunction(function):
                self.stranded_threads += 1  # a thread cannot be stopped: it runs on, its result unrecorded

    # ---- leasing ---------------------------------------------------------------------------------------

    async def _lease_loop(self) -> None:
        try:
            while not self._stopping:
                if self._lease_failed:
                    self._lease_failed = False
                    self._room.clear()
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(self.error_pause):
                            await _until(self._room, lambda: self._stopping)
                    continue
                want = self._room_for_lease()
                if not want:
                    self._room.clear()
                    await self._room.wait()
                    continue
                if self._leasing:
                    self._deep = False  # this lease overlaps another: each full answer allows one overlap
                self._asked += want
                self._leasing.add(asyncio.create_task(self._lease(want), name=f"queueflow-{self.name}-lease"))
        finally:
            # Every lease in flight returns what it claimed (the source was interrupted): those jobs run too.
            while self._leasing:
                await asyncio.wait(list(self._leasing))

    async def _lease(self, want: int) -> None:
        loop = self._running_loop
        began = loop.time()
        try:
            jobs = await self.source.lease(want)
        except Exception as exc:
            self._deep = False
            if not self._fatal(exc):
                log.warning("%s: lease failed (retrying in %.0f s): %s", self.name, self.error_pause, exc)
                self._lease_failed = True
            return
        finally:
            self._asked -= want
            self._leasing.discard(asyncio.current_task())
            self._room.set()
        self._deep = len(jobs) == want
        if self._deep:  # a full answer did not wait for work: it times the round trip
            self._lease_seconds = _average(self._lease_seconds, min(loop.time() - began, 1.0))
        self._capacity = self._estimate()
        for job in jobs:
            self._take(job)

    def _fatal(self, exc: Exception) -> bool:
        """True when `exc` is one of the `fatal` errors: leasing stops and `on_fatal` hears of it (once)."""
        if not isinstance(exc, self.fatal):
            return False
        self._stopping = True
        if self.failure is None:
            self.failure = exc
            if self.on_fatal is not None:
                self.on_fatal(exc)
            else:
                log.error("%s: stopping: %s", self.name, exc)
        return True

    def _take(self, job: LeasedDelivery) -> None:
        token = job.lease_token or ""
        earlier = self._leases.get(job.id)
        if earlier is not None and earlier != token:
            # Delivered again while an earlier delivery is still here (its lease expired while it waited or ran,
            # and the janitor handed the job out anew): that lease is lost, so its delivery is dropped.
            self._lost(job.id, earlier)
        self._leases[job.id] = token
        if len(self._running) < self.concurrency:
            self._start(job, token)
        else:
            self._waiting.append(job)
        self.peak_held = max(self.peak_held, self.held)

    def _start(self, job: LeasedDelivery, token: str) -> None:
        function = self.tasks.function(job.task_name)
        if function is None:
            self._unknown(job, token)
            return
        loop = self._running_loop
        ctx = JobContext(job, _LoopLease(self, job.id, token), loop=loop)
        work = loop.create_task(self.tasks.invoke(function, job, ctx))
        self._running[work] = _Running(job, token, ctx, loop.time())
        self.peak_running = max(self.peak_running, len(self._running))
        work.add_done_callback(self._finished)

    def _unknown(self, job: LeasedDelivery, token: str) -> None:
        known = ", ".join(self.tasks.names) or "none"
        message = f"no task named {job.task_name!r} is registered in this worker (it knows: {known})"
        if job.task_name not in self._unknown_tasks:
            self._unknown_tasks.add(job.task_name)
            log.warning(
                "%s: leased job %s of task %r, which this worker does not have (it knows: %s): dead-lettering it"
                " (replay it from the dead-letter queue once a worker runs the task); further %r jobs are logged"
                " per job only",
                self.name,
                job.id,
                job.task_name,
                known,
                job.task_name,
            )
        job_log.log(
            self.job_log_level,
            "%s job %s (delivery %d): unknown task, dead-lettered",
            job.task_name,
            job.id,
            job.delivery_count,
        )
        self._record(Outcome(job.id, token, error=message, retryable=False))

    def _finished(self, work: asyncio.Task[Any]) -> None:
        running = self._running.pop(work)
        job = running.job
        job_id = job.id
        seconds = self._running_loop.time() - running.started
        if running.dropped or running.ctx.cancelled:
            if self._leases.get(job_id) == running.token:
                del self._leases[job_id]
            if running.ctx.cancelled and not running.dropped:
                job_log.warning(
                    "%s job %s (delivery %d): the lease was lost (cancelled or reclaimed) after %.3f s;"
                    " its result is dropped",
                    job.task_name,
                    job_id,
                    job.delivery_count,
                    seconds,
                )
        else:
            outcome = outcome_of(job_id, running.token, work)
            self._record(outcome)
            self._task_seconds = _average(self._task_seconds, seconds)
            if outcome.error is None:
                job_log.log(
                    self.job_log_level,
                    "%s job %s (delivery %d): completed in %.3f s",
                    job.task_name,
                    job_id,
                    job.delivery_count,
                    seconds,
                )
            else:
                self._failed(job, outcome, seconds, work)
        while self._waiting and len(self._running) < self.concurrency:
            job = self._waiting.popleft()
            self._start(job, job.lease_token or "")
        if not self.held:
            self._idle.set()
        self._offer_room()

    def _failed(self, job: LeasedDelivery, outcome: Outcome, seconds: float, work: asyncio.Task[Any]) -> None:
        exc = None if work.cancelled() else work.exception()
        summary = outcome.error.partition("\n")[0] if outcome.error else ""
        if isinstance(exc, Retry):
            job_log.log(
                self.job_log_level,
                "%s job %s (delivery %d): asked to retry%s after %.3f s: %s",
                job.task_name,
                job.id,
                job.delivery_count,
                f" in {exc.after:g} s" if exc.after is not None else "",
                seconds,
                summary,
            )
            return
        then = fate(job, outcome)
        job_log.warning(
            "%s job %s (delivery %d): failed after %.3f s (%s): %s",
            job.task_name,
            job.id,
            job.delivery_count,
            seconds,
            then,
            summary,
            exc_info=exc,
        )

    # ---- outcomes --------------------------------------------------------------------------------------

    def _record(self, outcome: Outcome) -> None:
        self._outcomes.append(outcome)
        self._unacked += 1
        self._ack_due.set()
        if self._ack_now():
            self._ack_full.set()

    def _ack_now(self) -> bool:
        """Whether the queued outcomes go now rather than `ack_interval` after the first: the batch is full, or
        no more can join it soon (nothing is held: more come only with a lease; or leasing waits for these)."""
        return len(self._outcomes) >= self.ack_batch or not self.held or self._unacked >= self._capacity

    async def _ack_loop(self) -> None:
        while True:
            await self._ack_due.wait()
            if not self._ack_now() and not self._stopping and self.ack_interval > 0:
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
        except Exception as exc:
            # Left to the leases' expiry: the janitor reclaims the jobs and they are delivered again.
            if not self._fatal(exc):
                log.exception("%s: could not record %d outcomes", self.name, len(batch))
            held = [None] * len(batch)
        self._unacked -= len(batch)
        self._offer_room()
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
                    if not self._fatal(exc):
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
            if job.id == job_id and job.lease_token == token:
                self._waiting.remove(job)
                del self._leases[job_id]
                log.info("job %s: the lease was lost while it waited for a slot", job_id)
                return


def _average(current: float | None, sample: float) -> float:
    return sample if current is None else current + SMOOTHING * (sample - current)


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
