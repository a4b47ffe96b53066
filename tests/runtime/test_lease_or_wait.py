"""Lease or wait (runtime/leasing.py): the in-process source and the HTTP long-poll park until the next due time.

Time moves only through the TestClock: a `ClockedWakeups` watch times out when the test advances the clock, and
tells the test how long each wait was given, so nothing here sleeps to find out.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from queueflow.api.schemas.worker import LeaseRequest
from queueflow.api.worker import lease_or_wait
from queueflow.clocks import TestClock
from queueflow.core.types import Job, NewJob
from queueflow.engine import Engine
from queueflow.runtime.inprocess import EngineSource
from queueflow.settings import Settings
from queueflow.stores.memory import InMemoryJobStore

from tests.inprocess import ClockedWakeups

POLL = 60.0
"""The safety poll: far longer than any due time below, so a wait that ends early ended on the due time."""


@pytest.fixture
def hub(clock: TestClock) -> ClockedWakeups:
    return ClockedWakeups(clock)


@pytest.fixture
def engine(hub: ClockedWakeups, clock: TestClock) -> Engine:
    return Engine(InMemoryJobStore(wakeups=hub), clock)


def source_of(engine: Engine, hub: ClockedWakeups, task_names: list[str] | None = None) -> EngineSource:
    return EngineSource(engine, hub, ["default"], lease_seconds=30, poll=POLL, task_names=task_names)


async def still_parked(lease: asyncio.Task[object]) -> bool:
    await asyncio.sleep(0)  # let it run, if anything woke it (no waiting for time here)
    return not lease.done()


async def test_an_idle_in_process_source_takes_a_delayed_job_when_it_is_due(
    engine: Engine, hub: ClockedWakeups
) -> None:
    job = (await engine.enqueue("t", NewJob(task_name="later", delay_seconds=5))).job
    source = source_of(engine, hub)
    lease = asyncio.create_task(source.lease(10))
    assert await hub.parked() == 5.0  # until the job is due, not the safety poll
    hub.advance(4.5)
    assert await still_parked(lease)
    hub.advance(0.5)
    # A wait that ends answers none: the worker loop leases anew at once, and counts the claim from that request.
    assert await asyncio.wait_for(lease, 5) == []
    (leased,) = await source.lease(10)
    assert leased.id == job.id
    assert leased.started_at == job.scheduled_at  # leased at the instant it became due


async def test_an_idle_in_process_source_takes_a_retry_when_it_is_due(engine: Engine, hub: ClockedWakeups) -> None:
    await engine.enqueue("t", NewJob(task_name="flaky", max_retries=3))
    (first,) = await engine.lease(["default"])
    failed = await engine.fail(first.id, first.lease_token or "", "not yet", retry_after_seconds=3)
    source = source_of(engine, hub)
    lease = asyncio.create_task(source.lease(10))
    assert await hub.parked() == 3.0
    hub.advance(3)
    assert await asyncio.wait_for(lease, 5) == []
    (again,) = await source.lease(10)
    assert (again.id, again.delivery_count, again.started_at) == (first.id, 2, failed.next_retry_at)


async def test_a_sooner_job_arriving_while_parked_shortens_the_wait(engine: Engine, hub: ClockedWakeups) -> None:
    await engine.enqueue("t", NewJob(task_name="much-later", delay_seconds=40))
    source = source_of(engine, hub)
    lease = asyncio.create_task(source.lease(10))
    assert await hub.parked() == 40.0
    sooner = (await engine.enqueue("t", NewJob(task_name="sooner", delay_seconds=2))).job
    assert await asyncio.wait_for(lease, 5) == []  # woken by the insert: the loop leases anew
    lease = asyncio.create_task(source.lease(10))
    assert await hub.parked() == 2.0  # nothing claimable yet: parked again, until it is due
    hub.advance(2)
    assert await asyncio.wait_for(lease, 5) == []
    assert [job.id for job in await source.lease(10)] == [sooner.id]


async def test_an_idle_source_without_due_work_waits_the_safety_poll(engine: Engine, hub: ClockedWakeups) -> None:
    # A job of a task this source cannot run, due already: it stays unclaimed, and must not make the source spin.
    await engine.enqueue("t", NewJob(task_name="not-mine"))
    source = source_of(engine, hub, task_names=["mine"])
    lease = asyncio.create_task(source.lease(10))
    assert await hub.parked() == POLL
    mine = (await engine.enqueue("t", NewJob(task_name="mine", run_at=hub.clock.now() + timedelta(seconds=7)))).job
    assert await asyncio.wait_for(lease, 5) == []  # woken by the insert: the loop leases anew
    lease = asyncio.create_task(source.lease(10))
    assert await hub.parked() == 7.0
    source.interrupt()
    assert await asyncio.wait_for(lease, 5) == []  # stopped: no claim after the wait
    assert (await engine.get_job("t", mine.id)).delivery_count == 0


async def test_the_http_long_poll_waits_the_same_way(engine: Engine, hub: ClockedWakeups) -> None:
    job = (await engine.enqueue("t", NewJob(task_name="later", delay_seconds=5))).job
    request = LeaseRequest(queues=["default"], wait_seconds=30)
    poll = asyncio.create_task(lease_or_wait(engine, hub, request, Settings(safety_poll=POLL)))
    assert await hub.parked() == 5.0
    hub.advance(5)
    assert [leased.id for leased in await asyncio.wait_for(poll, 5)] == [job.id]


async def test_after_a_short_lease_the_next_parks_without_claiming_yet_misses_nothing(
    engine: Engine, hub: ClockedWakeups
) -> None:
    """A chain's steps come one a lease, and each lease after one comes back short: with nothing notified since,
    a claim would find nothing, so the source parks at once — until the next due time, as after an empty claim —
    and still takes what arrives or becomes due."""
    claims = 0
    claim = engine.lease

    async def counted(*args: object, **kwargs: object) -> list[Job]:
        nonlocal claims
        claims += 1
        return await claim(*args, **kwargs)  # type: ignore[arg-type]

    engine.lease = counted  # type: ignore[method-assign]
    source = source_of(engine, hub)
    first = (await engine.enqueue("t", NewJob(task_name="a"))).job
    later = (await engine.enqueue("t", NewJob(task_name="b", delay_seconds=5))).job
    assert [job.id for job in await source.lease(10)] == [first.id]  # short: 1 of 10
    assert claims == 1

    lease = asyncio.create_task(source.lease(10))
    assert await hub.parked() == 5.0  # until `later` is due, without a claim first
    assert claims == 1
    hub.advance(5)
    assert await asyncio.wait_for(lease, 5) == []  # the wait ended: the loop leases anew at once, which claims
    assert [job.id for job in await source.lease(10)] == [later.id]
    assert claims == 2

    lease = asyncio.create_task(source.lease(10))
    assert await hub.parked() == POLL  # nothing due: the safety poll, still without a claim
    arrived = (await engine.enqueue("t", NewJob(task_name="c"))).job  # notified: wakes it
    assert await asyncio.wait_for(lease, 5) == []
    assert [job.id for job in await source.lease(10)] == [arrived.id]
    assert claims == 3

    # Work notified between two leases: the next lease claims first, as ever.
    queued = (await engine.enqueue("t", NewJob(task_name="d"))).job
    assert [job.id for job in await source.lease(10)] == [queued.id]
    assert claims == 4
