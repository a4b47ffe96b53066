"""The SDK and both kinds of Python worker against a real `queueflow serve` on PostgreSQL (development mode)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from queueflow_client import JobContext, QueueFlow, TaskRegistry, Worker

from tests.e2e.live import live_server


def wait_for_status(client: QueueFlow, job_id: str, status: str, timeout: float = 15) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        job = client.jobs.get(job_id)
        if job.status == status or time.monotonic() > deadline:
            return job
        time.sleep(0.05)  # a real server in another process: short real waits are all there is


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
