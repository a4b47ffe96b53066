"""The PostgreSQL store wakes its own process's waiters on commit, besides PostgreSQL's NOTIFY to every process."""

from __future__ import annotations

import random

import pytest
from queueflow.clocks import TestClock
from queueflow.core.errors import ValidationError
from queueflow.core.ids import IdSource
from queueflow.core.lifecycle import pending_job
from queueflow.core.types import Job, NewJob
from queueflow.core.workflow import NewStep, NewWorkflow
from queueflow.stores.postgres import PostgresJobStore

from tests.moments import START, T
from tests.postgres.helpers import engine_on


class Heard:
    def __init__(self) -> None:
        self.queues: list[str] = []

    def notify(self, queue: str) -> None:
        self.queues.append(queue)


def row(queue: str, key: str | None = None) -> Job:
    job = NewJob(task_name="t", queue_name=queue, idempotency_key=key)
    return pending_job("tenant", job, TestClock().now(), IdSource(random.Random()))


async def test_inserted_queues_are_signalled_once_each_after_commit(postgres_url: str) -> None:
    heard = Heard()
    async with PostgresJobStore.from_url(postgres_url, pool_size=1, wakeups=heard) as store:
        await store.job_insert_many([row("a"), row("b"), row("a", key="k")])
        assert sorted(heard.queues) == ["a", "b"]

        heard.queues.clear()
        await store.job_insert_many([row("c", key="k")])  # a known key: nothing new, nobody woken
        assert heard.queues == []

        with pytest.raises(ValidationError):
            await store.job_insert_many([row("d"), row("e\x00")])  # refused: nothing committed, nobody woken
        assert heard.queues == []


async def test_a_workflow_wakes_its_steps_queues_when_it_creates_or_advances_them(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    """Jobs a workflow enqueues — its roots at creation, a step's dependents at its finish — wake this process's
    waiters too: an in-process runner would otherwise take every step of a chain a NOTIFY's trip late. (On
    `postgres_store`'s emptied database, through a store of its own.)"""
    heard = Heard()
    clock = TestClock(START)
    async with PostgresJobStore.from_url(postgres_url, pool_size=1, wakeups=heard) as store:
        engine = engine_on(store, clock)
        steps = [
            NewStep(name="a", task_name="t", queue_name="first"),
            NewStep(name="b", task_name="t", queue_name="second", depends_on=["a"]),
        ]
        await engine.create_workflow(T, NewWorkflow(name="w", steps=steps))
        assert heard.queues == ["first"]
        (job,) = await engine.lease(["first"])
        await engine.complete(job.id, job.lease_token or "", None)
        assert heard.queues == ["first", "second"]
