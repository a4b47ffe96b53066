"""An idle lessee's claim: one statement while nothing is due, and never an answer a whole claim would not give."""

from __future__ import annotations

import asyncio

from queueflow.clocks import TestClock
from queueflow.core.flow import QueueSettingsPatch
from queueflow.core.types import NewJob
from queueflow.runtime.notifier import Notifier
from queueflow.runtime.wakeups import Wakeups
from queueflow.stores.postgres import PostgresJobStore
from queueflow.stores.postgres.claim.unrestricted_sql import DUE_ANY, RESTRICTED_QUEUES

from tests import pg
from tests.postgres.helpers import engine_on


async def test_an_idle_lease_is_one_statement_and_still_takes_every_job_due(postgres_url: str) -> None:
    clock, hub = TestClock(), Wakeups()
    async with (
        PostgresJobStore.from_url(postgres_url, pool_size=1, wakeups=hub) as store,
        # Another process's store: what it inserts is announced to this one's hub by NOTIFY only (no notifier here).
        PostgresJobStore.from_url(postgres_url, pool_size=1) as elsewhere,
    ):
        engine, other = engine_on(store, clock), engine_on(elsewhere, clock, seed=12)
        statements: list[str] = []
        async with store._connection() as db:
            db.add_query_logger(lambda record: statements.append(record.query))
        assert await engine.lease(["idle"]) == []
        await logged()
        statements.clear()
        assert await engine.lease(["idle"]) == []
        await logged()
        assert statements == [DUE_ANY]  # was BEGIN, CLAIM, RESTRICTED_QUEUES, COMMIT

        # Work nobody announced here: inserted elsewhere, and a delayed job whose time comes.
        inserted = (await other.enqueue("t", NewJob(task_name="x", queue_name="idle"))).job
        assert [job.id for job in await engine.lease(["idle"])] == [inserted.id]
        delayed = (await other.enqueue("t", NewJob(task_name="x", queue_name="idle", delay_seconds=5))).job
        assert await engine.lease(["idle"]) == []
        clock.advance(5)
        assert [job.id for job in await engine.lease(["idle"])] == [delayed.id]

        # Announced work is claimed at once, without the question first.
        assert await engine.lease(["idle"]) == []
        announced = (await engine.enqueue("t", NewJob(task_name="x", queue_name="idle"))).job
        await logged()
        statements.clear()
        assert [job.id for job in await engine.lease(["idle"])] == [announced.id]
        await logged()
        assert statements
        assert DUE_ANY not in statements


async def test_a_short_claim_asks_for_restricted_queues_only_until_it_knows_there_are_none(postgres_url: str) -> None:
    """A claim of one job (a workflow chain's step, a single lease) asks which of its queues are restricted; once it
    learnt that none is, it no longer asks while PostgreSQL announced nothing — and a restriction made in another
    process (announced by NOTIFY) or in this one is seen by the next claim."""
    await pg.empty(postgres_url)
    clock, hub = TestClock(), Wakeups()
    async with (
        PostgresJobStore.from_url(postgres_url, pool_size=1, wakeups=hub) as store,
        PostgresJobStore.from_url(postgres_url, pool_size=1) as elsewhere,
        Notifier(postgres_url, hub, safety_poll=60) as notifier,
    ):
        await asyncio.wait_for(notifier.listening.wait(), 10)
        engine, other = engine_on(store, clock), engine_on(elsewhere, clock, seed=12)
        statements: list[str] = []
        async with store._connection() as db:
            db.add_query_logger(lambda record: statements.append(record.query))

        async def lease_one() -> list[str]:
            job = (await engine.enqueue("t", NewJob(task_name="x", queue_name="q"))).job
            await logged()
            statements.clear()
            assert [leased.id for leased in await engine.lease(["q"], max_jobs=5)] == [job.id]
            await logged()
            return statements

        assert RESTRICTED_QUEUES in await lease_one()
        assert RESTRICTED_QUEUES not in await lease_one()  # BEGIN, CLAIM, COMMIT

        # Another process limits the queue: its NOTIFY reaches this one, whose next claim asks again and takes
        # the job from the restricted claim (CLAIM leaves a restricted queue out).
        with hub.watching(["q"]) as heard:
            await other.queues.configure("t", "q", QueueSettingsPatch(concurrency_limit=10))
            assert await heard.wait(10)
        assert RESTRICTED_QUEUES in await lease_one()

        # Lifted here, and limited again here: this process's own changes are seen at once.
        await engine.queues.configure("t", "q", QueueSettingsPatch(concurrency_limit=None))
        assert RESTRICTED_QUEUES in await lease_one()
        assert RESTRICTED_QUEUES not in await lease_one()
        await engine.queues.configure("t", "q", QueueSettingsPatch(concurrency_limit=10))
        assert RESTRICTED_QUEUES in await lease_one()


async def logged() -> None:
    """Until the statements run so far are in `statements`: asyncpg hands each to its query loggers with
    `call_soon`, so they arrive on the loop's next turn (the store's pool hands a connection back without
    one)."""
    await asyncio.sleep(0)
