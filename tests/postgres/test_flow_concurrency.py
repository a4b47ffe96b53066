"""Flow control under real concurrency: separate pools (so separate connections) leasing one limited queue, while
another connection samples what the database holds."""

from __future__ import annotations

import asyncio
import random

from queueflow.clocks import TestClock
from queueflow.core.flow import QueueSettingsPatch
from queueflow.core.types import NewJob
from queueflow.stores.postgres import PostgresJobStore

from tests import pg
from tests.postgres.helpers import START, T, engine_on
from tests.postgres.test_concurrency import enqueue, stores

RUNNING = "SELECT count(*) FROM queueflow.jobs WHERE status = 'running' AND tenant_id = $1 AND queue_name = 'default'"


async def test_eight_leasers_never_run_more_than_the_concurrency_limit(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    clock = TestClock(START)
    jobs = 400
    await enqueue(postgres_store, clock, jobs)
    # Another tenant's unlimited jobs share the queue (and go through the restricted claim with ours).
    await engine_on(postgres_store, clock, seed=99).enqueue_many("tenant-b", [NewJob(task_name="b")] * 100)
    await engine_on(postgres_store, clock).configure_queue(T, "default", QueueSettingsPatch(concurrency_limit=3))
    start_line = asyncio.Barrier(9)
    finished = asyncio.Event()
    done: list[str] = []

    async def leaser(store: PostgresJobStore, seed: int) -> int:
        engine = engine_on(store, clock, seed=100 + seed)  # ids of its own: the seed also draws them
        rng = random.Random(seed)
        await start_line.wait()
        leases = 0
        while len(done) < jobs:
            batch = await engine.lease(["default"], max_jobs=rng.randint(1, 4))
            leases += 1
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
                done.append(job.id)
        return leases

    async def sampler() -> list[int]:
        samples: list[int] = []
        async with pg.connect(postgres_url) as connection:
            await start_line.wait()
            while not finished.is_set():
                samples.append(await connection.fetchval(RUNNING, T))
        return samples

    watching = asyncio.create_task(sampler())
    async with stores(postgres_url, 8) as leasers:
        leases = await asyncio.gather(*(leaser(store, seed) for seed, store in enumerate(leasers)))
    finished.set()
    samples = await watching

    assert len(set(done)) == jobs
    assert sum(1 for count in leases if count > 1) == 8, "the leasers did not overlap"
    assert len(samples) > 100, "the database was sampled too rarely to mean anything"
    assert max(samples) <= 3, f"more than the limit ran at once: {max(samples)}"
    assert max(samples) == 3, "the limit was never reached: this run proves nothing"
