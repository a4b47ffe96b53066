from __future__ import annotations

from datetime import timedelta

import pytest
from queueflow.clocks import TestClock
from queueflow.core.errors import LeaseLost, ValidationError
from queueflow.core.jsonvalue import MAX_RESULT_DEPTH
from queueflow.core.types import BackoffPolicy, BackoffStrategy, JobStatus, NewJob
from queueflow.engine import Engine

from tests.moments import T

NO_JITTER = BackoffPolicy(BackoffStrategy.EXPONENTIAL, base_seconds=2, max_seconds=10, jitter=False)


async def lease_one(engine: Engine, **new: object) -> tuple[str, str]:
    job = (await engine.enqueue(T, NewJob(task_name="t", **new))).job  # type: ignore[arg-type]
    (leased,) = await engine.lease([job.queue_name])
    assert leased.id == job.id
    return job.id, leased.lease_token or ""


async def test_complete_records_the_result(engine: Engine, clock: TestClock) -> None:
    job_id, token = await lease_one(engine)
    clock.advance(seconds=3)
    done = await engine.complete(job_id, token, {"rows": [1, 2], "ok": True})
    assert done.status is JobStatus.COMPLETED
    assert done.result == {"rows": [1, 2], "ok": True}
    assert done.completed_at == clock.now()
    assert (done.lease_token, done.locked_until) == (None, None)
    assert await engine.get_job(T, job_id) == done


@pytest.mark.parametrize("result", [None, 3, "text", [1, "a"], 12345678901234567890123])
async def test_complete_takes_any_json_result(engine: Engine, result: object) -> None:
    job_id, token = await lease_one(engine)
    assert (await engine.complete(job_id, token, result)).result == result


async def test_complete_rejects_an_unstorable_result_and_keeps_the_lease(engine: Engine) -> None:
    job_id, token = await lease_one(engine)
    with pytest.raises(ValidationError):
        await engine.complete(job_id, token, {"text": "nul\x00"})
    assert (await engine.get_job(T, job_id)).status is JobStatus.RUNNING
    assert (await engine.complete(job_id, token, "fine")).status is JobStatus.COMPLETED


async def test_a_token_that_finished_its_job_is_lease_lost(engine: Engine) -> None:
    job_id, token = await lease_one(engine)
    await engine.complete(job_id, token, 1)
    with pytest.raises(LeaseLost):
        await engine.complete(job_id, token, 2)
    with pytest.raises(LeaseLost):
        await engine.fail(job_id, token, "late")
    assert (await engine.get_job(T, job_id)).result == 1


async def test_fail_with_budget_retries_after_backoff(engine: Engine, clock: TestClock) -> None:
    job_id, token = await lease_one(engine, backoff=NO_JITTER, max_retries=5)
    failed = await engine.fail(job_id, token, "boom")
    assert failed.status is JobStatus.RETRYING
    assert failed.retry_count == 1
    assert failed.error_message == "boom"
    assert failed.scheduled_at == failed.next_retry_at == clock.now() + timedelta(seconds=2)
    assert (failed.lease_token, failed.locked_until) == (None, None)
    clock.advance(seconds=1.999)
    assert await engine.lease(["default"]) == []
    clock.advance(seconds=0.001)
    (again,) = await engine.lease(["default"])
    assert again.delivery_count == 2
    failed = await engine.fail(job_id, again.lease_token or "", "boom")
    assert failed.scheduled_at == clock.now() + timedelta(seconds=4)


async def test_exponential_backoff_is_capped(engine: Engine, clock: TestClock) -> None:
    job_id, _ = await lease_one(engine, backoff=NO_JITTER, max_retries=10)
    delays = []
    await engine.store.job_get(job_id)
    for _ in range(5):
        job = await engine.get_job(T, job_id)
        if job.status is not JobStatus.RUNNING:
            clock.set(job.scheduled_at)
            (job,) = await engine.lease(["default"])
        failed = await engine.fail(job.id, job.lease_token or "", "x")
        delays.append((failed.scheduled_at - clock.now()).total_seconds())
    assert delays == [2, 4, 8, 10, 10]


async def test_jitter_stays_within_half_to_full_delay(engine: Engine, clock: TestClock) -> None:
    job_id, token = await lease_one(engine, backoff=BackoffPolicy(base_seconds=100, jitter=True))
    failed = await engine.fail(job_id, token, "x")
    assert 50 <= (failed.scheduled_at - clock.now()).total_seconds() <= 100


async def test_retry_after_overrides_backoff(engine: Engine, clock: TestClock) -> None:
    job_id, token = await lease_one(engine, backoff=NO_JITTER)
    failed = await engine.fail(job_id, token, "rate limited", retry_after_seconds=120)
    assert failed.scheduled_at == clock.now() + timedelta(seconds=120)


async def test_not_retryable_dead_letters_at_once(engine: Engine, clock: TestClock) -> None:
    job_id, token = await lease_one(engine, max_retries=5)
    failed = await engine.fail(job_id, token, "bad input", retryable=False)
    assert failed.status is JobStatus.DEAD_LETTER
    assert failed.retry_count == 0
    assert failed.completed_at == clock.now()
    assert failed.error_message == "bad input"


async def test_a_job_is_delivered_at_most_max_retries_plus_one_times(engine: Engine, clock: TestClock) -> None:
    job_id, token = await lease_one(engine, max_retries=2, backoff=NO_JITTER)
    deliveries = 1
    while True:
        job = await engine.fail(job_id, token, f"attempt {deliveries}")
        if job.status is JobStatus.DEAD_LETTER:
            break
        clock.set(job.scheduled_at)
        (leased,) = await engine.lease(["default"])
        token = leased.lease_token or ""
        deliveries += 1
    assert deliveries == 3
    assert (job.delivery_count, job.retry_count) == (3, 2)
    assert job.error_message == "attempt 3"


async def test_fail_validates_its_input(engine: Engine) -> None:
    job_id, token = await lease_one(engine)
    with pytest.raises(ValidationError):
        await engine.fail(job_id, token, "x", retry_after_seconds=-1)
    with pytest.raises(ValidationError):
        await engine.fail(job_id, token, "nul\x00")
    assert (await engine.get_job(T, job_id)).status is JobStatus.RUNNING


def nested(levels: int) -> object:
    value: object = "leaf"
    for _ in range(levels):
        value = [value]
    return value


async def test_a_result_leaves_room_to_sit_in_a_workflow_context(engine: Engine) -> None:
    # `payload._context.<step>` puts a result two levels down in a dependent's payload.
    job_id, token = await lease_one(engine)
    with pytest.raises(ValidationError) as info:
        await engine.complete(job_id, token, nested(MAX_RESULT_DEPTH + 1))
    assert info.value.errors[0].message == f"nested deeper than {MAX_RESULT_DEPTH} levels"
    assert (await engine.complete(job_id, token, nested(MAX_RESULT_DEPTH))).status is JobStatus.COMPLETED
