"""A `WorkerLoop`'s leasing: how many jobs it holds (the prefetch) and when it asks for more.

At most `concurrency` tasks run at once, and more jobs are leased ahead and wait their turn, so a free slot never
waits for a round trip. How many: by default as many as the slots get through in two lease round trips (measured:
tasks' durations and leases' round trips, averaged; estimated again as each lease answers), at most 2,000 (what
the overlapping leases below bring, `timing.MAX_AHEAD`) — so short tasks are claimed by the hundred and long ones
hardly ahead at all (a job waiting here is one another worker cannot take); `prefetch=n` fixes it at n. Either way
never more than the slots start within half a lease, or half the shortest timeout lately leased
(`timing.Measures.capacity`). A lease asks for many jobs at once and only once half the places are free (or 1,000,
the most one lease brings), so a busy worker sends few, large claims. While the backlog is deep (the last lease
came back full), `LEASES_IN_FLIGHT` leases overlap, each asked once a quarter of the places are free: one claim's
round trip no longer bounds how fast a worker can take jobs (a single stream of 500-job claims capped the
in-process runner at ~10,000 jobs/s, starved for jobs 40% of the time with a core to spare). A source's `lease`
must allow that many calls at once; when a lease comes back short, one lease at a time again, so an idle worker
parks one. While a whole capacity of outcomes waits for its acks (a slow or unreachable store), nothing is leased:
more jobs would only wait too, their leases running out. Nor, after a lease that came back short, while any outcome
does (`waits_for_acks`).

What a lease brings the loop takes (`Host.take`) and starts in free slots (`Host.settle`); what arrives as the loop
stops is given back at once.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Protocol

from queueflow_worker.acks import Acks
from queueflow_worker.host import LoopHost
from queueflow_worker.joblog import log
from queueflow_worker.timing import LEASES_IN_FLIGHT, MAX_BATCH, ExpiryWatch, Held, Measures, first

__all__ = ["LEASES_IN_FLIGHT", "Leasing"]


class Host(LoopHost, Protocol):
    """What the leasing needs of its `WorkerLoop`."""

    measures: Measures
    acks: Acks
    expiry: ExpiryWatch
    beat_now: asyncio.Event
    waiting: deque[Held]
    lease_seconds: float
    heartbeat_every: float
    margin: float
    error_pause: float

    @property
    def held(self) -> int: ...
    @property
    def stopping(self) -> bool: ...
    def take(self, entry: Held) -> None: ...
    def settle(self, now: float | None = None) -> None: ...
    def give_back(self, held: list[Held], why: str) -> None: ...


class Leasing:
    def __init__(self, loop: Host) -> None:
        self.loop = loop
        self.capacity = loop.measures.capacity()
        """The most jobs to hold: running and waiting. Estimated anew as each lease is asked for and as it answers,
        not as each task ends: it is read for every job, and the estimate moves little from one job to the next."""
        self.in_flight: set[asyncio.Task[None]] = set()
        """The leases in flight."""
        self._asked = 0
        """How many jobs the leases in flight asked for: places taken until they answer."""
        self._deep = False
        """Whether a lease came back full since the last overlapping lease was sent: the backlog is deep, so the
        next lease may overlap one in flight."""
        self._short = False
        """Whether the last lease came back short: the worker took all there was."""
        self._failed = False
        self._room = asyncio.Event()

    def want(self) -> int:
        """How many jobs to ask for now: 0 until half the places are free (so claims come in batches), or, while
        the backlog is deep and fewer than `LEASES_IN_FLIGHT` leases are in flight, a quarter."""
        overlap = LEASES_IN_FLIGHT if self._deep else 1
        capacity = self.capacity
        if len(self.in_flight) >= overlap or self.waits_for_acks:
            return 0
        loop = self.loop
        held = loop.held
        want = min(capacity - held - self._asked, MAX_BATCH)
        # A lease brings at most MAX_BATCH: with more than 2,000 places, half of them would be more than a lease can
        # ask for, and none would be asked while a job is held.
        least = min(MAX_BATCH, max(1, capacity // (2 * overlap)))
        return want if want >= least or (want > 0 and not held and not self._asked) else 0

    @property
    def waits_for_acks(self) -> bool:
        """Whether leasing waits for the outcomes in hand to be acked: a whole capacity of them (a slow store: more
        jobs would only wait too), or any once a lease took all there was. Work that trickles in — each workflow step
        made ready by an advance, each job by a request — brought a lease sent beside the acks the one or two jobs
        that came within its round trip, a claim statement each; waiting for the acks lets them gather, and a
        workflow's acks are what make its next steps ready. Measured with the in-process runner under `--mode all`
        on 1,000 workflows × a 3-step chain: 3.4 times the claims, 2.7 jobs each (bench/results/2026-12-06-notes.md)."""
        unacked = self.loop.acks.unacked
        return unacked >= self.capacity or (self._short and unacked > 0)

    def offer(self) -> None:
        """Wake the lease loop if it waits and there is room for a lease now (a slot or an ack came free)."""
        if not self._room.is_set() and self.want():
            self._room.set()

    def wake(self) -> None:
        """Wake the lease loop whatever the room (the loop is stopping)."""
        self._room.set()

    def cut(self) -> None:
        """Cancel the leases in flight (stuck on a slow server as the loop stops)."""
        for lease in self.in_flight:
            lease.cancel()

    async def run(self) -> None:
        loop = self.loop
        try:
            while not loop.stopping:
                if self._failed:
                    self._failed = False
                    self._room.clear()
                    await first(self._room, loop.clock, loop.error_pause)
                    continue
                self.capacity = loop.measures.capacity()  # what the tasks ended since taught, before asking
                want = self.want()
                if not want:
                    self._room.clear()
                    await self._room.wait()
                    continue
                if self.in_flight:
                    self._deep = False  # this lease overlaps another: each full answer allows one overlap
                self._asked += want
                self.in_flight.add(asyncio.create_task(self._lease(want), name=f"queueflow-{loop.name}-lease"))
        finally:
            # Every lease in flight returns what it claimed (the source was interrupted): those jobs are released.
            while self.in_flight:
                await asyncio.wait(list(self.in_flight))

    async def _lease(self, want: int) -> None:
        loop = self.loop
        clock = loop.clock
        sent = clock.now()
        try:
            jobs = await loop.source.lease(want)
        except Exception as exc:
            self._deep = False
            if not loop.is_fatal(exc):
                log.warning("%s: lease failed (retrying in %.0f s): %s", loop.name, loop.error_pause, exc)
                self._failed = True
            return
        finally:
            self._asked -= want
            self.in_flight.discard(asyncio.current_task())
            self._room.set()
        answered = clock.now()
        if jobs:
            loop.horizon.answered(answered)
        self._deep = len(jobs) == want
        self._short = not self._deep
        loop.measures.lease_answered(answered - sent, list(jobs), full=self._deep)
        self.capacity = loop.measures.capacity()
        held = [Held.leased(job, sent, loop.lease_seconds) for job in jobs]
        if loop.stopping:
            loop.give_back(held, "the worker is stopping")
            return
        if not held:
            return
        if answered - sent > loop.lease_seconds - loop.heartbeat_every - loop.margin:
            loop.beat_now.set()  # the answer took long (a long-poll): extend these leases now, not a period on
        for entry in held:
            loop.take(entry)
        loop.settle()
        if loop.waiting:
            # A job without a deadline may start until its lease's end less the margin, the same for the whole answer.
            latest = loop.measures.latest_start
            due = min((latest(entry) for entry in held if entry.deadline_until is not None), default=float("inf"))
            due = min(due, held[0].lease_until - loop.margin)
            loop.expiry.taken(due)
