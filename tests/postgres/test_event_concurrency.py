"""Concurrent repeats of one event id, each on its own connection: exactly one set of starts, and every answer names
it. The id's row is written with the starts (in one statement, or first in a transaction), so the repeats wait on it
for the first to commit."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack

import pytest
from queueflow.clocks import TestClock
from queueflow.core.events import NewEvent
from queueflow.core.triggers import NewTrigger
from queueflow.core.types import JobQuery, NewJob
from queueflow.core.workflow import NewStep, NewWorkflow, WorkflowQuery
from queueflow.stores.postgres import PostgresJobStore

from tests.moments import START, T
from tests.postgres.helpers import engine_on

SENDERS = 6


# order.paid starts 20 jobs and a workflow (one transaction); order.refunded only the 20 jobs (one statement).
@pytest.mark.parametrize(("name", "starts", "flows"), [("order.paid", 21, 1), ("order.refunded", 20, 0)])
async def test_concurrent_repeats_of_one_event_id_start_its_triggers_once(
    postgres_url: str, postgres_store: PostgresJobStore, name: str, starts: int, flows: int
) -> None:
    admin = engine_on(postgres_store, TestClock(START))
    for index in range(20):
        await admin.triggers.create(
            T, NewTrigger(name=f"job-{index}", event="order.*", task=NewJob(task_name="receipt"))
        )
    flow = NewWorkflow(name="fulfil", steps=[NewStep(name="pack", task_name="pack")])
    await admin.triggers.create(T, NewTrigger(name="flow", event="order.paid", workflow=flow))

    async with AsyncExitStack() as stack:
        stores = [
            await stack.enter_async_context(PostgresJobStore.from_url(postgres_url, pool_size=1))
            for _ in range(SENDERS)
        ]
        # Different seeds: each sender would mint different job ids, so a second set would show.
        senders = [engine_on(store, TestClock(START), seed=seed) for seed, store in enumerate(stores)]
        for round_ in range(5):
            sent = NewEvent(name=name, payload={"round": round_}, id=f"evt-{round_}")
            answers = await asyncio.gather(*(sender.triggers.send(T, sent) for sender in senders))
            assert sum(created for _, created in answers) == 1
            assert len({event.started for event, _ in answers}) == 1, "every answer names the one set started"
            assert len(answers[0][0].started) == starts

    jobs = await postgres_store.job_list(JobQuery(tenant_id=T, limit=500))
    workflows = await postgres_store.workflow_list(WorkflowQuery(tenant_id=T, limit=500))
    assert (len(jobs), len(workflows)) == (5 * starts, 5 * flows)
