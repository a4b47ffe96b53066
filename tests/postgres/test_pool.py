"""The store's connection pool: built anywhere, bounded, and never churning sessions once warm."""

from __future__ import annotations

import asyncio
import contextlib
import socket

import asyncpg
import pytest
from queueflow.clocks import TestClock
from queueflow.core.errors import QueueFlowError, StoreUnavailable
from queueflow.core.types import JobStatus, NewJob
from queueflow.stores.postgres import PostgresJobStore
from queueflow.stores.postgres import schema as pgschema
from queueflow.stores.postgres.pool import ConnectionPool

from tests import pg
from tests.postgres.helpers import engine_on

PATIENCE = 10.0
"""Upper bound on any wait here; a passing test takes a fraction of it."""


def test_a_store_is_built_outside_any_event_loop(postgres_url: str) -> None:
    # A server builds its store before uvicorn starts the loop; the pool is opened on first use, inside it.
    store = PostgresJobStore.from_url(postgres_url, pool_size=2)

    async def use() -> None:
        async with store:
            await store.ping()

    asyncio.run(use())


async def sessions(url: str) -> list[int]:
    async with pg.connect(url) as connection:
        rows = await connection.fetch(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'queueflow'"
        )
    return sorted(row["pid"] for row in rows)


async def test_more_work_than_connections_waits_and_opens_no_new_session(postgres_url: str) -> None:
    clock = TestClock()
    async with PostgresJobStore.from_url(postgres_url, pool_size=3) as store:
        await store.ping()  # the first statement opens the whole pool
        warm = await sessions(postgres_url)
        assert len(warm) == 3
        await asyncio.gather(*(store.queue_overview(tenant_id="tenant", now=clock.now()) for _ in range(40)))
        assert await sessions(postgres_url) == warm


async def test_statements_stuck_behind_a_lock_are_cancelled_and_the_pool_recovers(postgres_url: str) -> None:
    # The pool exhausted by slow statements (here: waiting for a lock someone else holds). Without a statement
    # timeout the first two waited for as long as the lock lasted, holding both connections, and every other call
    # queued behind them.
    clock = TestClock()
    async with PostgresJobStore.from_url(postgres_url, pool_size=2, statement_timeout=0.5) as store:
        await store.ping()
        warm = await sessions(postgres_url)
        async with pg.connect(postgres_url) as holder:
            await holder.execute("BEGIN; LOCK TABLE queueflow.jobs IN ACCESS EXCLUSIVE MODE")
            async with asyncio.timeout(PATIENCE):
                calls = [store.queue_overview(tenant_id="tenant", now=clock.now()) for _ in range(6)]
                outcomes = await asyncio.gather(*calls, return_exceptions=True)
            await holder.execute("ROLLBACK")
        assert [type(outcome) for outcome in outcomes] == [StoreUnavailable] * 6
        assert "statement timeout" in str(outcomes[0])
        assert await store.queue_overview(tenant_id="tenant", now=clock.now()) == ({}, [])
        assert await sessions(postgres_url) == warm  # cancelled statements cost no reconnection


async def test_a_call_that_finds_every_connection_busy_says_so(postgres_url: str) -> None:
    async with PostgresJobStore.from_url(postgres_url, pool_size=1, connect_timeout=0.2) as store:
        await store.ping()
        async with pg.connect(postgres_url) as holder:
            await holder.execute("BEGIN; LOCK TABLE queueflow.jobs IN ACCESS EXCLUSIVE MODE")
            stuck = asyncio.create_task(store.queue_overview(tenant_id="tenant", now=TestClock().now()))
            await waiting_for_a_lock(holder)
            try:
                with pytest.raises(StoreUnavailable, match="all 1 are busy"):
                    await store.ping()
            finally:
                await holder.execute("ROLLBACK")
            assert await stuck == ({}, [])


async def waiting_for_a_lock(holder: asyncpg.Connection) -> None:
    """Until a statement of ours waits for the lock `holder` holds. PostgreSQL announces nothing: poll, with a
    deadline."""
    sql = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
    async with asyncio.timeout(PATIENCE):
        while True:
            if await holder.fetchval(sql):
                return
            await asyncio.sleep(0.01)


async def test_a_claim_leaves_its_connection_outside_any_transaction_on_its_default_settings() -> None:
    # A claim begins its transaction and sets generic plans and an asynchronous commit in one round trip, and commits
    # by hand: the connection it hands back holds no open transaction and no setting a pooler's next client would
    # inherit (an enqueue or an ack after it commits synchronously). On a durable database of its own: the tests'
    # databases commit asynchronously by default (tests.pg.create_database), which would hide a leaked setting.
    async with pg.fresh_database(durable=True) as url:
        await pgschema.upgrade_async(url)
        async with PostgresJobStore.from_url(url, pool_size=1) as store:
            engine = engine_on(store, TestClock())
            await engine.enqueue("tenant", NewJob(task_name="noop", queue_name="pool-claim"))
            (job,) = await engine.lease(["pool-claim"], max_jobs=5)
            assert job.status is JobStatus.RUNNING
            async with store._connection() as db:
                assert not db.is_in_transaction()
                assert await db.fetchval("SHOW plan_cache_mode") == "auto"
                assert await db.fetchval("SHOW synchronous_commit") == "on"
                assert await db.fetchval("SELECT status FROM queueflow.jobs WHERE id = $1", job.id) == "running"


async def test_callers_waiting_on_a_pool_that_fails_to_open_each_get_the_database_s_reason() -> None:
    # Nothing listens on a closed port: every caller waiting on the one opening must be told why, and the next
    # caller opens afresh (before, the first failed waiter cleared the shared opening and the others raised
    # AttributeError on it, which reached clients as "'NoneType' object has no attribute 'done'").
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    store = PostgresJobStore.from_url(f"postgresql://postgres@127.0.0.1:{port}/nowhere", pool_size=2)
    async with store:
        outcomes = await asyncio.gather(*(store.ping() for _ in range(4)), return_exceptions=True)
        assert all(isinstance(outcome, StoreUnavailable) for outcome in outcomes), outcomes
        assert not any("NoneType" in str(outcome) for outcome in outcomes), outcomes
        with pytest.raises(StoreUnavailable, match="cannot connect"):
            await store.ping()


async def test_a_connection_handed_back_inside_a_transaction_is_rolled_back_before_it_is_lent_again(
    postgres_url: str,
) -> None:
    # A statement that fails after a hand-written BEGIN (the claim begins its own) leaves the transaction open: the
    # pool must end it, or the next caller's statements would run inside it and never commit.
    async with PostgresJobStore.from_url(postgres_url, pool_size=1) as store:

        async def fail_inside_a_transaction() -> None:
            async with store._connection() as db:
                await db.execute("BEGIN")
                await db.execute("SELECT 1/0")

        with pytest.raises(QueueFlowError):
            await fail_inside_a_transaction()
        async with store._connection() as db:
            assert not db.is_in_transaction()
            assert await db.fetchval("SELECT 1") == 1


async def test_a_connection_that_died_is_replaced_on_its_next_checkout(postgres_url: str) -> None:
    async with PostgresJobStore.from_url(postgres_url, pool_size=1) as store:
        async with store._connection() as db:
            first = db.get_server_pid()
        async with pg.connect(postgres_url) as admin:
            await admin.execute("SELECT pg_terminate_backend($1)", first)
        # Once the client has read the backend's goodbye the connection is closed and the checkout reconnects; a
        # statement sent before that fails (StoreUnavailable) and the pool drops the connection instead.
        with contextlib.suppress(StoreUnavailable):
            await store.ping()
        await store.ping()  # on a new connection, opened in the dead one's place
        async with store._connection() as db:
            assert db.get_server_pid() != first


async def test_a_pool_cancelled_while_it_opens_closes_the_connections_it_had_opened(postgres_url: str) -> None:
    """A store closed while its pool opens cancels the opening: the connections already open were left to the
    garbage collector, whose ResourceWarning then failed whatever test ran at that moment."""
    opened: list[asyncpg.Connection] = []
    attempts, connected, never = [], asyncio.Event(), asyncio.Event()

    async def connect() -> asyncpg.Connection:
        attempts.append(None)
        if len(attempts) > 1:
            await never.wait()  # the second connection is still being opened when the opening is cancelled
        connection = await asyncpg.connect(pg.asyncpg_dsn(postgres_url))
        opened.append(connection)
        connected.set()
        return connection

    opening = asyncio.ensure_future(ConnectionPool(connect, 2).open())
    async with asyncio.timeout(PATIENCE):
        await connected.wait()
    opening.cancel()
    with pytest.raises(asyncio.CancelledError):
        await opening
    assert opened[0].is_closed()


async def test_a_connection_still_being_cleaned_when_the_pool_closes_is_closed_not_kept(postgres_url: str) -> None:
    """A caller cancelled inside a transaction hands its connection back while the store closes: the pool rolls
    it back first, and the close came in meanwhile. Put back among the idle after the close had taken them, it was
    never closed — a ResourceWarning in whatever test ran next (test_pooler's notifier test, in CI)."""

    async def connect() -> asyncpg.Connection:
        return await asyncpg.connect(pg.asyncpg_dsn(postgres_url))

    pool = await ConnectionPool(connect, 1).open()
    connection = await pool.lend(PATIENCE)
    await connection.execute("BEGIN")
    handing_back = asyncio.create_task(pool.take_back(connection))
    await asyncio.sleep(0)  # one turn of the loop: the hand-back has sent its ROLLBACK and waits for the answer
    assert connection.is_in_transaction()
    await pool.close()
    async with asyncio.timeout(PATIENCE):
        await handing_back
    assert connection.is_closed()
