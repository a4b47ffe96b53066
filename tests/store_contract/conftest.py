"""One suite, every store: each test here runs against every adapter in STORES, unchanged.

store/   the store's protocol method by method (`store` only): what each one records, given rows the core built
engine/  use cases through the Engine over each store (`engine`, with `store` and `clock` beside it)
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator

import pytest
from queueflow.clocks import TestClock
from queueflow.engine import Engine
from queueflow.ports import Store
from queueflow.stores.memory import InMemoryJobStore

from tests.pg import emptied_store

STORES = ["memory", "postgres"]


@pytest.fixture
def rng() -> random.Random:
    """The `engine`'s randomness, and its `store`'s (the ids of steps' jobs): one seeded source, as one engine's was."""
    return random.Random(7)


@pytest.fixture(params=STORES)
async def store(request: pytest.FixtureRequest, rng: random.Random) -> AsyncIterator[Store]:
    if request.param == "memory":
        yield InMemoryJobStore(rng=rng)
    elif request.param == "postgres":
        # The database fixture is synchronous, so it can be asked for from here, and only when needed.
        async with emptied_store(request.getfixturevalue("postgres_url"), rng=rng) as postgres:
            yield postgres
    else:  # pragma: no cover - every name in STORES has a branch
        raise AssertionError(request.param)


@pytest.fixture
def engine(store: Store, clock: TestClock, rng: random.Random) -> Engine:
    """tests/inprocess.py's `engine`, over the store under test (`clock` is tests/inprocess.py's)."""
    return Engine(store, clock, rng=rng)
