"""The store's connection pool: built anywhere, bounded, and never churning sessions once warm."""

from __future__ import annotations

import asyncio

from queueflow.clocks import TestClock
from queueflow.stores.postgres import PostgresJobStore

from tests import pg


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
        await asyncio.gather(*(store.queue_counts("tenant", clock.now()) for _ in range(40)))
        assert await sessions(postgres_url) == warm
