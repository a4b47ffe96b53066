from __future__ import annotations

import pytest
from queueflow.clocks import TestClock
from queueflow.core.errors import InvalidState, LeaseLost, NotFound
from queueflow.core.types import BackoffPolicy, JobStatus, NewJob
from queueflow.engine import Engine

from tests.moments import T


async def test_cancel_a_pending_job(engine: Engine, clock: TestClock) -> None:
    job = (await engine.enqueue(T, NewJob(task_name="t"))).job
    cancelled = await engine.cancel_job(T, job.id)
    assert cancelled.status is JobStatus.CANCELLED
    assert cancelled.completed_at == clock.now()
    assert await engine.lease(["default"]) == []


async def test_cancel_a_retrying_job(engine: Engine) -> None:
    await engine.enqueue(T, NewJob(task_name="t"))
    (job,) = await engine.lease(["default"])
    await engine.fail(job.id, job.lease_token or "", "boom")
    assert (await engine.cancel_job(T, job.id)).status is JobStatus.CANCELLED


async def test_cancel_voids_a_running_jobs_token(engine: Engine) -> None:
    await engine.enqueue(T, NewJob(task_name="t"))
    (job,) = await engine.lease(["default"])
    cancelled = await engine.cancel_job(T, job.id)
    assert (cancelled.status, cancelled.lease_token, cancelled.locked_until) == (JobStatus.CANCELLED, None, None)
    with pytest.raises(LeaseLost):
        await engine.heartbeat(job.id, job.lease_token or "")
    with pytest.raises(LeaseLost):
        await engine.complete(job.id, job.lease_token or "", "too late")
    with pytest.raises(LeaseLost):
        await engine.fail(job.id, job.lease_token or "", "too late")
    assert await engine.get_job(T, job.id) == cancelled


@pytest.mark.parametrize("finish", ["complete", "dead_letter", "cancel"])
async def test_finished_jobs_cannot_be_cancelled(engine: Engine, finish: str) -> None:
    await engine.enqueue(T, NewJob(task_name="t"))
    (job,) = await engine.lease(["default"])
    if finish == "complete":
        await engine.complete(job.id, job.lease_token or "", None)
    elif finish == "dead_letter":
        await engine.fail(job.id, job.lease_token or "", "x", retryable=False)
    else:
        await engine.cancel_job(T, job.id)
    before = await engine.get_job(T, job.id)
    with pytest.raises(InvalidState):
        await engine.cancel_job(T, job.id)
    assert await engine.get_job(T, job.id) == before


async def test_retry_replays_a_dead_letter_with_a_fresh_budget(engine: Engine, clock: TestClock) -> None:
    await engine.enqueue(T, NewJob(task_name="t", max_retries=0))
    (job,) = await engine.lease(["default"])
    dead = await engine.fail(job.id, job.lease_token or "", "boom")
    assert dead.status is JobStatus.DEAD_LETTER
    clock.advance(minutes=5)
    replayed = await engine.retry_job(T, job.id)
    assert replayed.status is JobStatus.PENDING
    assert (replayed.retry_count, replayed.scheduled_at, replayed.completed_at) == (0, clock.now(), None)
    (again,) = await engine.lease(["default"])
    assert again.id == job.id
    assert again.delivery_count == 2


async def test_retry_replays_a_cancelled_job(engine: Engine) -> None:
    job = (await engine.enqueue(T, NewJob(task_name="t"))).job
    await engine.cancel_job(T, job.id)
    assert (await engine.retry_job(T, job.id)).status is JobStatus.PENDING


@pytest.mark.parametrize("state", ["pending", "running", "retrying", "completed"])
async def test_retry_of_other_states_is_invalid(engine: Engine, state: str) -> None:
    job = (await engine.enqueue(T, NewJob(task_name="t", backoff=BackoffPolicy(jitter=False)))).job
    if state != "pending":
        (leased,) = await engine.lease(["default"])
        if state == "retrying":
            await engine.fail(job.id, leased.lease_token or "", "x")
        elif state == "completed":
            await engine.complete(job.id, leased.lease_token or "", None)
    before = await engine.get_job(T, job.id)
    assert before.status == state
    with pytest.raises(InvalidState):
        await engine.retry_job(T, job.id)
    assert await engine.get_job(T, job.id) == before


async def test_cancel_and_retry_of_unknown_or_foreign_jobs_are_not_found(engine: Engine) -> None:
    job = (await engine.enqueue("other", NewJob(task_name="t"))).job
    for call in (engine.cancel_job, engine.retry_job):
        with pytest.raises(NotFound):
            await call(T, "job_missing")
        with pytest.raises(NotFound):
            await call(T, job.id)
    assert (await engine.get_job("other", job.id)).status is JobStatus.PENDING
