"""Deadlines on PostgreSQL (README.md, "Deadlines"): `queueflow.enqueue(... expires_at => ...)` as the HTTP route
checks it; concurrent claims never return an expired job while timers expire them; and the expiry is bounded — its
read is a range of idx_jobs_expiry whatever else the table holds, it skips rows another transaction holds instead of
waiting, and no claim waits for it.

How the claim test was checked to fail: with the claim's condition taken out of `claim.fair_sql.claimable` (and the
function made from it), the concurrent claims leased expired jobs in every run."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import asyncpg
import pytest
from queueflow.clocks import TestClock
from queueflow.core.types import JobStatus, NewJob
from queueflow.stores.postgres import PostgresJobStore
from queueflow.stores.postgres.deadlines import EXPIRE_MANY, EXPIRING

from tests import pg
from tests.moments import START, T
from tests.postgres.helpers import engine_on

PATIENCE = 5.0
"""Longer than any of these statements takes, far shorter than a wait for a lock held until the test ends."""


async def test_the_sql_function_takes_a_deadline_and_checks_it(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    async with pg.connect(postgres_url) as connection:
        job_id = await connection.fetchval(
            "SELECT queueflow.enqueue(tenant_id => $1, task_name => 't', expires_at => now() + interval '1 hour')", T
        )
        deadline = await connection.fetchval("SELECT expires_at - created_at FROM queueflow.jobs WHERE id = $1", job_id)
        assert timedelta(minutes=59) < deadline <= timedelta(hours=1)
        # A call of the signature before it still works, without a deadline.
        plain = await connection.fetchval("SELECT queueflow.enqueue($1, 't', '{}', 'default', 0)", T)
        assert await connection.fetchval("SELECT expires_at FROM queueflow.jobs WHERE id = $1", plain) is None
        for sql in (
            "SELECT queueflow.enqueue(tenant_id => $1, task_name => 't', expires_at => now() - interval '1 s')",
            "SELECT queueflow.enqueue(tenant_id => $1, task_name => 't', delay_seconds => 60,"
            " expires_at => now() + interval '30 s')",
            "SELECT queueflow.enqueue(tenant_id => $1, task_name => 't', expires_at => 'infinity')",
        ):
            with pytest.raises(asyncpg.InvalidParameterValueError) as raised:
                await connection.fetchval(sql, T)
            assert (raised.value.sqlstate, raised.value.column_name) == ("22023", "expires_at")
    job = await postgres_store.job_get(job_id)
    assert job is not None
    assert job.expires_at is not None


async def test_concurrent_claims_never_return_an_expired_job(postgres_store: PostgresJobStore) -> None:
    """1,000 jobs in 10 tenants, every other one past its deadline at the claims' now, claimed by 6 concurrent
    lessees while 2 timers expire them: every leased job was in time, every expired one was never leased, and
    each job is one or the other."""
    clock = TestClock(START)
    enqueuer = engine_on(postgres_store, clock)
    jobs = [NewJob(task_name="t", expires_in_seconds=5 if n % 2 else 3600, priority=n % 3) for n in range(100)]
    for tenant in range(10):
        await enqueuer.enqueue_many(f"tenant-{tenant}", jobs)
    clock.advance(seconds=5)
    lessees = [engine_on(postgres_store, clock, seed=20 + n) for n in range(8)]
    leased: list[str] = []
    expired: list[str] = []

    async def claim(engine_index: int) -> None:
        while batch := await lessees[engine_index].lease(["default"], max_jobs=25):
            leased.extend(job.id for job in batch)
            for job in batch:
                assert job.expires_at is not None
                assert job.expires_at > clock.now()

    async def expire(engine_index: int) -> None:
        while batch := await lessees[engine_index].expire_due_jobs(50):
            expired.extend(job.id for job in batch)

    await asyncio.gather(*(claim(n) for n in range(6)), *(expire(n) for n in (6, 7)))
    assert len(leased) == len(set(leased)) == 500
    assert len(expired) == len(set(expired)) == 500
    assert not set(leased) & set(expired)
    rows = await postgres_store.job_get_many(expired)
    assert {(job.status, job.delivery_count) for job in rows.values()} == {(JobStatus.DEAD_LETTER, 0)}


async def test_the_expiry_read_is_a_range_of_its_index(postgres_url: str, postgres_store: PostgresJobStore) -> None:
    """50,000 jobs without a deadline and 50,000 with one far ahead: the read of the expired ones is a range of
    idx_jobs_expiry under any plan, and reads no row outside it; the write reads its rows by primary key."""
    await engine_on(postgres_store, TestClock(START)).enqueue_many(
        T, [NewJob(task_name="t", expires_in_seconds=5)] * 10
    )
    async with pg.connect(postgres_url) as connection:
        await connection.execute(
            """
            INSERT INTO queueflow.jobs (id, tenant_id, queue_name, task_name, config, scheduled_at, created_at,
                                        expires_at)
            SELECT 'job_bulk_' || lpad(i::text, 7, '0'), 'tenant-a', 'default', 't',
                   '{"backoff": {"strategy": "fixed", "base_seconds": 1, "max_seconds": 1, "jitter": false}}',
                   $1::timestamptz, $1::timestamptz, CASE WHEN i % 2 = 0 THEN $1::timestamptz + interval '1 day' END
              FROM generate_series(1, 100000) AS i
            """,
            START,
        )
        await connection.execute("ANALYZE queueflow.jobs")
        for mode in ("auto", "force_generic_plan"):
            await connection.execute(f"SET plan_cache_mode = {mode}")
            await connection.execute(f"PREPARE expiring(timestamptz, int) AS {EXPIRING}")
            due = (START + timedelta(seconds=5)).isoformat()
            rows = await connection.fetch(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE expiring('{due}', 100)")
            await connection.execute("DEALLOCATE expiring")
            plan = json.loads(rows[0][0])[0]["Plan"]
            scans = list(_scans(plan))
            assert [scan["Index Name"] for scan in scans if "Index Name" in scan] == ["idx_jobs_expiry"], scans
            assert all(scan["Node Type"] != "Seq Scan" for scan in scans), scans
            # The 10 due rows, and at most the one past them that ends the range.
            assert scans[0]["Actual Rows"] == 10
        # The write reaches its rows by their ids (generic plan: the one a pooled connection keeps).
        await connection.execute(f"PREPARE expire(text[], text[], timestamptz) AS {EXPIRE_MANY}")
        rows = await connection.fetch(
            "EXPLAIN (FORMAT JSON) EXECUTE expire('{job_bulk_0000001,job_bulk_0000003}', '{e,e}', now())"
        )
        scans = list(_scans(json.loads(rows[0][0])[0]["Plan"]))
        assert {scan.get("Index Name") for scan in scans if scan["Node Type"] != "Function Scan"} <= {
            "jobs_pkey",
            None,  # the CTE's scan of the locked rows
        }, scans
        assert not [scan for scan in scans if scan["Node Type"] == "Seq Scan"], scans


def _scans(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if "Scan" in plan["Node Type"]:
        yield plan
    for child in plan.get("Plans", []):
        yield from _scans(child)


async def test_an_expiry_skips_a_row_another_transaction_holds(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    clock = TestClock(START)
    engine = engine_on(postgres_store, clock)
    held, free = [(await engine.enqueue(T, NewJob(task_name="t", expires_in_seconds=5))).job for _ in range(2)]
    clock.advance(seconds=5)
    async with pg.connect(postgres_url) as holder, holder.transaction():
        await holder.execute("SELECT FROM queueflow.jobs WHERE id = $1 FOR UPDATE", held.id)
        async with asyncio.timeout(PATIENCE):
            assert [job.id for job in await engine.expire_due_jobs(100)] == [free.id]
    assert (await engine.get_job(T, held.id)).status is JobStatus.PENDING
    assert [job.id for job in await engine.expire_due_jobs(100)] == [held.id]


async def test_no_claim_waits_for_an_expiry_in_progress(postgres_url: str, postgres_store: PostgresJobStore) -> None:
    """The expiry's statement holds its rows until it commits (here: never, while the claims run); the claims of
    every kind take the jobs in time at once, ahead of and behind the expired ones in claim order."""
    clock = TestClock(START)
    engine = engine_on(postgres_store, clock)
    ahead = [(await engine.enqueue(T, NewJob(task_name="t", priority=5, expires_in_seconds=5))).job for _ in range(3)]
    behind = [(await engine.enqueue(T, NewJob(task_name="t"))).job for _ in range(3)]
    clock.advance(seconds=5)
    async with pg.connect(postgres_url) as expirer, expirer.transaction():
        ids = [job.id for job in ahead]
        rows = await expirer.fetch(EXPIRE_MANY, ids, ["expired"] * len(ids), clock.now())
        assert len(rows) == 3
        async with asyncio.timeout(PATIENCE):
            scoped = await engine.lease(["default"], max_jobs=1, scope=T)
            filtered = await engine.lease(["default"], max_jobs=1, task_names=["t"])
            fair = await engine.lease(["default"], max_jobs=10)
        assert sorted(job.id for job in scoped + filtered + fair) == sorted(job.id for job in behind)
