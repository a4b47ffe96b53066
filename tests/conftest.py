"""Fixtures shared by every test folder: a PostgreSQL database per test session, created on first use."""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from queueflow.stores.postgres import PostgresJobStore
from queueflow.stores.postgres import schema as pgschema

from tests import pg

pytest_plugins = ["tests.inprocess"]

_embedded = ExitStack()


def pytest_configure(config: pytest.Config) -> None:
    """Without a test server (none configured, none on 127.0.0.1:5432), run an embedded PostgreSQL for the run."""
    wanted = os.environ.get(pg.ENV)
    if wanted and wanted != "embedded":
        return
    if not wanted and _answers("127.0.0.1", 5432):
        return
    from queueflow.embedded import embedded_postgres

    data = Path(_embedded.enter_context(tempfile.TemporaryDirectory(prefix="queueflow-test-pg-")))
    os.environ[pg.ENV] = _embedded.enter_context(embedded_postgres(data / "postgres"))


def pytest_unconfigure(config: pytest.Config) -> None:
    _embedded.close()


def _answers(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


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
