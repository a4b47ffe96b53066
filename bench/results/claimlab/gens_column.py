"""Counts for the generation column (migration 0022; bench/results/2026-12-07-claim-generations.md): what a claim
of 1 and of 100 and the idle poll (DUE_ANY) read under a held xmin horizon and clean, after N jobs went through, and
what the hot paths touch on a clean database — on whichever QueueFlow is importable (run it with
PYTHONPATH=<checkout>/server to measure another), each in a scratch database of its own.

Counts, not times: index tuples read (pg_stat_get_xact_tuples_returned over every index of the schema) and blocks
fetched (pg_stat_get_xact_blocks_fetched over every table and index of the schema: shared buffers hit or read,
whatever statement of a function or trigger touched them), each statement run once in a transaction rolled back.

    .venv/bin/python bench/results/claimlab/gens_column.py --n 20000 100000 > run.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from datetime import timedelta
from pathlib import Path

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from queueflow.clocks import TestClock
from queueflow.core.types import NewJob
from queueflow.stores.postgres import PostgresJobStore
from queueflow.stores.postgres import schema as pgschema
from queueflow.stores.postgres.claim.args import ClaimArgs, TurnOf
from queueflow.stores.postgres.claim.function import CLAIM_CALL
from queueflow.stores.postgres.claim.unrestricted_sql import DUE_ANY
from queueflow.stores.postgres.params import values
from queueflow.stores.postgres.rows import job_insert
from queueflow.stores.postgres.sql import COMPLETE_ONE, RELEASE

from tests.moments import START, T
from tests.postgres.helpers import engine_on, row
from tests.postgres.horizon import pushed_through

ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
GENERATION = 5_000  # jobs between two rotations: 5 s (the janitor's interval) at 1,000 jobs/s

TOTALS = """
SELECT coalesce(sum(pg_stat_get_xact_tuples_returned(c.oid)) FILTER (WHERE c.relkind = 'i'), 0) AS tuples,
       coalesce(sum(pg_stat_get_xact_blocks_fetched(c.oid)), 0) AS blocks
  FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
 WHERE n.nspname = 'queueflow' AND c.relkind IN ('r', 'i')
"""


async def counted(db: asyncpg.Connection, before_statements: list, statement: str, *args: object) -> dict:
    """`statement` run once after `before_statements` (not counted), in a transaction rolled back."""
    transaction = db.transaction()
    await transaction.start()
    try:
        await db.execute("SET LOCAL jit = off")
        for sql, *sql_args in before_statements:
            await db.fetch(sql, *sql_args)
        before = await db.fetchrow(TOTALS)
        await db.fetch(statement, *args)
        after = await db.fetchrow(TOTALS)
    finally:
        await transaction.rollback()
    return {"index_tuples": int(after["tuples"] - before["tuples"]), "blocks": int(after["blocks"] - before["blocks"])}


def claim(max_jobs: int, now) -> list:
    args = ClaimArgs(queues=["default"], max_jobs=max_jobs, now=now, lease=timedelta(seconds=30), task_names=None)
    return values(args, TurnOf(turn_of=["default"]))


async def reads(db: asyncpg.Connection, now) -> dict:
    return {
        "claim_1": await counted(db, [], CLAIM_CALL, *claim(1, now)),
        "claim_100": await counted(db, [], CLAIM_CALL, *claim(100, now)),
        "due_any": await counted(db, [], DUE_ANY, ["default"], now),
    }


async def scratch() -> tuple[str, str]:
    name = f"qf_gens_bench_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(ADMIN)
    await admin.execute(f'CREATE DATABASE "{name}"')
    await admin.close()
    url = f"postgresql://postgres@127.0.0.1:5432/{name}"
    await pgschema.upgrade_async(url)
    return name, url


async def drop(name: str) -> None:
    admin = await asyncpg.connect(ADMIN)
    await admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
    await admin.close()


async def under_hold(n: int) -> dict:
    name, url = await scratch()
    try:
        async with PostgresJobStore.from_url(url, pool_size=2) as store:
            db = await asyncpg.connect(url)
            await db.execute("ALTER TABLE queueflow.jobs SET (autovacuum_enabled = off)")
            rotate = getattr(store, "rotate_generations", None)
            holder = await asyncpg.connect(url)
            await holder.execute("BEGIN")
            await holder.fetchval("SELECT txid_current()")
            pushed = 0
            while pushed < n:
                await pushed_through(db, GENERATION, start=START, tenant=T, numbered_from=pushed)
                pushed += GENERATION
                if rotate is not None and pushed < n:
                    await rotate(START, period=timedelta(0))
            now = START + timedelta(seconds=pushed / 1000 + 60)
            engine = engine_on(store, TestClock(now))
            # The worst moment: the current generation holds a whole generation's claimed jobs (rotation is due).
            await engine.enqueue_many(T, [NewJob(task_name="t")] * 100)
            before_rotation = await reads(db, now)
            # Just after a rotation: those 100 gone through too, the next 100 written into the new generation.
            await db.execute(
                "UPDATE queueflow.jobs SET status = 'completed', completed_at = $1 WHERE status = 'pending'", now
            )
            if rotate is not None:
                await rotate(START, period=timedelta(0))
            await engine.enqueue_many(T, [NewJob(task_name="t")] * 100)
            after_rotation = await reads(db, now)
            await holder.execute("COMMIT")
            await holder.close()
            await db.execute("VACUUM queueflow.jobs")
            clean = await reads(db, now)
            await db.close()
        return {
            "n": n,
            "held_before_rotation": before_rotation,
            "held_after_rotation": after_rotation,
            "vacuumed": clean,
        }
    finally:
        await drop(name)


async def hot_paths() -> dict:
    """On a clean database with 100 jobs due: enqueue 1 and 100, lease 1, complete 1, release 1."""
    name, url = await scratch()
    try:
        async with PostgresJobStore.from_url(url, pool_size=2) as store:
            await engine_on(store, TestClock(START)).enqueue_many(T, [NewJob(task_name="t")] * 100)
            db = await asyncpg.connect(url)
            await db.execute("VACUUM ANALYZE queueflow.jobs")
            one = job_insert([row(id="job_hot_one", tenant_id=T, scheduled_at=START, created_at=START)])
            many = job_insert(
                [row(id=f"job_hot_{i:03d}", tenant_id=T, scheduled_at=START, created_at=START) for i in range(100)]
            )
            lease_args = claim(1, START)
            # The job a lease of 1 takes, and its token, fixed by an UPDATE before the statement counted.
            picked = await db.fetchrow(
                "SELECT id FROM queueflow.jobs WHERE status = 'pending' ORDER BY priority DESC, scheduled_at,"
                " created_at, id LIMIT 1"
            )
            token = uuid.uuid4()
            take = (
                "UPDATE queueflow.jobs SET status = 'running', lease_token = $2, delivery_count = 1,"
                " started_at = $3::timestamptz, locked_until = $3::timestamptz + interval '30 s' WHERE id = $1",
                picked["id"],
                token,
                START,
            )
            result = {
                "enqueue_1": await counted(db, [], one[0], *one[1]),
                "enqueue_100": await counted(db, [], many[0], *many[1]),
                "lease_1": await counted(db, [], CLAIM_CALL, *lease_args),
                "complete_1": await counted(db, [take], COMPLETE_ONE, picked["id"], token, '{"ok": true}', START),
                "release_1": await counted(db, [take], RELEASE, [picked["id"]], [token], START),
            }
            await db.close()
        return result
    finally:
        await drop(name)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, nargs="*", default=[20_000, 100_000])
    parser.add_argument("--label", default="")
    options = parser.parse_args()
    print(json.dumps({"label": options.label, "hot_paths": await hot_paths()}), flush=True)
    for n in options.n:
        print(json.dumps({"label": options.label, **await under_hold(n)}), flush=True)


asyncio.run(main())
