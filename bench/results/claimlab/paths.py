"""The other reads of the hot table under a held horizon: the idle lessee's DUE_ANY, the janitor's LEASE_EXPIRED
sweep and the job list's first page, on today's layout (lab.py's push, design `today`).

    .venv/bin/python bench/results/claimlab/paths.py --dsn postgresql://... --n 20000 100000 300000

Each is measured as lab.py measures the claim: inside a transaction rolled back, buffers (hit + read) and index
tuples read. LEASE_EXPIRED runs with `now` far ahead, as the janitor does once the held-over running versions'
leases have passed (60 s after their claim): every dead running version in idx_jobs_lease_expiry is then before
`now`, and the sweep has no live row to stop at.
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
from queueflow.stores.postgres.claim_sql import DUE_ANY
from queueflow.stores.postgres.restricted_sql import RUNNING_COUNTS
from queueflow.stores.postgres.sql import COLUMNS, LEASE_EXPIRED

LIST_FIRST_PAGE = (
    f"SELECT {COLUMNS} FROM queueflow.jobs WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC LIMIT 50"
)

PATHS = {
    "due_any": (DUE_ANY, ["ARRAY['q']::text[]", f"'{lab.FAR.isoformat()}'::timestamptz"]),
    "lease_expired": (LEASE_EXPIRED, [f"'{lab.FAR.isoformat()}'::timestamptz", "100", "'60 seconds'::interval"]),
    "list_first_page": (LIST_FIRST_PAGE, ["'t0'"]),
    "running_counts": (RUNNING_COUNTS, ["ARRAY['t0']::text[]", "ARRAY['q']::text[]"]),
}


async def measure(db: asyncpg.Connection, sql: str, args: list[str]) -> dict[str, object]:
    """`sql` with its `$n` replaced by the literals `args`, measured as lab.py measures a claim."""
    for n, arg in reversed(list(enumerate(args, 1))):
        sql = sql.replace(f"${n}", arg)
    return await lab.explain_counts(db, sql)


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--dsn", required=True)
    p.add_argument("--n", type=int, nargs="+", default=[20_000, 100_000, 300_000])
    p.add_argument("--paths", nargs="+", default=list(PATHS))
    args = p.parse_args()
    for n in args.n:
        db = await asyncpg.connect(args.dsn, statement_cache_size=0)
        await lab.reset(db)
        holder = await lab.holding(args.dsn)
        await lab.push_jobs_table(db, n, 1, 10**9)
        await lab.add_live(db, n, 1, "today")
        # A few running jobs, as a live system has: the sweep's first live entry is one of theirs.
        await db.execute(
            lab.RUN.replace("interval '60 s'", "interval '1 hour'"),
            [f"live_{i:09d}" for i in range(n + 1_000_000, n + 1_000_010)],
        )
        await db.execute("ANALYZE queueflow.jobs")
        for phase in ("hold", "released", "released-again", "vacuumed"):
            if phase == "released":
                await holder.execute("COMMIT")
            if phase == "vacuumed":
                await db.execute("VACUUM queueflow.jobs")
            for name in args.paths:
                sql, sql_args = PATHS[name]
                row = {"path": name, "n": n, "phase": phase, **await measure(db, sql, sql_args)}
                print(json.dumps(row), flush=True)
        await holder.close()
        await db.close()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
