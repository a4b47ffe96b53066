"""Terminal history never slows a claim: the claim walks the partial index, however many rows are finished."""

from __future__ import annotations

import re
from typing import NamedTuple

import asyncpg
import pytest
from queueflow.clocks import TestClock
from queueflow.core.types import NewJob
from queueflow.stores.postgres import PostgresJobStore
from queueflow.stores.postgres import schema as pgschema
from queueflow.stores.postgres.claim.args import ClaimArgs, Turn, TurnOf
from queueflow.stores.postgres.claim.function import CLAIM_FUNCTION
from queueflow.stores.postgres.claim.restricted_sql import CLAIM_RESTRICTED, Restrictions
from queueflow.stores.postgres.claim.unrestricted_sql import CLAIM
from queueflow.stores.postgres.params import sql_types
from queueflow.stores.postgres.sql import (
    COMPLETE,
    FAIL,
    HEARTBEAT_MANY,
    RELEASE,
)

from tests import pg
from tests.moments import START, T
from tests.postgres.helpers import engine_on, statistics_frozen

HISTORY = 100_000


def arguments_of(*groups: type[NamedTuple], **given: str) -> str:
    """The arguments of an EXECUTE of a statement that takes the parameters `groups`, in their order: each one's SQL
    literal in `given`, by name, and NULL for the rest."""
    names = [name for group in groups for name in group._fields]
    assert set(given) <= set(names), set(given) - set(names)
    return ", ".join(given.get(name, "NULL") for name in names)


async def plan(connection: asyncpg.Connection, plan_cache_mode: str) -> str:
    # A prepared claim may be planned once and reused (a generic plan): that plan must use the index too.
    await connection.execute(f"SET plan_cache_mode = {plan_cache_mode}")
    await connection.execute(f"PREPARE claim({', '.join(sql_types(ClaimArgs, TurnOf))}) AS {CLAIM}")
    arguments = arguments_of(
        ClaimArgs,
        TurnOf,
        queues="'{default}'",
        max_jobs="10",
        now=f"'{START.isoformat()}'",
        lease="'30 s'",
        turn_of="'{default}'",
    )
    rows = await connection.fetch(f"EXPLAIN EXECUTE claim({arguments})")
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
    assert "idx_jobs_claim_gen" in explained, explained
    # Never release 0.2.0's index (migration 0022): it holds every retired generation's dead entries.
    assert "using idx_jobs_claim on" not in explained, explained
    assert "Seq Scan on jobs" not in explained, explained
    # A plan whose estimated cost passes jit_above_cost is compiled on every execution (tens of milliseconds).
    assert "JIT" not in explained, explained


@pytest.mark.parametrize("plan_cache_mode", ["auto", "force_generic_plan"])
async def test_a_burst_across_tenants_is_claimed_off_the_claim_index_before_any_analyze(
    postgres_url: str, postgres_store: PostgresJobStore, plan_cache_mode: str
) -> None:
    """100 tenants × 100 due jobs written since the last ANALYZE: every probe of the fair claim reads
    idx_jobs_claim_gen. (On the statistics of an empty table the planner once took idx_jobs_due for them and
    sorted the queue's pending rows in every probe: 2 s per single-job lease.)"""
    await engine_on(postgres_store, TestClock(START)).enqueue_many(T, [NewJob(task_name="t")])
    async with pg.connect(postgres_url) as connection, statistics_frozen(connection):
        await connection.execute(
            """
                INSERT INTO queueflow.jobs (id, tenant_id, queue_name, task_name, config, scheduled_at, created_at)
                SELECT 'job_burst_' || lpad(i::text, 5, '0'), 'tenant-' || lpad((i % 100)::text, 3, '0'), 'default',
                       't', '{"backoff": {"strategy": "fixed", "base_seconds": 1, "max_seconds": 1, "jitter": false}}',
                       $2, $2
                  FROM generate_series(1, $1::int) AS i
                """,
            10_000,
            START,
        )
        explained = await plan(connection, plan_cache_mode)
    assert "idx_jobs_due" not in explained, explained
    assert "using idx_jobs_claim on" not in explained, explained
    assert "Seq Scan on jobs" not in explained, explained


@pytest.mark.parametrize("plan_cache_mode", ["auto", "force_generic_plan"])
@pytest.mark.parametrize("limit", [1, 10])
async def test_a_key_limited_claim_reads_only_the_keys_it_serves(
    postgres_url: str, postgres_store: PostgresJobStore, plan_cache_mode: str, limit: int
) -> None:
    """5,000 concurrency keys × 3 due jobs under a key limit: the claim's key turn reads idx_jobs_keyed from the key
    after the one served last, and stops after the keys one claim can serve (a share: `limit` keys), instead of
    visiting all 5,000 (200 ms per claim, measured, before it stopped early)."""
    await engine_on(postgres_store, TestClock(START)).enqueue_many(T, [NewJob(task_name="t")])
    async with pg.connect(postgres_url) as connection:
        await connection.execute(
            """
            INSERT INTO queueflow.jobs (id, tenant_id, queue_name, task_name, config, scheduled_at, created_at)
            SELECT 'job_keyed_' || lpad(i::text, 6, '0'), $3, 'default', 't',
                   jsonb_build_object('concurrency_key', 'user-' || (i % 5000),
                                      'backoff', '{"strategy": "fixed", "base_seconds": 1, "max_seconds": 1,
                                                  "jitter": false}'::jsonb),
                   $2, $2
              FROM generate_series(1, $1::int) AS i
            """,
            15_000,
            START,
            T,
        )
        await connection.execute("ANALYZE queueflow.jobs")
        await connection.execute(f"SET plan_cache_mode = {plan_cache_mode}")
        groups = (ClaimArgs, Turn, Restrictions)
        await connection.execute(f"PREPARE claim({', '.join(sql_types(*groups))}) AS {CLAIM_RESTRICTED}")
        # One tenant's queue under a key limit of 2, whose key turn last served user-2000; nothing runs yet.
        nothing = "'{}'"
        arguments = arguments_of(
            *groups,
            queues="'{default}'",
            max_jobs=str(limit),
            now=f"'{START.isoformat()}'",
            lease="'30 s'",
            **dict.fromkeys(
                ["blocked_tenants", "blocked_queues", "cap_tenants", "cap_queues", "cap_slots", "key_slot_tenants",
                 "key_slot_queues", "key_slot_keys", "key_slots", "blocked_key_tenants", "blocked_key_queues",
                 "blocked_keys"],
                nothing,
            ),
            key_limited_tenants=f"'{{{T}}}'",
            key_limited_queues="'{default}'",
            key_limits="'{2}'",
            key_turns="'{user-2000}'",
        )  # fmt: skip
        for _ in range(6):  # past the custom plans `auto` tries first
            await connection.execute(f"EXPLAIN ANALYZE EXECUTE claim({arguments})")
        rows = await connection.fetch(f"EXPLAIN ANALYZE EXECUTE claim({arguments})")
    explained = "\n".join(row[0] for row in rows)
    assert "idx_jobs_keyed" in explained, explained
    assert "Seq Scan on jobs" not in explained, explained
    assert "JIT" not in explained, explained
    lines = explained.splitlines()
    scan = lines[next(n for n, line in enumerate(lines) if "CTE key_scan" in line) + 1]
    visited = int(re.search(r"actual time=\S+ rows=(\d+)", scan).group(1))  # type: ignore[union-attr]
    assert visited <= limit + 1, scan


HELD = 20_000
BATCH = 100
NOW = f"'{START.isoformat()}'::timestamptz"
# Each batch statement that checks leases: its parameter types, and its arguments after the ids and tokens ($1, $2)
# for a batch of BATCH leases, as a batched ack, heartbeat or hand-back sends them.
BATCH_STATEMENTS = {
    "complete": (COMPLETE, "text[], uuid[], jsonb[], timestamptz", f"array_fill('null'::jsonb, ARRAY[{BATCH}]), {NOW}"),
    "fail": (
        FAIL,
        "text[], uuid[], text[], timestamptz[], timestamptz",
        f"array_fill('boom'::text, ARRAY[{BATCH}]), array_fill(NULL::timestamptz, ARRAY[{BATCH}]), {NOW}",
    ),
    "heartbeat_many": (
        HEARTBEAT_MANY,
        "text[], uuid[], timestamptz, interval, bool[], jsonb[]",
        f"{NOW}, '30 s', array_fill(false, ARRAY[{BATCH}]), array_fill(NULL::jsonb, ARRAY[{BATCH}])",
    ),
    "release": (RELEASE, "text[], uuid[], timestamptz", NOW),
}


@pytest.mark.parametrize("plan_cache_mode", ["auto", "force_generic_plan"])
@pytest.mark.parametrize("statement", sorted(BATCH_STATEMENTS))
async def test_a_batch_reaches_its_jobs_by_primary_key_however_many_run(
    postgres_url: str, postgres_store: PostgresJobStore, plan_cache_mode: str, statement: str
) -> None:
    """20,000 jobs leased since the last ANALYZE (taken on a near-empty table, as after a quiet spell): an ack,
    heartbeat or hand-back of 100 leases probes the primary key for them. (The lease check once let the planner read
    every running job through idx_jobs_lease_expiry and hash them, on every ack: an in-process worker leasing ahead
    on a 100,000-job backlog slowed each ack further, until its acks outlived the statement timeout.)"""
    sql, types, arguments = BATCH_STATEMENTS[statement]
    await engine_on(postgres_store, TestClock(START)).enqueue_many(T, [NewJob(task_name="t")])
    async with pg.connect(postgres_url) as connection, statistics_frozen(connection):
        held = await connection.fetch(
            """
                INSERT INTO queueflow.jobs (id, tenant_id, queue_name, task_name, status, config, scheduled_at,
                                            created_at, started_at, delivery_count, lease_token, locked_until)
                SELECT 'job_held_' || lpad(i::text, 5, '0'), $3, 'default', 't', 'running',
                       '{"backoff": {"strategy": "fixed", "base_seconds": 1, "max_seconds": 1, "jitter": false}}',
                       $2, $2, $2, 1, gen_random_uuid(), $2::timestamptz + interval '5 minutes'
                  FROM generate_series(1, $1::int) AS i
                RETURNING id, lease_token
                """,
            HELD,
            START,
            T,
        )
        batch = held[:: HELD // BATCH]
        ids = "ARRAY[" + ", ".join(f"'{row['id']}'" for row in batch) + "]"
        tokens = "ARRAY[" + ", ".join(f"'{row['lease_token']}'" for row in batch) + "]::uuid[]"
        await connection.execute(f"SET plan_cache_mode = {plan_cache_mode}")
        await connection.execute(f"PREPARE batch({types}) AS {sql}")
        for _ in range(6):  # past the custom plans `auto` tries first (the first run ends these leases)
            await connection.execute(f"EXPLAIN ANALYZE EXECUTE batch({ids}, {tokens}, {arguments})")
        rows = await connection.fetch(f"EXPLAIN ANALYZE EXECUTE batch({ids}, {tokens}, {arguments})")
    explained = "\n".join(row[0] for row in rows)
    assert "idx_jobs_lease_expiry" not in explained, explained
    assert "Seq Scan on jobs" not in explained, explained
    # Probes of the primary key, one by one or gathered into a bitmap: either reads only the batch's rows.
    assert re.search(r"Index Scan using jobs_pkey on jobs|Bitmap Index Scan on jobs_pkey", explained), explained


async def test_the_claim_is_planned_once_not_on_every_lease() -> None:
    """A single-job lease once spent more time planning the claim than running it: PostgreSQL judged the claim's
    generic plan too costly to keep, and planned it anew for every execution. Both ways a claim runs keep the
    generic plan: the one-statement claim's function, whose own setting forces it, and the claim's transaction
    (here once the function is gone, where every claim takes it: a database of its own)."""
    async with pg.fresh_database() as url:
        await pgschema.upgrade_async(url)
        await _planned_once(url)


async def _planned_once(url: str) -> None:
    async with PostgresJobStore.from_url(url, pool_size=1) as store:  # one connection: its statements
        engine = engine_on(store, TestClock(START))
        await engine.enqueue_many(T, [NewJob(task_name="t")] * 36)
        for _ in range(6):
            assert len(await engine.lease(["default"])) == 1
            assert len(await engine.lease(["default"], max_jobs=2)) == 2
        async with store._connection() as db:
            config = await db.fetchval(
                "SELECT proconfig FROM pg_proc WHERE oid = to_regprocedure($1)",
                f"{CLAIM_FUNCTION}(text[], int, timestamptz, interval, text[], text[])",
            )
            await db.execute(f"DROP FUNCTION {CLAIM_FUNCTION}")
        for _ in range(6):
            assert len(await engine.lease(["default"])) == 1
            assert len(await engine.lease(["default"], max_jobs=2)) == 2
        assert not store._one_statement
        async with store._connection() as db:
            plans = await db.fetchrow(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE $1",
                "%WITH RECURSIVE queue AS%FOR UPDATE SKIP LOCKED%",
            )
    assert plans is not None
    assert plans["custom_plans"] == 0, dict(plans)
    assert plans["generic_plans"] >= 12, dict(plans)
    assert config == ["plan_cache_mode=force_generic_plan", "enable_seqscan=off", "jit=off"]
