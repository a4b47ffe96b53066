"""PgQueuer on its own database: enqueue rows/s (4 connections, 1,000 jobs a call) and drain jobs/s (no-op jobs,
N processes × batch B; the bench gives it its best shape, bench/peers/launch.py PGQUEUER_SHAPE). Run by
bench/.peers-venv's Python; prints one JSON line.

    pgqueuer_run.py DATABASE_URL --jobs 50000 --processes 2 --batch 100 --repetitions 3

Drain processes start, connect and register their entrypoint first, then wait for a go on stdin, so process
start-up is not timed; the drain ends when the last process has emptied the queue and exited its run loop.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time

import asyncpg
from pgqueuer import PgQueuer
from pgqueuer.models import Job
from pgqueuer.queries import Queries
from pgqueuer.types import QueueExecutionMode

CALL = 1000
CONNECTIONS = 4


async def enqueue(url: str, jobs: int) -> float:
    """Seconds to enqueue `jobs` no-op jobs."""
    connections = [await asyncpg.connect(url) for _ in range(CONNECTIONS)]
    calls = [min(CALL, jobs - start) for start in range(0, jobs, CALL)]

    async def client(connection: asyncpg.Connection) -> None:
        queries = Queries.from_asyncpg_connection(connection)
        while calls:
            size = calls.pop()
            await queries.enqueue(["noop"] * size, [None] * size, [0] * size)

    started = time.perf_counter()
    await asyncio.gather(*(client(connection) for connection in connections))
    seconds = time.perf_counter() - started
    for connection in connections:
        await connection.close()
    return seconds


async def drain_process(url: str, batch: int) -> None:
    """One drain process: ready, wait for go, drain, report when it finished."""
    connection = await asyncpg.connect(url)
    pgq = PgQueuer.from_asyncpg_connection(connection)

    @pgq.entrypoint("noop")
    async def noop(job: Job) -> None:
        return None

    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    await pgq.run(batch_size=batch, mode=QueueExecutionMode.drain)
    print(json.dumps({"finished": time.time()}), flush=True)
    await connection.close()


def drain(url: str, processes: int, batch: int) -> float:
    children = [
        subprocess.Popen(
            [sys.executable, __file__, url, "--drain-process", "--batch", str(batch)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(processes)
    ]
    for child in children:
        assert child.stdout is not None
        if child.stdout.readline().strip() != "ready":
            raise RuntimeError("a PgQueuer drain process did not start")
    started = time.time()
    for child in children:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    finished = []
    for child in children:
        out, _ = child.communicate(timeout=600)
        if child.returncode != 0:
            raise RuntimeError(f"a PgQueuer drain process failed ({child.returncode})")
        finished.append(json.loads(out.strip().splitlines()[-1])["finished"])
    return max(finished) - started


async def left(url: str) -> int:
    connection = await asyncpg.connect(url)
    try:
        return int(await connection.fetchval("SELECT count(*) FROM pgqueuer"))
    finally:
        await connection.close()


async def prepare(url: str) -> None:
    connection = await asyncpg.connect(url)
    try:
        queries = Queries.from_asyncpg_connection(connection)
        if not await queries.has_table("pgqueuer"):
            await queries.install()
        await connection.execute("TRUNCATE pgqueuer, pgqueuer_log, pgqueuer_statistics")
        await connection.execute("VACUUM (ANALYZE) pgqueuer")
    finally:
        await connection.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--jobs", type=int, default=50_000)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--drain-process", action="store_true")
    args = parser.parse_args()
    if args.drain_process:
        asyncio.run(drain_process(args.url, args.batch))
        return
    enqueue_rates, drain_rates = [], []
    for _ in range(args.repetitions):
        asyncio.run(prepare(args.url))
        enqueue_rates.append(args.jobs / asyncio.run(enqueue(args.url, args.jobs)))
        seconds = drain(args.url, args.processes, args.batch)
        if (remaining := asyncio.run(left(args.url))) != 0:
            raise RuntimeError(f"PgQueuer drain left {remaining} jobs")
        drain_rates.append(args.jobs / seconds)
    print(json.dumps({"enqueue": enqueue_rates, "drain": drain_rates}))


if __name__ == "__main__":
    main()
