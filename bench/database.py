"""The bench's own PostgreSQL databases: randomly named (others share the server), migrated, dropped afterwards.

Sessions are counted with `pg_stat_database.sessions` (PostgreSQL 14+): every backend start for the database,
however short-lived, which `pg_stat_activity` snapshots would miss.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
from types import TracebackType
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from bench.cpu import BackendCpu

ADMIN_URL = os.environ.get("QUEUEFLOW_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres")

JOBS = "queueflow.jobs"

# Every column a claim or a reader of the row needs, as the batch insert (postgres.sql.insert_sql) writes it.
_BACKOFF = '{"backoff": {"strategy": "exponential", "base_seconds": 1, "max_seconds": 3600, "jitter": true}}'
SEED_PENDING = f"""
INSERT INTO {{table}} (id, tenant_id, queue_name, task_name, payload, config, scheduled_at, created_at)
SELECT 'job_seed_' || $2 || lpad(n::text, 9, '0'), 'bench', $1, 'noop', jsonb_build_object('i', n),
       '{_BACKOFF}', now(), now()
  FROM generate_series(1, $3::int) AS n
"""
SEED_FINISHED = f"""
INSERT INTO queueflow.jobs (id, tenant_id, queue_name, task_name, payload, config, status, scheduled_at,
                            created_at, started_at, completed_at, delivery_count, result)
SELECT 'job_done_' || lpad(n::text, 9, '0'), 'bench', 'default', 'noop', jsonb_build_object('i', n),
       '{_BACKOFF}', 'completed', now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour',
       now() - interval '1 hour', 1, '{{"ok": true}}'
  FROM generate_series(1, $1::int) AS n
"""


def _url(base: str, database: str) -> str:
    """`base` with its database replaced (a `?host=` socket directory, as the embedded server's URL has, stays)."""
    parts = urlsplit(base)
    return urlunsplit(parts._replace(path=f"/{database}"))


class BenchDatabase:
    """A migrated database of our own, with one long-lived connection for seeding and statistics and another that
    watches its backends' CPU during a measurement (`postgres_cpu`).

    Both are opened before any measurement, so neither is one of the sessions a scenario counts. `admin_url` names
    the server it is made on (the endurance run's own cluster; by default, ADMIN_URL's)."""

    def __init__(self, purpose: str, admin_url: str = ADMIN_URL) -> None:
        self.name = f"queueflow_bench_{purpose}_{secrets.token_hex(4)}"
        self.url = _url(admin_url, self.name)
        self._admin_url = admin_url
        self._db: asyncpg.Connection | None = None
        self._watch: asyncpg.Connection | None = None

    async def __aenter__(self) -> BenchDatabase:
        await _admin(self._admin_url, f'CREATE DATABASE "{self.name}"')
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for connection in (self._db, self._watch):
            if connection is not None:
                await connection.close()
        await _admin(self._admin_url, f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')

    def migrate(self) -> None:
        """The schema as users get it: `queueflow migrate`."""
        subprocess.run(
            [sys.executable, "-m", "queueflow.cli", "migrate", "--database-url", self.url],
            check=True,
            stdout=subprocess.DEVNULL,
        )

    @property
    def db(self) -> asyncpg.Connection:
        assert self._db is not None, "connect() first"
        return self._db

    async def connect(self) -> asyncpg.Connection:
        self._db = await asyncpg.connect(self.url)
        self._watch = await asyncpg.connect(self.url)
        return self._db

    def postgres_cpu(self) -> BackendCpu:
        """`async with` it around a measurement: the CPU of the backends serving this database (but the harness's
        own), in its `result`."""
        assert self._watch is not None, "connect() first"
        return BackendCpu(self._watch, self.name, exclude=[self.db.get_server_pid()])

    async def reset_jobs(self, table: str = JOBS) -> None:
        """An empty jobs table, its dead rows gone, so every repetition starts from the same state."""
        await self.db.execute(f"TRUNCATE {table}")

    async def seed_pending(self, queue: str, count: int, table: str = JOBS) -> None:
        """`count` due jobs of `queue` in `table` (queueflow.jobs, or the plain claim's table of the same columns)."""
        await self.db.execute(SEED_PENDING.replace("{table}", table), queue, secrets.token_hex(3), count)
        await self.vacuum(table)

    async def seed_finished(self, count: int) -> None:
        await self.db.execute(SEED_FINISHED, count)
        await self.vacuum()

    async def vacuum(self, table: str = JOBS) -> None:
        # Fresh statistics and a clean visibility map, as autovacuum would leave a table between bursts.
        await self.db.execute(f"VACUUM (ANALYZE) {table}")

    async def vacuum_all(self) -> None:
        """Every table of the database vacuumed and analysed, on a connection of its own (a peer's database is
        never `connect`ed): a workflow shape starts as autovacuum would leave the tables between bursts, not amid
        the dead index entries of the shape before it (autovacuum looks once a minute; a chain run right after a
        10,000-step fan-out claimed 4× slower, stepping over the fan-out's claimed jobs in the claim index)."""
        connection = await asyncpg.connect(self.url)
        try:
            await connection.execute("VACUUM (ANALYZE)")
        finally:
            await connection.close()

    async def count(self, where: str, table: str = JOBS) -> int:
        value: int = await self.db.fetchval(f"SELECT count(*) FROM {table} WHERE {where}")
        return value

    async def sessions(self) -> int:
        """Backends ever started for this database (pending statistics are flushed within a second)."""
        await self.db.execute("SELECT pg_stat_clear_snapshot()")
        value: int = await self.db.fetchval("SELECT sessions FROM pg_stat_database WHERE datname = $1", self.name)
        return value


async def _admin(url: str, sql: str) -> None:
    connection = await asyncpg.connect(url)
    try:
        await connection.execute(sql)
    finally:
        await connection.close()


class SessionCounter:
    """New sessions opened for a database between `start` and `stop`."""

    def __init__(self, database: BenchDatabase, settle: float) -> None:
        # A backend flushes its statistics at most once a second while busy, and at exit: `settle` waits for
        # that before each reading (1.2 s for a count to trust; the smoke profile trusts nothing and hurries).
        self._database, self._settle = database, settle
        self._before = 0

    async def start(self) -> None:
        await asyncio.sleep(self._settle)
        self._before = await self._database.sessions()

    async def stop(self) -> int:
        await asyncio.sleep(self._settle)
        return await self._database.sessions() - self._before
