"""`queueflow.enqueue(...)`: a job enqueued in the caller's own transaction.

README.md, "Enqueue in your own transaction"."""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest
from queueflow.api.schemas.worker import LeaseRequest
from queueflow.api.worker import lease_or_wait
from queueflow.clocks import SystemClock
from queueflow.core.flow import QueueSettingsPatch
from queueflow.core.ids import IdSource
from queueflow.core.types import BackoffPolicy, BackoffStrategy, JobStatus, NewJob
from queueflow.runtime.notifier import Notifier
from queueflow.settings import Settings
from queueflow.stores.postgres import PostgresJobStore

from tests import pg
from tests.inprocess import WatchedWakeups
from tests.moments import T
from tests.postgres.helpers import engine_on

PATIENCE = 10.0
ENQUEUE = "SELECT queueflow.enqueue(tenant_id => $1, task_name => $2, payload => $3::jsonb, queue_name => $4)"


async def test_a_committed_job_is_leased_as_enqueued(postgres_url: str, postgres_store: PostgresJobStore) -> None:
    async with pg.connect(postgres_url) as connection, connection.transaction():
        job_id = await connection.fetchval(
            """SELECT queueflow.enqueue(tenant_id => $1, task_name => 'send', payload => '{"to": "ada"}',
                      queue_name => 'mail', priority => 7, max_retries => 5, timeout_seconds => 30,
                      backoff => '{"strategy": "fixed", "base_seconds": 2}', metadata => '{"order": 42}')""",
            T,
        )
    engine = engine_on(postgres_store, SystemClock())
    (leased,) = await engine.lease(["mail"])
    assert leased.id == job_id
    assert (leased.tenant_id, leased.task_name, leased.payload, leased.priority) == (T, "send", {"to": "ada"}, 7)
    assert (leased.max_retries, leased.timeout_seconds, leased.metadata) == (5, 30.0, {"order": 42})
    assert leased.backoff == BackoffPolicy(BackoffStrategy.FIXED, 2.0, 3600.0, True)
    assert leased.status is JobStatus.RUNNING
    assert leased.delivery_count == 1


async def test_jobs_of_one_transaction_are_claimed_in_its_order(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    async with pg.connect(postgres_url) as connection, connection.transaction():
        ids = [await connection.fetchval(ENQUEUE, T, f"t{i}", "{}", "ordered") for i in range(10)]
    engine = engine_on(postgres_store, SystemClock())
    assert [(await engine.lease(["ordered"]))[0].id for _ in range(10)] == ids


async def test_defaults_are_those_of_the_http_route(postgres_url: str, postgres_store: PostgresJobStore) -> None:
    async with pg.connect(postgres_url) as connection:
        job_id = await connection.fetchval("SELECT queueflow.enqueue(tenant_id => $1, task_name => 't')", T)
    job = await postgres_store.job_get(job_id, tenant_id=T)
    assert job is not None
    assert (job.queue_name, job.payload, job.priority, job.max_retries) == ("default", {}, 0, 3)
    assert (job.backoff, job.timeout_seconds, job.metadata, job.idempotency_key) == (BackoffPolicy(), None, {}, None)
    assert job.status is JobStatus.PENDING
    assert job.scheduled_at == job.created_at


async def test_a_delay_or_run_at_sets_the_due_time(postgres_url: str, postgres_store: PostgresJobStore) -> None:
    at = datetime(2030, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    async with pg.connect(postgres_url) as connection:
        delayed = await connection.fetchval(
            "SELECT queueflow.enqueue(tenant_id => $1, task_name => 't', delay_seconds => 90)", T
        )
        planned = await connection.fetchval(
            "SELECT queueflow.enqueue(tenant_id => $1, task_name => 't', run_at => $2)", T, at
        )
    delayed_job, planned_job = await postgres_store.job_get(delayed), await postgres_store.job_get(planned)
    assert delayed_job is not None
    assert planned_job is not None
    assert delayed_job.scheduled_at - delayed_job.created_at == timedelta(seconds=90)
    assert planned_job.scheduled_at == at


async def test_a_rolled_back_job_never_exists(postgres_url: str, postgres_store: PostgresJobStore) -> None:
    async with pg.connect(postgres_url) as connection:
        transaction = connection.transaction()
        await transaction.start()
        job_id = await connection.fetchval(ENQUEUE, T, "send", "{}", "default")
        await transaction.rollback()
        assert await connection.fetchval("SELECT count(*) FROM queueflow.jobs") == 0
    assert await postgres_store.job_get(job_id) is None
    assert await engine_on(postgres_store, SystemClock()).lease(["default"]) == []


async def test_an_idempotent_repeat_returns_the_original_id(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    sql = "SELECT queueflow.enqueue(tenant_id => $1, task_name => $2, idempotency_key => 'order-42')"
    async with pg.connect(postgres_url) as connection:
        first = await connection.fetchval(sql, T, "send")
        again = await connection.fetchval(sql, T, "something else entirely")
        other_tenant = await connection.fetchval(sql, "tenant-b", "send")
    assert again == first != other_tenant
    job = await postgres_store.job_get(first)
    assert job is not None
    assert job.task_name == "send"


async def test_the_http_routes_key_and_the_functions_key_are_one(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    from queueflow.core.types import NewJob

    engine = engine_on(postgres_store, SystemClock())
    over_http = (await engine.enqueue(T, NewJob(task_name="t", idempotency_key="k"))).job.id
    async with pg.connect(postgres_url) as connection:
        assert (
            await connection.fetchval(
                "SELECT queueflow.enqueue(tenant_id => $1, task_name => 't', idempotency_key => 'k')", T
            )
            == over_http
        )


async def test_concurrent_repeats_of_one_key_make_one_job(postgres_url: str, postgres_store: PostgresJobStore) -> None:
    sql = "SELECT queueflow.enqueue(tenant_id => $1, task_name => 't', idempotency_key => 'once')"
    async with pg.connect(postgres_url) as a, pg.connect(postgres_url) as b:
        first = a.transaction()
        await first.start()
        held = await a.fetchval(sql, T)
        # b's insert waits on a's uncommitted row, then resolves to it once a commits.
        waiting = asyncio.create_task(b.fetchval(sql, T))
        await _until_blocked(a, b)
        await first.commit()
        assert await asyncio.wait_for(waiting, PATIENCE) == held
    assert await postgres_store.job_get(held) is not None


async def _until_blocked(observer: asyncpg.Connection, blocked: asyncpg.Connection) -> None:
    """Return once `blocked`'s statement waits on a lock (asked of the database, no sleeping on a guess)."""
    pid = blocked.get_server_pid()
    async with asyncio.timeout(PATIENCE):
        # The database is the only one who knows; there is no event to wait on.
        while not await observer.fetchval("SELECT cardinality(pg_blocking_pids($1)) > 0", pid):  # noqa: ASYNC110
            await asyncio.sleep(0.01)


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ("tenant_id => 'bad tenant', task_name => 't'", "tenant_id"),
        ("tenant_id => 'a', task_name => ''", "task_name"),
        (f"tenant_id => 'a', task_name => '{'x' * 201}'", "task_name"),
        ("tenant_id => 'a', task_name => 't', queue_name => 'no spaces'", "queue_name"),
        ("tenant_id => 'a', task_name => 't', payload => '[1]'", "payload"),
        ("tenant_id => 'a', task_name => 't', payload => NULL", "payload"),
        ("tenant_id => 'a', task_name => 't', priority => 1001", "priority"),
        ("tenant_id => 'a', task_name => 't', run_at => now(), delay_seconds => 1", "delay_seconds"),
        ("tenant_id => 'a', task_name => 't', run_at => 'infinity'", "run_at"),
        ("tenant_id => 'a', task_name => 't', delay_seconds => -1", "delay_seconds"),
        ("tenant_id => 'a', task_name => 't', delay_seconds => 'NaN'", "delay_seconds"),
        ("tenant_id => 'a', task_name => 't', max_retries => 101", "max_retries"),
        ("tenant_id => 'a', task_name => 't', backoff => '[]'", "backoff"),
        ("""tenant_id => 'a', task_name => 't', backoff => '{"strategy": "random"}'""", "backoff.strategy"),
        ("""tenant_id => 'a', task_name => 't', backoff => '{"base_seconds": 0}'""", "backoff.base_seconds"),
        ("""tenant_id => 'a', task_name => 't', backoff => '{"base_seconds": "1"}'""", "backoff.base_seconds"),
        (
            """tenant_id => 'a', task_name => 't', backoff => '{"base_seconds": 9, "max_seconds": 8}'""",
            "backoff.max_seconds",
        ),
        ("""tenant_id => 'a', task_name => 't', backoff => '{"jitter": "yes"}'""", "backoff.jitter"),
        ("""tenant_id => 'a', task_name => 't', backoff => '{"tries": 3}'""", "backoff.tries"),
        ("tenant_id => 'a', task_name => 't', timeout_seconds => 0.5", "timeout_seconds"),
        ("tenant_id => 'a', task_name => 't', metadata => '\"x\"'", "metadata"),
        (f"tenant_id => 'a', task_name => 't', payload => '{{\"a\": {'[' * 128}{']' * 128}}}'", "payload"),
        ("tenant_id => 'a', task_name => 't', idempotency_key => ''", "idempotency_key"),
        ("tenant_id => 'a', task_name => 't', concurrency_key => ''", "concurrency_key"),
        (f"tenant_id => 'a', task_name => 't', concurrency_key => '{'k' * 201}'", "concurrency_key"),
    ],
)
async def test_a_bad_value_raises_22023_naming_the_field(
    postgres_url: str, postgres_store: PostgresJobStore, arguments: str, field: str
) -> None:
    async with pg.connect(postgres_url) as connection:
        with pytest.raises(asyncpg.InvalidParameterValueError) as raised:
            await connection.fetchval(f"SELECT queueflow.enqueue({arguments})")
        assert await connection.fetchval("SELECT count(*) FROM queueflow.jobs") == 0
    assert raised.value.sqlstate == "22023"
    assert raised.value.column_name == field
    assert f"{field}: " in str(raised.value)


async def test_the_limits_themselves_are_accepted(postgres_url: str, postgres_store: PostgresJobStore) -> None:
    deepest = '{"a": ' + "[" * 127 + "]" * 127 + "}"
    async with pg.connect(postgres_url) as connection:
        job_id = await connection.fetchval(
            "SELECT queueflow.enqueue(tenant_id => $1, task_name => $2, priority => -1000, max_retries => 0,"
            " delay_seconds => 315360000, timeout_seconds => 604800, payload => $3::jsonb,"
            """ backoff => '{"strategy": "linear", "base_seconds": 0.001, "max_seconds": 0.001, "jitter": false}')""",
            T,
            "x" * 200,
            deepest,
        )
    assert await postgres_store.job_get(job_id) is not None


async def test_a_concurrency_key_is_stored_as_the_http_routes_and_limited_alike(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    engine = engine_on(postgres_store, SystemClock())
    await engine.configure_queue(T, "exports", QueueSettingsPatch(key_concurrency_limit=1))
    by_http = (await engine.enqueue(T, NewJob(task_name="export", queue_name="exports", concurrency_key="u1"))).job
    async with pg.connect(postgres_url) as connection:
        by_sql = await connection.fetchval(
            "SELECT queueflow.enqueue(tenant_id => $1, task_name => 'export', queue_name => 'exports',"
            " concurrency_key => $2)",
            T,
            "u" * 199 + "1",
        )
        same_key = await connection.fetchval(
            "SELECT queueflow.enqueue(tenant_id => $1, task_name => 'export', queue_name => 'exports',"
            " concurrency_key => 'u1')",
            T,
        )
        keys = await connection.fetch("SELECT id, config->>'concurrency_key' AS key FROM queueflow.jobs")
    assert {row["id"]: row["key"] for row in keys} == {
        by_http.id: "u1",
        by_sql: "u" * 199 + "1",
        same_key: "u1",
    }
    stored = await postgres_store.job_get(by_sql, tenant_id=T)
    assert stored is not None
    assert stored.concurrency_key == "u" * 199 + "1"
    # One job per key at a time: of the two "u1" jobs only the first is leased, with the other key's job.
    leased = await engine.lease(["exports"], max_jobs=10)
    assert sorted(job.id for job in leased) == sorted([by_http.id, by_sql])


async def test_every_bad_field_is_named_at_once(postgres_url: str, postgres_store: PostgresJobStore) -> None:
    async with pg.connect(postgres_url) as connection:
        with pytest.raises(asyncpg.InvalidParameterValueError) as raised:
            await connection.fetchval("SELECT queueflow.enqueue(tenant_id => 'a', task_name => '', priority => 5000)")
    assert "task_name: must be 1–200 characters long; priority: must be between -1000 and 1000" in str(raised.value)


async def test_ids_sort_with_the_servers(postgres_url: str, postgres_store: PostgresJobStore) -> None:
    source = IdSource(random.Random(5))
    async with pg.connect(postgres_url) as connection:
        job_id = await connection.fetchval("SELECT queueflow.enqueue(tenant_id => $1, task_name => 't')", T)
    job = await postgres_store.job_get(job_id)
    assert job is not None
    assert len(job_id) == len(source.new_id("job", job.created_at))
    assert job_id.startswith("job_")
    # The same millisecond-prefix as the server's id for the same instant; ids a millisecond off sort around it.
    assert job_id[:14] == source.new_id("job", job.created_at)[:14]
    assert source.new_id("job", job.created_at - timedelta(milliseconds=1)) < job_id
    assert job_id < source.new_id("job", job.created_at + timedelta(milliseconds=1))
    ids = set()
    async with pg.connect(postgres_url) as connection:
        for _ in range(50):
            ids.add(await connection.fetchval("SELECT queueflow.enqueue(tenant_id => $1, task_name => 't')", T))
    assert len(ids) == 50


async def test_the_enqueuer_role_may_enqueue_and_nothing_else(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    async with pg.connect(postgres_url) as connection:
        assert (
            await connection.fetchval("SELECT rolcanlogin FROM pg_roles WHERE rolname = 'queueflow_enqueuer'") is False
        )
        async with connection.transaction():
            await connection.execute("SET LOCAL ROLE queueflow_enqueuer")
            job_id = await connection.fetchval("SELECT queueflow.enqueue(tenant_id => $1, task_name => 't')", T)
        assert await postgres_store.job_get(job_id) is not None
        job = await postgres_store.job_get(job_id)
        assert job is not None
        refused = []
        for table in ("jobs", "workflows", "workflow_steps", "schedules"):
            refused += [
                f"SELECT * FROM queueflow.{table}",
                f"DELETE FROM queueflow.{table}",
                f"UPDATE queueflow.{table} SET tenant_id = tenant_id"
                if table != "workflow_steps"
                else "UPDATE queueflow.workflow_steps SET name = name",
                f"TRUNCATE queueflow.{table}",
            ]
        refused += [
            f"INSERT INTO queueflow.jobs (id, tenant_id, queue_name, task_name) VALUES ('job_x', '{T}', 'q', 't')",
            "SELECT queueflow.notify_work()",
            "SELECT queueflow.notify_done()",
            "CREATE TABLE queueflow.mine (x int)",
            "CREATE FUNCTION queueflow.mine() RETURNS int LANGUAGE sql AS 'SELECT 1'",
            "SELECT * FROM alembic_version",
            "ALTER FUNCTION queueflow.enqueue(text, text, jsonb, text, integer, timestamptz, double precision, integer,"
            " jsonb, double precision, jsonb, text, text, jsonb, timestamptz, jsonb) SECURITY INVOKER",
        ]
        for sql in refused:
            with pytest.raises(asyncpg.PostgresError) as raised:
                await as_enqueuer(connection, sql)
            assert raised.value.sqlstate in {"42501", "42809"}, (sql, raised.value)  # insufficient privilege
    assert await postgres_store.job_get(job_id) == job


async def as_enqueuer(connection: asyncpg.Connection, sql: str) -> None:
    async with connection.transaction():
        await connection.execute("SET LOCAL ROLE queueflow_enqueuer")
        await connection.execute(sql)


async def test_public_may_not_execute_it(postgres_url: str, postgres_store: PostgresJobStore) -> None:
    async with pg.connect(postgres_url) as connection:
        acl = await connection.fetchval("SELECT proacl::text[] FROM pg_proc WHERE oid = 'queueflow.enqueue'::regproc")
        owner = await connection.fetchval("SELECT current_user")
    grantees = sorted(entry.split("=", 1)[0] for entry in acl)
    assert grantees == sorted([owner, "queueflow_enqueuer"])  # no "=X/…" entry: PUBLIC may not execute it


async def test_a_parked_long_poll_wakes_on_commit_and_not_before(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    wakeups = WatchedWakeups()
    engine = engine_on(postgres_store, SystemClock())
    settings = Settings(safety_poll=60)
    async with Notifier(postgres_url, wakeups, safety_poll=60) as notifier:
        await asyncio.wait_for(notifier.listening.wait(), PATIENCE)
        poll = asyncio.create_task(
            lease_or_wait(engine, wakeups, LeaseRequest(queues=["mail"], wait_seconds=30), settings)
        )
        async with pg.connect(postgres_url) as app, pg.connect(postgres_url) as other:
            await wakeups.until_waiting(1)
            transaction = app.transaction()
            await transaction.start()
            job_id = await app.fetchval(ENQUEUE, T, "send", "{}", "mail")
            # A probe committed after the uncommitted enqueue is heard first: notifications go out at commit.
            probe = asyncio.create_task(wakeups.wait(["probe"], PATIENCE))
            await asyncio.sleep(0)
            await other.fetchval(ENQUEUE, T, "probe", "{}", "probe")
            assert await probe
            assert not poll.done()
            await transaction.commit()
            jobs = await asyncio.wait_for(poll, PATIENCE)
    assert [job.id for job in jobs] == [job_id]
