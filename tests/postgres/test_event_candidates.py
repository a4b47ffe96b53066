"""A narrow event name's candidates, kept by the store that sends its events (one round trip an event): another
process's edit of the triggers between two events is never missed nor overtaken, because the event's INSERT is
guarded on the candidates it used. The sender and the editor are separate stores, as two server processes are."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from typing import Any

import pytest
from queueflow.clocks import TestClock
from queueflow.core.events import NewEvent, Starts
from queueflow.core.triggers import NewTrigger, TriggerPatch
from queueflow.core.types import JobQuery, NewJob
from queueflow.core.workflow import NewStep, NewWorkflow
from queueflow.stores.postgres import PostgresJobStore
from queueflow.stores.postgres.events import NARROW

from tests.moments import START, T
from tests.postgres.helpers import engine_on


async def test_every_edit_of_a_narrow_names_triggers_is_seen_by_the_next_event(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    admin = engine_on(postgres_store, TestClock(START))
    await admin.triggers.create(T, NewTrigger(name="a", event="order.paid", task=NewJob(task_name="a")))
    await admin.triggers.create(
        T, NewTrigger(name="b", event="order.*", filter={"big": True}, task=NewJob(task_name="b"))
    )
    async with PostgresJobStore.from_url(postgres_url, pool_size=1) as store:
        sender = engine_on(store, TestClock(START), seed=3)
        number = 0

        async def started(payload: dict[str, object] | None = None) -> list[str]:
            nonlocal number
            number += 1
            event, created = await sender.triggers.send(T, NewEvent(name="order.paid", payload=payload or {}))
            assert created
            return sorted(start.trigger for start in event.started)

        assert await started({"big": True}) == ["a", "b"]
        assert await started({"big": False}) == ["a"], "the filter applies to the kept candidates"
        await admin.triggers.create(T, NewTrigger(name="c", event="order.paid", task=NewJob(task_name="c")))
        assert await started() == ["a", "c"], "a trigger created since"
        await admin.triggers.update(T, "a", TriggerPatch(filter={"big": True}))
        assert await started() == ["c"], "a trigger edited since"
        await admin.triggers.update(T, "c", TriggerPatch(enabled=False))
        assert await started({"big": True}) == ["a", "b"], "a trigger disabled since"
        await admin.triggers.delete(T, "b")
        assert await started({"big": True}) == ["a"], "a trigger deleted since"
        await admin.triggers.delete(T, "a")
        assert await started({"big": True}) == [], "no candidate left"
        await admin.triggers.create(T, NewTrigger(name="d", event="order.paid", task=NewJob(task_name="d")))
        assert await started() == ["d"], "a first candidate for a name that had none"
        flow = NewWorkflow(name="fulfil", steps=[NewStep(name="pack", task_name="pack")])
        await admin.triggers.create(T, NewTrigger(name="e", event="order.paid", workflow=flow))
        assert await started() == ["d", "e"], "a workflow trigger created since"

    jobs = await postgres_store.job_list(JobQuery(tenant_id=T, limit=100))
    # Each event's jobs, the last one's workflow's first step included: none twice, none missing.
    assert len(jobs) == 2 + 1 + 2 + 1 + 2 + 1 + 0 + 1 + 2
    assert number == 9


async def test_an_unchanged_narrow_names_events_take_the_one_statement_way(
    postgres_url: str, postgres_store: PostgresJobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    admin = engine_on(postgres_store, TestClock(START))
    await admin.triggers.create(T, NewTrigger(name="a", event="order.paid", task=NewJob(task_name="a")))
    async with PostgresJobStore.from_url(postgres_url, pool_size=1) as store:
        written: list[bool] = []
        guarded = store._guarded

        async def recorded(*args: Any) -> Starts | None:
            made = await guarded(*args)
            written.append(made is not None)
            return made

        monkeypatch.setattr(store, "_guarded", recorded)
        sender = engine_on(store, TestClock(START), seed=3)
        for _ in range(3):
            await sender.triggers.send(T, NewEvent(name="order.paid"))
        await admin.triggers.create(T, NewTrigger(name="b", event="order.*", task=NewJob(task_name="b")))
        for _ in range(2):
            await sender.triggers.send(T, NewEvent(name="order.paid"))
    # The first event reads the candidates and writes with them; a trigger created since fails the guard once.
    assert written == [True, True, True, False, True]


async def test_a_name_wider_than_narrow_starts_every_trigger(postgres_store: PostgresJobStore) -> None:
    engine = engine_on(postgres_store, TestClock(START))
    for index in range(NARROW + 1):
        await engine.triggers.create(T, NewTrigger(name=f"t{index}", event="wide", task=NewJob(task_name="w")))
    for _ in range(2):
        event, _ = await engine.triggers.send(T, NewEvent(name="wide"))
        assert len(event.started) == NARROW + 1


async def test_concurrent_repeats_of_a_narrow_event_id_start_its_triggers_once(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    admin = engine_on(postgres_store, TestClock(START))
    for index in range(2):
        await admin.triggers.create(
            T, NewTrigger(name=f"job-{index}", event="invoice.sent", task=NewJob(task_name="r"))
        )
    async with AsyncExitStack() as stack:
        stores = [
            await stack.enter_async_context(PostgresJobStore.from_url(postgres_url, pool_size=1)) for _ in range(4)
        ]
        senders = [engine_on(store, TestClock(START), seed=seed) for seed, store in enumerate(stores)]
        for round_ in range(4):  # the first round reads the candidates, the others use them
            sent = NewEvent(name="invoice.sent", payload={"round": round_}, id=f"evt-{round_}")
            answers = await asyncio.gather(*(sender.triggers.send(T, sent) for sender in senders))
            assert sum(created for _, created in answers) == 1
            assert len({event.started for event, _ in answers}) == 1, "every answer names the one set started"
            assert len(answers[0][0].started) == 2
    jobs = await postgres_store.job_list(JobQuery(tenant_id=T, limit=100))
    assert len(jobs) == 4 * 2


async def test_a_narrow_names_event_statement_is_planned_once_then_reused(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    """PostgreSQL plans a prepared statement's first five runs for their values, then keeps a generic plan unless
    it looks dearer than those: the guard's patterns sent as an array made it look three times dearer (a
    parameter array is estimated at ten elements), and every event was planned afresh."""
    admin = engine_on(postgres_store, TestClock(START))
    for name in ("a", "b"):
        await admin.triggers.create(T, NewTrigger(name=name, event="order.paid", task=NewJob(task_name=name)))
    async with postgres_store._connection() as db:
        # The tenant's other triggers, as many as make the estimates count (the bench's 10,000 in miniature).
        await db.execute(
            "INSERT INTO queueflow.triggers (id, tenant_id, name, event, task, created_at, updated_at)"
            " SELECT 'trg_' || n, $1, 'other-' || n, 'other.' || n, '{\"task_name\": \"o\"}', now(), now()"
            " FROM generate_series(1, 2000) AS n",
            T,
        )
        await db.execute("ANALYZE queueflow.triggers")
    async with PostgresJobStore.from_url(postgres_url, pool_size=1) as store:
        sender = engine_on(store, TestClock(START), seed=3)
        for number in range(10):
            event, _ = await sender.triggers.send(T, NewEvent(name="order.paid", payload={"n": number}))
            assert len(event.started) == 2
        async with store._connection() as db:
            plans = await db.fetchrow(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE 'WITH guard%'"
            )
    assert plans is not None
    assert (plans["custom_plans"], plans["generic_plans"]) == (5, 5)
