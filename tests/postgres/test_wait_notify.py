"""Waiting for an outcome on PostgreSQL: a finish recorded by another process wakes the waiter within 100 ms, and
only rows someone waits on notify (README.md, "A job's life with curl")."""

from __future__ import annotations

import asyncio
import time

from queueflow.api.waiting import job_when_finished, workflow_when_finished
from queueflow.clocks import SystemClock
from queueflow.core.types import JobStatus, NewJob
from queueflow.core.workflow import NewStep, NewWorkflow, WorkflowStatus
from queueflow.runtime.notifier import DONE_CHANNEL, Notifier
from queueflow.settings import Settings
from queueflow.stores.postgres import PostgresJobStore

from tests import pg
from tests.inprocess import WatchedWakeups
from tests.moments import T
from tests.postgres.helpers import engine_on

PATIENCE = 10.0
SETTINGS = Settings(safety_poll=60)  # a wake-up can only come from the notification


async def test_a_finish_recorded_by_another_process_wakes_the_waiter_within_100_ms(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    wakeups = WatchedWakeups()
    here = engine_on(postgres_store, SystemClock())
    async with (
        PostgresJobStore.from_url(postgres_url, pool_size=1) as elsewhere_store,
        Notifier(postgres_url, wakeups, safety_poll=60) as notifier,
    ):
        elsewhere = engine_on(elsewhere_store, SystemClock(), seed=12)
        await asyncio.wait_for(notifier.listening.wait(), PATIENCE)
        job = (await here.enqueue(T, NewJob(task_name="t"))).job
        # Marked before the waiter starts, so the completion below surely comes after the mark; the waiter's own
        # mark is then a no-op. (Its watch is armed before its read, so either way it cannot miss the finish.)
        await here.watch_job(T, job.id)
        waiter = asyncio.create_task(job_when_finished(here, wakeups, SETTINGS, T, job.id, 30))
        await wakeups.until_watching_finishes(1)
        (leased,) = await elsewhere.lease(["default"])
        await elsewhere.complete(leased.id, leased.lease_token or "", {"ok": True})
        finished = time.perf_counter()
        answer = await asyncio.wait_for(waiter, PATIENCE)
        latency = time.perf_counter() - finished
    assert answer.status is JobStatus.COMPLETED
    assert answer.result == {"ok": True}
    assert latency < 0.1, f"woken {latency * 1000:.1f} ms after the finish"


async def test_a_finish_just_before_the_mark_is_seen_by_the_read(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    wakeups = WatchedWakeups()
    engine = engine_on(postgres_store, SystemClock())
    job = (await engine.enqueue(T, NewJob(task_name="t"))).job
    await engine.cancel_job(T, job.id)
    # No notifier at all: the answer comes from the read after the mark, at once.
    answer = await asyncio.wait_for(job_when_finished(engine, wakeups, SETTINGS, T, job.id, 30), PATIENCE)
    assert answer.status is JobStatus.CANCELLED
    async with pg.connect(postgres_url) as connection:
        assert await connection.fetchval("SELECT awaited FROM queueflow.jobs WHERE id = $1", job.id) is False


async def test_only_awaited_rows_notify(postgres_url: str, postgres_store: PostgresJobStore) -> None:
    engine = engine_on(postgres_store, SystemClock())
    quiet = (await engine.enqueue(T, NewJob(task_name="quiet"))).job
    awaited = (await engine.enqueue(T, NewJob(task_name="awaited"))).job
    await engine.watch_job(T, awaited.id)
    heard: asyncio.Queue[str] = asyncio.Queue()
    async with pg.connect(postgres_url) as listener:
        await listener.add_listener(DONE_CHANNEL, lambda *args: heard.put_nowait(args[-1]))
        leased = {job.id: job for job in await engine.lease(["default"], max_jobs=2)}
        # The quiet job finishes first: had it notified, its notification would come first (commit order).
        await engine.complete(quiet.id, leased[quiet.id].lease_token or "")
        await engine.complete(awaited.id, leased[awaited.id].lease_token or "")
        assert await asyncio.wait_for(heard.get(), PATIENCE) == awaited.id
        assert heard.empty()


async def test_a_workflow_finish_wakes_its_waiter(postgres_url: str, postgres_store: PostgresJobStore) -> None:
    wakeups = WatchedWakeups()
    engine = engine_on(postgres_store, SystemClock())
    async with Notifier(postgres_url, wakeups, safety_poll=60) as notifier:
        await asyncio.wait_for(notifier.listening.wait(), PATIENCE)
        workflow, _ = await engine.create_workflow(T, NewWorkflow(name="one", steps=[NewStep(name="a", task_name="a")]))
        await engine.watch_workflow(T, workflow.id)  # as above: the finish surely comes after the mark
        waiter = asyncio.create_task(workflow_when_finished(engine, wakeups, SETTINGS, T, workflow.id, 30))
        await wakeups.until_watching_finishes(1)
        (leased,) = await engine.lease(["default"])
        # The workflow's advancement runs without the in-process engine telling anyone: only NOTIFY can wake it.
        await engine.complete(leased.id, leased.lease_token or "", "done")
        answer = await asyncio.wait_for(waiter, PATIENCE)
    assert answer.status is WorkflowStatus.COMPLETED
