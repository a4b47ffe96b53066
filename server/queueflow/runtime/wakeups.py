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
from collections.abc import Iterable


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

    async def wait(self, queues: Iterable[str], seconds: float, *, event: asyncio.Event | None = None) -> bool:
        """Wait until one of `queues` is notified (True) or `seconds` pass (False).

        `event`, when given, is what the waiter parks on: whoever else holds it can wake the waiter too (a
        long-poll's client going away does)."""
        event = event if event is not None else asyncio.Event()
        names = set(queues)
        for name in names:
            self._waiters[name].add(event)
        try:
            async with asyncio.timeout(seconds):
                await event.wait()
            return True
        except TimeoutError:
            return False
        finally:
            for name in names:
                self._waiters[name].discard(event)
                if not self._waiters[name]:
                    del self._waiters[name]

    @property
    def waiting(self) -> int:
        """How many distinct waits are parked (for metrics and tests)."""
        return len({id(event) for events in self._waiters.values() for event in events})
