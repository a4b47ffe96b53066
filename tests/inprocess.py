"""In-process fixtures shared by every suite: a TestClock (`clock`), the wake-up hub (`wakeups`), the in-memory
store (`store`) and an engine on them (`engine`).

Registered for every folder by `pytest_plugins` in tests/conftest.py. Each name has one meaning everywhere: the
store-contract suite overrides `store` and `engine` only to run the same tests over every store (its `store` is
the store under test, in-memory or PostgreSQL).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

import pytest
from queueflow.clocks import TestClock
from queueflow.engine import Engine
from queueflow.runtime.wakeups import Wakeups, Watch
from queueflow.stores.memory import InMemoryJobStore

from tests.moments import START
from tests.pg import STORE_SEED


class WatchedWakeups(Wakeups):
    """A hub that tells a test when a waiter is watching, so the test never sleeps to find out. A watch is armed
    before its holder's claim, so work that arrives from then on is never missed."""

    def __init__(self) -> None:
        super().__init__()
        self._changed = asyncio.Event()

    @contextmanager
    def watching(self, queues: Iterable[str]) -> Iterator[Watch]:
        with super().watching(queues) as watch:
            self._changed.set()
            yield watch

    @contextmanager
    def watching_finish(self, object_id: str) -> Iterator[Watch]:
        with super().watching_finish(object_id) as watch:
            self._changed.set()
            yield watch

    async def until_waiting(self, count: int) -> None:
        async with asyncio.timeout(5):
            while self.waiting < count:
                self._changed.clear()
                await self._changed.wait()

    async def until_watching_finishes(self, count: int) -> None:
        """Until `count` waits on a finish are armed (`GET …?wait_seconds=`)."""
        async with asyncio.timeout(5):
            while self.waiting_for_finishes < count:
                self._changed.clear()
                await self._changed.wait()


class ClockedWakeups(WatchedWakeups):
    """A hub whose watches time out on a TestClock: a parked `wait(seconds)` ends (False) only once the test has
    moved the clock that far with `advance`, or (True) on a notification, as before. `parked()` answers how long
    the next wait to park was given, so a test can see when a waiter means to look again without any sleep."""

    def __init__(self, clock: TestClock) -> None:
        super().__init__()
        self.clock = clock
        self._timers: dict[asyncio.Event, datetime] = {}
        self._parks: asyncio.Queue[float] = asyncio.Queue()

    @contextmanager
    def watching(self, queues: Iterable[str]) -> Iterator[Watch]:
        with super().watching(queues) as watch:
            yield _ClockedWatch(self, watch.event)

    def advance(self, seconds: float) -> None:
        """Move the clock, ending every wait whose time is up (as a real timeout would)."""
        now = self.clock.advance(seconds)
        for event, until in list(self._timers.items()):
            if until <= now:
                del self._timers[event]
                event.set()

    async def parked(self) -> float:
        """The seconds given to the next wait that parks (one already parked first)."""
        async with asyncio.timeout(5):
            return await self._parks.get()


class _ClockedWatch(Watch):
    def __init__(self, hub: ClockedWakeups, event: asyncio.Event) -> None:
        self.hub = hub
        self.event = event

    async def wait(self, seconds: float) -> bool:
        try:
            if self.event.is_set():
                return True
            if seconds <= 0:
                return False
            self.hub._timers[self.event] = self.hub.clock.now() + timedelta(seconds=seconds)
            self.hub._parks.put_nowait(seconds)
            await self.event.wait()
            return self.event in self.hub._timers  # still armed: a notification came first
        finally:
            self.hub._timers.pop(self.event, None)
            self.event.clear()


@pytest.fixture
def clock() -> TestClock:
    return TestClock(START)


@pytest.fixture
def wakeups() -> WatchedWakeups:
    return WatchedWakeups()


@pytest.fixture
def store(wakeups: Wakeups) -> InMemoryJobStore:
    return InMemoryJobStore(wakeups=wakeups, rng=random.Random(STORE_SEED))


@pytest.fixture
def engine(store: InMemoryJobStore, clock: TestClock) -> Engine:
    """An engine on the same store and clock as the app's, for what a test does behind the API (a janitor sweep)
    or without it (the runtime's services)."""
    return Engine(store, clock, rng=random.Random(3))
