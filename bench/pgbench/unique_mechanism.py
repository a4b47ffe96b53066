"""Prototype of the three candidate mechanisms for unique jobs (issue 43), measured against a plain insert in the
same run: `python bench/pgbench/unique_mechanism.py postgresql://…/scratch` on a database `queueflow migrate` built.

Each candidate enqueues rows with `unique` `skip` on 1,000 distinct keys, single rows and 100-row batches, from
4 concurrent connections (each its own quarter of the keys, as requests of distinct customers would come):
`fresh` keys (every row meets no job: a lock, a lookup and an insert) and `repeat` keys (every row meets its key's
pending job: a lock, a lookup and no insert). Figures are rows/s and rows/s ÷ plain.

- plain: the store's INSERT … SELECT FROM unnest, no transaction (what an enqueue is today).
- index: (a) a partial unique index on (tenant_id, unique_slot) WHERE unique_slot IS NOT NULL, INSERT … ON
  CONFLICT DO NOTHING, then a read of the conflicting rows' ids (skip answers with the existing job).
- keys: (b) a row per (tenant, key) in unique_keys, upserted (ON CONFLICT DO UPDATE locks it whether it was new or
  not) in key order, then the key's jobs in the rule's states by index, then the insert; one transaction.
- advisory: (c) pg_advisory_xact_lock per key (hashtextextended) in key order, then as keys.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid

import asyncpg

CLIENTS = 4
KEYS = 1000
TENANT = "acme"
STATES = ["pending", "retrying", "running"]

SETUP = [
    "ALTER TABLE queueflow.jobs ADD COLUMN IF NOT EXISTS unique_key text",
    "ALTER TABLE queueflow.jobs ADD COLUMN IF NOT EXISTS unique_slot text",
    "CREATE INDEX IF NOT EXISTS proto_jobs_unique_key ON queueflow.jobs (tenant_id, unique_key)"
    " WHERE unique_key IS NOT NULL",
    "CREATE TABLE IF NOT EXISTS queueflow.proto_unique_keys (tenant_id text, key text, PRIMARY KEY (tenant_id, key))",
]

INSERT = """
INSERT INTO queueflow.jobs (id, tenant_id, queue_name, task_name, payload, unique_key, unique_slot, created_at)
SELECT u.id, $2, 'default', 'sync', u.payload::jsonb, u.key, CASE WHEN $4 THEN u.key END, now()
  FROM unnest($1::text[], $3::text[], $5::text[]) AS u(id, key, payload)
"""
INSERT_PLAIN = """
INSERT INTO queueflow.jobs (id, tenant_id, queue_name, task_name, payload, created_at)
SELECT u.id, $2, 'default', 'sync', u.payload::jsonb, now() FROM unnest($1::text[], $3::text[]) AS u(id, payload)
"""
INSERT_INDEX = """
INSERT INTO queueflow.jobs (id, tenant_id, queue_name, task_name, payload, unique_key, unique_slot, created_at)
SELECT u.id, $2, 'default', 'sync', u.payload::jsonb, u.key, u.key, now()
  FROM unnest($1::text[], $3::text[], $4::text[]) AS u(id, key, payload)
ON CONFLICT (tenant_id, unique_slot) WHERE unique_slot IS NOT NULL DO NOTHING
RETURNING id
"""
EXISTING_BY_SLOT = """
SELECT id, unique_slot FROM queueflow.jobs WHERE tenant_id = $1 AND unique_slot = ANY($2::text[])
"""
LOCK_KEYS = """
INSERT INTO queueflow.proto_unique_keys (tenant_id, key)
SELECT $1, k FROM unnest($2::text[]) AS k ORDER BY k
ON CONFLICT (tenant_id, key) DO UPDATE SET key = excluded.key
"""
LOCK_ADVISORY = """
SELECT count(pg_advisory_xact_lock(hashtextextended($1 || chr(31) || k, 0))) FROM (SELECT k FROM unnest($2::text[])
 AS k ORDER BY k) AS s
"""
EXISTING = """
SELECT id, unique_key FROM queueflow.jobs
 WHERE tenant_id = $1 AND unique_key = ANY($2::text[]) AND unique_key IS NOT NULL AND status = ANY($3::text[])
"""


def ids(n: int) -> list[str]:
    return [f"job_{uuid.uuid4().hex}" for _ in range(n)]


async def plain(db: asyncpg.Connection, keys: list[str]) -> None:
    await db.execute(INSERT_PLAIN, ids(len(keys)), TENANT, [json.dumps({"k": k}) for k in keys])


async def index(db: asyncpg.Connection, keys: list[str]) -> None:
    inserted = await db.fetch(INSERT_INDEX, ids(len(keys)), TENANT, keys, [json.dumps({"k": k}) for k in keys])
    if len(inserted) < len(keys):
        await db.fetch(EXISTING_BY_SLOT, TENANT, keys)


async def locked(lock: str, db: asyncpg.Connection, keys: list[str]) -> None:
    async with db.transaction():
        await db.execute(lock, TENANT, keys)
        found = {row["unique_key"] for row in await db.fetch(EXISTING, TENANT, keys, STATES)}
        new = [k for k in keys if k not in found]
        if new:
            await db.execute(INSERT, ids(len(new)), TENANT, new, False, [json.dumps({"k": k}) for k in new])


async def keys_table(db: asyncpg.Connection, keys: list[str]) -> None:
    await locked(LOCK_KEYS, db, keys)


async def advisory(db: asyncpg.Connection, keys: list[str]) -> None:
    await locked(LOCK_ADVISORY, db, keys)


CANDIDATES = {"plain": plain, "index": index, "keys": keys_table, "advisory": advisory}


async def run(pool: asyncpg.Pool, name: str, batch: int, round_: str) -> float:
    """Rows/s of one candidate enqueueing KEYS rows (one per key), CLIENTS connections at once."""
    work = CANDIDATES[name]
    keys = [f"customer-{i}{round_}" for i in range(KEYS)]
    share = [keys[c::CLIENTS] for c in range(CLIENTS)]

    async def client(mine: list[str]) -> None:
        async with pool.acquire() as db:
            for start in range(0, len(mine), batch):
                await work(db, mine[start : start + batch])

    began = time.perf_counter()
    await asyncio.gather(*(client(mine) for mine in share))
    return KEYS / (time.perf_counter() - began)


async def main(url: str, repetitions: int = 3) -> None:
    db = await asyncpg.connect(url)
    for sql in SETUP:
        await db.execute(sql)
    pool = await asyncpg.create_pool(url, min_size=CLIENTS, max_size=CLIENTS)
    results: dict[tuple[str, int, str], list[float]] = {}
    for rep in range(repetitions):
        for batch in (1, 100):
            for name in CANDIDATES:
                await db.execute("TRUNCATE queueflow.jobs, queueflow.proto_unique_keys")
                if name == "index":
                    await db.execute(
                        "CREATE UNIQUE INDEX proto_jobs_unique_slot ON queueflow.jobs (tenant_id, unique_slot)"
                        " WHERE unique_slot IS NOT NULL"
                    )
                await db.execute("VACUUM ANALYZE queueflow.jobs")
                fresh = await run(pool, name, batch, f"-{rep}-fresh")
                results.setdefault((name, batch, "fresh"), []).append(fresh)
                if name != "plain":  # every key now has its pending job: each row is a skip
                    again = await run(pool, name, batch, f"-{rep}-fresh")
                    results.setdefault((name, batch, "repeat"), []).append(again)
                if name == "index":
                    await db.execute("DROP INDEX queueflow.proto_jobs_unique_slot")
    print(f"| candidate | batch | keys | rows/s (median of {repetitions}) | ÷ plain |")
    print("|---|---|---|---|---|")
    for (name, batch, kind), figures in results.items():
        median = sorted(figures)[len(figures) // 2]
        base = sorted(results["plain", batch, "fresh"])[len(figures) // 2]
        print(f"| {name} | {batch} | {kind} | {median:,.0f} | {median / base:.2f} |")
    await pool.close()
    await db.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
