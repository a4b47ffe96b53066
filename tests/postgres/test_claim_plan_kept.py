"""A claim's cached plan stays an index walk however the table grows after it was made, and is never JIT-compiled.

The claim keeps a generic plan for the life of a session (the claim function's `plan_cache_mode`, and BEGIN_CLAIM's
for the in-transaction claim). A server's connections open as it starts, often on a new or empty jobs table, and
plan the claim on their first lease: PostgreSQL then costs `jobs` as a few pages, where reading the whole table and
sorting it is cheaper than an index walk, and keeps that plan until something invalidates it, which only an ANALYZE
(autovacuum's, in production; never, with autovacuum off) or DDL does. Found in the endurance run (issue 42): on a
database never analyzed, every claim read the whole table (1,440 buffers a claim with 4,000 dead rows, 6,800-11,300
under a held horizon), half a core at 150 jobs/s, and pickup latency grew with the table. The claim therefore plans
with sequential scans disabled: the plan is the index walk whatever the statistics say, and a test reads the
buffers a claim touches after the table grew under a plan made on it empty — counts, not time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import asyncpg
from queueflow.clocks import TestClock
from queueflow.core.types import NewJob
from queueflow.stores.postgres import PostgresJobStore
from queueflow.stores.postgres import schema as pgschema
from queueflow.stores.postgres.claim.unrestricted_sql import BEGIN_CLAIM, CLAIM

from tests import pg
from tests.moments import START, T
from tests.postgres.helpers import engine_on
from tests.postgres.horizon import PAYLOAD, claim_arguments, claim_of, counts

GROWN = 10_000
BOUND = 100
"""Buffers a one-job claim may touch: an index walk touches a few dozen (the registry, the settings' and turns'
indexes, the claim index, the job's heap page); the whole table of GROWN jobs is over 1,000 pages."""


HISTORY = f"""
INSERT INTO queueflow.jobs (id, tenant_id, queue_name, task_name, payload, status, scheduled_at, created_at,
                            started_at, completed_at, delivery_count, result)
SELECT 'job_done_' || lpad(n::text, 9, '0'), $1, 'default', 't', ({PAYLOAD})::jsonb, 'completed', $2, $2, $2, $2, 1,
       '{{"ok": true}}'
  FROM generate_series(1, {GROWN}) AS n
"""


async def grown_after_the_first_claim(url: str, claimer: asyncpg.Connection, first_claim: str) -> None:
    """The claim planned on an empty table by `claimer`; then the table grown by GROWN finished jobs, and 10 jobs
    enqueued, with no ANALYZE (a new database whose autovacuum has not run yet, or never will)."""
    await claimer.execute(first_claim)
    async with pg.connect(url) as writer:
        await writer.execute(HISTORY, T, START - timedelta(hours=1))
    async with PostgresJobStore.from_url(url, pool_size=1) as store:
        await engine_on(store, TestClock(START), seed=3).enqueue_many(T, [NewJob(task_name="t")] * 10)


def scans_of_jobs(plan: str) -> list[str]:
    """The scans of `queueflow.jobs` in an EXPLAIN (FORMAT JSON) plan, by node type."""

    def nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
        yield node
        for child in node.get("Plans", []):
            yield from nodes(child)

    return [node["Node Type"] for node in nodes(json.loads(plan)[0]["Plan"]) if node.get("Relation Name") == "jobs"]


async def test_the_claim_function_walks_the_index_on_a_table_that_grew_after_it_was_planned() -> None:
    async with pg.fresh_database() as url:
        await pgschema.upgrade_async(url)
        async with pg.connect(url) as claimer:
            await grown_after_the_first_claim(url, claimer, claim_of(1, START))
            read = await counts(claimer, claim_of(1, START + timedelta(seconds=1)))
    assert read.buffers <= BOUND, read.buffers


async def test_the_claim_in_its_own_transaction_walks_the_index_on_a_table_that_grew_after_it_was_planned() -> None:
    async with pg.fresh_database() as url:
        await pgschema.upgrade_async(url)
        async with pg.connect(url) as claimer:
            # Planned as PostgresClaims plans it: prepared, first run in BEGIN_CLAIM's transaction and its settings.
            await claimer.execute(f"PREPARE claim AS {CLAIM}")
            first = f"{BEGIN_CLAIM}; EXECUTE claim({claim_arguments(1, START)}); ROLLBACK"
            await grown_after_the_first_claim(url, claimer, first)
            settings = [part.strip() for part in BEGIN_CLAIM.split(";")[1:]]
            later = f"EXECUTE claim({claim_arguments(1, START + timedelta(seconds=1))})"
            read = await counts(claimer, later, *settings)
    assert "Seq Scan" not in scans_of_jobs(read.plan), scans_of_jobs(read.plan)
    assert read.buffers <= BOUND, read.buffers


async def test_the_claim_is_never_compiled_by_jit_whatever_its_plan_costs() -> None:
    """After a held horizon ends, a generic plan costed on a sparse claim index passed the JIT thresholds and each
    claim was compiled with LLVM, seconds of CPU a claim (migration 0023). Here every statement's cost passes them
    (`jit_above_cost` 0 for the session): the claim in its transaction is still not compiled, and the claim function
    carries `jit = off` (tests/postgres/test_claim_plan.py reads its settings)."""
    async with pg.fresh_database() as url:
        await pgschema.upgrade_async(url)
        async with pg.connect(url) as claimer:
            if not await claimer.fetchval("SELECT pg_jit_available()"):
                raise AssertionError("this PostgreSQL cannot JIT-compile: the test would prove nothing")
            await claimer.execute("SET jit_above_cost = 0")
            await claimer.execute(f"PREPARE claim AS {CLAIM}")
            compiled = json.loads(await claimer.fetchval("EXPLAIN (ANALYZE, FORMAT JSON) SELECT 1"))[0]
            # Not `counts`: it turns JIT off itself, which would hide BEGIN_CLAIM's own setting.
            transaction = claimer.transaction()
            await transaction.start()
            try:
                for setting in BEGIN_CLAIM.split(";")[1:]:
                    await claimer.execute(setting)
                explained = f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE claim({claim_arguments(1, START)})"
                claimed = json.loads(await claimer.fetchval(explained))[0]
            finally:
                await transaction.rollback()
    assert "JIT" in compiled, "jit_above_cost 0 compiles every statement"
    assert "JIT" not in claimed, claimed
