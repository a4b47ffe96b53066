"""The rate limit under concurrent leases in real time (SystemClock): the limits hold across every worker, never
exceeded (README.md, "Flow control"). Each claim reads its `now` before it waits for the settings row's lock, so
claims reach the bucket out of their clocks' order; the bucket must never be refilled for the same interval twice."""

from __future__ import annotations

import asyncio
import math
import time

from queueflow.clocks import SystemClock
from queueflow.core.flow import QueueSettingsPatch, RateLimit
from queueflow.core.types import NewJob
from queueflow.engine import Engine
from queueflow.stores.postgres import PostgresJobStore

from tests.moments import T
from tests.postgres.test_concurrency import stores

RATE = RateLimit(jobs=5, per_seconds=1)
RUN_SECONDS = 2.0


async def test_four_concurrent_single_job_leasers_never_take_more_than_the_bucket_holds(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    clock = SystemClock()
    engine = Engine(postgres_store, clock)
    await engine.enqueue_many(T, [NewJob(task_name="t")] * 40)
    leased: list[str] = []
    async with stores(postgres_url, 4) as leasers:
        lessees = [Engine(store, clock) for store in leasers]
        # The bucket starts full (the burst) when the limit is set, and refills 5 tokens a second from then on.
        configured = clock.now()
        await engine.configure_queue(T, "default", QueueSettingsPatch(rate_limit=RATE))
        stop_at = time.monotonic() + RUN_SECONDS

        async def lease_until_the_end(lessee: Engine) -> None:
            while time.monotonic() < stop_at:
                leased.extend(job.id for job in await lessee.lease(["default"], max_jobs=1))

        await asyncio.gather(*(lease_until_the_end(lessee) for lessee in lessees))
        ended = clock.now()  # no claim read a later time than this

    allowed = math.floor(RATE.jobs + (ended - configured).total_seconds() * RATE.jobs / RATE.per_seconds)
    assert len(set(leased)) == len(leased)
    assert len(leased) <= allowed, f"{len(leased)} jobs leased in {(ended - configured).total_seconds():.2f} s"
    assert len(leased) >= RATE.jobs, "not even the burst was leased: this run proves nothing"
