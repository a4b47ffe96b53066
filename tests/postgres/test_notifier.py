"""LISTEN/NOTIFY wake-ups, the safety poll, and surviving an outage of the database."""

from __future__ import annotations

import asyncio
import time

import pytest
from queueflow.clocks import TestClock
from queueflow.core.errors import StoreUnavailable
from queueflow.core.types import AckOutcome, HeldLease, NewJob
from queueflow.runtime.notifier import Notifier
from queueflow.runtime.wakeups import Wakeups
from queueflow.stores.postgres import PostgresJobStore

from tests import pg
from tests.moments import START, T
from tests.postgres.helpers import engine_on

PATIENCE = 10.0
"""Upper bound on any wait here; a passing test waits for the event itself, far less."""


async def parked(wakeups: Wakeups, queues: list[str]) -> asyncio.Task[bool]:
    waiter = asyncio.create_task(wakeups.wait(queues, PATIENCE))
    await asyncio.sleep(0)  # one turn of the loop: the waiter registers before its first await
    return waiter


async def test_an_insert_wakes_a_waiter_well_before_the_safety_poll(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    wakeups = Wakeups()
    engine = engine_on(postgres_store, TestClock(START))
    async with Notifier(postgres_url, wakeups, safety_poll=60) as notifier:
        await asyncio.wait_for(notifier.listening.wait(), PATIENCE)
        mail, other = await parked(wakeups, ["mail"]), await parked(wakeups, ["other"])
        started = time.perf_counter()
        await engine.enqueue(T, NewJob(task_name="send", queue_name="mail"))
        assert await mail
        latency = time.perf_counter() - started
        assert not other.done()
        other.cancel()
    assert latency < 0.5, f"woken after {latency:.3f} s"


async def test_a_release_wakes_a_waiter_in_every_process_as_an_insert_does(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    # The store releasing has no hub of its own: only PostgreSQL's NOTIFY can wake the waiter.
    engine = engine_on(postgres_store, TestClock(START))
    await engine.enqueue(T, NewJob(task_name="send", queue_name="mail"))
    (held,) = await engine.lease(["mail"])
    wakeups = Wakeups()
    async with Notifier(postgres_url, wakeups, safety_poll=60) as notifier:
        await asyncio.wait_for(notifier.listening.wait(), PATIENCE)
        mail = await parked(wakeups, ["mail"])
        (released,) = await engine.release([HeldLease(held.id, held.lease_token or "")])
        assert released.outcome is AckOutcome.OK
        assert await mail


async def test_the_safety_poll_wakes_everyone_without_a_notification(postgres_url: str) -> None:
    wakeups = Wakeups()
    async with Notifier(postgres_url, wakeups, safety_poll=0.05) as notifier:
        await asyncio.wait_for(notifier.listening.wait(), PATIENCE)
        waiter = await parked(wakeups, ["quiet"])
        assert await waiter


async def test_an_outage_is_survived(postgres_url: str, postgres_store: PostgresJobStore) -> None:
    wakeups = Wakeups()
    clock = TestClock(START)
    engine = engine_on(postgres_store, clock)
    before = [(await engine.enqueue(T, NewJob(task_name=f"t{i}"))).job.id for i in range(3)]
    notifier = Notifier(postgres_url, wakeups, safety_poll=60, reconnect_min=0.02, reconnect_max=0.1)
    async with notifier:
        await asyncio.wait_for(notifier.listening.wait(), PATIENCE)
        await pg.cut_off(postgres_url)
        try:
            # Parked during the outage: only the notifier's wake-everyone after reconnecting can wake it.
            during = await parked(wakeups, ["nobody-inserts-here"])
            with pytest.raises(StoreUnavailable):
                await postgres_store.ping()
            with pytest.raises(StoreUnavailable):
                await engine.lease(["default"])
            with pytest.raises(StoreUnavailable):
                await engine.enqueue(T, NewJob(task_name="lost?"))
            assert not during.done()
        finally:
            await pg.restore(postgres_url)

        assert await during, "no wake-up after reconnecting"
        assert notifier.connections == 2
        await asyncio.wait_for(notifier.listening.wait(), PATIENCE)
        waiter = await parked(wakeups, ["default"])
        after = (await engine.enqueue(T, NewJob(task_name="after"))).job.id
        assert await waiter, "NOTIFY did not arrive on the new connection"

    leased = await engine.lease(["default"], max_jobs=10)
    assert sorted(job.id for job in leased) == sorted([*before, after])


async def test_the_notifier_stops_cleanly_while_it_cannot_connect() -> None:
    notifier = Notifier("postgresql://postgres@127.0.0.1:1/nowhere", Wakeups(), reconnect_min=0.01, reconnect_max=0.02)
    await notifier.start()
    assert notifier.running
    await asyncio.sleep(0)
    await notifier.stop()
    assert not notifier.running
    assert not notifier.listening.is_set()


async def test_the_echo_of_a_process_own_insert_wakes_nobody_but_another_process_insert_does(
    postgres_url: str,
) -> None:
    """The store wakes its process's waiters itself after the commit; the NOTIFY of that commit, when it comes back
    to the same process, is an echo and wakes nobody a second time (an in-process runner claimed again for it and
    found nothing). Another process's insert into the same queue, or this process's release (which announces
    nothing locally), wakes as ever."""
    await pg.empty(postgres_url)
    wakeups = Wakeups()
    async with (
        PostgresJobStore.from_url(postgres_url, pool_size=2, wakeups=wakeups) as store,
        Notifier(postgres_url, wakeups, safety_poll=60) as notifier,
        pg.connect(postgres_url) as other,
    ):
        await asyncio.wait_for(notifier.listening.wait(), PATIENCE)
        engine = engine_on(store, TestClock(START))

        async def settled() -> None:
            # Notifications come in commit order: once another session's marker is heard, every notification
            # of an earlier commit (the echo) has been handled.
            marker = await parked(wakeups, ["marker"])
            await other.execute("SELECT pg_notify('queueflow_work', 'marker')")
            assert await marker

        before = wakeups.notices
        await engine.enqueue(T, NewJob(task_name="send", queue_name="mail"))
        await settled()
        # The store's own wake-up after the commit, and the marker: the insert's echo woke nobody.
        assert wakeups.notices - before == 2, "the echo of the process's own insert woke its waiters again"
        assert wakeups.own_backends, "the pool's sessions are known by their backend pids"

        second = await parked(wakeups, ["mail"])
        await other.execute("SELECT pg_notify('queueflow_work', 'mail')")  # another process's announcement
        assert await second

        (held,) = await engine.lease(["mail"])
        third = await parked(wakeups, ["mail"])
        (released,) = await engine.release([HeldLease(held.id, held.lease_token or "")])
        assert released.outcome is AckOutcome.OK
        assert await third  # this process's release announces through PostgreSQL only
