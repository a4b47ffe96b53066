"""`queue_throughput`: completions and dead-letters per queue and minute, for the dashboard's charts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from queueflow.clocks import TestClock
from queueflow.core.types import JobStatus, NewJob, QueueMinute
from queueflow.engine import Engine
from queueflow.ports import Store

from tests.moments import START, T
from tests.store_contract.store_rows import OTHER, at, in_status


async def _finish(engine: Engine, queue: str, *, fail: bool = False) -> None:
    await engine.enqueue(T, NewJob(task_name="t", queue_name=queue, max_retries=0))
    (job,) = await engine.lease([queue])
    if fail:
        assert (await engine.fail(job.id, job.lease_token or "", "boom")).status is JobStatus.DEAD_LETTER
    else:
        await engine.complete(job.id, job.lease_token or "")


async def test_counts_endings_per_queue_and_minute(engine: Engine, clock: TestClock) -> None:
    clock.set(datetime(2026, 3, 1, 12, 0, 10, tzinfo=UTC))
    await _finish(engine, "mail")
    await _finish(engine, "mail", fail=True)
    clock.advance(seconds=55)  # 12:01:05
    await _finish(engine, "mail")
    await _finish(engine, "images")
    await engine.enqueue(T, NewJob(task_name="never-run", queue_name="mail"))
    (cancelled,) = [(await engine.enqueue(T, NewJob(task_name="c", queue_name="mail"))).job]
    await engine.cancel_job(T, cancelled.id)  # a cancellation is neither a completion nor a failure
    await engine.enqueue("tenant-b", NewJob(task_name="other", queue_name="mail"))
    (other,) = await engine.lease(["mail"])
    await engine.complete(other.id, other.lease_token or "")  # another tenant's

    assert await engine.queue_throughput(T) == [
        QueueMinute(name="images", minute=datetime(2026, 3, 1, 12, 1, tzinfo=UTC), completed=1),
        QueueMinute(name="mail", minute=datetime(2026, 3, 1, 12, 0, tzinfo=UTC), completed=1, dead_lettered=1),
        QueueMinute(name="mail", minute=datetime(2026, 3, 1, 12, 1, tzinfo=UTC), completed=1),
    ]


async def test_leaves_out_minutes_before_the_window(engine: Engine, clock: TestClock) -> None:
    clock.set(datetime(2026, 3, 1, 12, 0, 59, tzinfo=UTC))
    await _finish(engine, "q")
    clock.set(datetime(2026, 3, 1, 13, 0, 30, tzinfo=UTC))
    await _finish(engine, "q")
    # The last 60 minutes end with the current one, 13:00, and so start at 12:01.
    assert [m.minute for m in await engine.queue_throughput(T)] == [datetime(2026, 3, 1, 13, 0, tzinfo=UTC)]
    assert len(await engine.queue_throughput(T, minutes=61)) == 2
    assert await engine.queue_throughput("nobody") == []


async def test_store_counts_each_ending_from_since_on_by_utc_minute(store: Store) -> None:
    """`JobStore.queue_throughput` directly: completed and dead_letter only, `since` inclusive, this tenant's."""
    await in_status(store, JobStatus.COMPLETED, "a", now=at(-1))  # before `since`
    await in_status(store, JobStatus.COMPLETED, "a", now=at(0))  # exactly at `since`
    await in_status(store, JobStatus.DEAD_LETTER, "a", now=at(59.5))
    await in_status(store, JobStatus.COMPLETED, "a", now=at(60))  # the next minute
    await in_status(store, JobStatus.CANCELLED, "a", now=at(5))
    await in_status(store, JobStatus.RETRYING, "a", now=at(5))
    await in_status(store, JobStatus.RUNNING, "b", now=at(5))
    minute = START.replace(second=0, microsecond=0)
    assert await store.queue_throughput(tenant_id=T, since=at(0)) == [
        QueueMinute(name="a", minute=minute, completed=1, dead_lettered=1),
        QueueMinute(name="a", minute=minute + timedelta(minutes=1), completed=1),
    ]
    assert await store.queue_throughput(tenant_id=OTHER, since=at(-60)) == []
    assert await store.queue_throughput(tenant_id="nul\x00", since=at(-60)) == []
