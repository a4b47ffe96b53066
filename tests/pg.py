"""PostgreSQL for tests: throwaway databases on the server named by QUEUEFLOW_TEST_DATABASE_URL.

Other people run tests on the same server at the same time, so every database here has a random name and is
dropped afterwards, and an "outage" is simulated on our own database only (never by restarting the server).
"""

from __future__ import annotations

import asyncio
import os
import random
import secrets
from collections.abc import AsyncIterator, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import asyncpg
from queueflow.stores.postgres import PostgresJobStore
from queueflow.stores.postgres.url import asyncpg_dsn
from sqlalchemy.engine import make_url

STORE_SEED = 41
"""The seed of a test store's ids (its steps' jobs): one no test's engine uses, which would repeat the engine's ids
(a duplicate job id) when both make ids at one TestClock millisecond."""

T = TypeVar("T")

LOCAL_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
ENV = "QUEUEFLOW_TEST_DATABASE_URL"
"""Where test databases are made. Unset: the local server when it answers, else an embedded one (`conftest`);
`embedded` forces the embedded server."""


def admin_url() -> str:
    return os.environ.get(ENV) or LOCAL_URL


TABLES = [
    "queueflow.jobs",
    "queueflow.workflow_steps",
    "queueflow.workflows",
    "queueflow.schedules",
    "queueflow.queue_settings",
    "queueflow.claim_turns",
    "queueflow.unique_keys",
    "queueflow.endpoint_slots",
    "queueflow.endpoints",
    "queueflow.triggers",
    "queueflow.events",
]
"""Every table, in an order that deletes a workflow's steps before the workflow."""


def url_of(database: str) -> str:
    return make_url(admin_url()).set(database=database).render_as_string(hide_password=False)


def database_of(url: str) -> str:
    name = make_url(url).database
    assert name is not None
    return name


def off_loop(work: Callable[[], T]) -> T:
    """Run blocking `work` (which may start its own event loop, as Alembic does) on another thread."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(work).result()


def blocking(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run the coroutine `make()` to its end from synchronous code, whether or not a loop is running here."""
    return off_loop(lambda: asyncio.run(make()))


async def admin(sql: str, *args: object) -> object:
    connection = await asyncpg.connect(asyncpg_dsn(admin_url()))
    try:
        return await connection.fetch(sql, *args)
    finally:
        await connection.close()


async def create_database(*, durable: bool = False) -> str:
    """A new, empty database. Its sessions commit without waiting for the WAL flush unless `durable`: no test
    restarts the server (see above), so no test can lose a commit to it, and a flush costs 8-9 ms a commit on this
    machine's disk under the suite's load against 0.4-0.6 ms without (pgbench, one client) — most tests wait on
    commits, one after another. `durable` is for a test of the server's own setting (what a connection is left
    with after a claim changed it for its transaction)."""
    name = f"queueflow_test_{secrets.token_hex(6)}"
    await admin(f'CREATE DATABASE "{name}"')
    if not durable:
        await admin(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
    return url_of(name)


async def drop_database(url: str) -> None:
    await admin(f'DROP DATABASE IF EXISTS "{database_of(url)}" WITH (FORCE)')


@asynccontextmanager
async def fresh_database(*, durable: bool = False) -> AsyncIterator[str]:
    """The URL of a new, empty database (`create_database`), dropped afterwards."""
    url = await create_database(durable=durable)
    try:
        yield url
    finally:
        await drop_database(url)


@asynccontextmanager
async def connect(url: str) -> AsyncIterator[asyncpg.Connection]:
    connection = await asyncpg.connect(asyncpg_dsn(url))
    try:
        yield connection
    finally:
        await connection.close()


async def empty(url: str) -> None:
    """Delete every row. DELETE, not TRUNCATE: a test leaves a handful of rows, and TRUNCATE's new files cost
    five times as much as deleting them (0.20 s against 0.04 s a test, measured with the connect), on every test.

    With no trigger firing (`session_replication_role = replica`, for this transaction): migration 0021's trigger on
    a deleted job of a sequence wakes the job after it, one probe of the sequence's index per row, and each probe
    walks the rows this same statement already deleted — a test that left thousands of pending sequence jobs made the
    next test's set-up take 91 s (CI), a backend busy all the while. Nothing here needs a trigger: every row goes."""
    async with connect(url) as connection:
        async with connection.transaction():
            await connection.execute("SET LOCAL session_replication_role = replica")
            await connection.execute("; ".join(f"DELETE FROM {table}" for table in TABLES))
        if await connection.fetchval(DEAD_ROWS) > VACUUM_AFTER:
            await connection.execute(f"VACUUM {', '.join(TABLES)}")


VACUUM_AFTER = 20_000
"""Dead rows of a session's database past which `empty` vacuums it. This server runs with `autovacuum = off` (the CI
image's conf.d/90-ci.conf), so nothing else ever does: one session database gathered 345,000 dead job rows (109 MB)
by the end of tests/postgres, and every claim walked their claim-index entries — test_shared_turn's 120 single-job
leases took 107 s in CI and 0.14 s on a fresh database. With it, tests/postgres at `-n 3` took 95 s against 396–532."""

DEAD_ROWS = "SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables WHERE schemaname = 'queueflow'"


async def cut_off(url: str) -> None:
    """An outage of `url`'s database: new connections are refused and every open one is killed."""
    name = database_of(url)
    await admin(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
    await admin("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", name)


async def restore(url: str) -> None:
    await admin(f'ALTER DATABASE "{database_of(url)}" ALLOW_CONNECTIONS true')


@asynccontextmanager
async def emptied_store(url: str, *, rng: random.Random | None = None) -> AsyncIterator[PostgresJobStore]:
    """A store on `url`'s database, emptied first, its steps' job ids from `rng` (seeded, by default)."""
    await empty(url)
    async with PostgresJobStore.from_url(url, pool_size=2, rng=rng or random.Random(STORE_SEED)) as store:
        yield store
