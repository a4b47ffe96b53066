"""Retention never holds a lock that a claim, an enqueue or an ack waits on, and never waits on theirs: real
connections side by side, each but the one under test with a `lock_timeout`, so that any wait for a lock is an
error rather than a slow test (`lock_timeout` in the URL: asyncpg sends it as a setting of every connection)."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

import pytest
from queueflow.clocks import TestClock
from queueflow.core.errors import StoreUnavailable
from queueflow.core.flow import QueueSettingsPatch
from queueflow.core.types import BackoffPolicy, JobStatus, NewJob
from queueflow.engine import Engine
from queueflow.stores.postgres import PostgresJobStore
from queueflow.stores.postgres.retention_sql import DELETE_EXPIRED_OWN
from queueflow.stores.postgres.rows import job_config

from tests import pg
from tests.moments import START, T
from tests.postgres.helpers import engine_on

HISTORY = 5_000
"""Expired finished jobs in the queue "history": a retention pass of several batches."""

# The finished history, each job two days old (the queue keeps them an hour): every tenth dead-lettered.
SEED = """
INSERT INTO queueflow.jobs (id, tenant_id, queue_name, task_name, status, config, created_at, scheduled_at,
                            started_at, completed_at, result)
SELECT 'job_old_' || g, $1, 'history', 't', CASE WHEN g % 10 = 0 THEN 'dead_letter' ELSE 'completed' END,
       $4::jsonb, $2, $2, $2, $2, '{"ok": true}'
  FROM generate_series(1, $3) AS g
"""

# The modes a DELETE's scan and row locks take on a table: none of them conflicts with another writer's.
ROW_LEVEL = {"AccessShareLock", "RowShareLock", "RowExclusiveLock"}


def waiting_fails(url: str) -> str:
    """`url` with a lock timeout: a statement waiting longer than 300 ms for a lock fails."""
    return f"{url}?lock_timeout=300"


async def seeded(store: PostgresJobStore, url: str, clock: TestClock) -> Engine:
    engine = engine_on(store, clock)
    await engine.configure_queue(T, "history", QueueSettingsPatch(retention_seconds=3600))
    async with pg.connect(url) as connection:
        config = json.dumps(job_config(BackoffPolicy(), None))
        await connection.execute(SEED, T, START - timedelta(days=2), HISTORY, config)
    return engine


async def history_left(url: str) -> int:
    async with pg.connect(url) as connection:
        count = await connection.fetchval("SELECT count(*) FROM queueflow.jobs WHERE queue_name = 'history'")
    assert isinstance(count, int)
    return count


async def test_claims_enqueues_and_acks_go_on_while_a_retention_batch_holds_its_rows(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    clock = TestClock(START)
    await seeded(postgres_store, postgres_url, clock)
    async with PostgresJobStore.from_url(waiting_fails(postgres_url), pool_size=2) as store:
        engine = engine_on(store, clock, seed=12)
        await engine.enqueue_many(T, [NewJob(task_name="t", queue_name=queue) for queue in ["default"] * 3])
        (to_ack, to_fail) = await engine.lease(["default"], max_jobs=2)
        async with pg.connect(postgres_url) as retention:
            # One retention batch, the store's own statement, held open after it has locked and deleted every
            # expired row: whatever waits on it now waits until the end of the test.
            holding = retention.transaction()
            await holding.start()
            assert await retention.execute(DELETE_EXPIRED_OWN, clock.now(), HISTORY) == f"DELETE {HISTORY}"

            keyed = NewJob(task_name="t", queue_name="other", idempotency_key="new")
            enqueued = await engine.enqueue_many(T, [NewJob(task_name="t", queue_name="history"), keyed])
            assert all(result.created for result in enqueued)
            (claimed,) = await engine.lease(["default"], max_jobs=5)
            (from_history,) = await engine.lease(["history"], max_jobs=5)
            await engine.heartbeat(claimed.id, claimed.lease_token or "")
            await engine.complete(to_ack.id, to_ack.lease_token or "", {"ok": True})
            await engine.fail(to_fail.id, to_fail.lease_token or "", "boom", retryable=False)
            await engine.complete(from_history.id, from_history.lease_token or "", None)
            await engine.cancel_job(T, enqueued[1].job.id)
            # A deleted row reads as it was until the delete commits, and listing the queue reads it too.
            assert (await engine.get_job(T, "job_old_1")).status is JobStatus.COMPLETED
            listed = await engine.list_jobs(T, limit=10)
            assert len(listed.items) == 10
            # Another janitor's pass at the same time passes over the held rows instead of waiting for them.
            assert (await engine.run_maintenance()).deleted == 0

            # The check would catch a wait: a tenant's retry of a dead-lettered job the batch holds does wait.
            with pytest.raises(StoreUnavailable, match="lock timeout"):
                await engine.retry_job(T, "job_old_10")
            # And the batch holds nothing a writer's lock conflicts with: row locks, and the table's row modes.
            modes = await retention.fetch(
                "SELECT DISTINCT mode FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'relation'"
            )
            assert {row["mode"] for row in modes} <= ROW_LEVEL
            await holding.commit()
    assert await history_left(postgres_url) == 1  # the job enqueued and completed meanwhile
    async with pg.connect(postgres_url) as connection:
        statuses = await connection.fetch("SELECT status, count(*) FROM queueflow.jobs GROUP BY 1 ORDER BY 1")
    assert [tuple(row) for row in statuses] == [("cancelled", 1), ("completed", 2), ("dead_letter", 1), ("running", 1)]


async def test_a_retention_pass_passes_over_what_an_ack_or_a_tenant_holds_without_waiting(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    clock = TestClock(START)
    engine = await seeded(postgres_store, postgres_url, clock)
    await engine.enqueue(T, NewJob(task_name="t", queue_name="history"))
    (running,) = await engine.lease(["history"])
    async with pg.connect(postgres_url) as other:
        held = other.transaction()
        await held.start()
        # An ack in flight, its transaction not yet committed (its completed_at two days back, so that the
        # committed row would be expired), and a tenant's write on a finished job that retention would take.
        await other.execute(
            "UPDATE queueflow.jobs SET status = 'completed', completed_at = $2, lease_token = NULL WHERE id = $1",
            running.id,
            START - timedelta(days=2),
        )
        await other.execute("SELECT FROM queueflow.jobs WHERE id = 'job_old_7' FOR UPDATE")
        async with PostgresJobStore.from_url(waiting_fails(postgres_url), pool_size=1) as store:
            janitor = engine_on(store, clock, seed=12, retention_batch=400)
            report = await janitor.run_maintenance()
        assert report.deleted == HISTORY - 1
        await held.commit()
    assert await history_left(postgres_url) == 2  # job_old_7 and the acked job: the next pass takes them


async def test_workers_and_a_retention_pass_run_side_by_side_and_neither_waits(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    clock = TestClock(START)
    await seeded(postgres_store, postgres_url, clock)
    url = waiting_fails(postgres_url)
    async with (
        PostgresJobStore.from_url(url, pool_size=1) as janitor_store,
        PostgresJobStore.from_url(url, pool_size=1) as worker_store,
    ):
        await asyncio.gather(janitor_store.ping(), worker_store.ping())
        janitor = engine_on(janitor_store, clock, retention_batch=250)
        worker = engine_on(worker_store, clock, seed=12)
        start_line = asyncio.Barrier(2)

        async def retention() -> int:
            await start_line.wait()
            return (await janitor.run_maintenance()).deleted

        async def work() -> int:
            await start_line.wait()
            done = 0
            for _ in range(40):
                await worker.enqueue_many(T, [NewJob(task_name="t", queue_name="history") for _ in range(5)])
                for job in await worker.lease(["history"], max_jobs=5):
                    await worker.complete(job.id, job.lease_token or "", None)
                    done += 1
            return done

        deleted, done = await asyncio.gather(retention(), work())
    assert (deleted, done) == (HISTORY, 200)
    assert await history_left(postgres_url) == 200  # the jobs just completed are young
