"""What a claim remembers between claims, to spare round trips its answer does not need. Each is per process, per
queue list (the lease's queues, in order), bounded (`Remembered`), and changes no answer: with or without it, a
claim takes the same jobs (the tests in tests/postgres/test_idle_claim.py and test_one_statement_claim.py say so).

Their freshness is the process's own business, not the domain's: a claim's `now` is the engine's clock (the time
jobs are due by; a TestClock in tests, moved at will), while how long this process trusts what it read of other
processes' writes is a bound on its own elapsed time, as `Wakeups.ECHO_WINDOW` is: a test that moves its clock an
hour on must not make the store forget, nor one that stands still make it trust for ever. So `UnrestrictedQueues`
reads a monotonic clock of its own, injectable (tests/postgres/test_claim_caches.py), never the Clock port.

What each saves is measured by bench/claim_caches.py: a claim's wall time through the store, one connection, with
the cache and without it in alternating blocks of 150 claims, the median of the block-by-block ratios; once on a
quiet machine and once with the machine's two cores under a load of 5–7.

A third cache, of the queue lists found restricted (a single-job claim of them went to its transaction without
trying the one statement first), was removed: the statement it spared took 1.5 ms of a restricted single-job
claim's 25 ms of statements (asyncpg's per-statement timings, loaded machine), and whole claims in paired blocks
with and without it could not be told apart (ratio 0.83 and 0.89, blocks 0.43–1.55), while it was trusted until
a short claim of the same queues found none restricted (or this process changed some settings), however long
that took.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Generic, TypeVar

QueueList = tuple[str, ...]
"""A claim's queues, in order: what the caches remember things of."""

MAX_REMEMBERED = 1000
"""Queue lists each cache remembers at most; past it, the oldest is forgotten (its next claim is whole)."""

UNRESTRICTED_FRESH = 1.0
"""Seconds a claim trusts that none of its queues is restricted, at most (`UnrestrictedQueues`)."""

V = TypeVar("V")


class Remembered(Generic[V]):
    """A value per queue list, at most MAX_REMEMBERED of them, the oldest forgotten first."""

    def __init__(self) -> None:
        self._table: dict[QueueList, V] = {}

    def get(self, key: QueueList) -> V | None:
        return self._table.get(key)

    def put(self, key: QueueList, value: V | None) -> None:
        """`key`'s value, as the newest entry (None: forget `key`)."""
        self._table.pop(key, None)  # re-inserted last: the oldest entry goes first when the table is full
        if value is not None:
            self._table[key] = value
            if len(self._table) > MAX_REMEMBERED:
                del self._table[next(iter(self._table))]

    def clear(self) -> None:
        self._table.clear()


class IdleQueues:
    """The queue lists whose last claim found nothing, each with the count of announcements of new work at that
    claim's start (`Wakeups.notices`).

    An idle lessee (a worker polling an empty queue, a lease with `wait_seconds` 0) claims again and again and
    finds nothing. While nothing was announced since its last empty claim, the next claim of the same queues first
    asks DUE_ANY whether any of their jobs is due, one cheap statement, and ends there when none is. The question is
    exact about what a claim could take (a job due by the passing of time announces nothing, and DUE_ANY finds
    it), so this changes no answer: a claim that ran a moment earlier. An announcement, or a claim that takes a
    job, makes the next claim whole at once, so a woken lessee claims without the question first.

    Saves: an empty lease of 1 job, 529 → 314 µs quiet (ratio 0.61), 856 → 348 µs loaded (0.39); of 10 jobs,
    ratio 0.66 quiet, 0.43 loaded. Without it an empty claim is CLAIM through the one-statement function (the
    tenants' skip scan, the turn) where DUE_ANY reads one index entry per queue; without `UnrestrictedQueues`
    too, it is BEGIN, CLAIM, RESTRICTED_QUEUES, COMMIT.
    """

    def __init__(self, notices: Callable[[], int]) -> None:
        self._notices = notices
        self._idle: Remembered[int] = Remembered()

    def announced(self) -> int:
        """The count of announcements now: what a claim that finds nothing remembers (`claimed`)."""
        return self._notices()

    def still_idle(self, queues: QueueList, announced: int) -> bool:
        """Whether the last claim of `queues` found nothing and no work was announced since (`announced`: now)."""
        return self._idle.get(queues) == announced

    def claimed(self, queues: QueueList, took_any: bool, announced: int) -> None:
        """A claim of `queues` that began at the `announced` count took some jobs, or none."""
        self._idle.put(queues, None if took_any else announced)


class UnrestrictedQueues:
    """The queue lists none of whose queues some tenant restricted at their last short claim, with the count of
    notifications heard from PostgreSQL then (`Wakeups.heard`), and until when that is trusted.

    A claim that comes back short asks which of its queues some tenant restricts (RESTRICTED_QUEUES), a round trip
    of its own in every claim of one job (a workflow chain's step, an HTTP worker's single lease) that finds
    nothing, and in every multi-job claim that drains a queue to its end. Known unrestricted, a claim of them is
    one statement (CLAIM through the one-statement function) whenever that is all its transaction would have done.
    Trusted while no notification came from PostgreSQL (a settings change in another process NOTIFYs its queue),
    and for at most UNRESTRICTED_FRESH seconds: a process whose hub hears nothing (no LISTEN connection, or one
    lost and not yet back) would otherwise trust it forever. A settings change in this process forgets it at once.
    Trusting it a moment too long only leaves out a queue restricted meanwhile, as CLAIM itself leaves every
    restricted queue out: no limit is ever passed, and the queue's jobs wait for the next claim.

    Saves: a lease of 10 that finds 1 job, 1,088 → 630 µs quiet (ratio 0.57), 9.6 → 5.7 ms loaded (0.55): one
    statement where the transaction took BEGIN, CLAIM, RESTRICTED_QUEUES, COMMIT.
    """

    def __init__(self, heard: Callable[[], int | None], monotonic: Callable[[], float] = time.monotonic) -> None:
        self._heard = heard
        self._monotonic = monotonic
        self._known: Remembered[tuple[int, float]] = Remembered()

    def known(self, queues: QueueList) -> bool:
        """Whether none of `queues` is restricted, as far as this process can trust what it last learnt."""
        known = self._known.get(queues)
        return known is not None and known[0] == self._heard() and known[1] > self._monotonic()

    def heard(self) -> int | None:
        """The count of notifications heard so far: read before asking RESTRICTED_QUEUES (`learnt`)."""
        return self._heard()

    def learnt(self, queues: QueueList, restricted: bool, heard: int | None) -> None:
        """A short claim of `queues` found some of them restricted, or none, asked when `heard` notifications had
        been heard: one heard since (a settings change elsewhere, maybe) makes it stale at once. Without a hub that
        counts what it hears (`heard` None) nothing is remembered."""
        known = None if restricted or heard is None else (heard, self._monotonic() + UNRESTRICTED_FRESH)
        self._known.put(queues, known)

    def forget(self) -> None:
        """This process changed some queue's settings."""
        self._known.clear()
