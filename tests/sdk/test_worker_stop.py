"""Stopping an SDK worker against the app: a lease whose answer is on its way is never cut (its jobs would sit
`running` until their leases expire), a parked long-poll's neither; and what a stop does not run goes back at once."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from litestar import Litestar
from queueflow_client import AsyncQueueFlow, JobContext, TaskRegistry, Worker
from queueflow_client._transport import AsyncTransport, RetryPolicy
from queueflow_client.worker import _HttpSource

from tests.inprocess import WatchedWakeups
from tests.sdk.conftest import BASE, Responses
from tests.sdk.test_loop import quick_tasks
from tests.sdk.test_worker import MakeWorker


class Delayed(httpx.AsyncBaseTransport):
    """The app's answers that bring jobs, held back until `go` is set: the server has answered, the answer is on
    its way."""

    def __init__(self, app: Litestar) -> None:
        self.app = httpx.ASGITransport(app=app)
        self.go = asyncio.Event()
        self.answered = asyncio.Event()
        self.bodies: list[dict[str, Any]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(json.loads(request.content))
        response = await self.app.handle_async_request(request)
        if json.loads(await response.aread())["jobs"]:
            self.answered.set()
            await self.go.wait()
        return response


def source_on(transport: httpx.AsyncBaseTransport) -> _HttpSource:
    http = httpx.AsyncClient(transport=transport)
    worker = Worker(BASE, "key-w", quick_tasks(), wait_seconds=20)
    return _HttpSource(AsyncTransport(BASE, "key-w", timeout=30.0, retry=RetryPolicy(), http_client=http), worker)


async def test_a_stop_never_cuts_a_lease_whose_answer_is_on_its_way(client: AsyncQueueFlow, app: Litestar) -> None:
    jobs = [await client.jobs.enqueue("t") for _ in range(3)]
    delayed = Delayed(app)
    source = source_on(delayed)
    leasing = asyncio.create_task(source.lease(10))
    async with asyncio.timeout(5):
        await delayed.answered.wait()  # claimed on the server, the answer not yet received
    assert delayed.bodies[0]["wait_seconds"] == 0  # a worker's first lease does not wait: it cannot be parked
    source.interrupt()
    delayed.go.set()
    leased = await leasing
    assert sorted(job.id for job in leased) == sorted(job.id for job in jobs)  # received, so the loop releases them


async def test_a_stop_never_cuts_a_parked_long_poll_whose_answer_is_on_its_way(
    client: AsyncQueueFlow, app: Litestar, wakeups: WatchedWakeups
) -> None:
    """Work arrives for a parked poll a moment before the stop: cut then, the job would sit `running` until its
    lease expired and count a failed delivery (the chaos suite's rolling restarts saw it)."""
    delayed = Delayed(app)
    source = source_on(delayed)
    assert await source.lease(10) == []  # an empty queue: the next lease long-polls
    leasing = asyncio.create_task(source.lease(10))
    await wakeups.until_waiting(1)
    assert delayed.bodies[-1]["wait_seconds"] > 0
    job = await client.jobs.enqueue("t")
    async with asyncio.timeout(5):
        await delayed.answered.wait()  # claimed for the poll, the answer not yet received
    source.interrupt()
    delayed.go.set()
    async with asyncio.timeout(5):
        assert [leased.id for leased in await leasing] == [job.id]  # received, so the loop releases it
    assert await source.lease(10) == []  # and nothing is leased after the stop


async def test_a_stopped_worker_gives_back_what_it_held_and_had_not_started(
    client: AsyncQueueFlow, make_worker: MakeWorker, responses: Responses
) -> None:
    tasks, gate, running = TaskRegistry(), asyncio.Event(), asyncio.Event()

    @tasks.task("t")
    async def task(payload: dict[str, Any], ctx: JobContext) -> None:
        running.set()
        await gate.wait()

    jobs = [await client.jobs.enqueue("t", max_retries=0) for _ in range(5)]
    worker = make_worker(tasks, concurrency=1, prefetch=4)
    await worker.start()
    async with asyncio.timeout(5):
        await running.wait()
    stopping = asyncio.create_task(worker.stop())
    await responses.until("/release")  # while the running job still runs
    gate.set()
    await stopping
    after = sorted([await client.jobs.get(job.id) for job in jobs], key=lambda job: job.status)
    assert [(job.status, job.delivery_count, job.retry_count) for job in after] == [
        ("completed", 1, 0),
        *[("pending", 0, 0)] * 4,  # back on the queue at once, as if never delivered: no retry burnt
    ]
