"""The SDK and both kinds of Python worker against a real `queueflow serve` on PostgreSQL (development mode)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, TypeVar

from queueflow_client import JobContext, QueueFlow, Step, TaskRegistry, Worker

from tests.e2e.live import live_server

T = TypeVar("T")


def wait_until(fetch: Callable[[], T], done: Callable[[T], bool], timeout: float = 15) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = fetch()
        if done(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.05)  # a real server in another process: short real waits are all there is


def wait_for_status(client: QueueFlow, job_id: str, status: str, timeout: float = 15) -> Any:
    return wait_until(lambda: client.jobs.get(job_id), lambda job: job.status == status, timeout)


def test_client_and_remote_worker_on_postgres(database_url: str) -> None:
    tasks = TaskRegistry()

    @tasks.task("add")
    async def add(payload: dict[str, Any], ctx: JobContext) -> int:
        return int(payload["a"]) + int(payload["b"])

    with live_server("--database-url", database_url, "--mode", "api") as base, QueueFlow(base) as client:
        job = client.jobs.enqueue("add", payload={"a": 1, "b": 2}, idempotency_key="live-1")
        assert client.jobs.enqueue("add", idempotency_key="live-1").id == job.id
        many = client.jobs.enqueue_many([{"task_name": "add", "payload": {"a": n, "b": n}} for n in range(3)])

        async def work() -> None:
            worker = Worker(base, None, tasks, concurrency=2, wait_seconds=1)
            await worker.start()
            try:
                for each in [job, *many]:
                    await asyncio.to_thread(wait_for_status, client, each.id, "completed")
            finally:
                await worker.stop()

        asyncio.run(work())
        assert [client.jobs.get(j.id).result for j in [job, *many]] == [3, 0, 2, 4]
        assert sum(queue.completed for queue in client.queues.list()) == 4
        assert len(list(client.jobs.list(status="completed", page_size=2))) == 4
        cancelled = client.jobs.enqueue("add", delay_seconds=3600)
        assert client.jobs.cancel(cancelled.id).status == "cancelled"


def test_in_process_tasks_in_worker_mode(database_url: str) -> None:
    with (
        live_server("--database-url", database_url, "--tasks", "tests.sdk.sample_tasks:tasks") as base,
        QueueFlow(base) as client,
    ):
        job = client.jobs.enqueue("shout", payload={"text": "hello"})
        done = wait_for_status(client, job.id, "completed")
        assert (done.status, done.result) == ("completed", "HELLO")


def test_a_two_step_workflow_runs_to_completion_on_the_remote_worker(database_url: str) -> None:
    tasks = TaskRegistry()

    @tasks.task("extract")
    async def extract(payload: dict[str, Any], ctx: JobContext) -> list[int]:
        return list(range(int(payload["n"])))

    @tasks.task("load")
    def load(payload: dict[str, Any], ctx: JobContext) -> int:  # a sync task, run in a thread
        return sum(payload["_context"]["extract"])

    with live_server("--database-url", database_url, "--mode", "api") as base, QueueFlow(base) as client:
        steps = [
            Step(name="extract", task_name="extract", payload={"n": 4}),
            Step(name="load", task_name="load", depends_on=["extract"]),
        ]
        workflow = client.workflows.create("etl", steps)
        assert [step.status for step in workflow.steps] == ["enqueued", "pending"]

        async def work() -> Any:
            worker = Worker(base, None, tasks, concurrency=2, wait_seconds=1)
            await worker.start()
            try:
                return await asyncio.to_thread(
                    wait_until, lambda: client.workflows.get(workflow.id), lambda wf: wf.status != "running"
                )
            finally:
                await worker.stop()

        done = asyncio.run(work())
        assert done.status == "completed"
        assert [step.status for step in done.steps] == ["completed", "completed"]
        assert done.context == {"extract": [0, 1, 2, 3], "load": 6}
        load_job = client.jobs.get(done.steps[1].job_id or "")
        assert (load_job.status, load_job.result, load_job.workflow_id) == ("completed", 6, workflow.id)
        assert [item.id for item in client.workflows.list(status="completed")] == [workflow.id]
