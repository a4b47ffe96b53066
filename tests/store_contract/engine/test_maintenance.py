from __future__ import annotations

import random
from datetime import timedelta

import pytest
from queueflow.clocks import TestClock
from queueflow.core.errors import LeaseLost
from queueflow.core.types import BackoffPolicy, Failure, JobStatus, MaintenanceReport, NewJob
from queueflow.engine import Engine, EngineSettings
from queueflow.ports import JobStore

from tests.moments import T

NO_JITTER = BackoffPolicy(base_seconds=5, jitter=False)


async def test_an_expired_lease_is_reclaimed_as_a_failure(engine: Engine, clock: TestClock) -> None:
    await engine.enqueue(T, NewJob(task_name="t", backoff=NO_JITTER))
    (job,) = await engine.lease(["default"], lease_seconds=30)
    clock.advance(seconds=29)
    assert await engine.run_maintenance() == MaintenanceReport()
    clock.advance(seconds=1)
    assert await engine.run_maintenance() == MaintenanceReport(reclaimed=1, retried=1)
    reclaimed = await engine.get_job(T, job.id)
    assert reclaimed.status is JobStatus.RETRYING
    assert reclaimed.retry_count == 1
    assert reclaimed.scheduled_at == clock.now() + timedelta(seconds=5)
    assert reclaimed.error_message == "lease expired: the worker stopped heartbeating"
    assert reclaimed.lease_token is None


async def test_a_passed_timeout_is_reported_as_such(engine: Engine, clock: TestClock) -> None:
    await engine.enqueue(T, NewJob(task_name="t", timeout_seconds=10, max_retries=0))
    (job,) = await engine.lease(["default"], lease_seconds=60)
    clock.advance(seconds=10)
    assert await engine.run_maintenance() == MaintenanceReport(reclaimed=1, dead_lettered=1)
    dead = await engine.get_job(T, job.id)
    assert dead.status is JobStatus.DEAD_LETTER
    assert dead.error_message == "timed out after 10 s"


async def test_a_reclaimed_token_is_stale(engine: Engine, clock: TestClock) -> None:
    await engine.enqueue(T, NewJob(task_name="t", backoff=NO_JITTER))
    (job,) = await engine.lease(["default"], lease_seconds=10)
    clock.advance(seconds=10)
    await engine.run_maintenance()
    clock.advance(seconds=5)
    (again,) = await engine.lease(["default"])
    with pytest.raises(LeaseLost):
        await engine.complete(job.id, job.lease_token or "", "from the vanished worker")
    done = await engine.complete(again.id, again.lease_token or "", "from the new one")
    assert done.result == "from the new one"


async def test_an_always_crashing_job_dead_letters_after_max_retries_plus_one_deliveries(
    engine: Engine, clock: TestClock
) -> None:
    await engine.enqueue(T, NewJob(task_name="crash", max_retries=3, backoff=NO_JITTER))
    deliveries = 0
    for _ in range(10):
        clock.advance(seconds=60)
        leased = await engine.lease(["default"], lease_seconds=30)
        deliveries += len(leased)
        clock.advance(seconds=30)  # the worker dies without a word every time
        await engine.run_maintenance()
    (job,) = (await engine.list_jobs(T)).items
    assert job.status is JobStatus.DEAD_LETTER
    assert deliveries == job.delivery_count == 4


async def test_the_janitor_re_leases_what_it_reclaims(store: JobStore, engine: Engine, clock: TestClock) -> None:
    await engine.enqueue(T, NewJob(task_name="t"))
    (job,) = await engine.lease(["default"], lease_seconds=5)
    clock.advance(seconds=5)
    (seen,) = await store.job_lease_expired(limit=100, relock_seconds=60, now=clock.now())
    assert seen.lease_token not in (None, job.lease_token)  # the janitor's own token, not the worker's
    assert seen.locked_until == clock.now() + timedelta(seconds=60)
    assert (
        await store.job_lease_expired(limit=100, relock_seconds=60, now=clock.now()) == []
    )  # a second janitor finds nothing


async def test_a_worker_whose_lease_expired_gets_409_while_the_janitor_decides(
    store: JobStore, engine: Engine, clock: TestClock
) -> None:
    await engine.enqueue(T, NewJob(task_name="t"))
    (job,) = await engine.lease(["default"], lease_seconds=5)
    clock.advance(seconds=5)
    (seen,) = await store.job_lease_expired(limit=100, relock_seconds=60, now=clock.now())
    with pytest.raises(LeaseLost):  # the janitor's re-lease does not revive the worker's expired one
        await engine.complete(job.id, job.lease_token or "", "too late")
    with pytest.raises(LeaseLost):
        await engine.heartbeat(job.id, job.lease_token or "")
    (failed,) = await store.job_fail_many([Failure(seen.id, seen.lease_token or "", "expired", None)], now=clock.now())
    assert failed is not None
    assert (failed.status, failed.result) == (JobStatus.DEAD_LETTER, None)


async def test_one_sweep_reclaims_at_most_the_sweep_limit(store: JobStore, clock: TestClock) -> None:
    engine = Engine(store, clock, rng=random.Random(1), settings=EngineSettings(sweep_limit=3))
    await engine.enqueue_many(T, [NewJob(task_name="t") for _ in range(5)])
    await engine.lease(["default"], max_jobs=5, lease_seconds=1)
    clock.advance(seconds=1)
    assert (await engine.run_maintenance()).reclaimed == 3
    assert (await engine.run_maintenance()).reclaimed == 2


async def test_retention_deletes_only_old_finished_jobs(store: JobStore, clock: TestClock) -> None:
    engine = Engine(store, clock, rng=random.Random(1), settings=EngineSettings(retention=timedelta(hours=1)))
    old = await engine.enqueue_many(T, [NewJob(task_name=f"t{i}", idempotency_key=f"k{i}") for i in range(4)])
    leased = await engine.lease(["default"], max_jobs=3)
    await engine.complete(leased[0].id, leased[0].lease_token or "", None)
    await engine.fail(leased[1].id, leased[1].lease_token or "", "x", retryable=False)
    (waiting,) = [r.job for r in old if r.job.id not in {job.id for job in leased}]
    await engine.cancel_job(T, waiting.id)
    clock.advance(minutes=59)
    fresh = (await engine.enqueue(T, NewJob(task_name="fresh"))).job
    (fresh_leased,) = await engine.lease(["default"])
    await engine.complete(fresh_leased.id, fresh_leased.lease_token or "", None)
    assert (await engine.run_maintenance()).deleted == 0
    clock.advance(minutes=2)
    report = await engine.run_maintenance()
    assert report.deleted == 3
    remaining = {job.id for job in (await engine.list_jobs(T)).items}
    assert remaining == {leased[2].id, fresh.id}  # the running one and the recent one stay
    # A deleted job's idempotency key is free again.
    assert (await engine.enqueue(T, NewJob(task_name="again", idempotency_key=leased[0].idempotency_key))).created
