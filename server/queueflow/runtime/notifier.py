"""Notifier: PostgreSQL's `queueflow_work` notifications, turned into `Wakeups.notify(queue)`, and its
`queueflow_done` notifications (an awaited job or workflow finished), turned into `Wakeups.finished(id)`.

One dedicated connection LISTENs for the whole process (the insert trigger notifies with the queue's name),
so any number of long-poll leases and idle workers share it. Notifications are not stored: one sent while
the connection is down is lost. So after every (re)connect every waiter is woken to look for itself, and a
safety poll wakes them all every few seconds anyway, which also covers a pooler that drops LISTEN.

A transaction-mode pooler (PgBouncer) forwards the LISTEN to whichever server connection is free and hands that
connection on: the notifications never come back. `serve` therefore connects the notifier to
`--listen-database-url` when one is given (PostgreSQL itself, past the pooler); without one, waiters behind such
a pooler wake on the safety poll (and on inserts made by their own process, which wake it directly).

The notifications of this process's own commits come back here too, after the store has woken its waiters
directly: those echoes are dropped (`Wakeups.is_echo`).
"""

from __future__ import annotations

import asyncio
import logging

import asyncpg

from queueflow.runtime.service import BackgroundService
from queueflow.runtime.wakeups import Wakeups
from queueflow.stores.postgres.url import asyncpg_dsn

CHANNEL = "queueflow_work"
DONE_CHANNEL = "queueflow_done"

log = logging.getLogger("queueflow.notifier")


class Notifier(BackgroundService):
    name = "notifier"

    def __init__(
        self,
        database_url: str,
        wakeups: Wakeups,
        *,
        safety_poll: float = 5.0,
        reconnect_min: float = 0.1,
        reconnect_max: float = 10.0,
        connect_timeout: float = 5.0,
    ) -> None:
        super().__init__()
        self.wakeups = wakeups
        self.safety_poll = safety_poll
        self.reconnect_min = reconnect_min
        self.reconnect_max = reconnect_max
        self.connect_timeout = connect_timeout
        self._dsn = asyncpg_dsn(database_url)
        self.listening = asyncio.Event()
        """Set while the LISTEN connection is up (tests and readiness wait on it)."""
        self.connections = 0
        """How many times a LISTEN connection was established (the first one included)."""

    async def run(self) -> None:
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(self._listen_forever())
            tasks.create_task(self._poll_forever())

    async def _poll_forever(self) -> None:
        while True:
            await asyncio.sleep(self.safety_poll)
            self.wakeups.notify_all()

    async def _listen_forever(self) -> None:
        delay = self.reconnect_min
        while True:
            try:
                connection = await asyncpg.connect(
                    self._dsn,
                    timeout=self.connect_timeout,
                    server_settings={"application_name": "queueflow-notifier"},
                )
            except Exception as exc:  # refused, timed out, database not accepting connections, bad credentials
                log.warning("cannot LISTEN (retrying in %.1f s): %s", delay, exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.reconnect_max)
                continue
            delay = self.reconnect_min
            try:
                await self._listen_on(connection)
            except Exception as exc:
                log.warning("lost the LISTEN connection: %s", exc)
            finally:
                self.listening.clear()
                await _close(connection)

    async def _listen_on(self, connection: asyncpg.Connection) -> None:
        """LISTEN on `connection` until it is lost (then raise)."""
        lost = asyncio.Event()
        connection.add_termination_listener(lambda _connection: lost.set())
        await connection.add_listener(CHANNEL, self._on_notification)
        await connection.add_listener(DONE_CHANNEL, self._on_done)
        self.connections += 1
        self.listening.set()
        # Whatever was notified while we were not listening is gone: every waiter looks for itself.
        self.wakeups.notify_all()
        while not lost.is_set():
            try:
                async with asyncio.timeout(self.safety_poll):
                    await lost.wait()
            except TimeoutError:
                # A connection can die without a word (a dropped network path); only asking reveals it.
                # The simple query protocol: no prepared statement, which a transaction-mode pooler could lose.
                await connection.execute("SELECT 1", timeout=self.connect_timeout)
        raise ConnectionError("the LISTEN connection was closed")

    def _on_notification(self, _connection: object, pid: int, _channel: str, queue: object) -> None:
        if not self.wakeups.is_echo(str(queue), pid):
            self.wakeups.hear(str(queue))

    def _on_done(self, _connection: object, _pid: int, _channel: str, object_id: object) -> None:
        self.wakeups.finished(str(object_id))


async def _close(connection: asyncpg.Connection) -> None:
    if connection.is_closed():
        return
    try:
        await asyncio.wait_for(connection.close(), timeout=1.0)
    except asyncio.CancelledError:
        connection.terminate()
        raise
    except Exception:
        connection.terminate()
