"""What every part of the PostgreSQL store shares: one connection pool, and connections from it whose every
error is a QueueFlowError."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import cast

import asyncpg
from sqlalchemy.ext.asyncio import AsyncEngine

from queueflow.core.errors import QueueFlowError, StoreUnavailable
from queueflow.stores.postgres.errors import is_disconnect, translate


class Pooled:
    """The base of `PostgresJobs`, `PostgresWorkflows` and `PostgresSchedules`: each part of the store runs its
    statements on `_connection()`, and `PostgresJobStore` is all three on one pool."""

    def __init__(self, pool: AsyncEngine) -> None:
        self._pool = pool
        """SQLAlchemy's async engine, used for what it is here: a pool of asyncpg connections."""

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[asyncpg.Connection]:
        """A pooled asyncpg connection; every error inside becomes a QueueFlowError."""
        try:
            connection = await self._pool.connect().start()
        except Exception as exc:  # refused, timed out, pool exhausted, database not accepting connections
            raise StoreUnavailable(f"cannot connect to the database: {exc}") from exc
        try:
            raw = await connection.get_raw_connection()
            yield cast(asyncpg.Connection, raw.driver_connection)
        except QueueFlowError:
            raise
        except Exception as exc:
            if is_disconnect(exc):
                # The server restarted or dropped us: the idle connections are as dead as this one.
                await connection.invalidate()
                await self._pool.dispose()
            raise translate(exc) from exc
        finally:
            await connection.close()
