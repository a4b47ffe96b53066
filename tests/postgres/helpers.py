"""Small builders shared by the PostgreSQL-only tests."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
from msgspec.structs import replace
from queueflow.clocks import TestClock
from queueflow.core.ids import IdSource
from queueflow.core.types import BackoffPolicy, Job, JobStatus
from queueflow.engine import Engine, EngineSettings
from queueflow.ports import JobStore

from tests.moments import START, T

_ids = IdSource(random.Random(3))


def engine_on(store: JobStore, clock: TestClock, *, seed: int = 11, **settings: Any) -> Engine:
    """An engine with seeded randomness: give engines that insert side by side different seeds (ids differ)."""
    return Engine(store, clock, rng=random.Random(seed), settings=EngineSettings(**settings))


def row(**changes: Any) -> Job:
    """A valid pending job row as the engine would hand it to a store, with `changes` applied."""
    job = Job(
        id=_ids.new_id("job", START),
        tenant_id=T,
        queue_name="default",
        task_name="t",
        payload={},
        status=JobStatus.PENDING,
        priority=0,
        scheduled_at=START,
        max_retries=3,
        backoff=BackoffPolicy(),
        timeout_seconds=None,
        metadata={},
        created_at=START,
    )
    return replace(job, **changes)


@asynccontextmanager
async def statistics_frozen(connection: asyncpg.Connection) -> AsyncIterator[None]:
    """The jobs table's statistics taken now (on the few rows it holds) and kept while the block writes more, as
    after a quiet spell and a burst, before autovacuum analyzes again.

    The table and its indexes are compacted first, as a quiet table's are: the session's database has been emptied
    and vacuumed many times by now (`pg.empty`), and statistics of a few rows spread over hundreds of index pages
    make every primary-key probe look dearer than a scan of the table — a case of its own (statistics taken just
    after a mass deletion), not the one these tests hold."""
    await connection.execute("VACUUM FULL queueflow.jobs")
    await connection.execute("ANALYZE queueflow.jobs")
    await connection.execute("ALTER TABLE queueflow.jobs SET (autovacuum_enabled = false)")
    try:
        yield
    finally:  # the database outlives the test
        await connection.execute("ALTER TABLE queueflow.jobs RESET (autovacuum_enabled)")
