"""What users need to test code that uses QueueFlow, deterministically and without a database.

from queueflow.testing import TestClock, InMemoryJobStore, make_engine

clock = TestClock()
engine = make_engine(clock=clock)
await engine.enqueue("default", NewJob(task_name="send_email"))
clock.advance(seconds=30)
"""

from __future__ import annotations

import random
from datetime import UTC, datetime

from queueflow.clocks import TestClock
from queueflow.engine import Engine, EngineSettings
from queueflow.ports import Store
from queueflow.stores.memory import InMemoryJobStore

__all__ = ["InMemoryJobStore", "TestClock", "make_engine"]


def make_engine(
    store: Store | None = None,
    clock: TestClock | None = None,
    *,
    seed: int = 0,
    settings: EngineSettings | None = None,
) -> Engine:
    """An Engine on an in-memory store and a TestClock (at 2026-01-01 UTC), with seeded jitter and ids."""
    rng = random.Random(seed)
    return Engine(
        # One seeded source for the engine's ids and the store's (steps' jobs): ids repeat from run to run.
        store if store is not None else InMemoryJobStore(rng=rng),
        clock if clock is not None else TestClock(datetime(2026, 1, 1, tzinfo=UTC)),
        rng=rng,
        settings=settings,
    )
