"""A claim is one atomic operation: a claim that fails leaves every job as it was, none running under a lease that
nobody holds."""

from __future__ import annotations

import asyncio

import pytest
from queueflow.clocks import TestClock
from queueflow.core.errors import StoreUnavailable
from queueflow.core.flow import QueueSettingsPatch
from queueflow.core.types import ClaimRequest, JobStatus, NewJob
from queueflow.stores.postgres import PostgresJobStore

from tests import pg
from tests.moments import START, T
from tests.postgres.helpers import engine_on

PATIENCE = 10.0
"""Upper bound on any wait here; a passing test takes a fraction of it."""


async def test_a_claim_that_fails_on_a_restricted_queue_leaves_the_jobs_it_took_elsewhere_pending(
    postgres_url: str,
) -> None:
    """A short claim takes the due jobs of the queues nobody restricts first, then goes on to the queues some tenant
    restricts. Here that second part fails: the restricted queue's settings row is locked elsewhere for longer than
    the statement timeout. The jobs the first part took must not stay running (lost to the caller, who got an
    error, until their lease expires): they are pending again, as if the claim never happened."""
    await pg.empty(postgres_url)
    async with (
        PostgresJobStore.from_url(postgres_url, pool_size=1) as store,
        PostgresJobStore.from_url(postgres_url, pool_size=1, statement_timeout=1.0) as impatient,
    ):
        engine = engine_on(store, TestClock(START))
        await engine.enqueue_many(T, [NewJob(task_name="t", queue_name="free")] * 3)
        await engine.configure_queue(T, "limited", QueueSettingsPatch(concurrency_limit=5))
        before = {job.id: job for job in (await engine.list_jobs(T)).items}
        claim = ClaimRequest(queues=["free", "limited"], max_jobs=10, now=START, lease_seconds=30)
        async with pg.connect(postgres_url) as holder:
            await holder.execute("BEGIN")
            await holder.execute("SELECT FROM queueflow.queue_settings FOR UPDATE")
            async with asyncio.timeout(PATIENCE):
                with pytest.raises(StoreUnavailable, match="statement timeout"):
                    await impatient.job_claim(claim)
            await holder.execute("ROLLBACK")
        after = {job.id: job for job in (await engine.list_jobs(T)).items}
        assert after == before
        assert {job.status for job in after.values()} == {JobStatus.PENDING}
        # Nothing is left behind either: the same claim, once the lock is gone, takes all three.
        assert sorted(job.id for job in await impatient.job_claim(claim)) == sorted(before)
