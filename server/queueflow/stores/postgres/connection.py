"""What every part of the PostgreSQL store shares: one pool of asyncpg connections (`pool.ConnectionPool`), and
connections from it whose every error is a QueueFlowError.

Not SQLAlchemy's pool: every statement here is raw SQL on the driver's connection, SQLAlchemy's async pool ran each
checkout and return through a greenlet switch, and its overflow opened and closed sessions under load (the new
sessions counted in bench/RESULTS.md). Not asyncpg's either (see `pool`). The pool opens all its connections on
first use, never closes an idle one and has no overflow, so a server opens no new PostgreSQL session after its
first statement: more concurrent operations than connections wait their turn.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from typing import TYPE_CHECKING, TypeAlias

import asyncpg
import msgspec

from queueflow.core.backoff import RandomSource
from queueflow.core.errors import QueueFlowError, StoreUnavailable
from queueflow.core.ids import IdSource
from queueflow.ports import EchoSignal, WorkSignal
from queueflow.stores.postgres.errors import is_disconnect, translate
from queueflow.stores.postgres.pool import Connect, ConnectionPool

if TYPE_CHECKING:
    Db: TypeAlias = asyncpg.Connection[asyncpg.Record]
    """A connection lent by the pool, as every store method sees it."""
else:
    Db = asyncpg.Connection

JSONB_VERSION = b"\x01"
"""The first byte of jsonb's binary format (its version); what follows is the document's JSON text."""


async def _decode_json_once(connection: asyncpg.Connection) -> None:
    """jsonb arrives as binary and is parsed by msgspec straight into Python values, once. Parameters are sent as
    the JSON text the store has already checked (`errors.json_text`)."""
    await connection.set_type_codec(
        "jsonb",
        schema="pg_catalog",
        format="binary",
        encoder=lambda text: JSONB_VERSION + text.encode(),
        decoder=lambda data: msgspec.json.decode(data[1:]),
    )
    await connection.set_type_codec(
        "json", schema="pg_catalog", format="binary", encoder=str.encode, decoder=msgspec.json.decode
    )


def connector(
    dsn: str,
    *,
    connect_timeout: float,
    statement_cache_size: int = 100,
    statement_timeout: float | None = None,
    on_connect: Callable[[asyncpg.Connection], Awaitable[None]] | None = None,
) -> Connect:
    """How the pool opens each of its connections. `statement_cache_size=0` for a transaction-mode pooler: a
    named statement prepared on one server connection is unknown on the next; an unnamed one is prepared and run
    before the server connection is handed on (asyncpg sends no Sync in between). `statement_timeout` is asyncpg's
    command timeout: it cancels the statement in PostgreSQL too, and keeps the connection (`ConnectionPool` waits
    for the cancellation before lending it again). `on_connect` runs on each new connection, after the codecs are
    set."""

    async def connect() -> asyncpg.Connection:
        connection = await asyncpg.connect(
            dsn,
            timeout=connect_timeout,
            statement_cache_size=statement_cache_size,
            command_timeout=statement_timeout,
            # UTC, so that adding an interval of whole days to a timestamptz never shifts across DST.
            server_settings={"application_name": "queueflow", "timezone": "UTC"},
        )
        try:
            await _decode_json_once(connection)
            if on_connect is not None:
                await on_connect(connection)
        except BaseException:
            connection.terminate()
            raise
        return connection

    return connect


class Pooled:
    """The base of `PostgresJobs`, `PostgresClaims`, `PostgresQueues`, `PostgresWorkflows` and `PostgresSchedules`:
    each part of the store runs its statements on `_connection()`, and `PostgresJobStore` is all of them on one
    pool."""

    def __init__(
        self,
        dsn: str,
        *,
        pool_size: int = 10,
        connect_timeout: float = 5.0,
        statement_cache_size: int = 100,
        statement_timeout: float | None = None,
        wakeups: WorkSignal | None = None,
        rng: RandomSource | None = None,
    ) -> None:
        self._dsn = dsn
        self._pool_size = pool_size
        self._statement_cache_size = statement_cache_size
        self._statement_timeout = statement_timeout
        self._connect_timeout = connect_timeout
        self._wakeups = wakeups
        self._echoes = wakeups if isinstance(wakeups, EchoSignal) else None
        self._opened: asyncio.Future[ConnectionPool] | None = None
        # The ids of the jobs that run steps, which the store makes as it records a workflow's advance.
        self._ids = IdSource(rng or random.Random())

    @contextmanager
    def _announcing(self) -> Iterator[Callable[[Iterable[str]], None]]:
        """Around a write whose commit announces work (the insert trigger's NOTIFY, or a pg_notify of its own): the
        block calls the function it is given with the queues, inside its transaction, before the commit; once the
        block has committed, this process's waiters on them are woken directly, ahead of the NOTIFY's trip through
        PostgreSQL (which still tells the other processes), and the NOTIFYs that come back to this process are known
        as its own echoes (`EchoSignal`): they wake nobody a second time."""
        announced: list[str] = []

        def announce(queues: Iterable[str]) -> None:
            fresh = set(queues) - set(announced)
            if self._echoes is not None:
                self._echoes.expect_echoes(fresh)
            announced.extend(fresh)

        try:
            yield announce
        except BaseException:
            if self._echoes is not None:
                self._echoes.withdraw_echoes(announced)
            raise
        if self._wakeups is not None:
            for queue in announced:  # once each (`announce` keeps them so)
                self._wakeups.notify(queue)

    def _restrictions_changed(self) -> None:
        """This process changed a queue's settings: whatever the store remembers of them is stale (the claim's)."""

    async def _on_connect(self, connection: asyncpg.Connection) -> None:
        """A new session of the pool: its backend pid is this process's (`EchoSignal.own_backends`) while it lasts."""
        if self._echoes is None:
            return
        backends, pid = self._echoes.own_backends, connection.get_server_pid()
        backends.add(pid)
        connection.add_termination_listener(lambda _connection: backends.discard(pid))

    async def _ready(self) -> ConnectionPool:
        """The pool, opened on first use (once, however many callers ask at the same time)."""
        opened = self._opened
        if opened is not None and opened.done() and not opened.cancelled() and opened.exception() is None:
            return opened.result()  # every statement comes here: no shield, no await once the pool is open
        if opened is None:
            connect = connector(
                self._dsn,
                connect_timeout=self._connect_timeout,
                statement_cache_size=self._statement_cache_size,
                statement_timeout=self._statement_timeout,
                on_connect=self._on_connect,
            )
            # Every connection is opened on first use and kept: a pool that grows under load opens sessions when it
            # can least afford to (each open costs tens of milliseconds with its codec set-up: the tail of a wake-up).
            self._opened = opened = asyncio.ensure_future(ConnectionPool(connect, self._pool_size).open())
        try:
            return await asyncio.shield(opened)
        except BaseException:
            # A database that was down may be up for the next caller. Every caller waiting on this opening sees
            # its failure: only the first clears it, and none touches an opening another caller started since.
            if opened.done() and self._opened is opened:
                self._opened = None
            raise

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[Db]:
        """A pooled asyncpg connection; every error inside becomes a QueueFlowError."""
        try:
            pool = await self._ready()
            connection = await pool.lend(self._connect_timeout)
        except TimeoutError as exc:
            raise StoreUnavailable(
                f"no database connection within {self._connect_timeout:g} s: all {self._pool_size} are busy, "
                "or the database does not answer"
            ) from exc
        except Exception as exc:  # refused, database not accepting connections, bad credentials
            raise StoreUnavailable(f"cannot connect to the database: {exc}") from exc
        try:
            yield connection
        except QueueFlowError:
            raise
        except TimeoutError as exc:
            if exc.errno is None and self._statement_timeout is not None:
                # The statement timeout: PostgreSQL cancelled the statement and this connection goes on serving, so
                # the pool is not expired (a lock held elsewhere must not make every request reconnect).
                raise StoreUnavailable(
                    f"a statement ran longer than the statement timeout ({self._statement_timeout:g} s)"
                ) from exc
            pool.expire()  # ETIMEDOUT from the socket: the connection is gone
            raise translate(exc) from exc
        except Exception as exc:
            if is_disconnect(exc):
                # The server restarted or dropped us: the idle connections are as dead as this one.
                pool.expire()
            raise translate(exc) from exc
        finally:
            await pool.take_back(connection)

    async def _close_pool(self) -> None:
        opened, self._opened = self._opened, None
        if opened is None:
            return
        if not opened.done():
            opened.cancel()
        elif not opened.cancelled() and opened.exception() is None:
            await opened.result().close()


@asynccontextmanager
async def begun(db: Db, begin: str) -> AsyncIterator[None]:
    """A transaction begun by `begin`, BEGIN and its SET LOCALs in one simple query (one round trip, where asyncpg's
    transaction() and a SET took two), committed when the block ends and rolled back if it raises."""
    await db.execute(begin)
    try:
        yield
    except BaseException:
        # As asyncpg's transaction() does; a connection that cannot roll back now (a statement cut short by a
        # cancellation) is reset or closed by the pool when it is released.
        if not db.is_closed():
            with suppress(Exception):
                await db.execute("ROLLBACK")
        raise
    await db.execute("COMMIT")
