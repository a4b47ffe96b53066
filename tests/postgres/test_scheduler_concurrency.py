"""Three schedulers on one database, each on its own connection, tick at the same instants: one job per occurrence."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from contextlib import AsyncExitStack
from datetime import timedelta

from queueflow.clocks import TestClock
from queueflow.core.errors import InvalidState
from queueflow.core.schedule import NewSchedule
from queueflow.core.types import Job
from queueflow.stores.postgres import PostgresJobStore

from tests import pg
from tests.moments import START, T
from tests.postgres.helpers import engine_on


class CountingStore(PostgresJobStore):
    """Counts the job inserts that resolved to a job another scheduler had inserted: proof that they raced."""

    repeats = 0

    async def job_insert_many(self, jobs: Sequence[Job]) -> list[tuple[Job, bool]]:
        results = await super().job_insert_many(jobs)
        self.repeats += sum(not created for _, created in results)
        return results


SCHEDULES = {"every-minute": ("* * * * *", 60), "every-five": ("*/5 * * * *", 12), "hourly": ("@hourly", 1)}


async def test_three_schedulers_make_one_job_per_occurrence(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    admin = engine_on(postgres_store, TestClock(START))
    for name, (cron, _) in SCHEDULES.items():
        await admin.create_schedule(T, NewSchedule(name=name, cron=cron, task_name=name))

    async with AsyncExitStack() as stack:
        connections = [
            await stack.enter_async_context(CountingStore.from_url(postgres_url, pool_size=1)) for _ in range(3)
        ]
        clocks = [TestClock(START) for _ in connections]
        # Different seeds, so the schedulers mint different job ids for the same firing.
        schedulers = [
            engine_on(store, clock, seed=seed)
            for seed, (store, clock) in enumerate(zip(connections, clocks, strict=True))
        ]
        recorded = 0
        for minute in range(1, 61):
            for clock in clocks:
                clock.set(START + timedelta(minutes=minute))
            recorded += sum(await asyncio.gather(*(scheduler.fire_due_schedules() for scheduler in schedulers)))

    expected = sum(count for _, count in SCHEDULES.values())
    assert recorded == expected, "each firing is recorded by exactly one scheduler"
    assert sum(store.repeats for store in connections) > 0, "the schedulers never raced for a firing"
    async with pg.connect(postgres_url) as connection:
        rows = await connection.fetch(
            "SELECT metadata->>'schedule' AS name, count(*) AS jobs, count(DISTINCT idempotency_key) AS keys,"
            " count(DISTINCT scheduled_at) AS instants FROM queueflow.jobs GROUP BY 1"
        )
    assert {row["name"]: (row["jobs"], row["keys"], row["instants"]) for row in rows} == {
        name: (count, count, count) for name, (_, count) in SCHEDULES.items()
    }
    hourly = await admin.get_schedule(T, "hourly")
    assert (hourly.last_run_at, hourly.next_run_at) == (START + timedelta(hours=1), START + timedelta(hours=2))


async def test_concurrent_creates_of_one_name_make_one_schedule(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    start_line = asyncio.Barrier(4)

    async def create(seed: int, store: PostgresJobStore) -> str:
        engine = engine_on(store, TestClock(START), seed=seed)
        await start_line.wait()
        try:
            return (await engine.create_schedule(T, NewSchedule(name="nightly", cron="0 3 * * *", task_name="r"))).id
        except InvalidState:
            return "taken"

    async with AsyncExitStack() as stack:
        opened = [
            await stack.enter_async_context(PostgresJobStore.from_url(postgres_url, pool_size=1)) for _ in range(4)
        ]
        await asyncio.gather(*(store.ping() for store in opened))
        outcomes = await asyncio.gather(*(create(seed, store) for seed, store in enumerate(opened)))

    (created,) = [outcome for outcome in outcomes if outcome != "taken"]
    assert (await engine_on(postgres_store, TestClock(START)).get_schedule(T, "nightly")).id == created
