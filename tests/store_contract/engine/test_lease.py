from __future__ import annotations

from datetime import timedelta

import pytest
from queueflow.clocks import TestClock
from queueflow.core.errors import LeaseLost, NotFound, ValidationError
from queueflow.core.types import AckOutcome, FailureRequest, HeartbeatResult, HeldLease, JobStatus, NewJob
from queueflow.engine import Engine

from tests.moments import T


async def test_lease_claims_in_priority_then_schedule_then_creation_order(engine: Engine, clock: TestClock) -> None:
    t0 = clock.now()
    plan = [("a", 0, None), ("b", 10, None), ("c", 10, None), ("d", 0, t0 - timedelta(hours=1))]
    plan += [("e", 0, t0 - timedelta(minutes=1)), ("f", 0, t0 - timedelta(minutes=1))]
    for name, priority, run_at in plan:
        await engine.enqueue(T, NewJob(task_name=name, priority=priority, run_at=run_at))
        clock.advance(seconds=1)
    leased = await engine.lease(["default"], max_jobs=10)
    # priority desc; then scheduled_at (d, then e/f, then a); e and f tie on scheduled_at, so created_at decides.
    assert [job.task_name for job in leased] == ["b", "c", "d", "e", "f", "a"]


async def test_lease_spans_several_queues_and_honours_max_jobs(engine: Engine, clock: TestClock) -> None:
    for queue in ["a", "b", "c", "a"]:
        await engine.enqueue(T, NewJob(task_name=queue, queue_name=queue))
        clock.advance(seconds=1)
    leased = await engine.lease(["a", "b"], max_jobs=2)
    assert [job.queue_name for job in leased] == ["a", "b"]
    leased = await engine.lease(["a", "b", "a"], max_jobs=5)
    assert [job.queue_name for job in leased] == ["a"]
    assert await engine.lease(["a", "b"]) == []


async def test_lease_of_task_names_takes_only_those_tasks(engine: Engine, clock: TestClock) -> None:
    for name in ["resize", "send", "resize", "send"]:
        await engine.enqueue(T, NewJob(task_name=name))
        clock.advance(seconds=1)
    leased = await engine.lease(["default"], max_jobs=10, task_names=["send", "send"])
    assert [job.task_name for job in leased] == ["send", "send"]
    with pytest.raises(ValidationError) as raised:
        await engine.lease(["default"], task_names=[])
    assert [error.loc for error in raised.value.errors] == [("task_names",)]
    with pytest.raises(ValidationError) as raised:
        await engine.lease(["default"], task_names=["ok", "x" * 201])
    assert [error.loc for error in raised.value.errors] == [("task_names", 1)]


async def test_lease_drains_every_tenant(engine: Engine) -> None:
    await engine.enqueue("a", NewJob(task_name="t"))
    await engine.enqueue("b", NewJob(task_name="t"))
    assert {job.tenant_id for job in await engine.lease(["default"], max_jobs=5)} == {"a", "b"}


async def test_a_claim_sets_the_lease(engine: Engine, clock: TestClock) -> None:
    job = (await engine.enqueue(T, NewJob(task_name="t"))).job
    clock.advance(seconds=5)
    (leased,) = await engine.lease(["default"], lease_seconds=45)
    assert leased.id == job.id
    assert leased.status is JobStatus.RUNNING
    assert leased.lease_token
    assert leased.delivery_count == 1
    assert leased.started_at == clock.now()
    assert leased.locked_until == clock.now() + timedelta(seconds=45)
    assert leased.deadline is None
    assert await engine.lease(["default"]) == []


async def test_every_claim_mints_a_new_token(engine: Engine, clock: TestClock) -> None:
    await engine.enqueue(T, NewJob(task_name="t"))
    (first,) = await engine.lease(["default"], lease_seconds=10)
    clock.advance(seconds=11)
    await engine.run_maintenance()
    clock.advance(seconds=60)
    (second,) = await engine.lease(["default"])
    assert second.id == first.id
    assert second.lease_token != first.lease_token
    assert second.delivery_count == 2


async def test_first_lease_is_capped_at_the_timeout(engine: Engine, clock: TestClock) -> None:
    await engine.enqueue(T, NewJob(task_name="t", timeout_seconds=20))
    (job,) = await engine.lease(["default"], lease_seconds=60)
    assert job.deadline == clock.now() + timedelta(seconds=20)
    assert job.locked_until == job.deadline


async def test_heartbeat_extends_but_never_past_the_deadline(engine: Engine, clock: TestClock) -> None:
    await engine.enqueue(T, NewJob(task_name="t", timeout_seconds=100))
    (job,) = await engine.lease(["default"], lease_seconds=30)
    token = job.lease_token or ""
    clock.advance(seconds=20)
    beat = await engine.heartbeat(job.id, token, lease_seconds=30)
    assert beat.locked_until == clock.now() + timedelta(seconds=30)
    deadline = clock.now() - timedelta(seconds=20) + timedelta(seconds=100)
    for _ in range(3):
        clock.advance(seconds=25)
        beat = await engine.heartbeat(job.id, token, lease_seconds=30)
        assert beat.locked_until == min(clock.now() + timedelta(seconds=30), deadline)
    assert beat.locked_until == deadline
    clock.advance(seconds=5)
    with pytest.raises(LeaseLost):
        await engine.heartbeat(job.id, token)


async def test_heartbeat_after_the_lease_expired_is_lease_lost(engine: Engine, clock: TestClock) -> None:
    await engine.enqueue(T, NewJob(task_name="t"))
    (job,) = await engine.lease(["default"], lease_seconds=10)
    clock.advance(seconds=10)
    with pytest.raises(LeaseLost):
        await engine.heartbeat(job.id, job.lease_token or "")
    with pytest.raises(LeaseLost):
        await engine.complete(job.id, job.lease_token or "", None)


async def test_an_expired_lease_is_over_for_every_call_before_any_janitor(engine: Engine, clock: TestClock) -> None:
    await engine.enqueue(T, NewJob(task_name="t", timeout_seconds=20))  # its deadline ends its lease too
    await engine.enqueue(T, NewJob(task_name="t"))
    capped, plain = sorted(
        await engine.lease(["default"], max_jobs=2, lease_seconds=60), key=lambda j: j.deadline is None
    )
    clock.advance(seconds=20)  # capped's deadline
    with pytest.raises(LeaseLost):
        await engine.fail(capped.id, capped.lease_token or "", "boom")
    clock.advance(seconds=40)  # plain's locked_until: passed from this instant on
    for job in (capped, plain):
        token = job.lease_token or ""
        for call in (engine.heartbeat(job.id, token), engine.complete(job.id, token), engine.fail(job.id, token, "x")):
            with pytest.raises(LeaseLost):
                await call
        held = [HeldLease(job.id, token)]
        assert [r.outcome for r in await engine.heartbeat_many(held)] == [AckOutcome.LEASE_LOST]
        assert [r.outcome for r in await engine.release(held)] == [AckOutcome.LEASE_LOST]
        failure = FailureRequest(job_id=job.id, lease_token=token, error="x")
        assert [r.outcome for r in await engine.ack(fail=[failure])] == [AckOutcome.LEASE_LOST]
        assert (await engine.get_job(T, job.id)) == job  # nothing written


async def test_stale_or_wrong_tokens_change_nothing(engine: Engine) -> None:
    await engine.enqueue(T, NewJob(task_name="t"))
    (job,) = await engine.lease(["default"])
    for call in (
        engine.heartbeat(job.id, "not-the-token"),
        engine.complete(job.id, "not-the-token", {"x": 1}),
        engine.fail(job.id, "not-the-token", "boom"),
    ):
        with pytest.raises(LeaseLost):
            await call
    assert await engine.get_job(T, job.id) == job


async def test_worker_calls_on_unknown_jobs_are_not_found(engine: Engine) -> None:
    for call in (
        engine.heartbeat("job_missing", "t"),
        engine.complete("job_missing", "t", None),
        engine.fail("job_missing", "t", "boom"),
    ):
        with pytest.raises(NotFound):
            await call


@pytest.mark.parametrize(
    ("queues", "max_jobs", "lease_seconds"),
    [([], 1, 30), (["bad name"], 1, 30), (["q"] * 51, 1, 30), (["q"], 0, 30), (["q"], 1001, 30), (["q"], 1, 0.5)],
)
async def test_invalid_lease_requests(engine: Engine, queues: list[str], max_jobs: int, lease_seconds: float) -> None:
    with pytest.raises(ValidationError):
        await engine.lease(queues, max_jobs=max_jobs, lease_seconds=lease_seconds)


async def test_invalid_heartbeat_lease(engine: Engine) -> None:
    with pytest.raises(ValidationError):
        await engine.heartbeat("job_x", "t", lease_seconds=3601)


async def test_next_due_is_the_earliest_delayed_job_or_retry_of_the_queues(engine: Engine, clock: TestClock) -> None:
    assert await engine.next_due(["default"]) is None
    await engine.enqueue(T, NewJob(task_name="now"))  # due already: claimable, so not "next"
    await engine.enqueue(T, NewJob(task_name="later", delay_seconds=60))
    await engine.enqueue(T, NewJob(task_name="other queue", queue_name="other", delay_seconds=5))
    assert await engine.next_due(["default"]) == clock.now() + timedelta(seconds=60)
    assert await engine.next_due(["default", "other", "default"]) == clock.now() + timedelta(seconds=5)
    (job,) = await engine.lease(["default"])
    failed = await engine.fail(job.id, job.lease_token or "", "boom", retry_after_seconds=30)
    assert await engine.next_due(["default"]) == failed.next_retry_at == clock.now() + timedelta(seconds=30)
    clock.advance(seconds=45)
    assert await engine.next_due(["default"]) == clock.now() + timedelta(seconds=15)
    assert await engine.next_due(["nothing here"]) is None


async def test_next_due_after_a_past_claim_answers_a_job_due_since(engine: Engine, clock: TestClock) -> None:
    # A lessee's claim found nothing; the job became due before it asked when to look again.
    claimed_at = clock.now()
    await engine.enqueue(T, NewJob(task_name="soon", delay_seconds=1))
    clock.advance(seconds=2)
    assert await engine.next_due(["default"]) is None
    assert await engine.next_due(["default"], after=claimed_at) == claimed_at + timedelta(seconds=1)


async def test_heartbeat_many_extends_held_leases_and_reports_lost_ones(engine: Engine, clock: TestClock) -> None:
    await engine.enqueue(T, NewJob(task_name="t"))
    clock.advance(seconds=1)
    await engine.enqueue(T, NewJob(task_name="t", timeout_seconds=20))
    plain, capped = await engine.lease(["default"], max_jobs=2, lease_seconds=10)
    clock.advance(seconds=5)
    items = [HeldLease(job.id, job.lease_token or "") for job in (plain, capped)] + [HeldLease(plain.id, "stale")]
    results = await engine.heartbeat_many(items, lease_seconds=30)
    assert results == [
        HeartbeatResult(plain.id, clock.now() + timedelta(seconds=30)),
        HeartbeatResult(capped.id, clock.now() + timedelta(seconds=15)),  # claim time + timeout_seconds
        HeartbeatResult(plain.id, None),
    ]
    assert [result.outcome for result in results] == [AckOutcome.OK, AckOutcome.OK, AckOutcome.LEASE_LOST]


@pytest.mark.parametrize(("count", "lease_seconds"), [(0, 30), (1001, 30), (1, 0), (1, 3601)])
async def test_invalid_heartbeat_many(engine: Engine, count: int, lease_seconds: float) -> None:
    with pytest.raises(ValidationError):
        await engine.heartbeat_many([HeldLease("job_x", "t")] * count, lease_seconds=lease_seconds)


async def test_jobs_of_one_batch_are_claimed_in_the_batchs_order(engine: Engine) -> None:
    # Same priority, same times: the claim's last tie-break, the id, must follow the batch. 20 jobs, so that a
    # random order passes with odds of 1 in 20!.
    enqueued = await engine.enqueue_many(T, [NewJob(task_name=f"t{i}") for i in range(20)])
    batch = [item.job.id for item in enqueued]
    assert batch == sorted(batch)
    assert [(await engine.lease(["default"]))[0].id for _ in range(3)] == batch[:3]  # single-job leases
    assert [job.id for job in await engine.lease(["default"], max_jobs=17)] == batch[3:]
