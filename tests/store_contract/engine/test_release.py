"""`Engine.release` on every store (README.md, "The HTTP API"): each item released or `lease_lost` on its own, in
order, with the job's status; a scoped key sees another tenant's job as missing; nothing counts as a retry."""

from __future__ import annotations

import pytest
from queueflow.clocks import TestClock
from queueflow.core.errors import ValidationError
from queueflow.core.types import AckOutcome, AckResult, FailureRequest, HeldLease, JobStatus, NewJob
from queueflow.engine import Engine

from tests.moments import T

OTHER = "tenant-b"
OK, LOST = AckOutcome.OK, AckOutcome.LEASE_LOST


async def test_release_answers_each_item_in_order_with_the_jobs_status(engine: Engine, clock: TestClock) -> None:
    await engine.enqueue_many(T, [NewJob(task_name="a", priority=3), NewJob(task_name="b", priority=2)])
    await engine.enqueue(T, NewJob(task_name="c", priority=1, max_retries=0))
    a, b, c = await engine.lease(["default"], max_jobs=3, lease_seconds=10)
    (failed,) = await engine.ack(
        fail=[FailureRequest(job_id=c.id, lease_token=c.lease_token or "", error="boom", retryable=False)]
    )
    assert failed.status is JobStatus.DEAD_LETTER
    clock.advance(5)

    results = await engine.release(
        [
            HeldLease(b.id, b.lease_token or ""),
            HeldLease(c.id, c.lease_token or ""),  # finished
            HeldLease("job_missing", "x"),
            HeldLease(b.id, b.lease_token or ""),  # released by the first item
        ]
    )

    assert results == [
        AckResult(b.id, OK, JobStatus.PENDING, "default"),
        AckResult(c.id, LOST, JobStatus.DEAD_LETTER, "default"),
        AckResult("job_missing", LOST, None, None),
        AckResult(b.id, LOST, JobStatus.PENDING, "default"),
    ]
    clock.advance(6)  # a's lease has passed: no janitor came by, and it cannot be released any more
    assert await engine.release([HeldLease(a.id, a.lease_token or "")]) == [
        AckResult(a.id, LOST, JobStatus.RUNNING, "default")
    ]
    (again,) = await engine.lease(["default"], max_jobs=1)
    assert (again.id, again.delivery_count, again.retry_count) == (b.id, 1, 0)


async def test_a_scoped_release_treats_another_tenants_job_as_missing(engine: Engine) -> None:
    await engine.enqueue(T, NewJob(task_name="ours", priority=1))
    await engine.enqueue(OTHER, NewJob(task_name="theirs"))
    leased = {job.tenant_id: job for job in await engine.lease(["default"], max_jobs=2)}
    ours, theirs = leased[T], leased[OTHER]

    results = await engine.release(
        [HeldLease(theirs.id, theirs.lease_token or ""), HeldLease(ours.id, ours.lease_token or "")], scope=T
    )

    assert results == [AckResult(theirs.id, LOST, None, None), AckResult(ours.id, OK, JobStatus.PENDING, "default")]
    assert (await engine.get_job(OTHER, theirs.id)).status is JobStatus.RUNNING


@pytest.mark.parametrize("count", [0, 1001])
async def test_release_takes_1_to_1000_items(engine: Engine, count: int) -> None:
    with pytest.raises(ValidationError):
        await engine.release([HeldLease(f"job_{i}", "t") for i in range(count)])
