"""Unique jobs and debounce (README.md, "Unique jobs and debounce") through the Engine, on every store: each rule,
each kind of `states` subset, period windows and debounce on the test clock, a batch's order, and the idempotency
key first."""

from __future__ import annotations

from datetime import timedelta

import pytest
from queueflow.clocks import TestClock
from queueflow.core.errors import ValidationError
from queueflow.core.types import JobFilter, JobStatus, NewJob, OnConflict, UniqueOutcome, UniqueRule
from queueflow.core.unique import Duplicate
from queueflow.engine import Engine

from tests.moments import T

SKIP, REPLACE, ERROR = OnConflict.SKIP, OnConflict.REPLACE, OnConflict.ERROR


def new(key: str = "customer-1", payload: dict[str, object] | None = None, **rule: object) -> NewJob:
    return NewJob(task_name="sync", payload=payload or {}, unique=UniqueRule(key=key, **rule))  # type: ignore[arg-type]


async def keyed(engine: Engine, key: str = "customer-1") -> list[str]:
    page = await engine.list_jobs(T, JobFilter(unique_key=key), limit=100)
    return [job.id for job in page.items]


async def test_a_new_key_creates_its_job_and_skip_answers_with_it_unchanged(engine: Engine) -> None:
    first = await engine.enqueue(T, new(payload={"n": 1}))
    assert (first.created, first.unique, first.job.unique_key) == (True, None, "customer-1")
    again = await engine.enqueue(T, new(payload={"n": 2}))
    assert (again.created, again.unique, again.job) == (False, UniqueOutcome.SKIPPED, first.job)
    other = await engine.enqueue(T, new("customer-2"))
    assert other.created
    assert await keyed(engine) == [first.job.id]
    # Scoped to the tenant, not the queue or task.
    assert (await engine.enqueue("tenant-b", new())).created
    assert not (
        await engine.enqueue(T, NewJob(task_name="other", queue_name="q", unique=UniqueRule(key="customer-1")))
    ).created


async def test_replace_rewrites_a_job_not_started_and_skips_a_started_one(engine: Engine, clock: TestClock) -> None:
    first = (await engine.enqueue(T, new(payload={"n": 1}, on_conflict=REPLACE))).job
    clock.advance(seconds=5)
    later = clock.now() + timedelta(minutes=1)
    rule = UniqueRule(key="customer-1", on_conflict=REPLACE)
    again = await engine.enqueue(
        T, NewJob(task_name="sync", payload={"n": 2}, priority=7, metadata={"m": 1}, run_at=later, unique=rule)
    )
    assert (again.created, again.unique) == (False, UniqueOutcome.REPLACED)
    assert again.job.id == first.id
    assert (again.job.payload, again.job.priority, again.job.metadata) == ({"n": 2}, 7, {"m": 1})
    assert again.job.scheduled_at == later
    assert await engine.get_job(T, first.id) == again.job
    # Without run_at or a delay, it is due now.
    now_due = (await engine.enqueue(T, new(payload={"n": 3}, on_conflict=REPLACE))).job
    assert now_due.scheduled_at == clock.now()
    (running,) = await engine.lease(["default"])
    started = await engine.enqueue(T, new(payload={"n": 4}, on_conflict=REPLACE))
    assert (started.unique, started.job.payload, started.job.status) == (
        UniqueOutcome.SKIPPED,
        {"n": 3},
        JobStatus.RUNNING,
    )
    assert running.id == first.id


async def test_error_raises_duplicate_naming_the_existing_job(engine: Engine) -> None:
    first = (await engine.enqueue(T, new(on_conflict=ERROR))).job
    with pytest.raises(Duplicate) as raised:
        await engine.enqueue(T, new(on_conflict=ERROR))
    assert (raised.value.existing_job_id, raised.value.index) == (first.id, None)
    assert await keyed(engine) == [first.id]


async def test_a_batch_item_meeting_a_job_with_error_fails_the_whole_batch(engine: Engine) -> None:
    first = (await engine.enqueue(T, new())).job
    batch = [new("customer-9"), NewJob(task_name="plain"), new(on_conflict=ERROR)]
    with pytest.raises(Duplicate) as raised:
        await engine.enqueue_many(T, batch)
    assert (raised.value.existing_job_id, raised.value.index) == (first.id, 2)
    assert await keyed(engine, "customer-9") == []
    assert len((await engine.list_jobs(T, limit=100)).items) == 1


async def test_a_batch_applies_two_items_of_one_key_in_its_order(engine: Engine) -> None:
    made, skipped = await engine.enqueue_many(T, [new(payload={"n": 1}), new(payload={"n": 2})])
    assert (made.created, skipped.unique, skipped.job.id) == (True, UniqueOutcome.SKIPPED, made.job.id)
    assert skipped.job.payload == {"n": 1}
    made2, replaced = await engine.enqueue_many(
        T, [new("k2", payload={"n": 1}, on_conflict=REPLACE), new("k2", payload={"n": 2}, on_conflict=REPLACE)]
    )
    assert (made2.created, replaced.unique, replaced.job.id) == (True, UniqueOutcome.REPLACED, made2.job.id)
    assert (await engine.get_job(T, made2.job.id)).payload == {"n": 2}
    with pytest.raises(Duplicate) as raised:
        await engine.enqueue_many(T, [new("k3"), new("k3", on_conflict=ERROR)])
    assert raised.value.index == 1
    assert await keyed(engine, "k3") == []


async def test_the_idempotency_key_is_checked_first(engine: Engine) -> None:
    rule = UniqueRule(key="customer-1", on_conflict=ERROR)
    first = await engine.enqueue(T, NewJob(task_name="sync", idempotency_key="req-1", unique=rule))
    repeat = await engine.enqueue(T, NewJob(task_name="sync", idempotency_key="req-1", unique=rule))
    assert (repeat.created, repeat.unique, repeat.job.id) == (False, None, first.job.id)
    with pytest.raises(Duplicate):
        await engine.enqueue(T, NewJob(task_name="sync", idempotency_key="req-2", unique=rule))


@pytest.mark.parametrize("leaves", ["complete", "cancel", "dead_letter"])
async def test_the_key_is_free_again_once_its_job_leaves_the_states(engine: Engine, leaves: str) -> None:
    first = (await engine.enqueue(T, new(on_conflict=ERROR))).job
    if leaves == "cancel":
        await engine.cancel_job(T, first.id)
    else:
        (held,) = await engine.lease(["default"])
        assert held.id == first.id
        if leaves == "complete":
            await engine.complete(held.id, held.lease_token or "")
        else:
            await engine.fail(held.id, held.lease_token or "", "boom", retryable=False)
    second = await engine.enqueue(T, new(on_conflict=ERROR))
    assert second.created
    assert sorted(await keyed(engine)) == sorted([second.job.id, first.id])


async def test_a_running_or_retrying_job_holds_the_key_by_default(engine: Engine) -> None:
    first = (await engine.enqueue(T, new())).job
    (held,) = await engine.lease(["default"])
    assert (await engine.enqueue(T, new())).unique is UniqueOutcome.SKIPPED
    await engine.fail(held.id, held.lease_token or "", "again", retry_after_seconds=60)
    assert (await engine.get_job(T, first.id)).status is JobStatus.RETRYING
    assert (await engine.enqueue(T, new())).job.id == first.id


async def test_terminal_only_states_count_finished_jobs_and_not_live_ones(engine: Engine) -> None:
    completed_only = {"states": (JobStatus.COMPLETED,)}
    first = await engine.enqueue(T, new(**completed_only))
    second = await engine.enqueue(T, new(**completed_only))
    assert (first.created, second.created) == (True, True)  # a pending job is not in ["completed"]
    (held,) = await engine.lease(["default"])
    await engine.complete(held.id, held.lease_token or "")
    third = await engine.enqueue(T, new(**completed_only))
    assert (third.unique, third.job.id) == (UniqueOutcome.SKIPPED, held.id)
    # Another subset over the same key sees the live one.
    assert (await engine.enqueue(T, new(states=(JobStatus.PENDING,)))).unique is UniqueOutcome.SKIPPED


async def test_the_newest_job_in_the_states_is_the_existing_one(engine: Engine, clock: TestClock) -> None:
    cancelled = (await engine.enqueue(T, new())).job
    await engine.cancel_job(T, cancelled.id)
    clock.advance(seconds=1)
    newer = (await engine.enqueue(T, new())).job
    await engine.cancel_job(T, newer.id)
    found = await engine.enqueue(T, new(states=(JobStatus.CANCELLED, JobStatus.COMPLETED)))
    assert found.job.id == newer.id


async def test_a_period_holds_one_job_per_window_whatever_its_status(engine: Engine, clock: TestClock) -> None:
    clock.set(clock.now().replace(minute=0, second=0, microsecond=0) + timedelta(hours=1, minutes=10))
    first = (await engine.enqueue(T, new(period_seconds=3600))).job
    await engine.cancel_job(T, first.id)
    clock.advance(minutes=49, seconds=59)
    assert (await engine.enqueue(T, new(period_seconds=3600))).job.id == first.id
    clock.advance(seconds=1)  # the next hour's window
    second = await engine.enqueue(T, new(period_seconds=3600))
    assert second.created
    with pytest.raises(Duplicate):
        await engine.enqueue(T, new(period_seconds=3600, on_conflict=ERROR))


async def test_debounce_runs_once_after_the_last_enqueue(engine: Engine, clock: TestClock) -> None:
    rule = {"on_conflict": REPLACE, "debounce_seconds": 10}
    first = (await engine.enqueue(T, new(payload={"n": 1}, **rule))).job
    assert first.scheduled_at == clock.now() + timedelta(seconds=10)
    for n in range(2, 6):
        clock.advance(seconds=4)
        moved = await engine.enqueue(T, new(payload={"n": n}, **rule))
        assert (moved.unique, moved.job.id) == (UniqueOutcome.REPLACED, first.id)
        assert moved.job.scheduled_at == clock.now() + timedelta(seconds=10)
    assert await engine.lease(["default"]) == []
    clock.advance(seconds=10)
    (ran,) = await engine.lease(["default"])
    assert (ran.id, ran.payload) == (first.id, {"n": 5})


async def test_debounce_never_puts_a_job_off_past_its_cap(engine: Engine, clock: TestClock) -> None:
    capped = {"on_conflict": REPLACE, "debounce_seconds": 10, "debounce_max_seconds": 25}
    first = (await engine.enqueue(T, new(**capped))).job
    clock.advance(seconds=20)
    moved = (await engine.enqueue(T, new(**capped))).job
    assert moved.scheduled_at == first.created_at + timedelta(seconds=25)
    # The default cap: 10 × debounce_seconds.
    default = {"on_conflict": REPLACE, "debounce_seconds": 2}
    other = (await engine.enqueue(T, new("k2", **default))).job
    for _ in range(12):
        clock.advance(seconds=1.9)
        last = (await engine.enqueue(T, new("k2", **default))).job
    assert last.id == other.id
    assert last.scheduled_at == other.created_at + timedelta(seconds=20)


async def test_debounce_with_the_job_running_skips(engine: Engine, clock: TestClock) -> None:
    rule = {"on_conflict": REPLACE, "debounce_seconds": 0.5}
    first = (await engine.enqueue(T, new(payload={"n": 1}, **rule))).job
    assert await engine.lease(["default"]) == []  # not due yet
    clock.advance(seconds=1)
    (running,) = await engine.lease(["default"])
    assert running.id == first.id
    again = await engine.enqueue(T, new(payload={"n": 2}, **rule))
    assert (again.unique, again.job.payload) == (UniqueOutcome.SKIPPED, {"n": 1})


@pytest.mark.parametrize(
    ("rule", "extra", "field"),
    [
        ({"key": ""}, {}, "unique.key"),
        ({"key": "k" * 256}, {}, "unique.key"),
        ({"key": "k", "states": ()}, {}, "unique.states"),
        ({"key": "k", "states": (JobStatus.PENDING,), "period_seconds": 60}, {}, "unique.states"),
        ({"key": "k", "period_seconds": 0}, {}, "unique.period_seconds"),
        ({"key": "k", "period_seconds": 31_536_001}, {}, "unique.period_seconds"),
        ({"key": "k", "debounce_seconds": 5}, {}, "unique.debounce_seconds"),
        ({"key": "k", "on_conflict": REPLACE, "debounce_seconds": 0}, {}, "unique.debounce_seconds"),
        ({"key": "k", "on_conflict": REPLACE, "debounce_seconds": 86_401}, {}, "unique.debounce_seconds"),
        (
            {"key": "k", "on_conflict": REPLACE, "debounce_seconds": 5, "states": (JobStatus.PENDING,)},
            {},
            "unique.debounce_seconds",
        ),
        (
            {"key": "k", "on_conflict": REPLACE, "debounce_seconds": 5, "period_seconds": 60},
            {},
            "unique.debounce_seconds",
        ),
        ({"key": "k", "on_conflict": REPLACE, "debounce_seconds": 5}, {"delay_seconds": 1}, "delay_seconds"),
        (
            {"key": "k", "on_conflict": REPLACE, "debounce_seconds": 5, "debounce_max_seconds": 4},
            {},
            "unique.debounce_max_seconds",
        ),
        (
            {"key": "k", "on_conflict": REPLACE, "debounce_seconds": 5, "debounce_max_seconds": 86_401},
            {},
            "unique.debounce_max_seconds",
        ),
        ({"key": "k", "debounce_max_seconds": 30}, {}, "unique.debounce_max_seconds"),
    ],
)
async def test_every_bad_rule_is_refused_naming_its_field(
    engine: Engine, rule: dict[str, object], extra: dict[str, object], field: str
) -> None:
    with pytest.raises(ValidationError) as raised:
        await engine.enqueue(T, NewJob(task_name="t", unique=UniqueRule(**rule), **extra))  # type: ignore[arg-type]
    assert field in {error.field for error in raised.value.errors}
    assert (await engine.list_jobs(T)).items == []


async def test_the_debounce_states_may_be_spelled_out_in_any_order(engine: Engine) -> None:
    states = (JobStatus.RUNNING, JobStatus.PENDING, JobStatus.RETRYING)
    rule = UniqueRule(key="k", states=states, on_conflict=REPLACE, debounce_seconds=5)
    assert (await engine.enqueue(T, NewJob(task_name="t", unique=rule))).created


async def test_a_batch_item_is_refused_at_its_index(engine: Engine) -> None:
    with pytest.raises(ValidationError) as raised:
        await engine.enqueue_many(T, [new("a"), new("")])
    assert [error.field for error in raised.value.errors] == ["jobs.1.unique.key"]
