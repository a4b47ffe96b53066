"""The store's own connection pool: a fixed set of asyncpg connections, lent without a task or a timer.

asyncpg's `Pool` costs a request more than the statement it runs (py-spy and a microbenchmark, one-row SELECT on
4 concurrent callers: ~30 µs of CPU for the statement, ~30 µs more for the checkout and return): its `acquire`
arms a timeout even when a connection is idle, and its `release` runs in a task of its own (`asyncio.shield`)
under another timeout. Here a checkout with a connection idle is a list pop and a return is a list append, or the
hand-over to the first caller waiting; only a caller that finds none waits, with the connect timeout.

What asyncpg's pool did that this one keeps: every connection opened on first use and never closed while it
works (no PostgreSQL session opened under load), a connection that dies replaced on its next checkout, and one
returned mid-transaction (a statement that failed inside a hand-written BEGIN) or mid-cancellation (a statement
timeout) made clean before anyone else gets it.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg

Connect = Callable[[], Awaitable[asyncpg.Connection]]


class ConnectionPool:
    """`size` connections made by `connect`; `lend` one, `take_back` it. Built inside the event loop it serves."""

    def __init__(self, connect: Connect, size: int) -> None:
        self._connect = connect
        self._idle: list[asyncpg.Connection | None] = []  # None: a slot whose connection is to be (re)opened
        self._waiters: deque[asyncio.Future[asyncpg.Connection | None]] = deque()
        self._size = size
        self._generation = 0
        self._born: dict[asyncpg.Connection, int] = {}
        self._closed = False

    async def open(self) -> ConnectionPool:
        """Every connection at once; if one cannot be opened, none stays open."""
        opening = [asyncio.ensure_future(self._connect()) for _ in range(self._size)]
        try:
            results = await asyncio.gather(*opening, return_exceptions=True)
        except BaseException:
            # Cancelled (the store closed while its pool opened): the connections already open, and any an attempt
            # still completes, would be left to the garbage collector — a ResourceWarning in whatever runs then.
            for attempt in opening:
                if attempt.done():
                    _terminate_opened(attempt)
                else:
                    attempt.add_done_callback(_terminate_opened)
            raise
        failure = next((result for result in results if isinstance(result, BaseException)), None)
        if failure is not None:
            for attempt in opening:
                _terminate_opened(attempt)
            raise failure
        for connection in results:
            assert isinstance(connection, asyncpg.Connection)
            self._born[connection] = self._generation
            self._idle.append(connection)
        return self

    async def lend(self, patience: float) -> asyncpg.Connection:
        """A connection for the caller alone until `take_back`. TimeoutError if none is free within `patience`
        seconds (or a slot's reconnection takes longer)."""
        if self._idle:
            slot = self._idle.pop()
        else:
            waiter: asyncio.Future[asyncpg.Connection | None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                async with asyncio.timeout(patience):
                    slot = await waiter
            except BaseException:
                if waiter.done() and not waiter.cancelled():
                    self._give(waiter.result())  # handed over just as the wait ended: pass it on
                else:
                    self._waiters.remove(waiter)
                raise
        if slot is not None and not slot.is_closed():
            return slot
        try:
            async with asyncio.timeout(patience):
                connection = await self._connect()
        except BaseException:
            self._give(None)
            raise
        self._born[connection] = self._generation
        return connection

    async def take_back(self, connection: asyncpg.Connection) -> None:
        """Return a lent connection; one that cannot be made clean is closed, and its slot reopened on next use."""
        usable = self._reusable(connection)
        if usable and (_protocol(connection)._is_cancelling() or connection.is_in_transaction()):
            try:
                # Asked again after the wait: the pool may have closed or expired meanwhile, and a connection put
                # back into a closed pool's idle list would never be closed.
                usable = await self._clean(connection) and self._reusable(connection)
            except BaseException:  # the caller cancelled while the connection was being cleaned: not reusable
                self._born.pop(connection, None)
                connection.terminate()
                self._give(None)
                raise
        if not usable:
            self._born.pop(connection, None)
            connection.terminate()
            self._give(None)
            return
        self._give(connection)

    def _reusable(self, connection: asyncpg.Connection) -> bool:
        return not self._closed and not connection.is_closed() and self._born.get(connection) == self._generation

    async def _clean(self, connection: asyncpg.Connection) -> bool:
        """Wait out a cancellation (a statement timeout) and roll back an open transaction; False if it fails."""
        try:
            protocol = _protocol(connection)
            if protocol._is_cancelling():
                await protocol._wait_for_cancellation(None)
            if not connection.is_closed() and connection.is_in_transaction():
                await connection.execute("ROLLBACK")
        except Exception:
            return False
        return not connection.is_closed()

    def _give(self, slot: asyncpg.Connection | None) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(slot)
                return
        self._idle.append(slot)

    def expire(self) -> None:
        """The server restarted or dropped us: every connection now idle is closed, every one lent is closed when
        it comes back, and each slot reconnects on its next use."""
        self._generation += 1
        for index, slot in enumerate(self._idle):
            if slot is not None:
                self._born.pop(slot, None)
                slot.terminate()
                self._idle[index] = None

    async def close(self) -> None:
        """Close the idle connections; lent ones are closed as they come back."""
        self._closed = True
        idle, self._idle = self._idle, []
        await asyncio.gather(*(slot.close() for slot in idle if slot is not None), return_exceptions=True)


def _terminate_opened(attempt: asyncio.Future[asyncpg.Connection]) -> None:
    """Close the connection a finished attempt opened, if it opened one."""
    if not attempt.cancelled() and attempt.exception() is None:
        attempt.result().terminate()


def _protocol(connection: asyncpg.Connection) -> Any:
    """The connection's protocol, whose cancellation state asyncpg's own pool reads the same way (it has no public
    accessor)."""
    return connection._protocol  # type: ignore[attr-defined]
