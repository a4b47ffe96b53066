from __future__ import annotations

import pytest
from queueflow.clocks import TestClock
from queueflow.core.errors import ValidationError
from queueflow.core.types import AckOutcome, AckResult, BackoffPolicy, Completion, FailureRequest, JobStatus, NewJob
from queueflow.engine import Engine

from tests.moments import T


async def leased(engine: Engine, n: int, **new: object) -> list[tuple[str, str]]:
    await engine.enqueue_many(T, [NewJob(task_name=f"t{i}", **new) for i in range(n)])  # type: ignore[arg-type]
    return [(job.id, job.lease_token or "") for job in await engine.lease(["default"], max_jobs=n)]


async def test_ack_completes_and_fails_each_item_on_its_own(engine: Engine, clock: TestClock) -> None:
    jobs = await leased(engine, 4, max_retries=1, backoff=BackoffPolicy(jitter=False))
    (a, ta), (b, tb), (c, tc), (d, td) = jobs
    await engine.cancel_job(T, b)  # b's token is now stale
    results = await engine.ack(
        complete=[Completion(a, ta, {"n": 1}), Completion(b, tb, {"n": 2})],
        fail=[
            FailureRequest(job_id=c, lease_token=tc, error="flaky"),
            FailureRequest(job_id=d, lease_token=td, error="bad", retryable=False),
            FailureRequest(job_id="job_missing", lease_token="x", error="?"),
        ],
    )
    assert results == [
        AckResult(a, AckOutcome.OK, JobStatus.COMPLETED, "default"),
        AckResult(b, AckOutcome.LEASE_LOST, JobStatus.CANCELLED, "default"),
        AckResult(c, AckOutcome.OK, JobStatus.RETRYING, "default"),
        AckResult(d, AckOutcome.OK, JobStatus.DEAD_LETTER, "default"),
        AckResult("job_missing", AckOutcome.LEASE_LOST, None, None),
    ]
    assert (await engine.get_job(T, a)).result == {"n": 1}
    retrying = await engine.get_job(T, c)
    assert (retrying.retry_count, retrying.error_message) == (1, "flaky")
    assert (await engine.get_job(T, b)).result is None


async def test_ack_of_the_same_token_twice_completes_once(engine: Engine) -> None:
    ((job_id, token),) = await leased(engine, 1)
    results = await engine.ack(complete=[Completion(job_id, token, 1), Completion(job_id, token, 2)])
    assert [r.outcome for r in results] == [AckOutcome.OK, AckOutcome.LEASE_LOST]
    assert (await engine.get_job(T, job_id)).result == 1


async def test_ack_after_the_lease_expired_is_lease_lost(engine: Engine, clock: TestClock) -> None:
    ((job_id, token),) = await leased(engine, 1)
    clock.advance(seconds=30)
    (result,) = await engine.ack(complete=[Completion(job_id, token, None)])
    assert result == AckResult(job_id, AckOutcome.LEASE_LOST, JobStatus.RUNNING, "default")


async def test_ack_takes_a_thousand_items(engine: Engine) -> None:
    jobs = await leased(engine, 1000)
    results = await engine.ack(complete=[Completion(job_id, token, None) for job_id, token in jobs])
    assert all(r.outcome is AckOutcome.OK for r in results)
    assert len(results) == 1000


async def test_ack_size_is_bounded(engine: Engine) -> None:
    with pytest.raises(ValidationError):
        await engine.ack(complete=[Completion(f"job_{i}", "t") for i in range(1001)])


async def test_an_empty_ack_settles_nothing(engine: Engine) -> None:
    assert await engine.ack() == []


async def test_an_invalid_ack_item_rejects_the_whole_ack(engine: Engine) -> None:
    ((job_id, token),) = await leased(engine, 1)
    with pytest.raises(ValidationError):
        await engine.ack(
            complete=[Completion(job_id, token, None)],
            fail=[FailureRequest(job_id="job_x", lease_token="t", error="x", retry_after_seconds=-5)],
        )
    assert (await engine.get_job(T, job_id)).status is JobStatus.RUNNING


async def test_an_unstorable_result_rejects_the_whole_ack(engine: Engine) -> None:
    (a, ta), (b, tb) = await leased(engine, 2)
    with pytest.raises(ValidationError) as info:
        await engine.ack(
            complete=[Completion(a, ta, "nul\x00")], fail=[FailureRequest(job_id=b, lease_token=tb, error="x")]
        )
    assert info.value.errors[0].loc == ("complete", 0, "result")
    assert [(await engine.get_job(T, j)).status for j in (a, b)] == [JobStatus.RUNNING, JobStatus.RUNNING]


async def test_ack_settles_each_item_on_its_own_and_names_its_queue(engine: Engine) -> None:
    for queue in ("mail", "mail", "sms"):
        await engine.enqueue(T, NewJob(task_name="t", queue_name=queue, max_retries=0))
    done, stale, failed = await engine.lease(["mail", "sms"], max_jobs=3)

    results = await engine.ack(
        [Completion(done.id, done.lease_token or "", {"ok": 1}), Completion(stale.id, "stale")],
        [
            FailureRequest(job_id=failed.id, lease_token=failed.lease_token or "", error="boom"),
            FailureRequest(job_id="job_missing", lease_token="x", error="boom"),
        ],
    )

    assert results == [
        AckResult(done.id, AckOutcome.OK, JobStatus.COMPLETED, done.queue_name),
        AckResult(stale.id, AckOutcome.LEASE_LOST, JobStatus.RUNNING, stale.queue_name),
        AckResult(failed.id, AckOutcome.OK, JobStatus.DEAD_LETTER, failed.queue_name),
        AckResult("job_missing", AckOutcome.LEASE_LOST, None, None),
    ]
