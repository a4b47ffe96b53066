"""The store and the notifier through PgBouncer in transaction mode (Debian's 1.18: no protocol-level prepared
statements), as deployments behind a transaction pooler run them.

The pooler hands each transaction whichever server connection is free, so asyncpg's named, cached statements
meet server connections that never prepared them: `statement_cache_size=0` is what makes the store work there.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from queueflow.clocks import TestClock
from queueflow.core.errors import StoreUnavailable
from queueflow.core.types import JobStatus, NewJob
from queueflow.engine import Engine
from queueflow.runtime.notifier import Notifier
from queueflow.runtime.wakeups import Wakeups
from queueflow.stores.postgres import PostgresJobStore

from tests import pg, pgbouncer
from tests.moments import START, T
from tests.postgres.helpers import engine_on

if pgbouncer.binary() is None and not os.environ.get("CI"):
    pytest.skip("no pgbouncer (`make test` installs Debian's when it runs as root)", allow_module_level=True)

JOBS = 60
PATIENCE = 10.0


@pytest.fixture
def bouncer(postgres_url: str) -> Iterator[pgbouncer.PgBouncer]:
    with pgbouncer.PgBouncer(postgres_url, pool_size=2) as running:
        yield running


async def work_through(store: PostgresJobStore, rounds: int = 1) -> list[JobStatus]:
    """Enqueue, lease and complete JOBS jobs (`rounds` times) with more concurrent statements than the pooler has
    server connections, so consecutive statements of one client land on different ones."""
    statuses: list[JobStatus] = []
    for n in range(rounds):
        statuses += await _one_round(engine_on(store, TestClock(START), seed=n))
    return statuses


async def _one_round(engine: Engine) -> list[JobStatus]:
    await asyncio.gather(*(engine.enqueue(T, NewJob(task_name="t", queue_name="pooled")) for _ in range(JOBS)))
    batches = await asyncio.gather(*(engine.lease(["pooled"], max_jobs=5) for _ in range(12)))
    leased = [job for batch in batches for job in batch]
    done = await asyncio.gather(*(engine.complete(job.id, job.lease_token or "", {"ok": True}) for job in leased))
    return [job.status for job in done]


async def test_the_store_works_through_a_transaction_pooler_with_its_statement_cache_off(
    postgres_url: str, bouncer: pgbouncer.PgBouncer
) -> None:
    await pg.empty(postgres_url)
    through = bouncer.url(pg.database_of(postgres_url))
    async with PostgresJobStore.from_url(through, pool_size=6, statement_cache_size=0) as store:
        statuses = await work_through(store)
    assert statuses == [JobStatus.COMPLETED] * JOBS


async def test_with_its_statement_cache_on_the_store_fails_through_the_pooler(
    postgres_url: str, bouncer: pgbouncer.PgBouncer
) -> None:
    # Why the setting exists: the default cache meets "prepared statement … does not exist" (a 503 to a caller).
    await pg.empty(postgres_url)
    through = bouncer.url(pg.database_of(postgres_url))
    async with PostgresJobStore.from_url(through, pool_size=6) as store:
        with pytest.raises(StoreUnavailable):
            await work_through(store, rounds=5)


async def test_the_notifier_keeps_one_connection_through_the_pooler(
    postgres_url: str, bouncer: pgbouncer.PgBouncer
) -> None:
    # Its liveness check runs every safety poll. As a cached prepared statement it failed as soon as the pooler
    # handed it a server connection that had not prepared it (busy with the store's statements, as in a server),
    # and the notifier reconnected over and over.
    through = bouncer.url(pg.database_of(postgres_url))
    wakeups = Wakeups()
    async with (
        PostgresJobStore.from_url(through, pool_size=4, statement_cache_size=0) as store,
        Notifier(through, wakeups, safety_poll=0.02) as notifier,
    ):
        await asyncio.wait_for(notifier.listening.wait(), PATIENCE)
        busy = asyncio.create_task(keep_busy(store))
        try:
            for _ in range(25):  # each safety poll wakes this waiter once; the liveness checks run meanwhile
                assert await wakeups.wait(["anything"], PATIENCE)
        finally:
            busy.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await busy
        assert notifier.connections == 1


async def keep_busy(store: PostgresJobStore) -> None:
    while True:
        await asyncio.gather(*(store.ping() for _ in range(4)))


def test_processes_migrating_one_after_another_through_the_pooler_all_succeed(postgres_url: str) -> None:
    # Every server migrates at start. Through a transaction-mode pooler the server connection it gets may still hold
    # the statements an earlier process's migration prepared, and asyncpg numbers statement names per process from
    # 1: a fresh process's "__asyncpg_stmt_1__" then already existed, and a server of the chaos suite failed to
    # start. Each run is a process of its own, as each server is.
    direct = pg.blocking(pg.create_database)
    try:
        with pgbouncer.PgBouncer(postgres_url, pool_size=1) as single:  # one server connection, shared by all
            through = single.url(pg.database_of(direct))
            for _ in range(3):
                done = subprocess.run(
                    [sys.executable, "-m", "queueflow.cli", "migrate", "--database-url", through],
                    capture_output=True,
                    text=True,
                    timeout=120,
                )
                assert done.returncode == 0, done.stderr
    finally:
        pg.blocking(lambda: pg.drop_database(direct))
