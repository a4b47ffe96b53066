"""PostgresJobStore: the whole `Store` contract on PostgreSQL — its jobs (`jobs`, and their claim: `claim`), queues
(`queues`), workflows (`workflows`), schedules (`schedules`), push endpoints (`endpoints`), triggers and events
(`events`) and what its database
is under (`pressure`) on one connection pool.

Every statement is raw SQL run on the pool's asyncpg connection: asyncpg prepares and caches each one, and
for the claim planning costs more than running it. Each method is one statement (or one transaction), so the
adapter owns its transactions.

Time is the caller's `now`, never the database's `now()`, so the engine's clock rules here as in the
in-memory store. Values PostgreSQL would refuse are refused before anything is sent, with the in-memory
store's field locations; whatever still goes wrong is translated by `errors`.
"""

from __future__ import annotations

from queueflow.core.backoff import RandomSource
from queueflow.ports import WorkSignal
from queueflow.stores.postgres.claim import PostgresClaims
from queueflow.stores.postgres.deadlines import PostgresDeadlines
from queueflow.stores.postgres.endpoints import PostgresEndpoints
from queueflow.stores.postgres.events import PostgresEvents
from queueflow.stores.postgres.jobs import PostgresJobs
from queueflow.stores.postgres.pressure import PostgresPressure
from queueflow.stores.postgres.queues import PostgresQueues
from queueflow.stores.postgres.schedules import PostgresSchedules
from queueflow.stores.postgres.sequences import PostgresSequences
from queueflow.stores.postgres.url import asyncpg_dsn
from queueflow.stores.postgres.workflow_children import PostgresWorkflowChildren
from queueflow.stores.postgres.workflow_growth import PostgresWorkflowGrowth
from queueflow.stores.postgres.workflows import PostgresWorkflows


class PostgresJobStore(
    PostgresJobs,
    PostgresClaims,
    PostgresDeadlines,
    PostgresSequences,
    PostgresQueues,
    PostgresWorkflows,
    PostgresWorkflowGrowth,
    PostgresWorkflowChildren,
    PostgresSchedules,
    PostgresEndpoints,
    PostgresEvents,
    PostgresPressure,
):
    """The `Store` on PostgreSQL. Build it with `from_url`; close it with `aclose` (or `async with`)."""

    @classmethod
    def from_url(
        cls,
        database_url: str,
        *,
        pool_size: int = 10,
        connect_timeout: float = 5.0,
        statement_cache_size: int = 100,
        statement_timeout: float | None = None,
        wakeups: WorkSignal | None = None,
        rng: RandomSource | None = None,
    ) -> PostgresJobStore:
        """A store on its own pool of at most `pool_size` connections; none is opened until the first call.

        Every process learns of new work through PostgreSQL's NOTIFY. With `wakeups` (the server's wake-up
        hub), the jobs this process inserts also wake its own waiters directly once committed, without the
        notification's trip through PostgreSQL: the common case of one `serve --mode all`.

        `statement_cache_size=0` lets the store run through a transaction-mode pooler (PgBouncer before 1.21).
        A statement still running after `statement_timeout` seconds is cancelled: `StoreUnavailable`. `rng` (seed
        it for repeatable ids) makes the ids of steps' jobs."""
        return cls(
            asyncpg_dsn(database_url),
            pool_size=pool_size,
            connect_timeout=connect_timeout,
            statement_cache_size=statement_cache_size,
            statement_timeout=statement_timeout,
            wakeups=wakeups,
            rng=rng,
        )

    async def aclose(self) -> None:
        """Close every pooled connection."""
        await self._close_pool()

    async def __aenter__(self) -> PostgresJobStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def ping(self) -> None:
        """Nothing, when the database answers; StoreUnavailable otherwise."""
        async with self._connection() as db:
            await db.fetchval("SELECT 1")
