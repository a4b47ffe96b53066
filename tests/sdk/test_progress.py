"""`ctx.progress(value)` in the SDK's tasks: through the remote Worker (HTTP heartbeat) and the server's in-process
runner (the engine: tests/runtime), async and sync tasks; the job shows it while it runs and after it has
finished."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from queueflow_client import AsyncQueueFlow, JobContext, TaskRegistry

from tests.sdk.test_worker import MakeWorker


async def test_an_async_task_reports_progress_that_the_job_shows(
    client: AsyncQueueFlow, make_worker: MakeWorker
) -> None:
    tasks, reported, go = TaskRegistry(), asyncio.Event(), asyncio.Event()

    @tasks.task("count")
    async def count(payload: dict[str, Any], ctx: JobContext) -> str:
        assert await ctx.progress({"done": 1, "of": 2})
        reported.set()
        await go.wait()
        assert await ctx.progress({"done": 2, "of": 2})
        return "counted"

    job = await client.jobs.enqueue("count")
    worker = make_worker(tasks)
    await worker.start()
    await asyncio.wait_for(reported.wait(), 5)
    assert (await client.jobs.get(job.id)).progress == {"done": 1, "of": 2}
    go.set()
    finished = await client.jobs.wait(job.id, timeout=5)
    await worker.stop()
    assert (finished.result, finished.progress) == ("counted", {"done": 2, "of": 2})


async def test_a_sync_task_reports_progress_from_its_thread(client: AsyncQueueFlow, make_worker: MakeWorker) -> None:
    tasks = TaskRegistry()

    @tasks.task("sync")
    def sync(payload: dict[str, Any], ctx: JobContext) -> int:
        assert threading.current_thread() is not threading.main_thread()
        assert ctx.progress_blocking("halfway")
        return 1

    worker = make_worker(tasks)
    await worker.start()
    job = await client.jobs.run("sync", timeout=5)
    await worker.stop()
    assert (job.result, job.progress) == (1, "halfway")
