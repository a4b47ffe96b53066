"""The scheduler loop: it fires due schedules, survives an unavailable store, and stops cleanly."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import datetime

import pytest
from queueflow.core.errors import StoreUnavailable
from queueflow.core.schedule import NewSchedule, Schedule
from queueflow.core.types import Job
from queueflow.runtime.scheduler import Scheduler
from queueflow.stores.memory import InMemoryJobStore
from queueflow.testing import TestClock, make_engine


class FlakyStore(InMemoryJobStore):
    """Unavailable for the first `outages` ticks; `fired` is set once a firing has inserted its job."""

    def __init__(self, outages: int) -> None:
        super().__init__()
        self.outages = outages
        self.fired = asyncio.Event()

    async def schedule_due(self, *, limit: int, now: datetime) -> list[Schedule]:
        if self.outages:
            self.outages -= 1
            raise StoreUnavailable("the database is restarting")
        return await super().schedule_due(limit=limit, now=now)

    async def job_insert_many(self, jobs: Sequence[Job]) -> list[tuple[Job, bool]]:
        inserted = await super().job_insert_many(jobs)
        self.fired.set()
        return inserted


async def test_the_scheduler_fires_and_survives_an_unavailable_store(caplog: pytest.LogCaptureFixture) -> None:
    store, clock = FlakyStore(outages=2), TestClock()
    engine = make_engine(store, clock)
    await engine.create_schedule("t", NewSchedule(name="m", cron="* * * * *", task_name="ping"))
    clock.advance(minutes=1)

    with caplog.at_level(logging.WARNING, logger="queueflow.scheduler"):
        async with Scheduler(engine, interval=0.001) as scheduler:
            await asyncio.wait_for(store.fired.wait(), timeout=5)
        assert not scheduler.running

    assert scheduler.passes >= 3
    assert sum("store is unavailable" in record.message for record in caplog.records) == 2
    (job,) = (await engine.list_jobs("t")).items
    assert (job.task_name, job.metadata["schedule"]) == ("ping", "m")


async def test_a_full_tick_goes_again_at_once() -> None:
    engine = make_engine()
    scheduler = Scheduler(engine, interval=3600)
    assert scheduler.backlog(engine.settings.sweep_limit)
    assert not scheduler.backlog(engine.settings.sweep_limit - 1)
