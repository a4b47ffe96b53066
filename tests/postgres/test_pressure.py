"""A held xmin horizon on a real database, as `PressureStore.store_pressure` and `/metrics` see it (README.md,
"Seeing pressure"): an idle-in-transaction session that took a transaction id, the dead rows it keeps from vacuum,
and who it is."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

import asyncpg
from httpx import ASGITransport, AsyncClient
from queueflow.api import create_app
from queueflow.clocks import TestClock
from queueflow.settings import Settings
from queueflow.stores.postgres import PostgresJobStore
from queueflow.stores.postgres.url import asyncpg_dsn

from tests import pg
from tests.moments import T

HOLDER = "horizon-holder"
ENQUEUE = "SELECT queueflow.enqueue(tenant_id => $1, task_name => 't', payload => '{}'::jsonb)"


@asynccontextmanager
async def holding_the_horizon(url: str) -> AsyncIterator[asyncpg.Connection]:
    """A session idle in a transaction that has taken an id (`BEGIN; SELECT txid_current();`), as a forgotten
    `BEGIN` in psql or an application's leaked transaction is."""
    connection = await asyncpg.connect(asyncpg_dsn(url), server_settings={"application_name": HOLDER})
    try:
        await connection.execute("BEGIN")
        await connection.fetchval("SELECT txid_current()")
        yield connection
    finally:
        await connection.close()


async def dead_jobs(url: str, count: int) -> None:
    """`count` jobs enqueued (a transaction each) and deleted, their rows dead; the statistics flushed before this
    returns (a backend flushes them as it goes idle, before it answers)."""
    async with pg.connect(url) as connection:
        for _ in range(count):
            await connection.fetchval(ENQUEUE, T)
        await connection.execute("DELETE FROM queueflow.jobs")
        await connection.fetchval("SELECT pg_stat_force_next_flush()")


async def test_the_store_names_the_session_that_holds_the_horizon(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    async with holding_the_horizon(postgres_url) as holder:
        await dead_jobs(postgres_url, 20)
        pressure = await postgres_store.store_pressure()

        held = pressure.horizon
        assert held is not None
        assert (held.pid, held.application_name, held.state) == (
            holder.get_server_pid(),
            HOLDER,
            "idle in transaction",
        )
        assert held.xact_start is not None
        assert held.query_start is not None
        assert held.xact_start <= held.query_start
        assert held.age_transactions >= 21  # the 20 enqueues and the delete came after its transaction id
        assert pressure.oldest_xact_start is not None
        assert pressure.oldest_xact_start <= held.xact_start
        tables = {table.table: table for table in pressure.tables}
        # Every table: those a test empties, and the registry of the claim index's generations, which it does not (a
        # job is written into its current generation: migration 0022).
        assert set(tables) == {name.removeprefix("queueflow.") for name in pg.TABLES} | {"claim_generations"}
        assert tables["jobs"].dead_tuples >= 20  # the holder keeps them from vacuum, however soon it runs
        assert tables["jobs"].size_bytes > 0

    after = await postgres_store.store_pressure()
    assert after.horizon is None or after.horizon.pid != holder.get_server_pid()


async def test_metrics_show_the_held_horizon_and_the_tables(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    clock = TestClock()
    app = create_app(Settings(), store=postgres_store, clock=clock)
    async with (
        holding_the_horizon(postgres_url),
        AsyncClient(transport=ASGITransport(app=app), base_url="http://testserver") as client,  # type: ignore[arg-type]
    ):
        await dead_jobs(postgres_url, 5)
        # The holder began at the database's time (this machine's); ages are the server clock's, ten minutes on.
        clock.set(datetime.now(UTC) + timedelta(minutes=10))
        text = (await client.get("/metrics")).text

    samples = dict(
        line.rsplit(" ", 1) for line in text.splitlines() if line.startswith(("queueflow_table_", "queueflow_oldest_"))
    )
    assert 600 <= float(samples["queueflow_oldest_xmin_age_seconds"]) < 660
    assert 600 <= float(samples["queueflow_oldest_transaction_age_seconds"]) < 660
    assert float(samples["queueflow_oldest_xmin_age_transactions"]) >= 6
    assert float(samples['queueflow_table_dead_tuples{table="jobs"}']) >= 5
    assert float(samples['queueflow_table_size_bytes{table="jobs"}']) > 0
    assert 'queueflow_table_live_tuples{table="workflow_steps"}' in samples
