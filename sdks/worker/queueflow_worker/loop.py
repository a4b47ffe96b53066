"""`WorkerLoop`: the one lease/run/ack loop behind every Python worker — the SDK's `Worker` (jobs over HTTP) and
the server's in-process runner (jobs straight from its engine). Each supplies a `LeaseSource` and a `TaskRunner`
(the SDK's `TaskRegistry`); everything else is here, written once:

- **slots and prefetch** (`leasing.py`): at most `concurrency` tasks run at once, and more jobs are leased ahead
  and wait their turn, so a free slot never waits for a round trip: as many as the slots get through in two lease
  round trips (measured), or `prefetch=n`; while the backlog is deep, two leases overlap.
- **no job started too late**: a held job is never started once its lease, or its deadline less a typical run of
  its task, is within `margin_seconds` — as the worker's own monotonic clock counts them from when it sent the
  lease request (`timing`): it is released instead, at once, for another worker, and no retry is counted. A job
  whose deadline passes while it waits is released before it does, so the janitor never times it out.
- **batched acks** (`acks.py`): an outcome is queued when its task ends and its slot is freed at once, and sent in
  batches. An ack or a release that fails with a `transient` error (the server unreachable, a 5xx) is made again,
  with backoff, for as long as a lease it carries could still hold (`retries.py`), later outcomes waiting behind it.
- **batched heartbeats**: every `heartbeat_every` one call extends every lease held, waiting ones included (and at
  once when a lease answer arrives with less than that left of its leases, as a long-poll's may). A lease found
  lost (the job was cancelled, or reclaimed after expiring) tells its task: an async task is cancelled, a sync one
  sees `ctx.cancelled`; a waiting job is dropped. Nothing it does afterwards is recorded.
- **stopping** (`stop()`): it stops leasing (a lease in flight, a long-poll too, is let to answer, for up to
  `LEASE_ANSWER_WAIT`: its answer may be on its way; an in-process source ends its waits at once), releases at
  once every job held
  and not started (and every job a lease in flight still brings), lets the running ones finish for up to
  `drain_seconds`, records the outcomes and returns. Tasks still running after `drain_seconds`, or at `quit()` (a
  second Ctrl-C), are cancelled and their jobs released; but a sync task's thread cannot be stopped, so its job is
  left to its lease's expiry (released, another worker could run it while the thread still does).
- **fatal errors**: an exception of a `fatal` class from the source (a rejected key: 401, 403) stops leasing at
  once and is handed to `on_fatal`, instead of being retried every `error_pause` forever.
- **unknown tasks**: a source leases only the tasks the registry has (`task_names`); a job of another task that
  arrives anyway is dead-lettered with a message naming the tasks this worker knows, and the first of each task
  name is logged at WARNING.
- **logs a person can read** (`joblog.py`): a startup line (name, queues, tasks, concurrency), and a line per job.
  A failure's traceback is stored with it too (`error_message`: the one-line summary first, at most
  `MAX_ERROR_CHARS`).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from queueflow_worker import heartbeats, joblog
from queueflow_worker.acks import ACK_BATCHES_KEPT, Acks
from queueflow_worker.context import JobContext
from queueflow_worker.joblog import log
from queueflow_worker.leasing import Leasing
from queueflow_worker.outcomes import MAX_ERROR_CHARS, Outcome, error_text, outcome_of
from queueflow_worker.ports import Clock, LeasedDelivery, LeaseSource, TaskRunner
from queueflow_worker.releases import Releases
from queueflow_worker.retries import LeaseHorizon, persist
from queueflow_worker.timing import MARGIN_SECONDS, MAX_BATCH, EventLoopClock, ExpiryWatch, Held, Measures, first

__all__ = [
    "ACK_BATCHES_KEPT",
    "MAX_BATCH",
    "MAX_ERROR_CHARS",
    "LeaseSource",
    "LeasedDelivery",
    "Outcome",
    "TaskRunner",
    "WorkerLoop",
    "error_text",
]

T = TypeVar("T")

LEASE_ANSWER_WAIT = 2.0
"""How long `stop()` waits for a lease in flight: its answer may be on its way (cut then, its jobs would sit
`running` until their leases expire) — a long-poll's too, when work arrived for it a moment before the stop. A
healthy server answers a lease within a round trip and a long-poll within its wait (the SDKs' default: 1 s); one
still unanswered this long after is cut, and the stop does not wait out its timeout."""


class _Running:
    __slots__ = ("ctx", "dropped", "job", "ran", "started", "token")

    def __init__(self, job: LeasedDelivery, token: str, ctx: JobContext, started: float) -> None:
        self.job, self.token, self.ctx, self.started = job, token, ctx, started
        self.dropped = False
        """True when the outcome is not to be recorded (the lease was lost, or the drain ran out)."""
        self.ran: float | None = None
        """How long the task itself ran, from its first step to its end (None: it never began)."""


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
        margin_seconds: float | None = None,
        name: str = "worker",
        queues: Sequence[str] = (),
        fatal: tuple[type[Exception], ...] = (),
        on_fatal: Callable[[Exception], None] | None = None,
        transient: Callable[[Exception], bool] | None = None,
        job_log_level: int = logging.INFO,
        clock: Clock | None = None,
    ) -> None:
        """`margin_seconds` (default 1 s, at most a quarter of the lease): how much of a held job's lease, or of
        the time before its deadline beyond a typical run, must be left to start it. `transient`: whether an error
        of the source's is one a repeat may get past (the server unreachable, a 5xx): an ack or a release failing
        so is made again while its leases may hold (default: none is). `clock`: the monotonic time it counts
        leases, deadlines, heartbeats, the drain, pauses and repeats on (default: the event loop's)."""
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if prefetch is not None and prefetch < 0:
            raise ValueError("prefetch must be at least 0")
        self.source = source
        self.tasks = tasks
        self.concurrency = concurrency
        self.prefetch = prefetch
        """None: adaptive (see the module docstring)."""
        self.lease_seconds = lease_seconds
        self.heartbeat_every = heartbeat_every if heartbeat_every is not None else lease_seconds / 3
        self.drain_seconds = drain_seconds
        self.error_pause = error_pause
        self.margin = min(MARGIN_SECONDS if margin_seconds is None else margin_seconds, lease_seconds / 4)
        self.clock: Clock = clock or EventLoopClock()
        self.name = name
        self.queues = list(queues)
        """For the startup line only: the source decides what it leases."""
        self.fatal = fatal
        self.on_fatal = on_fatal
        self._transient = transient
        self.horizon = LeaseHorizon(lease_seconds)
        """No lease held lasts past this (the loop's clock): what an ack or a release is repeated up to."""
        self.abandon = asyncio.Event()
        """Set by `quit()`: repeats of acks and releases give up."""
        self.job_log_level = job_log_level
        self.failure: Exception | None = None
        """The fatal error that stopped the loop, if one did."""
        self.stranded_threads = 0
        """Sync tasks abandoned while still running in their threads (by `quit()` or the drain's end)."""
        self._unknown_tasks: set[str] = set()
        self.peak_held = 0
        """The most jobs held at once so far, waiting ones included (for tests and metrics)."""
        self.peak_running = 0
        self.measures = Measures(
            concurrency=concurrency, prefetch=prefetch, lease_seconds=lease_seconds, margin=self.margin
        )
        self.acks = Acks(self, ack_batch=ack_batch, ack_interval=ack_interval)
        self.releases = Releases(self)
        self.waiting: deque[Held] = deque()
        self._running: dict[asyncio.Task[Any], _Running] = {}
        self.leases: dict[str, str] = {}  # job id → token, for every job held until its outcome is recorded
        self._idle = asyncio.Event()
        self.beat_now = asyncio.Event()
        """Set when a job arrived with less than a heartbeat's period of its lease left: heartbeat now."""
        self.expiry = ExpiryWatch(self.clock, self.measures, lambda: self.waiting, self._release_stale)
        self._stopping = False
        self.leasing = Leasing(self)
        self._tasks: list[asyncio.Task[None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        """The loop `start()` ran on: asyncio.get_running_loop() asks the OS for the process id each time."""

    @property
    def ack_batches(self) -> deque[int]:
        """The sizes of the last `ACK_BATCHES_KEPT` acks sent, oldest first (for tests and metrics)."""
        return self.acks.batches

    @property
    def released(self) -> int:
        """Jobs handed back to the queue so far, unstarted (or cancelled by the drain's end or a quit)."""
        return self.releases.count

    @property
    def ahead(self) -> int:
        """How many jobs to hold beyond the running ones now."""
        return self.leasing.capacity - self.concurrency

    @property
    def capacity(self) -> int:
        """The most jobs to hold: running and waiting (`Leasing.capacity`)."""
        return self.leasing.capacity

    @property
    def waits_for_acks(self) -> bool:
        """Whether leasing waits for the outcomes in hand to be acked (`Leasing.waits_for_acks`)."""
        return self.leasing.waits_for_acks

    def offer_room(self) -> None:
        """Wake the lease loop if it waits and there is room for a lease now (a slot or an ack came free)."""
        self.leasing.offer()

    @property
    def _running_loop(self) -> asyncio.AbstractEventLoop:
        assert self._loop is not None, "the loop runs only once started"
        return self._loop

    @property
    def held(self) -> int:
        """Jobs leased whose task has not ended: running, or waiting for a slot."""
        return len(self.waiting) + len(self._running)

    @property
    def running(self) -> int:
        return len(self._running)

    @property
    def stopping(self) -> bool:
        return self._stopping

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
            asyncio.create_task(self.leasing.run(), name=f"queueflow-{self.name}-lease"),
            asyncio.create_task(self.acks.run(), name=f"queueflow-{self.name}-acks"),
            asyncio.create_task(heartbeats.run(self), name=f"queueflow-{self.name}-heartbeats"),
            asyncio.create_task(self.expiry.run(), name=f"queueflow-{self.name}-expiry"),
        ]

    async def stop(self, *, hint: str = "") -> None:
        """Stop leasing, release every job held and not started, finish the running ones, record the outcomes
        (see the module docstring), then return. `hint` ends the "finishing N jobs" line (e.g. how to quit
        sooner)."""
        if not self._tasks:
            return
        lease_task, ack_task, heartbeat_task, expiry_task = self._tasks
        self._halt()
        # The leases in flight answer (what they bring is released) — or, stuck on a slow server, are cut: the
        # server hands back, uncounted, what it claimed for a client that left before its answer.
        answered = asyncio.Event()
        lease_task.add_done_callback(lambda _: answered.set())
        if not await first(answered, self.clock, LEASE_ANSWER_WAIT):
            log.warning("%s: a lease had no answer %g s after the stop: cut", self.name, LEASE_ANSWER_WAIT)
            self.leasing.cut()
        await _settled(lease_task)
        if self._running:
            grace = f" (up to {self.drain_seconds:g} s)" if self.drain_seconds is not None else ""
            log.info("%s: finishing %d running jobs%s%s", self.name, len(self._running), grace, hint)
            self._idle.clear()
            if self._running and not await first(self._idle, self.clock, self.drain_seconds):
                self._end_running(f"outlived the {self.drain_seconds:g} s drain")
        await self.releases.wait()
        self.acks.close()
        await _settled(ack_task)
        for task in (heartbeat_task, expiry_task):
            task.cancel()
            await _settled(task)
        self._tasks = []

    def quit(self) -> None:
        """Stop now (a second Ctrl-C): running tasks are cancelled and their jobs released, as when the drain runs
        out; a `stop()` under way then records the outcomes already queued and returns (an ack or a release that
        fails is not made again)."""
        self.abandon.set()
        self._halt()
        if self._running:
            self._end_running("cancelled by a quit")
        self._idle.set()

    def _halt(self) -> None:
        """Stop leasing and release every job not started."""
        self._stopping = True
        self.leasing.wake()
        self.source.interrupt()
        if self.waiting:
            self.give_back(list(self.waiting), "the worker is stopping")
            self.waiting.clear()
            if not self._running:
                self._idle.set()

    def _end_running(self, why: str) -> None:
        """Cancel every running task: its job is released, or left to its lease's expiry when its thread runs on."""
        late = [(task, r) for task, r in self._running.items() if not r.dropped]
        if not late:
            return
        back: list[tuple[str, str]] = []
        for task, running in late:
            running.dropped = True
            running.ctx.lose()
            task.cancel()
            function = self.tasks.function(running.job.task_name)
            if inspect.iscoroutinefunction(function):
                back.append((running.job.id, running.token))
            else:
                self.stranded_threads += 1  # a thread cannot be stopped: it runs on, its result unrecorded
        log.warning(
            "%s: %d running jobs %s: %d released, %d left to their leases' expiry (their tasks' threads run on)",
            self.name,
            len(late),
            why,
            len(back),
            len(late) - len(back),
        )
        self.releases.give_back(back, why)

    # ---- giving jobs back ------------------------------------------------------------------------------

    def give_back(self, held: list[Held], why: str) -> None:
        self.releases.give_back([(entry.job.id, entry.token) for entry in held], why)

    def _release_stale(self) -> None:
        """The expiry watch's time came: release every waiting job past the last moment it could start."""
        now, latest = self.clock.now(), self.measures.latest_start
        stale = [entry for entry in self.waiting if latest(entry) <= now]
        if stale:
            self.waiting = deque(entry for entry in self.waiting if latest(entry) > now)
            self.give_back(stale, "too close to their leases' end or deadlines to start")
            self.settle()

    # ---- the source's errors ---------------------------------------------------------------------------

    def transient(self, exc: Exception) -> bool:
        """Whether a repeat of the call that failed with `exc` may get past it."""
        return self._transient is not None and self._transient(exc)

    async def persist(self, call: Callable[[], Awaitable[T]]) -> T:
        """`call()` (an ack or a release), made again while the server is away, as long as a lease the loop holds
        could still hold, until a quit (`retries.persist`)."""
        return await persist(
            call, clock=self.clock, transient=self.transient, horizon=self.horizon, abandon=self.abandon
        )

    def is_fatal(self, exc: Exception) -> bool:
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

    # ---- running jobs ----------------------------------------------------------------------------------

    def take(self, entry: Held) -> None:
        job_id, token = entry.job.id, entry.token
        earlier = self.leases.get(job_id)
        if earlier is not None and earlier != token:
            # Delivered again while an earlier delivery is still here (its lease expired while it waited or ran,
            # and the janitor handed the job out anew): that lease is lost, so its delivery is dropped.
            self.lost(job_id, earlier)
        self.leases[job_id] = token
        self.waiting.append(entry)
        self.peak_held = max(self.peak_held, self.held)

    def settle(self, now: float | None = None) -> None:
        """Start waiting jobs in free slots — but not one too close to its lease's end or deadline: that is
        released — and tell the expiry watch, the lease loop and a drain what changed. `now`: the clock's time,
        when the caller has just read it (once per job is the loop's busiest path)."""
        if self.waiting and len(self._running) < self.concurrency and not self._stopping:
            now = self.clock.now() if now is None else now
            latest, margin, stale = self.measures.latest_start, self.margin, []
            while self.waiting and len(self._running) < self.concurrency:
                entry = self.waiting.popleft()
                # Without a deadline only the lease counts: no call for the common case.
                if entry.lease_until - margin <= now or (entry.deadline_until is not None and latest(entry) <= now):
                    stale.append(entry)
                else:
                    self._start(entry.job, entry.token, now)
            if stale:
                self.give_back(stale, "too close to their leases' end or deadlines to start")
        if not self.waiting and not self._running:
            self._idle.set()
        self.leasing.offer()

    def _start(self, job: LeasedDelivery, token: str, now: float) -> None:
        function = self.tasks.function(job.task_name)
        if function is None:
            self._unknown(job, token)
            return
        loop = self._running_loop
        ctx = JobContext(job, heartbeats.JobLease(self, job.id, token), loop=loop)
        running = _Running(job, token, ctx, now)
        work = loop.create_task(self._timed(function, running))
        self._running[work] = running
        self.peak_running = max(self.peak_running, len(self._running))
        work.add_done_callback(self._finished)

    async def _timed(self, function: Any, running: _Running) -> Any:
        """The task, timed from its first step to its end: what a slot's turn takes. Counted from `_start` (and to
        `_finished`), a no-op task took milliseconds — its wait for the event loop behind a whole lease answer's
        decoding — so a worker of short tasks thought them slow and held a tenth of what it leased before."""
        clock = self.clock
        began = clock.now()
        try:
            return await self.tasks.invoke(function, running.job, running.ctx)
        finally:
            running.ran = clock.now() - began

    def _unknown(self, job: LeasedDelivery, token: str) -> None:
        known = ", ".join(self.tasks.names) or "none"
        message = f"no task named {job.task_name!r} is registered in this worker (it knows: {known})"
        first_of_task = job.task_name not in self._unknown_tasks
        self._unknown_tasks.add(job.task_name)
        joblog.unknown_task(self.name, self.job_log_level, job, known, first_of_task)
        self.acks.record(Outcome(job.id, token, error=message, retryable=False))

    def _finished(self, work: asyncio.Task[Any]) -> None:
        running = self._running.pop(work)
        job = running.job
        now = self.clock.now()
        seconds = now - running.started if running.ran is None else running.ran
        if running.dropped or running.ctx.cancelled:
            if self.leases.get(job.id) == running.token:
                del self.leases[job.id]
            if running.ctx.cancelled and not running.dropped:
                joblog.lost(job, seconds)
        else:
            outcome = outcome_of(job.id, running.token, work)
            self.acks.record(outcome)
            self.measures.task_ran(job.task_name, seconds)
            joblog.finished(self.job_log_level, job, outcome, seconds, work)
        self.settle(now)

    def settled(self, job_id: str, token: str) -> None:
        """The outcome of this delivery was answered: the job is no longer held."""
        if self.leases.get(job_id) == token:
            del self.leases[job_id]

    # ---- leases lost ------------------------------------------------------------------------------------

    def lost(self, job_id: str, token: str) -> None:
        """A heartbeat found this lease lost (or the job came again with another): drop its delivery."""
        if self.leases.get(job_id) != token:
            return  # settled meanwhile
        for task, running in self._running.items():
            if running.job.id == job_id and running.token == token:
                running.ctx.lose()
                task.cancel()  # a sync task's thread cannot be stopped: it has `ctx.cancelled` to look at
                return
        for entry in self.waiting:
            if entry.job.id == job_id and entry.token == token:
                self.waiting.remove(entry)
                del self.leases[job_id]
                log.info("job %s: the lease was lost while it waited for a slot", job_id)
                return


async def _settled(task: asyncio.Task[None]) -> None:
    with contextlib.suppress(asyncio.CancelledError):
        try:
            await task
        except Exception:
            log.exception("a worker loop had failed")
