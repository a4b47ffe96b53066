"""Fixtures shared by every test folder: a PostgreSQL database per test session, created on first use."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from queueflow.stores import pgschema
from queueflow.stores.postgres import PostgresJobStore

from tests import pg


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A migrated database of this session's own, dropped at its end."""
    # Work off the event loop's thread: this fixture may first be asked for from inside a running loop.
    url = pg.blocking(pg.create_database)
    try:
        pg.off_loop(lambda: pgschema.upgrade(url))
        yield url
    finally:
        pg.blocking(lambda: pg.drop_database(url))


@pytest.fixture
async def postgres_store(postgres_url: str) -> AsyncIterator[PostgresJobStore]:
    """A store on the session's database, emptied before the test."""
    async with pg.emptied_store(postgres_url) as store:
        yield store
