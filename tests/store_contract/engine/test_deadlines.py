"""Deadlines (README.md, "Deadlines") through the Engine, on every store, on the test clock: the two ways to give
one and their 400s, no lease at or after the deadline, the timer's expiry and its message, a retry too late for the
deadline, a running delivery left alone, and a replay clearing the deadline."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from queueflow.clocks import TestClock
from queueflow.core.errors import ValidationError
from queueflow.core.flow import QueueSettingsPatch
from queueflow.core.types import BackoffPolicy, BackoffStrategy, JobStatus, NewJob
from queueflow.engine import Engine

from tests.moments import T


def expiring(seconds: float = 60, **fields: object) -> NewJob:
    return NewJob(task_name="send", expires_in_seconds=seconds, **fields)  # type: ignore[arg-type]


def locs(raised: pytest.ExceptionInfo[ValidationError]) -> list[tuple[str | int, ...]]:
    return [error.loc for error in raised.value.errors]


async def test_a_deadline_is_given_as_a_time_or_as_seconds_from_now(engine: Engine, clock: TestClock) -> None:
    at = clock.now() + timedelta(hours=1)
    by_time = (await engine.enqueue(T, NewJob(task_name="send", expires_at=at))).job
    by_seconds = (await engine.enqueue(T, expiring(90.5))).job
    plain = (await engine.enqueue(T, NewJob(task_name="send"))).job
    assert by_time.expires_at == at
    assert by_seconds.expires_at == clock.now() + timedelta(seconds=90.5)
    assert plain.expires_at is None
    assert [(await engine.get_job(T, job.id)).expires_at for job in (by_time, by_seconds, plain)] == [
        at,
        by_seconds.expires_at,
        None,
    ]
    # Another offset is the same instant.
    east = datetime(2030, 1, 1, 12, tzinfo=UTC).astimezone(timezone(timedelta(hours=2)))
    assert (await engine.enqueue(T, NewJob(task_name="send", expires_at=east))).job.expires_at == east


async def test_both_fields_or_a_deadline_not_after_the_due_time_are_400(engine: Engine, clock: TestClock) -> None:
    now = clock.now()
    with pytest.raises(ValidationError) as both:
        await engine.enqueue(T, expiring(60, expires_at=now + timedelta(hours=1)))
    assert locs(both) == [("expires_in_seconds",)]
    with pytest.raises(ValidationError) as past:
        await engine.enqueue(T, NewJob(task_name="send", expires_at=now))
    assert locs(past) == [("expires_at",)]
    assert "later than the job's scheduled_at" in past.value.errors[0].message
    with pytest.raises(ValidationError) as delayed:
        await engine.enqueue(T, expiring(60, delay_seconds=60))
    assert locs(delayed) == [("expires_in_seconds",)]
    with pytest.raises(ValidationError) as scheduled:
        await engine.enqueue(
            T, NewJob(task_name="send", run_at=now + timedelta(hours=2), expires_at=now + timedelta(hours=1))
        )
    assert locs(scheduled) == [("expires_at",)]
    with pytest.raises(ValidationError) as zero:
        await engine.enqueue(T, expiring(0))
    assert locs(zero) == [("expires_in_seconds",)]
    with pytest.raises(ValidationError) as naive:
        await engine.enqueue(T, NewJob(task_name="send", expires_at=datetime(2030, 1, 1)))
    assert locs(naive) == [("expires_at",)]
    # In a batch, the item's index; and nothing of the batch is written.
    with pytest.raises(ValidationError) as batch:
        await engine.enqueue_many(T, [expiring(60), expiring(30, delay_seconds=45)])
    assert locs(batch) == [("jobs", 1, "expires_in_seconds")]
    assert (await engine.list_jobs(T)).items == []
    # Just after the due time is fine.
    assert (await engine.enqueue(T, expiring(0.001))).created
    assert (await engine.enqueue(T, expiring(60.001, delay_seconds=60))).created


async def test_a_job_is_never_leased_at_or_after_its_deadline(engine: Engine, clock: TestClock) -> None:
    late = (await engine.enqueue(T, expiring(10, queue_name="q"))).job
    on_time = (await engine.enqueue(T, NewJob(task_name="send", queue_name="q", priority=-1))).job
    clock.advance(seconds=9.999)
    assert [job.id for job in await engine.lease(["q"], max_jobs=1)] == [late.id]
    # The same again, released and then past the deadline: the claim takes what lies behind it.
    again = (await engine.enqueue(T, expiring(10, queue_name="r"))).job
    behind = (await engine.enqueue(T, NewJob(task_name="send", queue_name="r", priority=-1))).job
    clock.advance(seconds=10)
    assert [job.id for job in await engine.lease(["r"], max_jobs=10)] == [behind.id]
    assert (await engine.get_job(T, again.id)).status is JobStatus.PENDING  # until the timer comes by
    assert [job.id for job in await engine.lease(["q"], max_jobs=10)] == [on_time.id]


async def test_the_timer_dead_letters_an_expired_job_with_its_message(engine: Engine, clock: TestClock) -> None:
    at = clock.now() + timedelta(seconds=30, microseconds=250_000)
    job = (await engine.enqueue(T, NewJob(task_name="send", expires_at=at))).job
    whole = (await engine.enqueue(T, expiring(60))).job
    assert await engine.next_expiry() == at
    clock.advance(seconds=30)
    assert await engine.expire_due_jobs(100) == []
    clock.advance(seconds=0.25)
    (expired,) = await engine.expire_due_jobs(100)
    assert expired.id == job.id
    assert expired.status is JobStatus.DEAD_LETTER
    assert expired.error_message == "expired: not started by 2026-03-01T12:00:30.250000Z"
    assert expired.completed_at == clock.now()
    assert expired.delivery_count == 0
    assert await engine.get_job(T, job.id) == expired
    assert await engine.next_expiry() == whole.expires_at
    clock.advance(seconds=30)
    (second,) = await engine.expire_due_jobs(100)
    assert second.error_message == "expired: not started by 2026-03-01T12:01:00Z"  # no fraction: none to print
    assert await engine.expire_due_jobs(100) == []
    assert await engine.next_expiry() is None


async def test_an_expiry_takes_the_earliest_deadlines_first_up_to_its_limit(engine: Engine, clock: TestClock) -> None:
    jobs = [(await engine.enqueue(T, expiring(30 - i))).job for i in range(5)]
    clock.advance(seconds=60)
    first = await engine.expire_due_jobs(2)
    assert [job.id for job in first] == [jobs[4].id, jobs[3].id]
    rest = await engine.expire_due_jobs(10)
    assert [job.id for job in rest] == [jobs[2].id, jobs[1].id, jobs[0].id]


async def test_a_running_delivery_is_not_interrupted(engine: Engine, clock: TestClock) -> None:
    job = (await engine.enqueue(T, expiring(10))).job
    (leased,) = await engine.lease(["default"], lease_seconds=60)
    clock.advance(seconds=20)
    assert await engine.expire_due_jobs(100) == []
    assert await engine.next_expiry() is None  # a started job has no deadline left to keep
    assert leased.lease_token is not None
    done = await engine.complete(job.id, leased.lease_token, {"ok": True})
    assert done.status is JobStatus.COMPLETED


async def test_a_retry_due_after_the_deadline_dead_letters_at_once(engine: Engine, clock: TestClock) -> None:
    fixed = BackoffPolicy(BackoffStrategy.FIXED, 10.0, 10.0, False)
    job = (await engine.enqueue(T, expiring(30, backoff=fixed))).job
    (leased,) = await engine.lease(["default"])
    assert leased.lease_token is not None
    clock.advance(seconds=5)
    retrying = await engine.fail(job.id, leased.lease_token, "boom")  # due at 15 s: in time
    assert (retrying.status, retrying.scheduled_at) == (JobStatus.RETRYING, clock.now() + timedelta(seconds=10))
    clock.advance(seconds=10)
    (again,) = await engine.lease(["default"])
    assert again.lease_token is not None
    clock.advance(seconds=5)
    dead = await engine.fail(job.id, again.lease_token, "boom again")  # due at 30 s: the deadline itself
    assert dead.status is JobStatus.DEAD_LETTER
    assert dead.error_message == "expired: not started by 2026-03-01T12:00:30Z"
    assert dead.retry_count == 1
    # A failure that asks for no retry keeps its own error.
    other = (await engine.enqueue(T, expiring(30))).job
    (held,) = await engine.lease(["default"])
    assert held.lease_token is not None
    final = await engine.fail(other.id, held.lease_token, "bad input", retryable=False)
    assert (final.status, final.error_message) == (JobStatus.DEAD_LETTER, "bad input")


async def test_a_retry_in_time_that_is_not_started_in_time_expires(engine: Engine, clock: TestClock) -> None:
    job = (await engine.enqueue(T, expiring(30))).job
    (leased,) = await engine.lease(["default"])
    assert leased.lease_token is not None
    await engine.fail(job.id, leased.lease_token, "boom", retry_after_seconds=5)
    clock.advance(seconds=30)
    assert await engine.lease(["default"]) == []
    (expired,) = await engine.expire_due_jobs(100)
    assert (expired.id, expired.status, expired.retry_count) == (job.id, JobStatus.DEAD_LETTER, 1)


async def test_an_expired_lease_whose_retry_comes_too_late_dead_letters(engine: Engine, clock: TestClock) -> None:
    fixed = BackoffPolicy(BackoffStrategy.FIXED, 60.0, 60.0, False)
    job = (await engine.enqueue(T, expiring(30, backoff=fixed))).job
    await engine.lease(["default"], lease_seconds=10)
    clock.advance(seconds=10)
    report = await engine.run_maintenance()
    assert (report.reclaimed, report.dead_lettered) == (1, 1)
    dead = await engine.get_job(T, job.id)
    assert (dead.status, dead.error_message) == (JobStatus.DEAD_LETTER, "expired: not started by 2026-03-01T12:00:30Z")


async def test_a_replay_of_an_expired_job_clears_its_deadline(engine: Engine, clock: TestClock) -> None:
    job = (await engine.enqueue(T, expiring(5))).job
    clock.advance(seconds=5)
    await engine.expire_due_jobs(100)
    replayed = await engine.retry_job(T, job.id)
    assert (replayed.status, replayed.expires_at) == (JobStatus.PENDING, None)
    assert replayed.scheduled_at == clock.now()
    (leased,) = await engine.lease(["default"])
    assert leased.id == job.id
    assert await engine.next_expiry() is None


async def test_an_expiry_leaves_a_job_that_ended_otherwise(engine: Engine, clock: TestClock) -> None:
    cancelled = (await engine.enqueue(T, expiring(5))).job
    await engine.cancel_job(T, cancelled.id)
    clock.advance(seconds=5)
    assert await engine.expire_due_jobs(100) == []
    assert (await engine.get_job(T, cancelled.id)).status is JobStatus.CANCELLED


async def test_a_workers_claim_skips_expired_jobs_of_every_kind_of_claim(engine: Engine, clock: TestClock) -> None:
    """Scoped to a tenant, filtered by task, and on a queue with flow control: the same rule."""
    await engine.configure_queue(T, "limited", QueueSettingsPatch(concurrency_limit=5))
    for queue in ("default", "limited"):
        await engine.enqueue(T, expiring(5, queue_name=queue))
    clock.advance(seconds=5)
    assert await engine.lease(["default", "limited"], max_jobs=10, scope=T) == []
    assert await engine.lease(["default", "limited"], max_jobs=10, task_names=["send"]) == []
    assert await engine.lease(["default", "limited"], max_jobs=10) == []
    assert len(await engine.expire_due_jobs(100)) == 2
