"""Workflows that grow and wait, through the SDK against the real app in-process: `ctx.add_steps` run by a
`Worker`, its errors as the client's classes, `workflows.signal` and `workflows.retry`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from queueflow_client import (
    AsyncQueueFlow,
    InvalidStateError,
    JobContext,
    LeaseLostError,
    NotFoundError,
    TaskRegistry,
    ValidationError,
    Worker,
    _calls,
    steps,
)
from queueflow_client._transport import AsyncTransport, RetryPolicy
from queueflow_client.types import LeasedJob

from tests.sdk.conftest import BASE


@pytest.fixture
async def worker_calls(http: Callable[[], httpx.AsyncClient]) -> AsyncIterator[AsyncTransport]:
    """The worker routes with the worker key, one call at a time."""
    transport = AsyncTransport(BASE, "key-w", timeout=5, retry=RetryPolicy(max_retries=0), http_client=http())
    yield transport
    await transport.http.aclose()


async def lease_one(worker_calls: AsyncTransport, queue: str = "default") -> LeasedJob:
    (job,) = await worker_calls(_calls.lease([queue], max_jobs=1, lease_seconds=30, wait_seconds=0, worker_id="t"))
    return job


async def test_a_split_step_adds_map_steps_that_reduce_waits_for(
    client: AsyncQueueFlow, make_worker: Callable[..., Worker]
) -> None:
    tasks = TaskRegistry()
    answered: list[list[tuple[str, str | None]]] = []

    @tasks.task("split")
    async def split(payload: dict[str, Any], ctx: JobContext) -> int:
        maps = [steps.task(f"map_{i}", "square", {"row": row}, required_by=["reduce"]) for i, row in enumerate([2, 3])]
        added = await ctx.add_steps(maps)
        again = await ctx.add_steps(maps)  # a delivery run again after a crash: nothing is added twice
        answered.append([(step.name, step.added_by) for step in added])
        assert [step.name for step in again] == ["map_0", "map_1"]
        return 2

    @tasks.task("square")
    async def square(payload: dict[str, Any], ctx: JobContext) -> int:
        return int(payload["row"]) ** 2

    @tasks.task("reduce")
    async def reduce(payload: dict[str, Any], ctx: JobContext) -> int:
        return sum(value for name, value in payload["_context"].items() if name.startswith("map_"))

    first = steps.task("split", "split")
    created = await client.workflows.create(
        steps.workflow("mr", [first, steps.task("reduce", "reduce", depends_on=[first])])
    )
    worker = make_worker(tasks)
    await worker.start()
    try:
        done = await client.workflows.wait(created.id, timeout=10)
    finally:
        await worker.stop()
    assert (done.status, done.context["reduce"]) == ("completed", 13)
    assert answered == [[("map_0", "split"), ("map_1", "split")]]
    by_name = {step.name: step for step in done.steps}
    assert set(by_name["reduce"].depends_on) == {"split", "map_0", "map_1"}
    assert (by_name["map_0"].added_by, by_name["split"].added_by) == ("split", None)


async def test_add_steps_errors_are_the_clients_classes(client: AsyncQueueFlow, worker_calls: AsyncTransport) -> None:
    await client.jobs.enqueue("lonely")
    lonely = await lease_one(worker_calls)
    with pytest.raises(InvalidStateError, match="not a workflow step"):
        await worker_calls(_calls.add_steps(lonely.id, lonely.lease_token, [steps.task("x", "t")]))

    first = steps.task("split", "split")
    await client.workflows.create(steps.workflow("w", [first, steps.task("reduce", "r", depends_on=[first])]))
    job = await lease_one(worker_calls)
    with pytest.raises(ValidationError):
        await worker_calls(_calls.add_steps(job.id, job.lease_token, [steps.task("m", "t", required_by=["nope"])]))
    with pytest.raises(LeaseLostError):
        await worker_calls(_calls.add_steps(job.id, "not-the-token", [steps.task("m", "t")]))
    added = await worker_calls(
        _calls.add_steps(job.id, job.lease_token, [steps.sleep("nap", 5, required_by=["reduce"])])
    )
    # No dependency: it waits at once (its time is a row), and reduce now waits for it too.
    assert [(step.name, step.status, step.added_by) for step in added] == [("nap", "waiting", "split")]


async def test_a_signal_sent_early_is_kept_and_a_repeat_changes_nothing(
    client: AsyncQueueFlow, worker_calls: AsyncTransport
) -> None:
    draft = steps.task("draft", "write")
    created = await client.workflows.create(
        steps.workflow("review", [draft, steps.signal("approval", timeout_seconds=3600, depends_on=[draft])])
    )
    early = await client.workflows.signal(created.id, "approval", {"by": "ada"})
    assert {step.name: step.status for step in early.steps} == {"draft": "enqueued", "approval": "pending"}
    assert (await client.workflows.signal(created.id, "approval", {"by": "ada"})).status == "running"
    with pytest.raises(InvalidStateError):
        await client.workflows.signal(created.id, "approval", {"by": "bo"})
    with pytest.raises(NotFoundError):
        await client.workflows.signal(created.id, "nothing-waits-for-this")

    job = await lease_one(worker_calls)
    await worker_calls(_calls.complete(job.id, job.lease_token, "a draft"))
    done = await client.workflows.get(created.id)
    assert done.status == "completed"
    assert done.context["approval"] == {"by": "ada"}


async def test_retry_runs_the_failed_part_again(client: AsyncQueueFlow, worker_calls: AsyncTransport) -> None:
    first = steps.task("a", "t", max_retries=0)
    created = await client.workflows.create(steps.workflow("w", [first, steps.task("b", "t", depends_on=[first])]))
    with pytest.raises(InvalidStateError):
        await client.workflows.retry(created.id)  # still running
    job = await lease_one(worker_calls)
    await worker_calls(_calls.fail(job.id, job.lease_token, "boom", retryable=False, retry_after_seconds=None))
    assert (await client.workflows.get(created.id)).status == "failed"
    retried = await client.workflows.retry(created.id)
    assert retried.status == "running"
    (a, b) = retried.steps
    assert (a.status, b.status) == ("enqueued", "pending")
    assert a.job_id is not None
    assert a.job_id != job.id  # a new job; the old one stays as it was
    assert (await client.jobs.get(job.id)).status == "dead_letter"
