"""Real concurrency on one database: separate pools (so separate connections), started together."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import datetime

from queueflow.clocks import TestClock
from queueflow.core.errors import LeaseLost
from queueflow.core.types import Job, JobStatus, NewJob
from queueflow.stores.postgres import PostgresJobStore

from tests import pg
from tests.moments import START, T
from tests.postgres.helpers import engine_on


@asynccontextmanager
async def stores(url: str, count: int) -> AsyncIterator[list[PostgresJobStore]]:
    async with AsyncExitStack() as stack:
        opened = [await stack.enter_async_context(PostgresJobStore.from_url(url, pool_size=1)) for _ in range(count)]
        # Connected before the start line, so the race is between claims, not between connects.
        await asyncio.gather(*(store.ping() for store in opened))
        yield opened


async def enqueue(store: PostgresJobStore, clock: TestClock, count: int, **new: object) -> list[str]:
    engine = engine_on(store, clock)
    ids: list[str] = []
    for start in range(0, count, 1000):
        batch = [NewJob(task_name=f"t{i}", **new) for i in range(start, min(count, start + 1000))]  # type: ignore[arg-type]
        ids += [result.job.id for result in await engine.enqueue_many(T, batch)]
    return ids


async def test_eight_claimers_claim_every_row_exactly_once(postgres_url: str, postgres_store: PostgresJobStore) -> None:
    clock = TestClock(START)
    ids = await enqueue(postgres_store, clock, 2000)
    start_line = asyncio.Barrier(8)

    async def claimer(store: PostgresJobStore) -> list[str]:
        engine = engine_on(store, clock)
        await start_line.wait()
        claimed: list[str] = []
        while batch := await engine.lease(["default"], max_jobs=20):
            claimed += [job.id for job in batch]
        return claimed

    async with stores(postgres_url, 8) as claimers:
        results = await asyncio.gather(*(claimer(store) for store in claimers))

    every = [job_id for claimed in results for job_id in claimed]
    assert len(every) == len(set(every)) == 2000
    assert set(every) == set(ids)
    assert sum(1 for claimed in results if claimed) > 1, "the claimers did not overlap"
    async with pg.connect(postgres_url) as connection:
        counts = await connection.fetch("SELECT status, delivery_count, count(*) FROM queueflow.jobs GROUP BY 1, 2")
    assert [tuple(record) for record in counts] == [("running", 1, 2000)]


async def test_two_janitors_reclaim_each_expired_row_once(postgres_url: str, postgres_store: PostgresJobStore) -> None:
    clock = TestClock(START)
    ids = await enqueue(postgres_store, clock, 250)
    leased = await engine_on(postgres_store, clock).lease(["default"], max_jobs=1000, lease_seconds=10)
    assert len(leased) == 250
    clock.advance(seconds=11)

    async with stores(postgres_url, 2) as (first, second):
        janitors = [engine_on(first, clock), engine_on(second, clock)]
        reclaimed = 0
        while True:
            reports = await asyncio.gather(*(janitor.run_maintenance() for janitor in janitors))
            if not any(report.reclaimed for report in reports):
                break
            reclaimed += sum(report.reclaimed for report in reports)

    assert reclaimed == 250
    jobs = await postgres_store.job_get_many(ids)
    assert {(job.status, job.retry_count, job.lease_token) for job in jobs.values()} == {(JobStatus.RETRYING, 1, None)}


class SlowJanitorStore(PostgresJobStore):
    """A janitor's store that lets a worker act between the janitor's re-lease and its failure write."""

    between: Callable[[], Awaitable[None]]

    async def job_lease_expired(self, *, limit: int, relock_seconds: float, now: datetime) -> list[Job]:
        taken = await super().job_lease_expired(limit=limit, relock_seconds=relock_seconds, now=now)
        await self.between()
        return taken


async def test_a_worker_whose_lease_expired_gets_409_while_the_janitor_decides(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    clock = TestClock(START)
    worker = engine_on(postgres_store, clock)
    (job_id,) = await enqueue(postgres_store, clock, 1)
    (job,) = await worker.lease(["default"], lease_seconds=10)
    clock.advance(seconds=11)
    refused: list[bool] = []

    async def worker_completes() -> None:
        try:
            await worker.complete(job_id, job.lease_token or "", {"done": "too late"})
        except LeaseLost:
            refused.append(True)

    async with SlowJanitorStore.from_url(postgres_url, pool_size=1) as janitor_store:
        janitor_store.between = worker_completes
        report = await engine_on(janitor_store, clock).run_maintenance()

    assert refused == [True]  # the janitor's re-lease did not revive the expired one
    assert report.reclaimed == 1
    done = await postgres_store.job_get(job_id)
    assert done is not None
    assert (done.status, done.result, done.retry_count) == (JobStatus.RETRYING, None, 1)


async def test_concurrent_enqueues_with_one_idempotency_key_make_one_job(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    clock = TestClock(START)
    start_line = asyncio.Barrier(8)

    async def enqueue_once(seed: int, store: PostgresJobStore) -> tuple[str, bool]:
        engine = engine_on(store, clock, seed=seed)
        await start_line.wait()
        result = await engine.enqueue(T, NewJob(task_name="charge", idempotency_key="order-42"))
        return result.job.id, result.created

    async with stores(postgres_url, 8) as producers:
        results = await asyncio.gather(*(enqueue_once(seed, store) for seed, store in enumerate(producers)))

    assert len({job_id for job_id, _ in results}) == 1
    assert sum(created for _, created in results) == 1


async def test_scoped_and_unscoped_claimers_together_claim_every_row_once_and_scoped_ones_only_theirs(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    clock = TestClock(START)
    ours = set(await enqueue(postgres_store, clock, 600))
    engine = engine_on(postgres_store, clock, seed=5)
    theirs = {result.job.id for result in await engine.enqueue_many("tenant-b", [NewJob(task_name="t")] * 600)}
    start_line = asyncio.Barrier(6)

    async def claimer(store: PostgresJobStore, scope: str | None) -> list[Job]:
        claiming = engine_on(store, clock)
        await start_line.wait()
        claimed: list[Job] = []
        while batch := await claiming.lease(["default"], max_jobs=10, scope=scope):
            claimed += batch
        return claimed

    scopes = [T, T, T, "tenant-b", None, None]
    async with stores(postgres_url, len(scopes)) as claimers:
        results = await asyncio.gather(*(claimer(store, scope) for store, scope in zip(claimers, scopes, strict=True)))

    every = [job.id for claimed in results for job in claimed]
    assert len(every) == len(set(every)) == 1200
    assert set(every) == ours | theirs
    for scope, claimed in zip(scopes, results, strict=True):
        if scope is not None:
            assert {job.tenant_id for job in claimed} <= {scope}
    assert sum(1 for scope, claimed in zip(scopes, results, strict=True) if scope == T and claimed) > 1
