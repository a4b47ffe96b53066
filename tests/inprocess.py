"""In-process fixtures shared by the API and SDK suites: a TestClock, the wake-up hub, the in-memory store.

Registered for every folder by `pytest_plugins` in tests/conftest.py; a closer conftest may override any of them
(the store-contract suite does, with every store).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from datetime import UTC, datetime

import pytest
from queueflow.ports import TestClock
from queueflow.runtime.wakeups import Wakeups
from queueflow.stores.memory import InMemoryJobStore

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


class WatchedWakeups(Wakeups):
    """A hub that tells a test when a waiter has parked, so the test never sleeps to find out."""

    def __init__(self) -> None:
        super().__init__()
        self.parked = asyncio.Condition()

    async def wait(self, queues: Iterable[str], seconds: float, *, event: asyncio.Event | None = None) -> bool:
        waiting = self.wait_registered(queues, seconds, event)
        async with self.parked:
            self.parked.notify_all()
        return await waiting

    async def wait_registered(self, queues: Iterable[str], seconds: float, event: asyncio.Event | None) -> bool:
        return await super().wait(queues, seconds, event=event)

    async def until_waiting(self, count: int) -> None:
        async with asyncio.timeout(5), self.parked:
            await self.parked.wait_for(lambda: self.waiting >= count)


@pytest.fixture
def clock() -> TestClock:
    return TestClock(START)


@pytest.fixture
def wakeups() -> WatchedWakeups:
    return WatchedWakeups()


@pytest.fixture
def store(wakeups: Wakeups) -> InMemoryJobStore:
    return InMemoryJobStore(wakeups=wakeups)
