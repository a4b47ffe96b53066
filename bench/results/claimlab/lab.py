"""Claim under a held xmin horizon: what one claim touches, by design, as dead tuples pile up.

    .venv/bin/python bench/results/claimlab/lab.py --dsn postgresql://postgres@127.0.0.1:5432/qf_claimlab_x \
        --n 20000 100000 300000 --tenants 1

The database must hold today's schema (`queueflow migrate`). Designs (see ../2026-12-07-claim-under-horizon.md):
  today   the production CLAIM (claim_sql.CLAIM, generic plan) on queueflow.jobs and idx_jobs_claim
  mark    the same table, each (queue, tenant, priority) scan starting at a low-water mark kept by the janitor
          (lagging the first live row by `--mark-lag` dead entries: rate x janitor interval)
  ready   a narrow ready table beside the jobs, claimed by DELETE (CLAIM's text on it), never truncated
  rotate  the ready table as LIST partitions by generation, rotated every `--rotate` enqueues, the drained
          generation's stragglers moved forward and the generation TRUNCATEd (what PgQ does with its event tables)

For each design and N, one connection holds the horizon (BEGIN; SELECT txid_current()) while N jobs go through
enqueue -> claim -> complete (set-wise: the row versions and index entries are the ones N single claims leave);
then 100 live jobs are enqueued behind them and one claim (max_jobs 1 and 100) is measured inside a transaction
that is rolled back, so every measurement sees the same state: shared buffers touched (EXPLAIN ANALYZE BUFFERS,
hit + read, planning excluded) and index tuples read (pg_stat_get_xact_tuples_returned over every index the
statement may touch). Then the holder commits and the claim is measured twice more (the first pass may set LP_DEAD
hints, the second shows the steady cost), and once more after VACUUM. Autovacuum is off on this cluster.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from datetime import UTC, datetime, timedelta

import asyncpg
from queueflow.stores.postgres.claim_sql import CLAIM, ClaimArgs, TurnOf
from queueflow.stores.postgres.params import sql_types

BASE = datetime(2026, 1, 1, tzinfo=UTC)
FAR = BASE + timedelta(days=3650)
BATCH = 10_000
PAYLOAD = "'{\"blob\": \"' || repeat('x', 240) || '\"}'"

# --- the ready-table designs: CLAIM's own text, read from the narrow table instead of the jobs ---------------------


def ready_claim(table: str) -> str:
    """CLAIM with every scan of queueflow.jobs made a scan of `table` (no status: every row of it is ready), and the
    claimed rows deleted from it in the same statement; the lease is still written into queueflow.jobs by id."""
    sql = CLAIM.replace("FROM queueflow.jobs AS j", f"FROM {table} AS j")
    sql = sql.replace("j.status IN ('pending', 'retrying') AND ", "")
    sql = sql.replace(" AND j.status IN ('pending', 'retrying')", "")
    assert "status IN" not in sql.split("UPDATE queueflow.jobs")[0], "a status predicate left on the ready table"
    gone = f"gone AS (DELETE FROM {table} AS r WHERE r.id = ANY(ARRAY(SELECT picked.id FROM picked))),\n"
    return sql.replace("free AS (", gone + "free AS (", 1)


# The columns of a ready row: what the claim reads (its order, the task filter) and the job's id.
READY_COLUMNS = """
    id           text COLLATE "C" NOT NULL,
    queue_name   text NOT NULL,
    tenant_id    text NOT NULL,
    task_name    text NOT NULL,
    priority     int NOT NULL,
    scheduled_at timestamptz NOT NULL,
    created_at   timestamptz NOT NULL"""

READY_DDL = f"""
CREATE SCHEMA IF NOT EXISTS lab;
CREATE TABLE lab.ready ({READY_COLUMNS}
) WITH (autovacuum_enabled = false);
CREATE INDEX ready_claim ON lab.ready (queue_name, tenant_id, priority DESC, scheduled_at, created_at, id);
CREATE INDEX ready_id ON lab.ready (id);
CREATE TABLE lab.rready (
    gen          smallint NOT NULL,{READY_COLUMNS}
) PARTITION BY LIST (gen);
CREATE TABLE lab.rready_0 PARTITION OF lab.rready FOR VALUES IN (0) WITH (autovacuum_enabled = false);
CREATE TABLE lab.rready_1 PARTITION OF lab.rready FOR VALUES IN (1) WITH (autovacuum_enabled = false);
CREATE TABLE lab.rready_2 PARTITION OF lab.rready FOR VALUES IN (2) WITH (autovacuum_enabled = false);
CREATE INDEX rready_claim ON lab.rready (queue_name, tenant_id, priority DESC, scheduled_at, created_at, id);
CREATE INDEX rready_id ON lab.rready (id);
CREATE TABLE lab.rready_gen (one int PRIMARY KEY DEFAULT 1, current smallint NOT NULL);
INSERT INTO lab.rready_gen VALUES (1, 0);
CREATE TABLE lab.marks (
    queue_name   text NOT NULL,
    tenant_id    text NOT NULL,
    priority     int NOT NULL,
    scheduled_at timestamptz NOT NULL,
    created_at   timestamptz NOT NULL,
    id           text COLLATE "C" NOT NULL,
    PRIMARY KEY (queue_name, tenant_id, priority)
) WITH (fillfactor = 50, autovacuum_enabled = false);
"""

# The low-water-mark claim: the tenants come from the marks (one row per queue, tenant and priority that has had
# pending work), and each scan starts at its mark. Fairness and turns as CLAIM are left out: they add the same
# per-tenant probes on top, each starting at the mark too. What this measures is the scan.
MARK_CLAIM = """
WITH m AS (SELECT * FROM lab.marks WHERE queue_name = ANY($1::text[])),
due AS (SELECT d.id FROM m,
        LATERAL (SELECT j.id, j.priority, j.scheduled_at, j.created_at FROM queueflow.jobs AS j
                  WHERE j.queue_name = m.queue_name AND j.tenant_id = m.tenant_id AND j.priority = m.priority
                    AND (j.scheduled_at, j.created_at, j.id) >= (m.scheduled_at, m.created_at, m.id)
                    AND j.status IN ('pending', 'retrying') AND j.scheduled_at <= $3::timestamptz
                    AND ($5::text[] IS NULL OR j.task_name = ANY($5::text[]))
                  ORDER BY j.tenant_id, j.priority DESC, j.scheduled_at, j.created_at, j.id
                  LIMIT $2::int FOR UPDATE SKIP LOCKED) AS d
        ORDER BY d.priority DESC, d.scheduled_at, d.created_at, d.id LIMIT $2::int)
UPDATE queueflow.jobs SET status = 'running', lease_token = gen_random_uuid(), delivery_count = delivery_count + 1,
       started_at = $3::timestamptz, locked_until = $3::timestamptz + $4::interval
 WHERE id = ANY(ARRAY(SELECT id FROM due))
RETURNING id
"""

# --- pushing N jobs through, set-wise --------------------------------------------------------------------------


def job_rows(first: int, count: int, tenants: int, live: bool = False) -> str:
    """A SELECT of `count` job rows numbered from `first`, in time order, round-robin over `tenants`."""
    prefix = "live" if live else "job"
    return f"""SELECT '{prefix}_' || lpad(i::text, 9, '0'), 't' || (i % {tenants}), 'q', 'task', ({PAYLOAD})::jsonb,
                      timestamptz '{BASE.isoformat()}' + i * interval '1 ms',
                      timestamptz '{BASE.isoformat()}' + i * interval '1 ms'
                 FROM generate_series({first}, {first + count - 1}) AS i"""


INSERT_JOBS = "INSERT INTO queueflow.jobs (id, tenant_id, queue_name, task_name, payload, scheduled_at, created_at) "
RUN = """UPDATE queueflow.jobs SET status = 'running', lease_token = gen_random_uuid(), delivery_count = 1,
       started_at = now(), locked_until = now() + interval '60 s' WHERE id = ANY($1::text[])"""
DONE = """UPDATE queueflow.jobs SET status = 'completed', lease_token = NULL, locked_until = NULL, completed_at = now(),
       result = '{"ok": true}' WHERE id = ANY($1::text[])"""


def ids(first: int, count: int) -> list[str]:
    return [f"job_{i:09d}" for i in range(first, first + count)]


async def push_jobs_table(db: asyncpg.Connection, n: int, tenants: int, mark_every: int) -> None:
    """N jobs through the jobs table alone (designs today and mark): enqueue, claim, complete, batch by batch; the
    janitor's mark advance every `mark_every` jobs (one row version per tenant each time)."""
    for first in range(0, n, BATCH):
        count = min(BATCH, n - first)
        await db.execute(INSERT_JOBS + job_rows(first, count, tenants))
        await db.execute(RUN, ids(first, count))
        await db.execute(DONE, ids(first, count))
        for step in range(first, first + count, mark_every):
            await set_marks(db, step, tenants)


async def set_marks(db: asyncpg.Connection, position: int, tenants: int) -> None:
    """Every tenant's mark at job number `position` (the janitor's advance: the first live key it found)."""
    await db.execute(f"""
        INSERT INTO lab.marks
        SELECT 'q', 't' || t, 0, timestamptz '{BASE.isoformat()}' + p * interval '1 ms',
               timestamptz '{BASE.isoformat()}' + p * interval '1 ms', 'job_' || lpad(p::text, 9, '0')
          FROM generate_series(0, {tenants - 1}) AS t,
               LATERAL (SELECT {position} - ({position} % {tenants}) + t) AS x(p)
        ON CONFLICT (queue_name, tenant_id, priority) DO UPDATE
           SET scheduled_at = excluded.scheduled_at, created_at = excluded.created_at, id = excluded.id""")


async def push_ready(db: asyncpg.Connection, n: int, tenants: int, rotate: int | None) -> None:
    """N jobs through the jobs table and a ready table: enqueue writes both, the claim deletes the ready row and
    leases the job, the completion updates the job. With `rotate`, lab.rready's current generation moves on every
    `rotate` enqueues, and the one before it is drained (stragglers moved on) and truncated."""
    table = "lab.rready" if rotate else "lab.ready"
    step = min(BATCH, rotate or BATCH)
    since = 0
    for first in range(0, n, step):
        count = min(step, n - first)
        await db.execute(INSERT_JOBS + job_rows(first, count, tenants))
        gen = "(SELECT current FROM lab.rready_gen), " if rotate else ""
        await db.execute(
            f"""INSERT INTO {table} SELECT {gen}id, queue_name, tenant_id, task_name, priority,
                                    scheduled_at, created_at FROM queueflow.jobs WHERE id = ANY($1::text[])""",
            ids(first, count),
        )
        await db.execute(f"DELETE FROM {table} WHERE id = ANY($1::text[])", ids(first, count))
        await db.execute(RUN, ids(first, count))
        await db.execute(DONE, ids(first, count))
        since += count
        if rotate and since >= rotate and first + count < n:
            await rotate_generation(db)
            since = 0


async def rotate_generation(db: asyncpg.Connection) -> None:
    """The next generation becomes current; the old one's live rows (stragglers) move into it, and it is truncated.
    In the product: the switch commits first, a SHARE lock on the old partition waits out enqueues still writing
    into it, the stragglers move in batches, and the TRUNCATE runs under a short lock_timeout, retried."""
    old = await db.fetchval("SELECT current FROM lab.rready_gen")
    new = (old + 1) % 3
    async with db.transaction():
        await db.execute("UPDATE lab.rready_gen SET current = $1", new)
    async with db.transaction():
        await db.execute(f"LOCK TABLE lab.rready_{old} IN SHARE MODE")
        await db.execute(f"UPDATE lab.rready SET gen = {new} WHERE gen = {old}")
    await db.execute("SET lock_timeout = '50ms'")
    await db.execute(f"TRUNCATE lab.rready_{old}")
    await db.execute("RESET lock_timeout")


async def add_live(db: asyncpg.Connection, n: int, tenants: int, design: str) -> None:
    """100 live pending jobs behind the N processed ones (in claim order)."""
    await db.execute(INSERT_JOBS + job_rows(n + 1_000_000, 100, tenants, live=True))
    if design == "ready":
        await db.execute("""INSERT INTO lab.ready SELECT id, queue_name, tenant_id, task_name, priority, scheduled_at,
                                   created_at FROM queueflow.jobs WHERE id LIKE 'live_%'""")
    if design == "rotate":
        await db.execute("""INSERT INTO lab.rready SELECT (SELECT current FROM lab.rready_gen), id, queue_name,
                                   tenant_id, task_name, priority, scheduled_at, created_at
                              FROM queueflow.jobs WHERE id LIKE 'live_%'""")


# --- measuring one claim -------------------------------------------------------------------------------------------


def claim_statement(design: str) -> tuple[str, list[str]]:
    types = sql_types(ClaimArgs, TurnOf)
    if design == "today":
        return CLAIM, types
    if design == "mark":
        return MARK_CLAIM, types[:5]
    return ready_claim("lab.ready" if design == "ready" else "lab.rready"), types


def claim_values(design: str, max_jobs: int) -> list[object]:
    args: list[object] = [["q"], max_jobs, FAR, timedelta(seconds=60), None]
    return args if design == "mark" else [*args, ["q"]]


def literal(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, list):
        return "ARRAY[" + ", ".join(f"'{v}'" for v in value) + "]::text[]"
    if isinstance(value, datetime):
        return f"'{value.isoformat()}'"
    if isinstance(value, timedelta):
        return f"'{int(value.total_seconds())} seconds'"
    return str(value)


async def explain_counts(db: asyncpg.Connection, statement: str, settings: tuple[str, ...] = ()) -> dict[str, object]:
    """`statement` run once under EXPLAIN ANALYZE inside a transaction rolled back, after `settings` (SET LOCAL …):
    shared buffers hit + read at the plan's root, index tuples read (over every index of both schemas), rows, ms,
    and how many sequential scans and sorts the plan holds."""
    oids = [
        r["oid"]
        for r in await db.fetch("""SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                                    WHERE c.relkind = 'i' AND n.nspname IN ('queueflow', 'lab')""")
    ]
    count = "SELECT sum(pg_stat_get_xact_tuples_returned(o)) FROM unnest($1::oid[]) o"
    tr = db.transaction()
    await tr.start()
    try:
        for setting in ("SET LOCAL jit = off", *settings):
            await db.execute(setting)
        before = await db.fetchval(count, oids)
        plan = json.loads(await db.fetchval(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {statement}"))
        after = await db.fetchval(count, oids)
    finally:
        await tr.rollback()
    top = plan[0]["Plan"]
    text = json.dumps(plan)
    return {
        "buffers": top["Shared Hit Blocks"] + top["Shared Read Blocks"],
        "index_tuples": int((after or 0) - (before or 0)),
        "rows": top["Actual Rows"],
        "ms": round(plan[0]["Execution Time"], 2),
        "seq_scans": text.count('"Seq Scan"'),
        "sorts": text.count('"Node Type": "Sort"'),
    }


async def prepared(db: asyncpg.Connection, name: str, sql: str, types: list[str]) -> None:
    """`sql` PREPAREd as `name` on `db`, replacing an earlier one."""
    if await db.fetchval("SELECT count(*) FROM pg_prepared_statements WHERE name = $1", name):
        await db.execute(f"DEALLOCATE {name}")
    await db.execute(f"PREPARE {name}({', '.join(types)}) AS {sql}")


GENERIC = ("SET LOCAL plan_cache_mode = force_generic_plan",)


async def measure(db: asyncpg.Connection, design: str, max_jobs: int) -> dict[str, object]:
    """One claim of `design`, inside a transaction rolled back, under a generic plan as production runs it."""
    sql, types = claim_statement(design)
    await prepared(db, "lab_claim", sql, types)
    args = ", ".join(literal(v) for v in claim_values(design, max_jobs))
    return await explain_counts(db, f"EXECUTE lab_claim({args})", GENERIC)


async def holding(dsn: str) -> asyncpg.Connection:
    """A connection holding the xmin horizon: a transaction with an xid, left open."""
    holder = await asyncpg.connect(dsn)
    await holder.execute("BEGIN")
    await holder.fetchval("SELECT txid_current()")
    return holder


async def reset(db: asyncpg.Connection) -> None:
    await db.execute("TRUNCATE queueflow.jobs, queueflow.claim_turns, lab.ready, lab.rready, lab.marks")
    await db.execute("UPDATE lab.rready_gen SET current = 0")
    await db.execute("VACUUM ANALYZE queueflow.jobs")


async def fresh(db: asyncpg.Connection, ddl: str, tables: list[str]) -> None:
    """A run's start on a layout of its own: its tables made if missing (`ddl`), everything emptied."""
    await db.execute(ddl)
    await reset(db)
    await db.execute(f"TRUNCATE {', '.join(tables)}")


async def run_design(dsn: str, design: str, n: int, tenants: int, args: argparse.Namespace) -> list[dict[str, object]]:
    db = await asyncpg.connect(dsn)
    await reset(db)
    holder = await holding(dsn)
    out: list[dict[str, object]] = []
    try:
        started = time.perf_counter()
        if design in ("today", "mark"):
            await push_jobs_table(db, n, tenants, args.mark_lag)
        else:
            await push_ready(db, n, tenants, args.rotate if design == "rotate" else None)
        push_s = time.perf_counter() - started
        await add_live(db, n, tenants, design)
        await db.execute("ANALYZE queueflow.jobs")
        if design == "mark":
            # The mark lags the first live row by one janitor interval's jobs: `mark_lag` dead entries per tenant
            # ahead of the live ones (the worst moment, just before the janitor advances it).
            await set_marks(db, max(n - args.mark_lag, 0), tenants)
        stats = await db.fetchrow("""SELECT n_dead_tup, pg_total_relation_size('queueflow.jobs') AS size
                                       FROM pg_stat_user_tables WHERE relid = 'queueflow.jobs'::regclass""")
        for phase in ("hold", "released", "released-again", "vacuumed"):
            if phase == "released":
                await holder.execute("COMMIT")
            if phase == "vacuumed":
                for table in ("queueflow.jobs", "lab.ready", "lab.rready", "lab.marks"):
                    await db.execute(f"VACUUM {table}")
            for max_jobs in (1, 100):
                m = await measure(db, design, max_jobs)
                row = {
                    "design": design,
                    "n": n,
                    "tenants": tenants,
                    "phase": phase,
                    "max_jobs": max_jobs,
                    **m,
                    "push_s": round(push_s, 1),
                    "jobs_mb": round(stats["size"] / 2**20, 1),
                }
                out.append(row)
                print(json.dumps(row), flush=True)
    finally:
        if not holder.is_closed():
            await holder.close()
        await db.close()
    return out


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--dsn", required=True)
    p.add_argument("--n", type=int, nargs="+", default=[20_000, 100_000, 300_000])
    p.add_argument("--designs", nargs="+", default=["today", "mark", "ready", "rotate"])
    p.add_argument("--tenants", type=int, default=1)
    p.add_argument("--rotate", type=int, default=10_000, help="enqueues per ready generation")
    p.add_argument("--mark-lag", type=int, default=5_000, help="dead entries between mark and the first live row")
    p.add_argument("--setup", action="store_true", help="create the lab schema first")
    args = p.parse_args()
    if args.setup:
        db = await asyncpg.connect(args.dsn)
        await db.execute(READY_DDL)
        await db.execute("ALTER TABLE queueflow.jobs SET (autovacuum_enabled = false)")
        await db.close()
    for design in args.designs:
        for n in args.n:
            await run_design(args.dsn, design, n, args.tenants, args)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
