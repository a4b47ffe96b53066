"""Flow control under real concurrency: separate pools (so separate connections) leasing one limited queue, while
another connection samples what the database holds."""

from __future__ import annotations

import asyncio
import random

from queueflow.clocks import TestClock
from queueflow.core.flow import QueueSettingsPatch, RateLimit
from queueflow.core.types import NewJob
from queueflow.stores.postgres import PostgresJobStore

from tests import pg
from tests.moments import START, T
from tests.postgres.helpers import engine_on
from tests.postgres.test_concurrency import stores

RUNNING = "SELECT count(*) FROM queueflow.jobs WHERE status = 'running' AND tenant_id = $1 AND queue_name = 'default'"
RUNNING_PER_KEY = """
SELECT coalesce(max(running), 0) FROM (
    SELECT count(*) AS running FROM queueflow.jobs
     WHERE status = 'running' AND tenant_id = $1 AND queue_name = 'default' AND config ? 'concurrency_key'
     GROUP BY config->>'concurrency_key') AS per_key
"""


async def lease_all_while_sampling(
    postgres_url: str, clock: TestClock, jobs: int, sample_sql: str, fill: int = 1
) -> tuple[list[int], list[int]]:
    """Eight leasers take every one of tenant T's `jobs` (1–4 a lease) and end each by complete, cancel or a final
    fail, while a ninth connection runs `sample_sql` in a loop. Returns (leases per leaser, samples).

    A leaser holds what it leased until a sample that began after its lease has been read, so samples are taken
    while jobs run, whatever the machine's speed (ending each at once, a fast machine was never seen at the
    limit). At the start, every leaser also holds its jobs until the leasers together hold `fill` of T's: a sample
    then sees `fill` running at once, so a run that is meant to reach the limit does, on any machine."""
    start_line = asyncio.Barrier(9)
    finished = asyncio.Event()
    filled = asyncio.Event()
    held = [0]  # T's jobs leased and not yet ended
    done: list[str] = []
    sampled = [asyncio.Event()]  # set after the next sample, then replaced

    async def leaser(store: PostgresJobStore, seed: int) -> int:
        engine = engine_on(store, clock, seed=100 + seed)  # ids of its own: the seed also draws them
        rng = random.Random(seed)
        await start_line.wait()
        leases = 0
        while len(done) < jobs:
            batch = await engine.lease(["default"], max_jobs=rng.randint(1, 4))
            leases += 1
            held[0] += sum(job.tenant_id == T for job in batch)
            if held[0] >= fill:
                filled.set()
            if batch:
                # A guard, not a wait for time to pass: only a claim that never lets `fill` run ends it.
                async with asyncio.timeout(60):
                    await filled.wait()
                for _ in range(2):  # the sample under way may have begun before this lease; the next one sees it
                    await sampled[-1].wait()
            for job in batch:
                if job.tenant_id != T:
                    await engine.complete(job.id, job.lease_token or "")
                    continue
                # Every way a running job ends frees its slot: complete, cancel, or fail for good.
                way = rng.random()
                if way < 0.8:
                    await engine.complete(job.id, job.lease_token or "")
                elif way < 0.9:
                    await engine.cancel_job(T, job.id)
                else:
                    await engine.fail(job.id, job.lease_token or "", "boom", retryable=False)
                held[0] -= 1
                done.append(job.id)
        return leases

    async def sampler() -> list[int]:
        samples: list[int] = []
        async with pg.connect(postgres_url) as connection:
            await start_line.wait()
            while not finished.is_set():
                samples.append(await connection.fetchval(sample_sql, T))
                sampled.append(asyncio.Event())
                sampled[-2].set()
        return samples

    watching = asyncio.create_task(sampler())
    async with stores(postgres_url, 8) as leasers:
        leases = await asyncio.gather(*(leaser(store, seed) for seed, store in enumerate(leasers)))
    finished.set()
    samples = await watching
    assert len(set(done)) == jobs
    assert all(count > 1 for count in leases), "the leasers did not overlap"
    assert len(samples) > 100, "the database was sampled too rarely to mean anything"
    return leases, samples


async def test_eight_leasers_never_run_more_than_the_concurrency_limit(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    clock = TestClock(START)
    engine = engine_on(postgres_store, clock)
    await engine.enqueue_many(T, [NewJob(task_name="t")] * 400)
    # Another tenant's unlimited jobs share the queue (and go through the restricted claim with ours).
    await engine_on(postgres_store, clock, seed=99).enqueue_many("tenant-b", [NewJob(task_name="b")] * 100)
    await engine.configure_queue(T, "default", QueueSettingsPatch(concurrency_limit=3))

    _, samples = await lease_all_while_sampling(postgres_url, clock, 400, RUNNING, fill=3)

    assert max(samples) <= 3, f"more than the limit ran at once: {max(samples)}"
    assert max(samples) == 3, "the limit was never reached: this run proves nothing"


async def test_eight_leasers_never_run_two_jobs_of_one_key_at_once(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    clock = TestClock(START)
    engine = engine_on(postgres_store, clock)
    # 50 keys with 8 jobs each, in runs of one key, so that one key's backlog always lies ahead of the others.
    await engine.enqueue_many(T, [NewJob(task_name="t", concurrency_key=f"user-{i // 8}") for i in range(400)])
    await engine.enqueue_many(T, [NewJob(task_name="free")] * 50)  # no key: not limited by it
    await engine.configure_queue(T, "default", QueueSettingsPatch(key_concurrency_limit=1))

    _, samples = await lease_all_while_sampling(postgres_url, clock, 450, RUNNING_PER_KEY)

    assert max(samples) <= 1, f"{max(samples)} jobs of one key ran at once"
    assert max(samples) == 1, "no keyed job was ever seen running: this run proves nothing"


async def test_eight_concurrent_leasers_take_exactly_what_the_rate_limit_allows(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    clock = TestClock(START)
    engine = engine_on(postgres_store, clock)
    await engine.enqueue_many(T, [NewJob(task_name="t")] * 1000)
    await engine.configure_queue(T, "default", QueueSettingsPatch(rate_limit=RateLimit(jobs=50, per_seconds=1)))
    leased: list[str] = []

    async def drain(store: PostgresJobStore, seed: int) -> None:
        lessee = engine_on(store, clock, seed=100 + seed)
        while batch := await lessee.lease(["default"], max_jobs=3):
            leased.extend(job.id for job in batch)

    async with stores(postgres_url, 8) as leasers:
        # Ten seconds of the test clock in steps of 0.1 s; at each step all eight race for the tokens.
        for step in range(101):
            if step:
                clock.advance(seconds=0.1)
            await asyncio.gather(*(drain(store, seed) for seed, store in enumerate(leasers)))

    assert len(set(leased)) == len(leased) == 50 + 10 * 50  # the burst, then 50 a second: never a job more
