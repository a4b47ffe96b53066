"""One suite, every store: each test here runs against every adapter in STORES, unchanged."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from queueflow.engine import Engine, EngineSettings
from queueflow.ports import JobStore, TestClock
from queueflow.stores.memory import InMemoryJobStore

STORES = ["memory"]
START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(params=STORES)
async def store(request: pytest.FixtureRequest) -> AsyncIterator[JobStore]:
    if request.param == "memory":
        yield InMemoryJobStore()
    else:  # pragma: no cover - every name in STORES has a branch
        raise AssertionError(request.param)


@pytest.fixture
def clock() -> TestClock:
    return TestClock(START)


@pytest.fixture
def settings() -> EngineSettings:
    return EngineSettings()


@pytest.fixture
def engine(store: JobStore, clock: TestClock, settings: EngineSettings) -> Engine:
    return Engine(store, clock, rng=random.Random(7), settings=settings)
