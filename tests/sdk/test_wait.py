"""`jobs.wait`, `jobs.run` and `workflows.wait` against the app in-process: each is answered by the server's
`?wait_seconds=` the moment the object finishes (the test waits on the parked request, never on a clock)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from queueflow_client import AsyncQueueFlow, JobContext, TaskRegistry
from queueflow_client._waiting import chunk_for

from tests.inprocess import WatchedWakeups
from tests.sdk.conftest import Responses
from tests.sdk.test_worker import MakeWorker


async def test_wait_answers_when_the_job_finishes(
    client: AsyncQueueFlow, make_worker: MakeWorker, wakeups: WatchedWakeups, responses: Responses
) -> None:
    tasks, go = TaskRegistry(), asyncio.Event()

    @tasks.task("double")
    async def double(payload: dict[str, Any], ctx: JobContext) -> int:
        await go.wait()
        return int(payload["n"]) * 2

    job = await client.jobs.enqueue("double", payload={"n": 21})
    waiting = asyncio.create_task(client.jobs.wait(job.id, timeout=30))
    await wakeups.until_watching_finishes(1)
    worker = make_worker(tasks)
    await worker.start()
    go.set()
    finished = await asyncio.wait_for(waiting, 5)
    await worker.stop()
    assert (finished.status, finished.result) == ("completed", 42)
    # One request: the server held it until the finish (no polling).
    assert responses.count(f"/v1/jobs/{job.id}") == 1


async def test_run_enqueues_and_returns_the_finished_job(client: AsyncQueueFlow, make_worker: MakeWorker) -> None:
    tasks = TaskRegistry()

    @tasks.task("greet")
    async def greet(payload: dict[str, Any], ctx: JobContext) -> str:
        return f"hello {payload['name']}"

    worker = make_worker(tasks)
    await worker.start()
    job = await asyncio.wait_for(client.jobs.run("greet", {"name": "Ada"}, timeout=30, queue_name="default"), 5)
    await worker.stop()
    assert job.result == "hello Ada"


async def test_a_dead_letter_is_an_outcome_too(client: AsyncQueueFlow, make_worker: MakeWorker) -> None:
    tasks = TaskRegistry()

    @tasks.task("boom")
    async def boom(payload: dict[str, Any], ctx: JobContext) -> None:
        raise RuntimeError("boom")

    worker = make_worker(tasks)
    await worker.start()
    job = await asyncio.wait_for(client.jobs.run("boom", max_retries=0, timeout=30), 5)
    await worker.stop()
    assert job.status == "dead_letter"
    assert "boom" in (job.error_message or "")


async def test_wait_raises_timeout_error_when_the_job_is_still_unfinished(client: AsyncQueueFlow) -> None:
    job = await client.jobs.enqueue("nobody-runs-this")
    with pytest.raises(TimeoutError, match=f"job {job.id} has not finished after 0.01 s"):
        await client.jobs.wait(job.id, timeout=0.01)


async def test_workflows_wait(client: AsyncQueueFlow, make_worker: MakeWorker) -> None:
    tasks = TaskRegistry()

    @tasks.task("step")
    async def step(payload: dict[str, Any], ctx: JobContext) -> str:
        return "ok"

    workflow = await client.workflows.create(
        "two", [{"name": "a", "task_name": "step"}, {"name": "b", "task_name": "step", "depends_on": ["a"]}]
    )
    worker = make_worker(tasks)
    await worker.start()
    finished = await asyncio.wait_for(client.workflows.wait(workflow.id, timeout=30), 5)
    await worker.stop()
    assert finished.status == "completed"


def test_each_request_waits_less_than_the_read_timeout() -> None:
    class Http:
        def __init__(self, read: float | None) -> None:
            self.timeout = type("Timeout", (), {"read": read})()

    class Transport:
        def __init__(self, read: float | None) -> None:
            self.http = Http(read)

    assert chunk_for(Transport(30.0)) == 25.0
    assert chunk_for(Transport(None)) == 60.0
    assert chunk_for(Transport(300.0)) == 60.0
    assert chunk_for(Transport(2.0)) == 0.5
