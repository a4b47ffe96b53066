"""The SDK against the real app in-process: in-memory store, TestClock, httpx's ASGI transport."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable

import httpx
import pytest
from litestar import Litestar
from queueflow.api import create_app
from queueflow.clocks import TestClock
from queueflow.settings import Settings
from queueflow.stores.memory import InMemoryJobStore
from queueflow_client import AsyncQueueFlow, TaskRegistry, Worker

from tests.inprocess import WatchedWakeups

BASE = "http://testserver"
SETTINGS = Settings(
    api_keys={"key-a": "tenant-a", "key-b": "tenant-b"}, worker_keys={"key-w": None}, max_body_bytes=4096
)


@pytest.fixture
def app(store: InMemoryJobStore, clock: TestClock, wakeups: WatchedWakeups) -> Litestar:
    return create_app(SETTINGS, store=store, clock=clock, wakeups=wakeups, rng=random.Random(7))


class Responses:
    """Tells a test when the app has answered a request whose path ends with some suffix (no sleeping)."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self._changed = asyncio.Condition()

    async def hook(self, response: httpx.Response) -> None:
        self.seen.append(response.request.url.path)
        async with self._changed:
            self._changed.notify_all()

    def count(self, suffix: str) -> int:
        return sum(path.endswith(suffix) for path in self.seen)

    async def until(self, suffix: str, count: int = 1) -> None:
        async with asyncio.timeout(5), self._changed:
            await self._changed.wait_for(lambda: self.count(suffix) >= count)


async def until_finished(client: AsyncQueueFlow, responses: Responses, job_ids: list[str]) -> None:
    """Until every job is finished (completed, dead-lettered or cancelled), looking again after each ack: a worker
    stopped sooner would release the jobs it had not started yet."""
    while True:
        acks = responses.count("/ack")
        statuses = {(await client.jobs.get(job_id)).status for job_id in job_ids}
        if statuses <= {"completed", "dead_letter", "cancelled"}:
            return
        await responses.until("/ack", acks + 1)


@pytest.fixture
def responses() -> Responses:
    return Responses()


@pytest.fixture
def http(app: Litestar, responses: Responses) -> Callable[[], httpx.AsyncClient]:
    def make() -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), event_hooks={"response": [responses.hook]})

    return make


@pytest.fixture
async def client(http: Callable[[], httpx.AsyncClient]) -> AsyncIterator[AsyncQueueFlow]:
    async with http() as transport, AsyncQueueFlow(BASE, "key-a", http_client=transport, retry_delay=0) as client:
        yield client


@pytest.fixture
def make_worker(http: Callable[[], httpx.AsyncClient]) -> Callable[..., Worker]:
    def make(tasks: TaskRegistry, **options: object) -> Worker:
        # A stop lets a parked poll answer rather than cut it: a short one keeps each test's stop short.
        options.setdefault("wait_seconds", 0.2)
        return Worker(BASE, "key-w", tasks, http_client=http(), **options)  # type: ignore[arg-type]

    return make
