"""Does rotating the ready generations (TRUNCATE of the drained one) stall claims? Claims, enqueues and rotation run
together for `--seconds`, with the horizon held throughout; every claim's latency is kept.

    .venv/bin/python bench/results/claimlab/rotstall.py --dsn postgresql://... [--reader]

Layout: lab.py's lab.rready (LIST partitions by generation; a claim's generic plan locks every partition, so a
TRUNCATE waits for the claims in flight and the claims that come after it wait behind its lock request). The
rotation takes its ACCESS EXCLUSIVE lock with `lock_timeout` (`--lock-timeout` ms) and retries at the next tick
when it times out. `--reader`: one REPEATABLE READ connection has read lab.rready and stays open (a reporting
transaction holds ACCESS SHARE on every partition it read until it ends): no TRUNCATE can succeed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

import asyncpg

sys.path.insert(0, str(Path(__file__).parent))
import gens
import lab


async def enqueuer(dsn: str, stop: asyncio.Event, rate: int, layout: str) -> int:
    db = await asyncpg.connect(dsn)
    n, tick = 0, 0.05
    while not stop.is_set():
        count = int(rate * tick)
        await db.execute(lab.INSERT_JOBS + lab.job_rows(10_000_000 + n, count, 4).replace("'job_'", "'rot_'"))
        ids = [f"rot_{i:09d}" for i in range(10_000_000 + n, 10_000_000 + n + count)]
        if layout == "gens":
            current = await db.fetchval("SELECT current FROM lab.rready_gen")
            await db.execute(
                f"""INSERT INTO lab.g{current} SELECT id, queue_name, tenant_id, task_name, priority,
                                        scheduled_at, created_at FROM queueflow.jobs WHERE id = ANY($1::text[])""",
                ids,
            )
        else:
            await db.execute(
                """INSERT INTO lab.rready SELECT (SELECT current FROM lab.rready_gen), id, queue_name,
                                       tenant_id, task_name, priority, scheduled_at, created_at
                                  FROM queueflow.jobs WHERE id = ANY($1::text[])""",
                ids,
            )
        n += count
        await asyncio.sleep(tick)
    await db.close()
    return n


async def claimer(dsn: str, stop: asyncio.Event, latencies: list[float], layout: str) -> None:
    """Claims of 10 jobs, each completed in the claim's transaction. With `gens`, each claim reads the current
    generation first and runs the statement that names only the live ones (the previous and the current)."""
    db = await asyncpg.connect(dsn)
    await db.execute("SET plan_cache_mode = force_generic_plan")
    statements = {}
    if layout == "gens":
        for current in range(3):
            statements[current] = await db.prepare(gens.gens_claim([(current - 1) % 3, current]))
    else:
        statements[None] = await db.prepare(lab.ready_claim("lab.rready"))
    while not stop.is_set():
        started = time.perf_counter()
        async with db.transaction():
            key = await db.fetchval("SELECT current FROM lab.rready_gen") if layout == "gens" else None
            rows = await statements[key].fetch(["q"], 10, lab.FAR, timedelta(seconds=60), None, ["q"])
            await db.execute(lab.DONE, [r["id"] for r in rows])
        latencies.append((time.perf_counter() - started) * 1000)
        if not rows:
            await asyncio.sleep(0.01)
    await db.close()


async def rotator(
    dsn: str, stop: asyncio.Event, every: float, lock_timeout: int, log: dict[str, int], layout: str
) -> None:
    db = await asyncpg.connect(dsn)
    pending_truncate: int | None = None
    while not stop.is_set():
        try:
            await asyncio.wait_for(stop.wait(), every)
            break
        except TimeoutError:
            pass
        if pending_truncate is None:
            old = await db.fetchval("SELECT current FROM lab.rready_gen")
            await db.execute("UPDATE lab.rready_gen SET current = $1", (old + 1) % 3)
            # gens: claims now read (old, new); the one before old is read by no new claim.
            pending_truncate = (old - 1) % 3 if layout == "gens" else old
            log["switches"] += 1
        table = f"lab.g{pending_truncate}" if layout == "gens" else f"lab.rready_{pending_truncate}"
        into = "lab.g" + str((pending_truncate + 2) % 3) if layout == "gens" else None
        try:
            async with db.transaction():
                await db.execute(f"SET LOCAL lock_timeout = '{lock_timeout}ms'")
                started = time.perf_counter()
                await db.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
                if into:
                    moved = await db.execute(
                        f"WITH gone AS (DELETE FROM {table} RETURNING *) INSERT INTO {into} SELECT * FROM gone"
                    )
                else:
                    moved = await db.execute(
                        f"""WITH gone AS (DELETE FROM {table} RETURNING *)
                            INSERT INTO lab.rready SELECT (SELECT current FROM lab.rready_gen), id, queue_name,
                                   tenant_id, task_name, priority, scheduled_at, created_at FROM gone"""
                    )
                await db.execute(f"TRUNCATE {table}")
                log["held_ms_max"] = max(log["held_ms_max"], int((time.perf_counter() - started) * 1000))
                log["moved"] += int(moved.split()[-1])
            log["truncates"] += 1
            pending_truncate = None
        except asyncpg.LockNotAvailableError:
            log["timeouts"] += 1
    await db.close()


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--dsn", required=True)
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--rate", type=int, default=1000)
    p.add_argument("--every", type=float, default=1.0, help="seconds between rotations")
    p.add_argument("--lock-timeout", type=int, default=20)
    p.add_argument("--claimers", type=int, default=3)
    p.add_argument("--reader", action="store_true")
    p.add_argument("--layout", choices=["partitioned", "gens"], default="partitioned")
    args = p.parse_args()
    db = await asyncpg.connect(args.dsn)
    await lab.reset(db)
    await db.execute("TRUNCATE lab.g0, lab.g1, lab.g2")
    holder = await lab.holding(args.dsn)
    reader = None
    if args.reader:
        reader = await asyncpg.connect(args.dsn)
        await reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        await reader.fetchval("SELECT count(*) FROM lab.rready")
        await reader.fetchval("SELECT count(*) FROM lab.g0") + await reader.fetchval("SELECT count(*) FROM lab.g1")
    stop = asyncio.Event()
    latencies: list[float] = []
    log = {"switches": 0, "truncates": 0, "timeouts": 0, "moved": 0, "held_ms_max": 0}
    tasks = [asyncio.create_task(claimer(args.dsn, stop, latencies, args.layout)) for _ in range(args.claimers)]
    tasks.append(asyncio.create_task(rotator(args.dsn, stop, args.every, args.lock_timeout, log, args.layout)))
    producing = asyncio.create_task(enqueuer(args.dsn, stop, args.rate, args.layout))
    await asyncio.sleep(args.seconds)
    stop.set()
    enqueued = await producing
    await asyncio.gather(*tasks)
    if reader:
        await reader.close()
    await holder.close()
    await db.close()
    latencies.sort()
    q = statistics.quantiles(latencies, n=100)
    print(
        json.dumps(
            {
                "layout": args.layout,
                "reader": args.reader,
                "every_s": args.every,
                "lock_timeout_ms": args.lock_timeout,
                "enqueued": enqueued,
                "claims": len(latencies),
                "p50_ms": round(q[49], 2),
                "p99_ms": round(q[98], 2),
                "max_ms": round(latencies[-1], 2),
                **log,
            }
        )
    )


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
