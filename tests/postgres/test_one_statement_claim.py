"""A lease of queues known to be unrestricted is one statement (CLAIM_CALL) when that is all its transaction would
have done, where the transaction took three round trips — with the same answers, the same turn, and the claim's
settings."""

from __future__ import annotations

import pytest
from queueflow.clocks import TestClock
from queueflow.core.errors import StoreUnavailable
from queueflow.core.flow import QueueSettingsPatch
from queueflow.core.types import Job, NewJob
from queueflow.runtime.wakeups import Wakeups
from queueflow.stores.postgres import PostgresJobStore
from queueflow.stores.postgres import schema as pgschema
from queueflow.stores.postgres.claim.function import CLAIM_CALL, CLAIM_FUNCTION
from queueflow.stores.postgres.claim.unrestricted_sql import BEGIN_CLAIM

from tests import pg
from tests.postgres.helpers import engine_on
from tests.postgres.test_idle_claim import logged


async def test_a_single_job_lease_is_one_statement_once_its_queues_are_known_unrestricted(postgres_url: str) -> None:
    await pg.empty(postgres_url)
    async with PostgresJobStore.from_url(postgres_url, pool_size=1, wakeups=Wakeups()) as store:
        engine = engine_on(store, TestClock(), seed=41)  # ids of their own: the database is shared
        statements: list[str] = []
        async with store._connection() as db:
            db.add_query_logger(lambda record: statements.append(record.query))
            config = await db.fetchval(
                "SELECT proconfig FROM pg_proc WHERE oid = to_regprocedure($1)",
                f"{CLAIM_FUNCTION}(text[], int, timestamptz, interval, text[], text[])",
            )
        assert config == ["plan_cache_mode=force_generic_plan", "enable_seqscan=off", "jit=off"]
        # Tenants a, b, c in turn: the turn moved by the one-statement claims is the one the transaction reads.
        for tenant in ("c", "b", "a", "c", "b", "a"):
            await engine.enqueue(tenant, NewJob(task_name="x", queue_name="q"))
        await logged()
        statements.clear()
        served = [job.tenant_id for job in await engine.lease(["q"])]
        await logged()
        assert statements == [CLAIM_CALL]
        for _ in range(4):
            statements.clear()
            served += [job.tenant_id for job in await engine.lease(["q"])]
            await logged()
            assert statements == [CLAIM_CALL]
        # Several jobs: the transaction, which, short, learns that no queue is restricted.
        served += [job.tenant_id for job in await engine.lease(["q"], max_jobs=5)]
        assert served == ["a", "b", "c", "a", "b", "c"]
        await logged()
        statements.clear()
        assert await engine.lease(["q"]) == []
        await logged()
        assert statements == [CLAIM_CALL]
        # Several jobs of queues known unrestricted, short of max_jobs with no tenant at its whole share: all the
        # transaction would have taken, in one statement.
        many = [(await engine.enqueue("a", NewJob(task_name="x", queue_name="q"))).job.id for _ in range(3)]
        await logged()
        statements.clear()
        assert sorted(job.id for job in await engine.lease(["q"], max_jobs=5)) == sorted(many)
        await logged()
        assert statements == [CLAIM_CALL]

        # A restriction made here is seen at once: the claim is whole again, and takes the job from the
        # restricted claim.
        await engine.queues.configure("d", "q", QueueSettingsPatch(concurrency_limit=1))
        job = (await engine.enqueue("d", NewJob(task_name="x", queue_name="q"))).job
        await logged()
        statements.clear()
        assert [leased.id for leased in await engine.lease(["q"])] == [job.id]
        await logged()
        assert statements[:2] == [CLAIM_CALL, BEGIN_CLAIM]  # CLAIM leaves the restricted queue out
        # And again: the statement finds nothing (it leaves the restricted queue out), the transaction goes on to
        # the restricted claim, and the limit holds. (A claim once remembered restricted queues, to skip that
        # statement: it saved nothing measurable beside the restricted claim's own cost, `claim.caches`.)
        job = (await engine.enqueue("d", NewJob(task_name="x", queue_name="q"))).job
        await logged()
        statements.clear()
        assert await engine.lease(["q"]) == []  # the concurrency limit: one running
        await logged()
        assert statements[:2] == [CLAIM_CALL, BEGIN_CLAIM]


async def test_a_claim_without_the_function_takes_its_transaction() -> None:
    """A database without the function its server calls (CLAIM_FUNCTION: gone, as it would be on a database whose
    migration to the function's revision has not run): the claim runs as a transaction."""
    async with pg.fresh_database() as url:
        await pgschema.upgrade_async(url)
        async with pg.connect(url) as db:
            await db.execute(f"DROP FUNCTION {CLAIM_FUNCTION}")
        async with PostgresJobStore.from_url(url, pool_size=1, wakeups=Wakeups()) as store:
            engine = engine_on(store, TestClock(), seed=42)
            jobs = [(await engine.enqueue("t", NewJob(task_name="x", queue_name="q"))).job for _ in range(3)]
            leased = [job.id for _ in range(3) for job in await engine.lease(["q"])]
            assert sorted(leased) == sorted(job.id for job in jobs)
            assert not store._one_statement


async def test_jobs_the_statement_took_are_the_caller_s_even_when_the_rest_of_the_claim_fails(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A claim of queues known unrestricted that came back short with a tenant at its whole share goes on in its
    transaction for that tenant's other jobs. The statement's jobs are committed to their leases by then: if the
    transaction fails, the caller still gets them, and nothing is left running under a lease nobody holds."""
    await pg.empty(postgres_url)
    async with PostgresJobStore.from_url(postgres_url, pool_size=1, wakeups=Wakeups()) as store:
        engine = engine_on(store, TestClock(), seed=43)
        await engine.enqueue("a", NewJob(task_name="x", queue_name="q"))
        first = await engine.lease(["q"], max_jobs=5)  # the transaction: it learns that no queue is restricted
        assert len(first) == 1
        for tenant in ("a", "a", "a", "a", "b"):
            await engine.enqueue(tenant, NewJob(task_name="x", queue_name="q"))

        async def fails(*_: object) -> list[Job]:
            raise StoreUnavailable("the rest of the claim failed")

        monkeypatch.setattr(store, "_claim_whole", fails)
        leased = await engine.lease(["q"], max_jobs=4)  # a's share is 2 of 4: a round more would take a's others
        assert sorted(job.tenant_id for job in leased) == ["a", "a", "b"]
    async with pg.connect(postgres_url) as connection:
        running = await connection.fetch("SELECT id FROM queueflow.jobs WHERE status = 'running'")
    assert sorted(row["id"] for row in running) == sorted(job.id for job in first + leased)
