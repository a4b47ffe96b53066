"""The janitor race, forced: a worker completes at the very moment the janitor reclaims its expired lease.

The janitor reclaims in two steps — re-lease the expired rows to itself, then fail them through the failure
policy — and a barrier in the store holds it between the two while the worker's completion arrives: before the
janitor goes on, at the same instant, or after it finished. Repeated 210 times on PostgreSQL. Every time exactly
one side wins, never both, never neither: the completion (200, the job completed with the worker's result, nothing
reclaimed) or the janitor (the completion gets 409 `lease_lost`, the job is retrying and keeps no result).

Which side wins is not left to chance: a completion that arrives once the lease has expired gets 409, as the spec
says, in every order. (The janitor's re-lease once kept the worker's token, and so revived its expired lease: a
completion that came while the janitor decided won.) The control rounds complete just before the lease expires,
the janitor sweeping at that same instant: the completion wins, and the janitor finds nothing.

Unlike the rest of the suite this drives the engine in-process: only inside the store can the race be forced.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from queueflow.clocks import TestClock
from queueflow.core.errors import LeaseLost
from queueflow.core.types import Job, JobStatus, MaintenanceReport, NewJob
from queueflow.ports import JobStore
from queueflow.stores.postgres import PostgresJobStore

from tests.moments import START, T
from tests.postgres.helpers import engine_on

ROUNDS = 210
ORDERS = ("completion first", "together", "janitor first")
CONTROL_ROUNDS = 30


class Barrier:
    """The store, except that the janitor's reclaim stops after its first step until `go` is set."""

    def __init__(self, store: JobStore) -> None:
        self._store = store
        self.reached = asyncio.Event()
        self.go = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def job_lease_expired(self, *, limit: int, relock_seconds: float, now: datetime) -> list[Job]:
        rows = await self._store.job_lease_expired(limit=limit, relock_seconds=relock_seconds, now=now)
        self.reached.set()
        await self.go.wait()
        return rows


async def test_a_completion_racing_the_janitor_wins_cleanly_or_gets_409(postgres_store: PostgresJobStore) -> None:
    clock = TestClock(START)
    worker = engine_on(postgres_store, clock, seed=1)
    wins = {order: {"completion": 0, "janitor": 0} for order in ORDERS}
    for n in range(ROUNDS):
        order = ORDERS[n % len(ORDERS)]
        queue = f"race-{n}"  # a queue per round: a reclaimed job from an earlier round is never leased again
        await worker.enqueue(T, NewJob(task_name="race", queue_name=queue))
        (held,) = await worker.lease([queue], lease_seconds=30)
        assert held.lease_token is not None
        clock.advance(31)  # the lease has expired
        barrier = Barrier(postgres_store)
        janitor = asyncio.create_task(engine_on(barrier, clock, seed=2 + n).run_maintenance())  # type: ignore[arg-type]
        await barrier.reached.wait()

        async def complete(job: Job = held, token: str = held.lease_token, n: int = n) -> bool:
            try:
                await worker.complete(job.id, token, {"round": n})
            except LeaseLost:
                return False
            return True

        if order == "completion first":
            completed = await complete()
            barrier.go.set()
            report = await janitor
        elif order == "together":
            barrier.go.set()
            report, completed = await asyncio.gather(janitor, complete())
        else:
            barrier.go.set()
            report = await janitor
            completed = await complete()
        final = await worker.get_job(T, held.id)
        assert_one_winner(final, report, completed, n)
        wins[order]["completion" if completed else "janitor"] += 1
    print(f"janitor race, {ROUNDS} rounds: {wins}")
    assert all(won == {"completion": 0, "janitor": ROUNDS // len(ORDERS)} for won in wins.values())


async def test_a_completion_just_before_expiry_wins_over_a_janitor_at_that_instant(
    postgres_store: PostgresJobStore,
) -> None:
    clock = TestClock(START)
    worker = engine_on(postgres_store, clock, seed=1)
    for n in range(CONTROL_ROUNDS):
        queue = f"control-{n}"
        await worker.enqueue(T, NewJob(task_name="race", queue_name=queue))
        (held,) = await worker.lease([queue], lease_seconds=30)
        clock.advance(29.999)  # one millisecond left on the lease
        janitor = engine_on(postgres_store, clock, seed=2 + n).run_maintenance()
        report, done = await asyncio.gather(janitor, worker.complete(held.id, held.lease_token or "", {"round": n}))
        assert_one_winner(await worker.get_job(T, held.id), report, True, n)
        assert done.status is JobStatus.COMPLETED


def assert_one_winner(final: Job, report: MaintenanceReport, completed: bool, n: int) -> None:
    if completed:
        assert (final.status, final.result, report.reclaimed) == (JobStatus.COMPLETED, {"round": n}, 0)
    else:
        assert (final.status, final.result, report.reclaimed) == (JobStatus.RETRYING, None, 1)
