"""Ready generations as separate tables, the claim naming only the live ones (lab.py's `rotate` used a partitioned
parent, whose every claim locks every generation and whose plan may read a generation unordered).

    .venv/bin/python bench/results/claimlab/gens.py --dsn postgresql://... --n 20000 100000 300000

`gens_claim(live)` is CLAIM with each of its four reads of the jobs (the tenant skip scan's two probes, the tenant's
claimable check, the share scan) made a UNION ALL of one ordered, LIMITed read per live generation table (the share
scan's branches each lock with SKIP LOCKED, inside a sub-SELECT: a locking clause may not apply to a UNION), merged
by an outer ORDER BY … LIMIT, and the taken rows deleted from each live generation. Measured as lab.py measures,
with the live set (the previous generation, just truncated, and the current one holding a generation's worth of dead
rows) and twice: under the default planner settings and with `enable_seqscan = off` (SET LOCAL in the claim's
transaction, as the claim function would set it), after ANALYZE of near-empty generation tables — the statistics a
generation has right after rotation.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from pathlib import Path

import asyncpg

sys.path.insert(0, str(Path(__file__).parent))
import lab
from queueflow.stores.postgres.claim_sql import CLAIM

GENS_DDL = "\n".join(
    f"""
CREATE TABLE IF NOT EXISTS lab.g{g} (
    id text COLLATE "C" NOT NULL, queue_name text NOT NULL, tenant_id text NOT NULL, task_name text NOT NULL,
    priority int NOT NULL, scheduled_at timestamptz NOT NULL, created_at timestamptz NOT NULL
) WITH (autovacuum_enabled = false);
CREATE INDEX IF NOT EXISTS g{g}_claim ON lab.g{g} (queue_name, tenant_id, priority DESC, scheduled_at, created_at, id);
CREATE INDEX IF NOT EXISTS g{g}_id ON lab.g{g} (id);"""
    for g in range(3)
)

READ = re.compile(
    r"SELECT (?P<cols>[^()]*?) FROM queueflow\.jobs AS j\s+WHERE (?P<where>.*?)\s+ORDER BY (?P<order>[^\n]*?)\s+"
    r"LIMIT (?P<limit>\S+?)(?P<lock>\s+FOR UPDATE SKIP LOCKED)?(?=\))",
    re.DOTALL,
)


def gens_claim(live: list[int]) -> str:
    sql = CLAIM.replace("j.status IN ('pending', 'retrying') AND ", "").replace(
        " AND j.status IN ('pending', 'retrying')", ""
    )

    def branches(m: re.Match[str]) -> str:
        lock = " FOR UPDATE SKIP LOCKED" if m["lock"] else ""
        # Each generation's locked read stops at the tenant's share: the UNION is sorted, not merged lazily, so a
        # branch LIMITed by max_jobs would lock max_jobs rows per tenant and generation (8 tenants, lease of 100:
        # 1,010 index tuples read and ~800 rows locked where CLAIM reads 210).
        limit = "least(share.per_tenant, $2::int)" if m["lock"] else m["limit"]
        each = " UNION ALL ".join(
            f"SELECT * FROM (SELECT j.* FROM lab.g{g} AS j WHERE {m['where']} ORDER BY {m['order']}"
            f" LIMIT {limit}{lock}) AS b{g}"
            for g in live
        )
        return f"SELECT {m['cols']} FROM ({each}) AS j ORDER BY {m['order']} LIMIT {m['limit']}"

    sql, count = READ.subn(branches, sql)
    assert count == 4, count
    gone = "".join(
        f"gone{g} AS (DELETE FROM lab.g{g} AS r WHERE r.id = ANY(ARRAY(SELECT picked.id FROM picked))),\n" for g in live
    )
    return sql.replace("free AS (", gone + "free AS (", 1)


async def push(db: asyncpg.Connection, n: int, tenants: int, rotate: int) -> int:
    """N jobs through jobs + the current generation; every `rotate` enqueues the next generation becomes current and
    the old one is truncated (its stragglers moved first). Returns the current generation."""
    current = 0
    since = 0
    for first in range(0, n, min(lab.BATCH, rotate)):
        count = min(lab.BATCH, rotate, n - first)
        await db.execute(lab.INSERT_JOBS + lab.job_rows(first, count, tenants))
        ids = lab.ids(first, count)
        await db.execute(
            f"""INSERT INTO lab.g{current} SELECT id, queue_name, tenant_id, task_name, priority,
                                    scheduled_at, created_at FROM queueflow.jobs WHERE id = ANY($1::text[])""",
            ids,
        )
        await db.execute(f"DELETE FROM lab.g{current} WHERE id = ANY($1::text[])", ids)
        await db.execute(lab.RUN, ids)
        await db.execute(lab.DONE, ids)
        since += count
        if since >= rotate and first + count < n:
            old, current = current, (current + 1) % 3
            await db.execute(f"""WITH gone AS (DELETE FROM lab.g{old} RETURNING *)
                                 INSERT INTO lab.g{current} SELECT * FROM gone""")
            await db.execute(f"TRUNCATE lab.g{old}")
            since = 0
    return current


async def measure(db: asyncpg.Connection, live: list[int], max_jobs: int, seqscan: bool) -> dict[str, object]:
    await lab.prepared(db, "gens_claim", gens_claim(live), lab.claim_statement("today")[1])
    args = ", ".join(lab.literal(v) for v in lab.claim_values("today", max_jobs))
    settings = lab.GENERIC + (() if seqscan else ("SET LOCAL enable_seqscan = off",))
    return await lab.explain_counts(db, f"EXECUTE gens_claim({args})", settings)


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--dsn", required=True)
    p.add_argument("--n", type=int, nargs="+", default=[20_000, 100_000, 300_000])
    p.add_argument("--tenants", type=int, default=1)
    p.add_argument("--rotate", type=int, default=10_000)
    p.add_argument("--backlog", type=int, default=100, help="live jobs behind the processed ones")
    args = p.parse_args()
    for n in args.n:
        db = await asyncpg.connect(args.dsn, statement_cache_size=0)
        await lab.fresh(db, GENS_DDL, ["lab.g0", "lab.g1", "lab.g2"])
        await db.execute("ANALYZE lab.g0, lab.g1, lab.g2")  # the statistics right after a rotation: empty
        holder = await lab.holding(args.dsn)
        current = await push(db, n, args.tenants, args.rotate)
        await db.execute(lab.INSERT_JOBS + lab.job_rows(n + 1_000_000, args.backlog, args.tenants, live=True))
        await db.execute(f"""INSERT INTO lab.g{current} SELECT id, queue_name, tenant_id, task_name, priority,
                                    scheduled_at, created_at FROM queueflow.jobs WHERE id LIKE 'live_%'""")
        live = [(current - 1) % 3, current]
        for phase in ("hold", "vacuumed"):
            if phase == "vacuumed":
                await holder.execute("COMMIT")
                await db.execute("VACUUM queueflow.jobs")
                await db.execute(f"VACUUM lab.g{current}")
            for seqscan in (True, False):
                for max_jobs in (1, 100):
                    m = await measure(db, live, max_jobs, seqscan)
                    row = {
                        "design": "gens" + ("" if seqscan else "-noseqscan"),
                        "n": n,
                        "tenants": args.tenants,
                        "backlog": args.backlog,
                        "phase": phase,
                        "max_jobs": max_jobs,
                        **m,
                    }
                    print(json.dumps(row), flush=True)
        if not holder.is_closed():
            await holder.close()
        await db.close()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
