"""What a `WorkerLoop` decides from time: how long its leases and deadlines last as its own clock counts them, whether
a job held can still be started, and how many jobs to hold.

A worker never asks the server what time it is. Its lease cannot have begun before it *sent* the lease request, so
on its own monotonic clock a job's lease lasts at least until `sent + lease_seconds` and its deadline comes no
sooner than `sent + timeout_seconds` (the server counts both from the claim, later; a long-poll's answer says how
much later, a duration the server measured, `claimed_after_seconds`, which is added). A heartbeat likewise extends
a lease to at least `sent + lease_seconds` from when the heartbeat was sent. Every bound holds whatever the two
machines' clocks say; `margin` covers the round trip of the call that records a job's outcome.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from queueflow_worker.ports import Clock, LeasedDelivery

__all__ = ["LEASES_IN_FLIGHT", "MAX_AHEAD", "MAX_BATCH", "EventLoopClock", "ExpiryWatch", "Held", "Measures", "first"]

MAX_BATCH = 1000
"""The most items the server takes in one lease, ack, heartbeat or release."""
LEASES_IN_FLIGHT = 2
"""How many leases overlap while the backlog is deep (`leasing`)."""
MAX_AHEAD = LEASES_IN_FLIGHT * MAX_BATCH
"""The most jobs held ahead of the slots by default: what the leases in flight can bring. Capped at one lease's
worth (1,000), a worker of short tasks asked in leases of a quarter of that while the backlog was deep, and one
Python SDK worker drained no-op jobs a fifth slower (alternating drains, 2026-12-06: 18.3–20.8k jobs/s against
21.5–24.6k, at 73–79 µs of CPU a job for worker, server and PostgreSQL together against 62–75)."""
SMOOTHING = 0.2
"""The weight of the newest sample in the running averages of task durations and lease round trips."""
MARGIN_SECONDS = 1.0
"""The default margin: a job is not started with less than this left of its lease or before its deadline."""


class EventLoopClock:
    """The running event loop's monotonic time (the default `Clock`)."""

    _time: Callable[[], float]

    def now(self) -> float:
        try:
            return self._time()
        except AttributeError:  # asyncio.get_running_loop() asks the OS for the process id each time: once only
            self._time = asyncio.get_running_loop().time
            return self._time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


@dataclass(slots=True)
class Held:
    """A job held and not started yet, with its bounds on the worker's clock."""

    job: LeasedDelivery
    token: str
    lease_until: float
    deadline_until: float | None

    @classmethod
    def leased(cls, job: LeasedDelivery, sent: float, lease_seconds: float) -> Held:
        """A job of the answer to a lease request sent at `sent` (the server caps a lease at the deadline). A
        long-poll's claim came later than its sending by as much as the server says it waited
        (`claimed_after_seconds`, when its source tells): counted from the sending alone, a poll that waited longer
        than a job's timeout would have every job look past its deadline, and released."""
        sent += getattr(job, "claimed_after_seconds", 0.0)
        timeout = job.timeout_seconds
        deadline = None if timeout is None else sent + timeout
        until = sent + lease_seconds if deadline is None else min(sent + lease_seconds, deadline)
        return cls(job, job.lease_token or "", until, deadline)

    def extended(self, sent: float, lease_seconds: float) -> None:
        """A heartbeat sent at `sent` held the lease."""
        until = sent + lease_seconds
        self.lease_until = until if self.deadline_until is None else min(until, self.deadline_until)


class Measures:
    """What a loop measures as it runs — tasks' durations (per task, and over all), leases' round trips, the
    shortest timeout lately leased — and what it derives from them: how many jobs to hold, and when a held job
    may no longer start."""

    def __init__(self, *, concurrency: int, prefetch: int | None, lease_seconds: float, margin: float) -> None:
        self.concurrency = concurrency
        self.prefetch = prefetch
        self.lease_seconds = lease_seconds
        self.margin = margin
        self.task_seconds: float | None = None
        self.round_trip: float | None = None
        self.shortest_timeout: float | None = None
        """The shortest `timeout_seconds` among the jobs of the latest lease answer that had any."""
        self._typical: dict[str, float] = {}

    def task_ran(self, task_name: str, seconds: float) -> None:
        """Once per job: written out rather than calling `average` twice."""
        overall, typical = self.task_seconds, self._typical.get(task_name)
        self.task_seconds = seconds if overall is None else overall + SMOOTHING * (seconds - overall)
        self._typical[task_name] = seconds if typical is None else typical + SMOOTHING * (seconds - typical)

    def lease_answered(self, seconds: float, jobs: list[LeasedDelivery], *, full: bool) -> None:
        if full:  # a full answer did not wait for work: it times the round trip
            self.round_trip = average(self.round_trip, min(seconds, 1.0))
        timeouts = [job.timeout_seconds for job in jobs if job.timeout_seconds is not None]
        if timeouts:
            self.shortest_timeout = min(timeouts)

    def capacity(self) -> int:
        """The most jobs to hold, running and waiting: by default as many as the slots get through in two lease
        round trips (2 × concurrency before anything is measured), or `prefetch` ahead; and never more than the
        slots start within half a lease or half the shortest timeout, so a job held is started well within both."""
        concurrency = self.concurrency
        if self.task_seconds is None:
            return concurrency + (concurrency if self.prefetch is None else self.prefetch)
        burn = concurrency / max(self.task_seconds, 1e-6)  # jobs a second the slots get through
        if self.prefetch is not None:
            ahead = self.prefetch
        elif self.round_trip is None:
            ahead = concurrency
        else:
            ahead = min(MAX_AHEAD, int(2 * burn * self.round_trip) + 1)
        horizon = (
            self.lease_seconds if self.shortest_timeout is None else min(self.lease_seconds, self.shortest_timeout)
        )
        return concurrency + min(ahead, int(burn * horizon / 2))

    def latest_start(self, held: Held) -> float:
        """The last moment `held` may start: before its lease runs out, less the margin; and, with a deadline,
        early enough to end a typical run of its task before it — unless even a fresh delivery could not (a
        typical run is longer than the timeout), which then only has to start before the deadline."""
        latest = held.lease_until - self.margin
        if held.deadline_until is not None:
            need = self._typical.get(held.job.task_name, 0.0)
            timeout = held.job.timeout_seconds or 0.0
            if need + self.margin >= timeout:
                need = 0.0
            latest = min(latest, held.deadline_until - self.margin - need)
        return latest


class ExpiryWatch:
    """Wakes its loop (`expire`) at the first moment a waiting job must be released rather than started
    (`Measures.latest_start`), so that a job whose deadline would pass while it waits goes back before it does."""

    def __init__(
        self, clock: Clock, measures: Measures, waiting: Callable[[], Iterable[Held]], expire: Callable[[], None]
    ) -> None:
        self.clock, self.measures, self.waiting, self.expire = clock, measures, waiting, expire
        self.due = float("inf")
        """When it wakes next, on `clock`."""
        self._sooner = asyncio.Event()

    def taken(self, due: float) -> None:
        """Jobs began to wait, the first of which must start by `due`."""
        if due < self.due:
            self._sooner.set()

    async def run(self) -> None:
        latest, clock = self.measures.latest_start, self.clock
        while True:
            self._sooner.clear()
            due = min((latest(entry) for entry in self.waiting()), default=None)
            self.due = float("inf") if due is None else due
            wait = None if due is None else due - clock.now()
            if wait is None or wait > 0:
                await first(self._sooner, clock, wait)
            else:
                self.expire()


def average(current: float | None, sample: float) -> float:
    return sample if current is None else current + SMOOTHING * (sample - current)


async def first(event: asyncio.Event, clock: Clock, seconds: float | None) -> bool:
    """Wait until `event` is set (True) or `seconds` of `clock`'s time have passed (False; None: no limit)."""
    if event.is_set():
        return True
    if seconds is None:
        await event.wait()
        return True
    waiting = asyncio.ensure_future(event.wait())
    timer = asyncio.ensure_future(clock.sleep(seconds))
    try:
        await asyncio.wait((waiting, timer), return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiting.cancel()
        timer.cancel()
    return event.is_set()
