"""The remote Worker against the app in-process: server time is a TestClock; the test waits on events."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from queueflow.clocks import TestClock
from queueflow.engine import Engine
from queueflow_client import AsyncQueueFlow, Fatal, JobContext, Retry, TaskRegistry, Worker

from tests.inprocess import WatchedWakeups
from tests.sdk.conftest import Responses

MakeWorker = Callable[..., Worker]


class Gate:
    """Tasks wait at the gate; the test sees how many arrived and opens it."""

    def __init__(self) -> None:
        self.arrived = 0
        self.open = asyncio.Event()
        self._changed = asyncio.Condition()

    async def enter(self) -> None:
        self.arrived += 1
        async with self._changed:
            self._changed.notify_all()
        await self.open.wait()

    async def until(self, count: int) -> None:
        async with asyncio.timeout(5), self._changed:
            await self._changed.wait_for(lambda: self.arrived >= count)


async def test_runs_tasks_and_never_holds_more_than_its_concurrency(
    client: AsyncQueueFlow, make_worker: MakeWorker
) -> None:
    tasks, gate = TaskRegistry(), Gate()

    @tasks.task("double")
    async def double(payload: dict[str, Any], ctx: JobContext) -> int:
        await gate.enter()
        return int(payload["n"]) * 2

    jobs = [await client.jobs.enqueue("double", payload={"n": n}) for n in range(7)]
    worker = make_worker(tasks, concurrency=2, prefetch=3)
    await worker.start()
    await gate.until(2)  # the tasks start once the whole lease's answer is taken
    assert (worker.loop.running, worker.held) == (2, 5)  # and three more leased ahead, waiting for a slot
    assert (await client.queues.list())[0].running == 5

    gate.open.set()
    await gate.until(7)
    await worker.stop()

    assert worker.peak_held == 2
    assert worker.loop.peak_held == 5
    assert [(await client.jobs.get(job.id)).result for job in jobs] == [0, 2, 4, 6, 8, 10, 12]


async def test_without_prefetch_it_leases_only_for_free_slots(client: AsyncQueueFlow, make_worker: MakeWorker) -> None:
    tasks, gate = TaskRegistry(), Gate()

    @tasks.task("t")
    async def task(payload: dict[str, Any], ctx: JobContext) -> None:
        await gate.enter()

    for _ in range(5):
        await client.jobs.enqueue("t")
    worker = make_worker(tasks, concurrency=2, prefetch=0)
    await worker.start()
    await gate.until(2)
    assert worker.held == 2
    assert (await client.queues.list())[0].running == 2
    gate.open.set()
    await gate.until(5)
    await worker.stop()
    assert worker.loop.peak_held == 2


async def test_results_ready_together_are_acked_in_one_batch(client: AsyncQueueFlow, make_worker: MakeWorker) -> None:
    tasks, gate = TaskRegistry(), Gate()

    @tasks.task("t")
    async def task(payload: dict[str, Any], ctx: JobContext) -> None:
        await gate.enter()

    for _ in range(4):
        await client.jobs.enqueue("t")
    worker = make_worker(tasks, concurrency=4)
    await worker.start()
    await gate.until(4)
    gate.open.set()
    await worker.stop()

    assert list(worker.loop.ack_batches) == [4]  # results that became ready together went out together
    assert [job.status async for job in client.jobs.list()] == ["completed"] * 4


async def test_a_crashing_task_retries_then_dead_letters(
    client: AsyncQueueFlow, make_worker: MakeWorker, clock: TestClock, wakeups: WatchedWakeups, responses: Responses
) -> None:
    tasks = TaskRegistry()

    @tasks.task("flaky")
    def flaky(payload: dict[str, Any], ctx: JobContext) -> None:  # a sync task: it runs in a thread
        raise RuntimeError(f"boom on delivery {ctx.delivery_count}")

    job = await client.jobs.enqueue("flaky", max_retries=1, backoff={"base_seconds": 10, "jitter": False})
    worker = make_worker(tasks)
    await worker.start()
    await responses.until("/ack", 1)
    first = await client.jobs.get(job.id)
    assert (first.status, first.retry_count) == ("retrying", 1)
    summary, _, trace = (first.error_message or "").partition("\n\n")
    assert summary == "RuntimeError: boom on delivery 1"  # the first line, what lists show; then the traceback
    assert trace.startswith("Traceback (most recent call last):")
    assert 'in flaky\n    raise RuntimeError(f"boom on delivery {ctx.delivery_count}")' in trace

    clock.advance(10)
    wakeups.notify("default")  # the parked lease looks again now that the retry is due
    await responses.until("/ack", 2)
    await worker.stop()
    last = await client.jobs.get(job.id)
    assert (last.status, last.delivery_count) == ("dead_letter", 2)
    assert (last.error_message or "").startswith("RuntimeError: boom on delivery 2\n\nTraceback")


async def test_retry_and_fatal_choose_what_happens(
    client: AsyncQueueFlow, make_worker: MakeWorker, clock: TestClock, responses: Responses
) -> None:
    tasks = TaskRegistry()

    @tasks.task("later")
    async def later(payload: dict[str, Any], ctx: JobContext) -> None:
        raise Retry("rate limited", after=120)

    @tasks.task("never")
    def never(payload: dict[str, Any], ctx: JobContext) -> None:
        raise Fatal("bad address")

    retried = await client.jobs.enqueue("later")
    fatal = await client.jobs.enqueue("never", max_retries=5)
    unknown = await client.jobs.enqueue("nobody_knows")
    worker = make_worker(tasks, concurrency=3)
    await worker.start()
    await responses.until("/ack", 1)  # all three leased and run at once, their outcomes acked together
    await worker.stop()

    job = await client.jobs.get(retried.id)
    assert (job.status, job.error_message) == ("retrying", "rate limited")
    assert job.next_retry_at == clock.now() + timedelta(seconds=120)
    job = await client.jobs.get(fatal.id)
    assert (job.status, job.retry_count) == ("dead_letter", 0)
    assert (job.error_message or "").startswith("bad address\n\nTraceback")
    job = await client.jobs.get(unknown.id)
    assert (job.status, job.delivery_count) == ("pending", 0)  # leased only by a worker that has the task


async def test_stop_finishes_held_jobs_and_leases_no_more(
    client: AsyncQueueFlow, make_worker: MakeWorker, responses: Responses
) -> None:
    tasks, gate = TaskRegistry(), Gate()

    @tasks.task("t")
    async def task(payload: dict[str, Any], ctx: JobContext) -> str:
        await gate.enter()
        return "done"

    held = await client.jobs.enqueue("t")
    worker = make_worker(tasks, concurrency=5)
    await worker.start()
    await gate.until(1)
    stopping = asyncio.create_task(worker.stop())
    await asyncio.sleep(0)  # let stop() cancel the lease loop before more work arrives
    late = await client.jobs.enqueue("t")
    assert not stopping.done()
    gate.open.set()
    await stopping

    assert (await client.jobs.get(held.id)).result == "done"
    assert (await client.jobs.get(late.id)).status == "pending"


async def test_sigterm_drains(client: AsyncQueueFlow, make_worker: MakeWorker) -> None:
    tasks, gate = TaskRegistry(), Gate()

    @tasks.task("t")
    async def task(payload: dict[str, Any], ctx: JobContext) -> str:
        await gate.enter()
        return "done"

    job = await client.jobs.enqueue("t")
    worker = make_worker(tasks)
    running = asyncio.create_task(worker.arun(handle_signals=True))
    await gate.until(1)
    signal.raise_signal(signal.SIGTERM)
    gate.open.set()
    await asyncio.wait_for(running, 5)
    assert (await client.jobs.get(job.id)).status == "completed"


async def test_a_cancelled_jobs_task_is_told(client: AsyncQueueFlow, make_worker: MakeWorker) -> None:
    tasks, gate = TaskRegistry(), Gate()
    told_async, told_sync = asyncio.Event(), threading.Event()

    @tasks.task("async")
    async def async_task(payload: dict[str, Any], ctx: JobContext) -> None:
        try:
            await gate.enter()
        except asyncio.CancelledError:
            told_async.set()
            raise

    @tasks.task("sync")
    def sync_task(payload: dict[str, Any], ctx: JobContext) -> None:
        asyncio.run_coroutine_threadsafe(gate.enter(), loop)
        if ctx.cancellation.wait(5):
            told_sync.set()

    loop = asyncio.get_running_loop()
    first = await client.jobs.enqueue("async")
    second = await client.jobs.enqueue("sync")
    worker = make_worker(tasks, concurrency=2, heartbeat_every=0.01)
    await worker.start()
    await gate.until(2)
    await client.jobs.cancel(first.id)
    await client.jobs.cancel(second.id)
    await asyncio.wait_for(told_async.wait(), 5)
    await asyncio.wait_for(asyncio.to_thread(told_sync.wait, 5), 6)
    await worker.stop()
    assert told_sync.is_set()
    assert [(await client.jobs.get(job.id)).status for job in (first, second)] == ["cancelled", "cancelled"]


async def test_a_long_task_keeps_its_lease_by_heartbeat(
    client: AsyncQueueFlow, make_worker: MakeWorker, clock: TestClock, engine: Engine, responses: Responses
) -> None:
    tasks, gate = TaskRegistry(), Gate()

    @tasks.task("long")
    async def long(payload: dict[str, Any], ctx: JobContext) -> str:
        await gate.enter()
        return "finished"

    job = await client.jobs.enqueue("long")
    worker = make_worker(tasks, lease_seconds=30, heartbeat_every=0.01)
    await worker.start()
    await gate.until(1)
    for _ in range(3):  # 60 s of server time, twice the lease: only heartbeats keep it
        clock.advance(20)
        beats = responses.count("/heartbeat")
        await responses.until("/heartbeat", beats + 2)  # one may have been in flight before the advance
        assert (await engine.run_maintenance()).reclaimed == 0
    gate.open.set()
    await worker.stop()
    done = await client.jobs.get(job.id)
    assert (done.status, done.delivery_count, done.result) == ("completed", 1, "finished")


async def test_a_task_that_outlives_a_lost_lease_cannot_complete_it(
    client: AsyncQueueFlow, make_worker: MakeWorker, clock: TestClock, engine: Engine
) -> None:
    tasks = TaskRegistry()
    started, release = threading.Event(), threading.Event()

    @tasks.task("stuck")
    def stuck(payload: dict[str, Any], ctx: JobContext) -> str:
        started.set()
        release.wait(5)  # ignores ctx.cancelled, as careless sync code does
        return "too late"

    job = await client.jobs.enqueue("stuck", max_retries=0)
    worker = make_worker(tasks, lease_seconds=30, heartbeat_every=3600)
    await worker.start()
    await asyncio.to_thread(started.wait, 5)
    clock.advance(31)
    assert (await engine.run_maintenance()).dead_lettered == 1
    release.set()
    await worker.stop()
    after = await client.jobs.get(job.id)
    assert (after.status, after.result) == ("dead_letter", None)
    assert "lease" in (after.error_message or "") or "timed out" in (after.error_message or "")
