"""The in-process runner: the SDK's TaskRegistry inside the server, claiming through the engine."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from queueflow.core.types import NewJob
from queueflow.engine import Engine
from queueflow.runtime.inprocess import InProcessWorker, TaskRunner, load_runner
from queueflow.settings import Settings, SettingsError
from queueflow_client import JobContext, TaskRegistry

from tests.inprocess import WatchedWakeups
from tests.sdk import sample_tasks


class Watched:
    """A runner that tells the test how many deliveries it has run to their end (no polling)."""

    def __init__(self, runner: TaskRunner) -> None:
        self.runner = runner
        self.finished = 0
        self._changed = asyncio.Condition()

    async def execute(self, job: Any, lease: Any, *, heartbeat_every: float) -> None:
        await self.runner.execute(job, lease, heartbeat_every=heartbeat_every)
        self.finished += 1
        async with self._changed:
            self._changed.notify_all()

    async def until(self, count: int) -> None:
        async with asyncio.timeout(5), self._changed:
            await self._changed.wait_for(lambda: self.finished >= count)


async def test_runs_the_registry_and_wakes_on_new_work(engine: Engine, wakeups: WatchedWakeups) -> None:
    runner = Watched(sample_tasks.tasks)
    async with InProcessWorker(engine, wakeups, runner, queues=["default"], poll=60):
        await wakeups.until_waiting(1)  # idle: parked on the hub, not polling
        added = (await engine.enqueue("default", NewJob(task_name="add", payload={"a": 2, "b": 3}))).job
        shouted = (await engine.enqueue("default", NewJob(task_name="shout", payload={"text": "hi"}))).job
        refused = (await engine.enqueue("default", NewJob(task_name="refuse", max_retries=3))).job
        await runner.until(3)
    assert (await engine.get_job("default", added.id)).result == {"sum": 5, "job": added.id}
    assert (await engine.get_job("default", shouted.id)).result == "HI"
    refused_now = await engine.get_job("default", refused.id)
    assert (refused_now.status, refused_now.error_message) == ("dead_letter", "refused")


async def test_honours_concurrency_and_drains_on_stop(engine: Engine, wakeups: WatchedWakeups) -> None:
    tasks, release, started = TaskRegistry(), asyncio.Event(), asyncio.Condition()
    running: list[str] = []

    @tasks.task("t")
    async def task(payload: dict[str, Any], ctx: JobContext) -> str:
        running.append(ctx.job_id)
        async with started:
            started.notify_all()
        await release.wait()
        return "done"

    jobs = [(await engine.enqueue("default", NewJob(task_name="t"))).job for _ in range(3)]
    worker = InProcessWorker(engine, wakeups, tasks, concurrency=2, poll=60)
    await worker.start()
    async with asyncio.timeout(5), started:
        await started.wait_for(lambda: len(running) == 2)
    assert worker.held == 2
    stopping = asyncio.create_task(worker.stop())
    await asyncio.sleep(0)
    release.set()
    await stopping
    statuses = [str((await engine.get_job("default", job.id)).status) for job in jobs]
    assert sorted(statuses) == ["completed", "completed", "pending"]  # the third was never claimed
    assert worker.peak_held == 2


def test_load_runner_and_settings() -> None:
    assert load_runner("tests.sdk.sample_tasks:tasks") is sample_tasks.tasks
    with pytest.raises(ValueError, match="module:attribute"):
        load_runner("tests.sdk.sample_tasks")
    with pytest.raises(ValueError, match="not a task registry"):
        load_runner("tests.sdk.sample_tasks:add")
    settings = Settings.load({"QUEUEFLOW_TASKS": "m:t", "QUEUEFLOW_TASK_QUEUES": "a,b"}, task_concurrency="4")
    assert (settings.tasks, settings.task_queues, settings.task_concurrency) == ("m:t", ("a", "b"), 4)
    with pytest.raises(SettingsError, match="api mode"):
        Settings.load({}, tasks="m:t", mode="api")
