"""An engine over the in-memory store with the system clock (deliveries are real HTTP requests, timed by the
real clock), private endpoints allowed (the receiver is on 127.0.0.1), and its `Deliveries` service."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import pytest
from queueflow.clocks import SystemClock
from queueflow.core.endpoints import Endpoint, NewEndpoint
from queueflow.core.types import Job, JobStatus
from queueflow.engine import Engine, EngineSettings
from queueflow.ports import Resolver, Store
from queueflow.runtime.delivery import Deliveries
from queueflow.runtime.wakeups import Wakeups
from queueflow.stores.memory import InMemoryJobStore

from tests.delivery.receiver import Receiver, receiving
from tests.moments import T

FINISHED = (JobStatus.COMPLETED, JobStatus.DEAD_LETTER, JobStatus.CANCELLED, JobStatus.RETRYING)


@pytest.fixture
def wakeups() -> Wakeups:
    return Wakeups()


@pytest.fixture
def store(wakeups: Wakeups) -> InMemoryJobStore:
    return InMemoryJobStore(wakeups=wakeups)


def engine_on(store: Store, *, allow_private: bool = True, resolver: Resolver | None = None) -> Engine:
    settings = EngineSettings(allow_private_endpoints=allow_private)
    return Engine(store, SystemClock(), rng=random.Random(), settings=settings, resolver=resolver)


@pytest.fixture
def engine(store: InMemoryJobStore) -> Engine:
    return engine_on(store)


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with receiving() as receiver:
        yield receiver


@pytest.fixture
async def deliveries(engine: Engine, wakeups: Wakeups) -> AsyncIterator[Deliveries]:
    async with Deliveries(engine, wakeups, max_body_bytes=1024, refresh=0.05, poll=0.5) as service:
        yield service


async def endpoint(engine: Engine, url: str, **fields: object) -> Endpoint:
    fields.setdefault("name", "hooks")
    return await engine.endpoints.create(T, NewEndpoint(url=url, **fields))  # type: ignore[arg-type]


async def settled(engine: Engine, wakeups: Wakeups, job_id: str, within: float = 20) -> Job:
    """The job once a delivery has decided it (completed, retrying, dead_letter). A finish wakes the watch; a
    retry announces nothing, so the watch also gives up every 50 ms."""
    async with asyncio.timeout(within):
        while True:
            with wakeups.watching_finish(job_id) as watch:
                job = await engine.get_job(T, job_id)
                if job.status in FINISHED:
                    return job
                await watch.wait(0.05)
