"""Measuring a statement under a held xmin horizon, by counts, not time (the method of
bench/results/2026-12-07-claim-under-horizon.md, `claimlab/lab.py`).

A connection holds the horizon (`holding`: `BEGIN; SELECT txid_current()` left open), so that VACUUM may not remove
the row versions N jobs leave as they go through (`pushed_through`: enqueue, lease, completion, set-wise, each job
leaving the versions and index entries one claim and one completion leave), and no scan may mark their index
entries dead. A statement is then run once under EXPLAIN (ANALYZE, BUFFERS) inside a transaction that is rolled
back (`counts`): the shared buffers it touched and the index tuples it read (`pg_stat_get_xact_tuples_returned`
summed over every index of the schema, read inside the transaction, so no other session's reads mix in). Both are
exact counts on an idle database of the test's own: a test compares them across two N.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

import asyncpg
from queueflow.stores.postgres.claim.args import ClaimArgs, TurnOf
from queueflow.stores.postgres.claim.function import CLAIM_FUNCTION
from queueflow.stores.postgres.url import asyncpg_dsn

BATCH = 5_000
PAYLOAD = "'{\"blob\": \"' || repeat('x', 240) || '\"}'"


@asynccontextmanager
async def holding(url: str) -> AsyncIterator[asyncpg.Connection]:
    """A connection holding the xmin horizon while the block runs: a transaction with an xid, left open."""
    holder = await asyncpg.connect(asyncpg_dsn(url))
    try:
        await holder.execute("BEGIN")
        await holder.fetchval("SELECT txid_current()")
        yield holder
    finally:
        await holder.close()


@dataclass(frozen=True)
class Counts:
    buffers: int
    """Shared buffers hit and read at the plan's root, planning excluded."""
    index_tuples: int
    """Index tuples read, over every index of the queueflow schema."""
    plan: str
    """The plan, as JSON text (for a failing assertion's message, and for checks of its shape)."""


async def counts(db: asyncpg.Connection, statement: str, *settings: str) -> Counts:
    """`statement` run once under EXPLAIN (ANALYZE, BUFFERS) after `settings` (SET LOCAL …, or a row the statement
    should find), in a transaction rolled back: every measurement sees the same state."""
    oids = [
        row["oid"]
        for row in await db.fetch("""SELECT c.oid FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
                                      WHERE c.relkind = 'i' AND n.nspname = 'queueflow'""")
    ]
    total = "SELECT coalesce(sum(pg_stat_get_xact_tuples_returned(o)), 0) FROM unnest($1::oid[]) AS o"
    transaction = db.transaction()
    await transaction.start()
    try:
        for setting in ("SET LOCAL jit = off", *settings):
            await db.execute(setting)
        before = await db.fetchval(total, oids)
        plan = json.loads(await db.fetchval(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {statement}"))
        after = await db.fetchval(total, oids)
    finally:
        await transaction.rollback()
    top = plan[0]["Plan"]
    return Counts(
        buffers=top["Shared Hit Blocks"] + top["Shared Read Blocks"],
        index_tuples=int(after - before),
        plan=json.dumps(plan),
    )


def claim_arguments(max_jobs: int, now: datetime) -> str:
    """A claim's arguments as SQL literals: `max_jobs` of queue "default", for any task, at `now`."""
    args = ClaimArgs(queues=["default"], max_jobs=max_jobs, now=now, lease=timedelta(seconds=30), task_names=None)
    return ", ".join(literal(value) for value in [*args, *TurnOf(turn_of=["default"])])


def claim_of(max_jobs: int, now: datetime) -> str:
    """A call of the claim function (`CLAIM_FUNCTION`), as the server makes it."""
    return f"SELECT * FROM {CLAIM_FUNCTION}({claim_arguments(max_jobs, now)})"


def literal(value: object) -> str:
    """`value` as an SQL literal, for an EXECUTE's arguments."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, datetime):
        return f"'{value.isoformat()}'::timestamptz"
    if isinstance(value, timedelta):
        return f"'{value.total_seconds()} s'::interval"
    if isinstance(value, list):
        inner = ",".join('"' + str(item).replace('"', '\\"') + '"' for item in value)
        return "'{" + inner + "}'"
    return "'" + str(value).replace("'", "''") + "'"


def pushed_id(n: int) -> str:
    """The id `pushed_through` gives job n."""
    return f"job_pushed_{n:09d}"


async def pushed_through(
    db: asyncpg.Connection,
    n: int,
    *,
    start: datetime,
    tenant: str,
    queue: str = "default",
    lease: float = 30.0,
    numbered_from: int = 0,
) -> None:
    """N jobs of `queue` enqueued, leased and completed, set-wise, `BATCH` at a time: job i (numbered from
    `numbered_from`) created and due at `start` + i ms, leased for `lease` seconds from then."""
    for first in range(numbered_from, numbered_from + n, BATCH):
        count = min(BATCH, numbered_from + n - first)
        ids = [pushed_id(i) for i in range(first, first + count)]
        await db.execute(
            f"""INSERT INTO queueflow.jobs (id, tenant_id, queue_name, task_name, payload, scheduled_at, created_at)
                SELECT 'job_pushed_' || lpad(i::text, 9, '0'), $1, $2, 't', ({PAYLOAD})::jsonb,
                       $3::timestamptz + i * interval '1 ms', $3::timestamptz + i * interval '1 ms'
                  FROM generate_series($4::int, $5::int) AS i""",
            tenant,
            queue,
            start,
            first,
            first + count - 1,
        )
        await db.execute(
            """UPDATE queueflow.jobs SET status = 'running', lease_token = gen_random_uuid(), delivery_count = 1,
                      started_at = scheduled_at, locked_until = scheduled_at + $2::interval
                WHERE id = ANY($1::text[])""",
            ids,
            timedelta(seconds=lease),
        )
        await db.execute(
            """UPDATE queueflow.jobs SET status = 'completed', lease_token = NULL, locked_until = NULL,
                      completed_at = started_at, result = '{"ok": true}'
                WHERE id = ANY($1::text[])""",
            ids,
        )
