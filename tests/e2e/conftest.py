"""Live servers run on PostgreSQL: each test gets a fresh database of its own (the server migrates it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests import pg


@pytest.fixture
def database_url() -> Iterator[str]:
    url = pg.blocking(pg.create_database)
    try:
        yield url
    finally:
        pg.blocking(lambda: pg.drop_database(url))
