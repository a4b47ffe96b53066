"""One suite, every store: each test here runs against every adapter in STORES, unchanged.

store/   the store's protocol method by method (`store` only): what each one records, given rows the core built
engine/  use cases through the Engine over each store (`engine`, with `store` and `clock` beside it)
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from queueflow.clocks import TestClock
from queueflow.engine import Engine, EngineSettings
from queueflow.ports import Store
from queueflow.stores.memory import InMemoryJobStore

from tests.pg import emptied_store

STORES = ["memory", "postgres"]
START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(params=STORES)
async def store(request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    if request.param == "memory":
        yield InMemoryJobStore()
    elif request.param == "postgres":
        # The database fixture is synchronous, so it can be asked for from here, and only when needed.
        async with emptied_store(request.getfixturevalue("postgres_url")) as postgres:
            yield postgres
    else:  # pragma: no cover - every name in STORES has a branch
        raise AssertionError(request.param)


@pytest.fixture
def clock() -> TestClock:
    return TestClock(START)


@pytest.fixture
def settings() -> EngineSettings:
    return EngineSettings()


@pytest.fixture
def engine(store: Store, clock: TestClock, settings: EngineSettings) -> Engine:
    return Engine(store, clock, rng=random.Random(7), settings=settings)
