"""The upkeep loop (`runtime.upkeep`): each pass hands the store the engine's clock's time, and a pass the store
cannot answer is logged and skipped."""

from __future__ import annotations

from datetime import datetime

import pytest
from queueflow.core.errors import StoreUnavailable
from queueflow.runtime.upkeep import INTERVAL, Upkeep
from queueflow.stores.memory import InMemoryJobStore
from queueflow.testing import TestClock, make_engine


class Recording(InMemoryJobStore):
    def __init__(self, *, outages: int = 0) -> None:
        super().__init__()
        self.outages = outages
        self.kept: list[datetime] = []

    async def job_upkeep(self, *, now: datetime) -> None:
        if self.outages:
            self.outages -= 1
            raise StoreUnavailable("the database is restarting")
        self.kept.append(now)


async def test_each_pass_keeps_the_store_up_as_of_the_engine_s_clock(caplog: pytest.LogCaptureFixture) -> None:
    store, clock = Recording(outages=1), TestClock()
    upkeep = Upkeep(make_engine(store, clock))
    assert upkeep.interval == INTERVAL == 1.0
    await upkeep.tick()
    assert store.kept == []
    assert "upkeep pass skipped, the store is unavailable" in caplog.text
    first = clock.now()
    await upkeep.tick()
    clock.advance(seconds=1)
    await upkeep.tick()
    assert store.kept == [first, clock.now()]
    assert upkeep.passes == 3
