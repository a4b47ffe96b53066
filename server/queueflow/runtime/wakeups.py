"""Wakeups: the in-process hub that turns "work arrived on queue q" into woken waiters.

Whoever learns of new work calls `notify(queue)`: the in-memory store on insert, the PostgreSQL notifier for
each `queueflow_work` notification. Long-poll leases and idle in-process workers `wait()` on the queues they
drain. Any number of waiters share one hub, and so one LISTEN connection.

Whoever learns that a job or workflow finished calls `finished(id)` (the in-memory store, the notifier for each
`queueflow_done` notification); `GET …?wait_seconds=` watches one id with `watching_finish`. Ids and queue names
are kept apart, since a queue may well be called `job_…`.

A process hears its own commits' NOTIFYs too, after it has already woken its waiters directly (the store's local
wake-up): each such echo woke them a second time for nothing, and an in-process runner claimed again and found
nothing (two claims per step of a workflow chain, measured). So the store, before it commits work on queues, says
so (`expect_echoes`), and the notifier drops a notification that is such an echo (`is_echo`): one sent by a
PostgreSQL session of this process's own pool (`own_backends`, by backend pid) for a queue with an echo expected.
Nothing else is ever dropped: another process's notification, or one of this process's commits that announced
nothing (a retry, a release), wakes as before. An expected echo that does not come within `ECHO_WINDOW` (a lost
LISTEN connection) is forgotten. Behind a pooler the pids are not the sessions' (`own_echoes=False`).

`close()` marks the process as shutting down: every parked waiter is woken, and a long-poll that sees
`closing` answers with what it has instead of parking again, so a SIGTERM never waits out a long-poll.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

ECHO_WINDOW = 2.0
"""Seconds an expected echo is waited for (PostgreSQL delivers a NOTIFY within milliseconds of its commit)."""


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
    def __init__(self, *, own_echoes: bool = True, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.own_echoes = own_echoes
        """Whether echoes of this process's own commits are recognised (not behind a pooler)."""
        self.own_backends: set[int] = set()
        """The backend pids of this process's pooled PostgreSQL sessions (the store keeps it)."""
        self._monotonic = monotonic
        self._echoes: dict[str, deque[float]] = defaultdict(deque)
        """Per queue, the deadlines (monotonic) of the echoes expected, oldest first."""
        self._waiters: dict[str, set[asyncio.Event]] = defaultdict(set)
        self._finish_waiters: dict[str, set[asyncio.Event]] = defaultdict(set)
        self.closing = False
        """True once `close()` was called: the process is shutting down."""
        self.heard = 0
        """How many notifications came from PostgreSQL, echoes of this process's own commits left out (`hear`), and
        reconnects and safety polls (`notify_all`): what another process did shows here first. A store that knows
        something of the database's other writers (`PostgresClaims`: that no queue of a claim is restricted) may
        trust it while this count has not moved."""
        self.notices = 0
        """How many times work was announced so far (`notify`, `notify_all`): a store that found nothing to claim
        knows, by this count not having moved, that nothing was announced since (`PostgresClaims`)."""

    def notify(self, queue: str) -> None:
        """Wake every waiter on `queue`."""
        self.notices += 1
        for event in self._waiters.get(queue, ()):
            event.set()

    def hear(self, queue: str) -> None:
        """PostgreSQL announced work on `queue` (another process's, or one of this process's own that it did not
        announce itself): wake every waiter on it."""
        self.heard += 1
        self.notify(queue)

    def notify_all(self) -> None:
        """Wake every waiter: after a lost connection, a notification may have been missed."""
        self.heard += 1
        self.notices += 1
        self._echoes.clear()  # an echo lost with the connection must not stand for a later notification
        for waiters in (self._waiters, self._finish_waiters):
            for events in waiters.values():
                for event in events:
                    event.set()

    def expect_echoes(self, queues: Iterable[str]) -> None:
        """This process is about to commit work on `queues` (once each): their NOTIFYs will come back to it, and
        are echoes (its waiters are woken directly after the commit, `notify`). Called before the commit, so that
        an echo never arrives before its expectation; `withdraw_echoes` if the commit fails."""
        if not self.own_echoes:
            return
        deadline = self._monotonic() + ECHO_WINDOW
        for queue in set(queues):
            self._echoes[queue].append(deadline)

    def withdraw_echoes(self, queues: Iterable[str]) -> None:
        """The commit `expect_echoes` announced did not happen: no echo will come."""
        for queue in set(queues):
            expected = self._echoes.get(queue)
            if expected:
                expected.pop()
                if not expected:
                    del self._echoes[queue]

    def is_echo(self, queue: str, pid: int) -> bool:
        """Whether a NOTIFY for `queue` from backend `pid` is the echo of a commit of this process's own that it
        expected (and so wakes nobody): then that expectation is used up."""
        expected = self._echoes.get(queue)
        if not expected or pid not in self.own_backends:
            return False
        now = self._monotonic()
        while expected and expected[0] < now:
            expected.popleft()  # too old: its notification was lost
        if not expected:
            del self._echoes[queue]
            return False
        expected.popleft()
        if not expected:
            del self._echoes[queue]
        return True

    def finished(self, object_id: str) -> None:
        """Wake every watch on the job or workflow `object_id`: it has finished."""
        for event in self._finish_waiters.get(object_id, ()):
            event.set()

    def close(self) -> None:
        """The process is shutting down: wake every waiter, and let long-polls see `closing`."""
        self.closing = True
        self.notify_all()

    @contextmanager
    def watching(self, queues: Iterable[str]) -> Iterator[Watch]:
        """A watch on `queues`, armed from now on: a notification that comes while its holder is busy (claiming,
        say) is kept, and its next `wait` returns at once."""
        with _watch(self._waiters, set(queues)) as watch:
            yield watch

    @contextmanager
    def watching_finish(self, object_id: str) -> Iterator[Watch]:
        """A watch on the finish of one job or workflow, armed from now on (as `watching`)."""
        with _watch(self._finish_waiters, {object_id}) as watch:
            yield watch

    async def wait(self, queues: Iterable[str], seconds: float) -> bool:
        """Wait until one of `queues` is notified (True) or `seconds` pass (False)."""
        with self.watching(queues) as watch:
            return await watch.wait(seconds)

    @property
    def waiting(self) -> int:
        """How many distinct waits are parked (for metrics and tests)."""
        return len({id(event) for events in self._waiters.values() for event in events})

    @property
    def waiting_for_finishes(self) -> int:
        """How many watches on finishes are armed (for tests)."""
        return len({id(event) for events in self._finish_waiters.values() for event in events})


@contextmanager
def _watch(waiters: dict[str, set[asyncio.Event]], names: set[str]) -> Iterator[Watch]:
    watch = Watch()
    for name in names:
        waiters[name].add(watch.event)
    try:
        yield watch
    finally:
        for name in names:
            waiters[name].discard(watch.event)
            if not waiters[name]:
                del waiters[name]
