"""What a job costs on disk: a row may leave the default backoff policy out (read as the default), and the job list
reads its ascending index backward (bench/results/2026-12-07-bytes-per-job.md)."""

from __future__ import annotations

from queueflow.clocks import TestClock
from queueflow.core.types import BackoffPolicy, BackoffStrategy, NewJob
from queueflow.stores.postgres import PostgresJobStore

from tests import pg
from tests.moments import START, T
from tests.postgres.helpers import engine_on

LINEAR = BackoffPolicy(BackoffStrategy.LINEAR, 2.0, 60.0, False)


async def test_a_row_without_a_backoff_reads_back_as_the_default_and_is_still_written_with_one(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    """The reader a later release's rows need (the default policy left out of `config`), while this release still
    writes the policy into every row: the release before it reads `config["backoff"]` of every job it leases."""
    engine = engine_on(postgres_store, TestClock(START))
    plain, linear = [
        enqueued.job
        for enqueued in await engine.enqueue_many(T, [NewJob(task_name="t"), NewJob(task_name="t", backoff=LINEAR)])
    ]
    async with pg.connect(postgres_url) as connection:
        configs = dict(await connection.fetch("SELECT id, config::text FROM queueflow.jobs"))
        assert all('"backoff"' in config for config in configs.values()), configs
        await connection.execute("UPDATE queueflow.jobs SET config = '{}' WHERE id = $1", plain.id)
    assert [(await postgres_store.job_get(job.id)).backoff for job in (plain, linear)] == [BackoffPolicy(), LINEAR]


async def test_a_row_written_with_the_default_backoff_spelled_out_reads_the_same(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    """Rows written before the default was left out, and by `queueflow.enqueue` in SQL, which still writes it."""
    async with pg.connect(postgres_url) as connection:
        job_id = await connection.fetchval("SELECT queueflow.enqueue(tenant_id => $1, task_name => 't')", T)
        assert '"backoff"' in await connection.fetchval("SELECT config::text FROM queueflow.jobs WHERE id = $1", job_id)
    job = await postgres_store.job_get(job_id)
    assert job is not None
    assert job.backoff == BackoffPolicy()


async def test_the_job_list_reads_the_ascending_index_backward(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    async with pg.connect(postgres_url) as connection:
        await connection.execute(
            """
            INSERT INTO queueflow.jobs (id, tenant_id, queue_name, task_name, status, config, scheduled_at,
                                        created_at, completed_at)
            SELECT 'job_old_' || lpad(i::text, 7, '0'), 'tenant-' || (i % 4), 'default', 't', 'completed', '{}',
                   at, at, at
              FROM generate_series(1, 20000) AS i, LATERAL (SELECT $1::timestamptz - make_interval(secs => i)) AS t(at)
            """,
            START,
        )
        await connection.execute("ANALYZE queueflow.jobs")
        for cursor in ("", "AND (created_at, id) < (now(), 'job_old_0000100')"):
            plan = "\n".join(
                row[0]
                for row in await connection.fetch(
                    "EXPLAIN SELECT * FROM queueflow.jobs WHERE tenant_id = 'tenant-1' "
                    f"{cursor} ORDER BY created_at DESC, id DESC LIMIT 50"
                )
            )
            assert "Index Scan Backward using idx_jobs_tenant_created" in plan, plan
            assert "Sort" not in plan, plan
