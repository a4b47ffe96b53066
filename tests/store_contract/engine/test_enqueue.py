from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from queueflow.clocks import TestClock
from queueflow.core.errors import NotFound, ValidationError
from queueflow.core.types import BackoffPolicy, BackoffStrategy, JobStatus, NewJob
from queueflow.engine import Engine

from tests.moments import T


async def test_enqueue_records_every_field(engine: Engine, clock: TestClock) -> None:
    backoff = BackoffPolicy(BackoffStrategy.LINEAR, base_seconds=2.5, max_seconds=60, jitter=False)
    new = NewJob(
        task_name="send_email",
        queue_name="mail",
        payload={"to": "ada@example.com", "n": [1, 2.5, None, True]},
        priority=5,
        max_retries=7,
        backoff=backoff,
        timeout_seconds=90,
        metadata={"customer": "c1"},
    )
    result = await engine.enqueue(T, new)
    assert result.created
    job = result.job
    assert job.id.startswith("job_")
    assert (job.tenant_id, job.queue_name, job.task_name, job.priority) == (T, "mail", "send_email", 5)
    assert job.payload == {"to": "ada@example.com", "n": [1, 2.5, None, True]}
    assert job.status is JobStatus.PENDING
    assert job.scheduled_at == job.created_at == clock.now()
    assert (job.max_retries, job.backoff, job.timeout_seconds) == (7, backoff, 90)
    assert job.metadata == {"customer": "c1"}
    assert (job.delivery_count, job.retry_count, job.lease_token, job.locked_until) == (0, 0, None, None)
    assert await engine.get_job(T, job.id) == job


async def test_defaults(engine: Engine) -> None:
    job = (await engine.enqueue(T, NewJob(task_name="t"))).job
    assert (job.queue_name, job.payload, job.priority, job.max_retries) == ("default", {}, 0, 3)
    assert job.backoff == BackoffPolicy(BackoffStrategy.EXPONENTIAL, 1.0, 3600.0, True)
    assert job.timeout_seconds is None
    assert job.metadata == {}


async def test_run_at_and_delay_schedule_the_row(engine: Engine, clock: TestClock) -> None:
    later = clock.now() + timedelta(hours=2)
    at = (await engine.enqueue(T, NewJob(task_name="t", run_at=later.astimezone(UTC)))).job
    delayed = (await engine.enqueue(T, NewJob(task_name="t", delay_seconds=30))).job
    assert at.scheduled_at == later
    assert delayed.scheduled_at == clock.now() + timedelta(seconds=30)
    assert await engine.lease(["default"]) == []
    clock.advance(seconds=30)
    assert [job.id for job in await engine.lease(["default"], max_jobs=5)] == [delayed.id]
    clock.advance(hours=2)
    assert [job.id for job in await engine.lease(["default"], max_jobs=5)] == [at.id]


async def test_run_at_in_another_offset_is_normalised_to_utc(engine: Engine, clock: TestClock) -> None:
    from datetime import timezone

    local = datetime(2026, 3, 1, 15, 0, tzinfo=timezone(timedelta(hours=2)))
    job = (await engine.enqueue(T, NewJob(task_name="t", run_at=local))).job
    assert job.scheduled_at == datetime(2026, 3, 1, 13, 0, tzinfo=UTC)
    assert job.scheduled_at.utcoffset() == timedelta(0)


async def test_idempotent_repeat_returns_the_original_unchanged(engine: Engine) -> None:
    first = await engine.enqueue(T, NewJob(task_name="t", payload={"v": 1}, idempotency_key="k1"))
    again = await engine.enqueue(T, NewJob(task_name="other", payload={"v": 2}, idempotency_key="k1"))
    assert first.created
    assert not again.created
    assert again.job == first.job
    page = await engine.list_jobs(T)
    assert [job.id for job in page.items] == [first.job.id]


async def test_idempotency_keys_are_scoped_per_tenant(engine: Engine) -> None:
    a = await engine.enqueue("a", NewJob(task_name="t", idempotency_key="same"))
    b = await engine.enqueue("b", NewJob(task_name="t", idempotency_key="same"))
    assert a.created
    assert b.created
    assert a.job.id != b.job.id


async def test_batch_is_all_or_nothing(engine: Engine) -> None:
    good = NewJob(task_name="ok")
    bad = NewJob(task_name="bad", priority=5000)
    with pytest.raises(ValidationError) as info:
        await engine.enqueue_many(T, [good, bad, good])
    assert [error.loc for error in info.value.errors] == [("jobs", 1, "priority")]
    assert (await engine.list_jobs(T)).items == []


async def test_batch_rejects_unstorable_values_without_writing(engine: Engine) -> None:
    with pytest.raises(ValidationError) as info:
        await engine.enqueue_many(T, [NewJob(task_name="ok"), NewJob(task_name="t", payload={"s": "a\x00b"})])
    assert info.value.errors[0].loc == ("jobs", 1, "payload", "s")
    assert (await engine.list_jobs(T)).items == []


async def test_batch_resolves_known_keys_in_position(engine: Engine) -> None:
    existing = (await engine.enqueue(T, NewJob(task_name="t", idempotency_key="k"))).job
    results = await engine.enqueue_many(
        T,
        [NewJob(task_name="a"), NewJob(task_name="b", idempotency_key="k"), NewJob(task_name="c", idempotency_key="n")],
    )
    assert [r.created for r in results] == [True, False, True]
    assert results[1].job == existing
    assert [r.job.task_name for r in results] == ["a", "t", "c"]


async def test_batch_repeating_a_key_inside_itself_resolves_to_the_first(engine: Engine) -> None:
    results = await engine.enqueue_many(
        T, [NewJob(task_name="a", idempotency_key="k"), NewJob(task_name="b", idempotency_key="k")]
    )
    assert [r.created for r in results] == [True, False]
    assert results[1].job.id == results[0].job.id


@pytest.mark.parametrize(
    ("new", "field"),
    [
        (NewJob(task_name=""), "task_name"),
        (NewJob(task_name="x" * 201), "task_name"),
        (NewJob(task_name="t", queue_name="bad queue"), "queue_name"),
        (NewJob(task_name="t", priority=1001), "priority"),
        (NewJob(task_name="t", max_retries=101), "max_retries"),
        (NewJob(task_name="t", delay_seconds=-1), "delay_seconds"),
        (NewJob(task_name="t", delay_seconds=10, run_at=datetime(2026, 1, 1, tzinfo=UTC)), "delay_seconds"),
        (NewJob(task_name="t", run_at=datetime(2026, 1, 1)), "run_at"),
        (NewJob(task_name="t", timeout_seconds=0.5), "timeout_seconds"),
        (NewJob(task_name="t", backoff=BackoffPolicy(base_seconds=0)), "backoff.base_seconds"),
        (NewJob(task_name="t", backoff=BackoffPolicy(base_seconds=10, max_seconds=5)), "backoff.max_seconds"),
        (NewJob(task_name="t", metadata={"k": "\ud800"}), "metadata.k"),
        (NewJob(task_name="t", idempotency_key=""), "idempotency_key"),
        (NewJob(task_name="t\x00"), "task_name"),
    ],
)
async def test_invalid_jobs_are_rejected_and_not_stored(engine: Engine, new: NewJob, field: str) -> None:
    with pytest.raises(ValidationError) as info:
        await engine.enqueue(T, new)
    assert field in [error.field for error in info.value.errors]
    assert (await engine.list_jobs(T)).items == []


async def test_unknown_job_is_not_found(engine: Engine) -> None:
    with pytest.raises(NotFound):
        await engine.get_job(T, "job_nope")


async def test_another_tenants_job_is_not_found(engine: Engine) -> None:
    job = (await engine.enqueue("a", NewJob(task_name="t"))).job
    with pytest.raises(NotFound):
        await engine.get_job("b", job.id)
    with pytest.raises(NotFound):
        await engine.cancel_job("b", job.id)
    assert (await engine.get_job("a", job.id)).status is JobStatus.PENDING


async def test_returned_jobs_are_copies(engine: Engine) -> None:
    job = (await engine.enqueue(T, NewJob(task_name="t", payload={"a": [1]}))).job
    job.payload["a"].append(2)
    assert (await engine.get_job(T, job.id)).payload == {"a": [1]}
