"""A short tour of the engine on the in-memory store: what happens to a few jobs, step by step."""

from __future__ import annotations

from collections.abc import Callable

from queueflow.core.types import BackoffPolicy, NewJob
from queueflow.testing import TestClock, make_engine


async def run_demo(out: Callable[[str], None] = print) -> None:
    clock = TestClock()
    engine = make_engine(clock=clock)
    tenant = "default"

    first = (await engine.enqueue(tenant, NewJob(task_name="send_email", payload={"to": "ada@example.com"}))).job
    flaky = (
        await engine.enqueue(
            tenant,
            NewJob(task_name="resize", max_retries=1, backoff=BackoffPolicy(base_seconds=10, jitter=False)),
        )
    ).job
    out(f"enqueued {first.id} (send_email) and {flaky.id} (resize, 1 retry)")

    for job in await engine.lease(["default"], max_jobs=2):
        if job.task_name == "send_email":
            done = await engine.complete(job.id, job.lease_token or "", {"sent": True})
            out(f"{done.id}: {done.status} with result {done.result}")
        else:
            failed = await engine.fail(job.id, job.lease_token or "", "image too large")
            out(f"{failed.id}: {failed.status}, next try at {failed.next_retry_at:%H:%M:%S}")

    clock.advance(seconds=10)
    (again,) = await engine.lease(["default"])
    out(f"{again.id}: delivery {again.delivery_count} after 10 s; the worker vanishes without a word")
    clock.advance(seconds=31)
    report = await engine.run_maintenance()
    gone = await engine.get_job(tenant, again.id)
    out(f"janitor reclaimed {report.reclaimed}: {gone.id} is {gone.status} ({gone.error_message})")
    replayed = await engine.retry_job(tenant, gone.id)
    out(f"replayed from the dead-letter queue: {replayed.id} is {replayed.status}, retry_count {replayed.retry_count}")
    for stats in await engine.queue_stats(tenant):
        out(f"queue {stats.name}: {stats.pending} pending, {stats.completed} completed")
