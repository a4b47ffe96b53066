"""The ready generations keeping leased rows too: does the rotation then bound the reads of running jobs (the
concurrency count of a restricted claim, the janitor's lease-expiry sweep) as it bounds the claim?

    .venv/bin/python bench/results/claimlab/active.py --dsn postgresql://... --n 20000 100000 300000

Tables lab.a0..a2: the ready row of lab.py with `state` ('ready' or 'leased') and `locked_until`; the claim index
holds ready rows, a running index (queue, tenant) and an expiry index (locked_until) hold leased ones. A job's life:
inserted ready into the current generation, UPDATEd to leased by its claim, DELETEd by its completion; every
`--rotate` enqueues the next generation becomes current, the old one's rows (ready or leased) move into it and it
is truncated. The horizon is held throughout; then 10 jobs are leased and left running, 100 stay ready, and the
three reads are measured over the live generations (the previous, just truncated, and the current), against the
same reads of the jobs table on today's layout (paths.py: `RUNNING_COUNTS`, `LEASE_EXPIRED`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

import asyncpg

sys.path.insert(0, str(Path(__file__).parent))
import lab
import paths

ACTIVE_DDL = "\n".join(
    f"""
CREATE TABLE IF NOT EXISTS lab.a{g} (
    id text COLLATE "C" NOT NULL, queue_name text NOT NULL, tenant_id text NOT NULL, task_name text NOT NULL,
    priority int NOT NULL, scheduled_at timestamptz NOT NULL, created_at timestamptz NOT NULL,
    state text NOT NULL DEFAULT 'ready', locked_until timestamptz
) WITH (autovacuum_enabled = false);
CREATE INDEX IF NOT EXISTS a{g}_claim ON lab.a{g} (queue_name, tenant_id, priority DESC, scheduled_at, created_at, id)
    WHERE state = 'ready';
CREATE INDEX IF NOT EXISTS a{g}_running ON lab.a{g} (queue_name, tenant_id) WHERE state = 'leased';
CREATE INDEX IF NOT EXISTS a{g}_expiry ON lab.a{g} (locked_until) WHERE state = 'leased';
CREATE INDEX IF NOT EXISTS a{g}_id ON lab.a{g} (id);"""
    for g in range(3)
)


def union(live: list[int], select: str) -> str:
    return " UNION ALL ".join(f"SELECT * FROM ({select.format(t=f'lab.a{g}')}) AS b{g}" for g in live)


def reads(live: list[int]) -> dict[str, str]:
    far = f"'{lab.FAR.isoformat()}'::timestamptz"
    return {
        "running_counts": "SELECT count(*) FROM ("
        + union(live, "SELECT 1 FROM {t} WHERE state = 'leased' AND queue_name = 'q' AND tenant_id = 't0'")
        + ") AS r",
        "lease_expired": "SELECT id FROM ("
        + union(
            live,
            f"SELECT id, locked_until FROM {{t}} WHERE state = 'leased' AND locked_until <= {far}"
            " ORDER BY locked_until LIMIT 100",
        )
        + ") AS e ORDER BY locked_until LIMIT 100",
        "claim_first": "SELECT id FROM ("
        + union(
            live,
            "SELECT id, priority, scheduled_at, created_at FROM {t} WHERE state = 'ready' AND queue_name = 'q'"
            " AND tenant_id = 't0' ORDER BY priority DESC, scheduled_at, created_at, id LIMIT 1",
        )
        + ") AS c ORDER BY priority DESC, scheduled_at, created_at, id LIMIT 1",
    }


async def push(db: asyncpg.Connection, n: int, rotate: int) -> int:
    current, since = 0, 0
    for first in range(0, n, min(lab.BATCH, rotate)):
        count = min(lab.BATCH, rotate, n - first)
        ids = lab.ids(first, count)
        await db.execute(lab.INSERT_JOBS + lab.job_rows(first, count, 1))
        await db.execute(
            f"""INSERT INTO lab.a{current} (id, queue_name, tenant_id, task_name, priority, scheduled_at,
                                    created_at)
                             SELECT id, queue_name, tenant_id, task_name, priority, scheduled_at, created_at
                               FROM queueflow.jobs WHERE id = ANY($1::text[])""",
            ids,
        )
        await db.execute(
            f"""UPDATE lab.a{current} SET state = 'leased', locked_until = now() + interval '60 s'
                              WHERE id = ANY($1::text[])""",
            ids,
        )
        await db.execute(lab.RUN, ids)
        await db.execute(f"DELETE FROM lab.a{current} WHERE id = ANY($1::text[])", ids)
        await db.execute(lab.DONE, ids)
        since += count
        if since >= rotate and first + count < n:
            old, current = current, (current + 1) % 3
            await db.execute(
                f"WITH gone AS (DELETE FROM lab.a{old} RETURNING *) INSERT INTO lab.a{current} SELECT * FROM gone"
            )
            await db.execute(f"TRUNCATE lab.a{old}")
            since = 0
    return current


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--dsn", required=True)
    p.add_argument("--n", type=int, nargs="+", default=[20_000, 100_000, 300_000])
    p.add_argument("--rotate", type=int, default=10_000)
    args = p.parse_args()
    for n in args.n:
        db = await asyncpg.connect(args.dsn, statement_cache_size=0)
        await lab.fresh(db, ACTIVE_DDL, ["lab.a0", "lab.a1", "lab.a2"])
        holder = await lab.holding(args.dsn)
        current = await push(db, n, args.rotate)
        await db.execute(lab.INSERT_JOBS + lab.job_rows(n + 1_000_000, 110, 1, live=True))
        await db.execute(f"""INSERT INTO lab.a{current} (id, queue_name, tenant_id, task_name, priority, scheduled_at,
                                    created_at)
                             SELECT id, queue_name, tenant_id, task_name, priority, scheduled_at, created_at
                               FROM queueflow.jobs WHERE id LIKE 'live_%'""")
        running = [f"live_{i:09d}" for i in range(n + 1_000_000, n + 1_000_010)]
        await db.execute(
            f"""UPDATE lab.a{current} SET state = 'leased', locked_until = now() + interval '1 hour'
                              WHERE id = ANY($1::text[])""",
            running,
        )
        await db.execute("ANALYZE lab.a0, lab.a1, lab.a2")
        live = [(current - 1) % 3, current]
        for phase in ("hold", "vacuumed"):
            if phase == "vacuumed":
                await holder.execute("COMMIT")
                await db.execute(f"VACUUM lab.a{current}")
            for name, sql in reads(live).items():
                m = await paths.measure(db, sql, [])
                print(json.dumps({"design": "active", "read": name, "n": n, "phase": phase, **m}), flush=True)
        if not holder.is_closed():
            await holder.close()
        await db.close()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
