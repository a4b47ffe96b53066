"""The janitor loop: it sweeps, survives an unavailable store, and stops cleanly."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import datetime

import pytest
from queueflow.core.errors import StoreUnavailable
from queueflow.core.types import Failure, Job, JobStatus, NewJob
from queueflow.runtime.janitor import Janitor
from queueflow.stores.memory import InMemoryJobStore
from queueflow.testing import TestClock, make_engine


class FlakyStore(InMemoryJobStore):
    """Unavailable for the first `outages` sweeps; `swept` is set by the first sweep that gets through."""

    def __init__(self, outages: int) -> None:
        super().__init__()
        self.outages = outages
        self.swept = asyncio.Event()

    async def job_lease_expired(self, *, limit: int, relock_seconds: float, now: datetime) -> list[Job]:
        if self.outages:
            self.outages -= 1
            raise StoreUnavailable("the database is restarting")
        taken = await super().job_lease_expired(limit=limit, relock_seconds=relock_seconds, now=now)
        self.swept.set()
        return taken


async def test_the_janitor_survives_an_unavailable_store(caplog: pytest.LogCaptureFixture) -> None:
    store, clock = FlakyStore(outages=2), TestClock()
    engine = make_engine(store, clock)
    job = (await engine.enqueue("t", NewJob(task_name="t"))).job
    await engine.lease(["default"], lease_seconds=10)
    clock.advance(seconds=11)

    with caplog.at_level(logging.WARNING, logger="queueflow.janitor"):
        async with Janitor(engine, interval=0.001) as janitor:
            await asyncio.wait_for(store.swept.wait(), timeout=5)
        assert not janitor.running

    assert janitor.sweeps >= 3
    assert sum("store is unavailable" in record.message for record in caplog.records) == 2
    assert (await engine.get_job("t", job.id)).status is JobStatus.RETRYING


class FailsOnce(InMemoryJobStore):
    """The write after the janitor's re-lease fails once, as when the database goes away between the two."""

    def __init__(self) -> None:
        super().__init__()
        self.failed = False

    async def job_fail_many(self, failures: Sequence[Failure], *, now: datetime) -> list[Job | None]:
        if not self.failed:
            self.failed = True
            raise StoreUnavailable("the database went away")
        return await super().job_fail_many(failures, now=now)


async def test_a_sweep_cut_short_after_its_re_lease_holds_the_job_for_seconds_not_a_minute() -> None:
    store, clock = FailsOnce(), TestClock()
    engine = make_engine(store, clock)
    job = (await engine.enqueue("t", NewJob(task_name="t"))).job
    await engine.lease(["default"], lease_seconds=10)
    clock.advance(seconds=11)
    with pytest.raises(StoreUnavailable):
        await engine.run_maintenance()
    assert (await engine.get_job("t", job.id)).status is JobStatus.RUNNING  # re-leased to the janitor, undecided

    clock.advance(seconds=6)
    assert (await engine.run_maintenance()).reclaimed == 1
    assert (await engine.get_job("t", job.id)).status is JobStatus.RETRYING
