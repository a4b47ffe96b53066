"""Terminal history never slows a claim: the claim walks the partial index, however many rows are finished."""

from __future__ import annotations

import asyncpg
import pytest
from queueflow.clocks import TestClock
from queueflow.core.types import NewJob
from queueflow.stores.postgres import PostgresJobStore
from queueflow.stores.postgres.sql import CLAIM

from tests import pg
from tests.postgres.helpers import START, T, engine_on

HISTORY = 100_000


async def plan(connection: asyncpg.Connection, plan_cache_mode: str) -> str:
    # A prepared claim may be planned once and reused (a generic plan): that plan must use the index too.
    await connection.execute(f"SET plan_cache_mode = {plan_cache_mode}")
    await connection.execute(f"PREPARE claim(text[], int, timestamptz, interval, text[]) AS {CLAIM}")
    rows = await connection.fetch(f"EXPLAIN EXECUTE claim('{{default}}', 10, '{START.isoformat()}', '30 s', NULL)")
    return "\n".join(row[0] for row in rows)


@pytest.mark.parametrize("plan_cache_mode", ["auto", "force_generic_plan"])
@pytest.mark.parametrize("history", ["completed", "pending"])
async def test_the_claim_uses_the_partial_claim_index(
    postgres_url: str, postgres_store: PostgresJobStore, plan_cache_mode: str, history: str
) -> None:
    """With 100,000 finished rows, or 100,000 due ones (a backlog)."""
    await engine_on(postgres_store, TestClock(START)).enqueue_many(T, [NewJob(task_name="t")] * 50)
    async with pg.connect(postgres_url) as connection:
        await connection.execute(
            """
            INSERT INTO queueflow.jobs (id, tenant_id, queue_name, task_name, status, config, scheduled_at,
                                        created_at, started_at, completed_at, delivery_count, result)
            SELECT 'job_old_' || lpad(i::text, 7, '0'), 'tenant-a', 'default', 't', $3,
                   '{"backoff": {"strategy": "fixed", "base_seconds": 1, "max_seconds": 1, "jitter": false}}',
                   at, at, at, at, 1, '{"ok": true}'
              FROM generate_series(1, $1::int) AS i,
                   LATERAL (SELECT $2::timestamptz - make_interval(secs => i)) AS t(at)
            """,
            HISTORY,
            START,
            history,
        )
        await connection.execute("ANALYZE queueflow.jobs")
        explained = await plan(connection, plan_cache_mode)
    assert "idx_jobs_claim" in explained, explained
    assert "Seq Scan" not in explained, explained
