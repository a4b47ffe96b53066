"""Wakeups: the in-process hub that turns "work arrived on queue q" into woken waiters.

Whoever learns of new work calls `notify(queue)`: the in-memory store on insert, the PostgreSQL notifier for
each `queueflow_work` notification. Long-poll leases and idle in-process workers `wait()` on the queues they
drain. Any number of waiters share one hub, and so one LISTEN connection.

`close()` marks the process as shutting down: every parked waiter is woken, and a long-poll that sees
`closing` answers with what it has instead of parking again, so a SIGTERM never waits out a long-poll.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager


class Watch:
    """What `Wakeups.watching` hands out: wait for the next notification since the last `wait` returned."""

    def __init__(self) -> None:
        self.event = asyncio.Event()

    async def wait(self, seconds: float) -> bool:
        """True when a watched queue was notified (now, or since the last wait), False after `seconds`."""
        try:
            async with asyncio.timeout(seconds):
                await self.event.wait()
            return True
        except TimeoutError:
            return False
        finally:
            self.event.clear()


class Wakeups:
    def __init__(self) -> None:
        self._waiters: dict[str, set[asyncio.Event]] = defaultdict(set)
        self.closing = False
        """True once `close()` was called: the process is shutting down."""

    def notify(self, queue: str) -> None:
        """Wake every waiter on `queue`."""
        for event in self._waiters.get(queue, ()):
            event.set()

    def notify_all(self) -> None:
        """Wake every waiter: after a lost connection, a notification may have been missed."""
        for events in self._waiters.values():
            for event in events:
                event.set()

    def close(self) -> None:
        """The process is shutting down: wake every waiter, and let long-polls see `closing`."""
        self.closing = True
        self.notify_all()

    @contextmanager
    def watching(self, queues: Iterable[str]) -> Iterator[Watch]:
        """A watch on `queues`, armed from now on: a notification that comes while its holder is busy (claiming,
        say) is kept, and its next `wait` returns at once."""
        watch = Watch()
        names = set(queues)
        for name in names:
            self._waiters[name].add(watch.event)
        try:
            yield watch
        finally:
            for name in names:
                self._waiters[name].discard(watch.event)
                if not self._waiters[name]:
                    del self._waiters[name]

    async def wait(self, queues: Iterable[str], seconds: float) -> bool:
        """Wait until one of `queues` is notified (True) or `seconds` pass (False)."""
        with self.watching(queues) as watch:
            return await watch.wait(seconds)

    @property
    def waiting(self) -> int:
        """How many distinct waits are parked (for metrics and tests)."""
        return len({id(event) for events in self._waiters.values() for event in events})
