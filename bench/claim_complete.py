"""Claim + complete throughput on PostgreSQL: one job at a time vs 100 at a time, in the same run.

    .venv/bin/python bench/claim_complete.py [--jobs 5000] [--batch 100] [--workers 1]

It creates a database of its own (queueflow_bench_<random>) on the server named by QUEUEFLOW_BENCH_DATABASE_URL
(default: the local development server), migrates it, measures, and drops it. A benchmark, not a test: the
numbers depend on the machine; what DESIGN.md predicts is the ratio (batched ≈ 5–10× single).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import time
from collections.abc import Awaitable, Callable

import asyncpg
from queueflow.clocks import SystemClock
from queueflow.core.types import Completion, NewJob
from queueflow.engine import Engine
from queueflow.stores.postgres import PostgresJobStore
from queueflow.stores.postgres import schema as pgschema
from queueflow.stores.postgres.url import asyncpg_dsn
from sqlalchemy.engine import make_url

ADMIN_URL = os.environ.get("QUEUEFLOW_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
TENANT = "bench"


async def admin(sql: str) -> None:
    connection = await asyncpg.connect(asyncpg_dsn(ADMIN_URL))
    try:
        await connection.execute(sql)
    finally:
        await connection.close()


async def enqueue(engine: Engine, count: int, queue: str) -> float:
    """Insert `count` jobs in batches of 1000; rows per second."""
    started = time.perf_counter()
    for start in range(0, count, 1000):
        size = min(1000, count - start)
        await engine.enqueue_many(
            TENANT, [NewJob(task_name="noop", queue_name=queue, payload={"i": i}) for i in range(size)]
        )
    return count / (time.perf_counter() - started)


async def drain_single(engine: Engine, queue: str) -> int:
    done = 0
    while jobs := await engine.lease([queue], max_jobs=1):
        await engine.complete(jobs[0].id, jobs[0].lease_token or "", {"ok": True})
        done += 1
    return done


def drain_batched(batch: int) -> Callable[[Engine, str], Awaitable[int]]:
    async def drain(engine: Engine, queue: str) -> int:
        done = 0
        while jobs := await engine.lease([queue], max_jobs=batch):
            await engine.ack(complete=[Completion(job.id, job.lease_token or "", {"ok": True}) for job in jobs])
            done += len(jobs)
        return done

    return drain


async def measure(
    engines: list[Engine], count: int, queue: str, drain: Callable[[Engine, str], Awaitable[int]]
) -> tuple[float, float]:
    """(insert rows/s, claim+complete jobs/s) for `count` jobs drained by every engine at once."""
    inserted = await enqueue(engines[0], count, queue)
    started = time.perf_counter()
    done = sum(await asyncio.gather(*(drain(engine, queue) for engine in engines)))
    assert done == count, (done, count)
    return inserted, count / (time.perf_counter() - started)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--workers", type=int, default=1, help="concurrent workers, each with its own connection")
    args = parser.parse_args()

    name = f"queueflow_bench_{secrets.token_hex(4)}"
    url = make_url(ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    await admin(f'CREATE DATABASE "{name}"')
    stores: list[PostgresJobStore] = []
    try:
        await pgschema.upgrade_async(url)
        stores = [PostgresJobStore.from_url(url, pool_size=1, max_overflow=0) for _ in range(args.workers)]
        engines = [Engine(store, SystemClock()) for store in stores]
        # Warm up: connections opened, statements prepared.
        await measure(engines, 200, "warmup", drain_single)
        await measure(engines, 200, "warmup", drain_batched(args.batch))

        insert_rate, single = await measure(engines, args.jobs, "single", drain_single)
        _, batched = await measure(engines, args.jobs, "batched", drain_batched(args.batch))
        print(f"PostgreSQL, {args.jobs} jobs, {args.workers} worker(s)")
        print(f"  enqueue, batches of 1000:            {insert_rate:9,.0f} rows/s")
        print(f"  claim 1 + complete 1:                {single:9,.0f} jobs/s")
        print(f"  claim {args.batch} + ack {args.batch}:              {batched:9,.0f} jobs/s")
        print(f"  batched / single:                    {batched / single:9.1f} ×")
    finally:
        for store in stores:
            await store.aclose()
        await admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    asyncio.run(main())
