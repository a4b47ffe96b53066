"""Workflows that grow and wait, under real concurrency: separate stores (so separate connections), released
together by a Barrier. Each race ends with exactly one outcome."""

from __future__ import annotations

import asyncio
from typing import Any

from queueflow.clocks import TestClock
from queueflow.core.errors import InvalidState
from queueflow.core.types import Job
from queueflow.core.waits import Wait
from queueflow.core.workflow import NewStep, NewWorkflow, StepStatus, WorkflowStatus
from queueflow.stores.postgres import PostgresJobStore

from tests import pg
from tests.moments import START, T
from tests.postgres.helpers import engine_on
from tests.postgres.test_concurrency import stores

ROUNDS = 20


async def step_jobs(postgres_url: str, step: str) -> dict[str, int]:
    """How many jobs each workflow has for `step`."""
    async with pg.connect(postgres_url) as connection:
        rows = await connection.fetch(
            "SELECT workflow_id, count(*) AS n FROM queueflow.jobs WHERE workflow_step_id = $1 GROUP BY workflow_id",
            step,
        )
    return {row["workflow_id"]: row["n"] for row in rows}


async def test_two_finishers_adding_overlapping_steps_add_each_step_once(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    """a and b, running side by side, both add `m` (and one of their own) required by `z`: one addition wins
    whole, the other is a 409 and adds nothing; a repeat of the winner racing it adds nothing twice."""
    clock = TestClock(START)
    setup = engine_on(postgres_store, clock)
    flow = NewWorkflow(
        name="grow",
        steps=[NewStep(name="a", task_name="t"), NewStep(name="b", task_name="t"),
               NewStep(name="z", task_name="t", depends_on=["a", "b"])],
    )  # fmt: skip
    ids = [(await setup.create_workflow(T, flow))[0].id for _ in range(ROUNDS)]
    held = {(job.workflow_id, job.workflow_step_id): job for job in await setup.lease(["default"], max_jobs=1000)}

    def adding(adder: str) -> list[NewStep]:
        return [
            NewStep(name="m", task_name="t", required_by=["z"]),
            NewStep(name=f"own_{adder}", task_name="t", required_by=["z"]),
        ]

    async with stores(postgres_url, 3) as (first, second, third):
        workers = [engine_on(first, clock, seed=1), engine_on(second, clock, seed=2), engine_on(third, clock, seed=3)]

        async def add(index: int, job: Job, adder: str, start_line: asyncio.Barrier) -> str:
            await start_line.wait()
            try:
                await workers[index].add_steps(job.id, job.lease_token or "", adding(adder))
            except InvalidState:
                return "conflict"
            return adder

        for workflow_id in ids:
            a, b = held[(workflow_id, "a")], held[(workflow_id, "b")]
            start_line = asyncio.Barrier(3)
            outcomes = await asyncio.gather(
                add(0, a, "a", start_line), add(1, b, "b", start_line), add(2, a, "a", start_line)
            )
            assert sorted(outcomes) in (["a", "a", "conflict"], ["b", "conflict", "conflict"]), outcomes
            workflow = await setup.get_workflow(T, workflow_id)
            winner = "a" if "a" in outcomes else "b"
            names = [step.name for step in workflow.steps]
            assert names == ["a", "b", "z", "m", f"own_{winner}"]
            z = next(step for step in workflow.steps if step.name == "z")
            assert z.depends_on == ["a", "b", "m", f"own_{winner}"]
    assert await step_jobs(postgres_url, "m") == dict.fromkeys(ids, 1)


async def test_a_signal_racing_its_step_becoming_waiting_completes_it_once(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    """`a` completes (making `s` wait) while the signal for `s` arrives: whichever is first, `s` completes once,
    with the payload, and `after` is enqueued once."""
    clock = TestClock(START)
    setup = engine_on(postgres_store, clock)
    flow = NewWorkflow(
        name="approval",
        steps=[NewStep(name="a", task_name="t"), NewStep(name="s", wait=Wait(signal="go"), depends_on=["a"]),
               NewStep(name="after", task_name="t", depends_on=["s"])],
    )  # fmt: skip
    ids = [(await setup.create_workflow(T, flow))[0].id for _ in range(ROUNDS)]
    held = {job.workflow_id: job for job in await setup.lease(["default"], max_jobs=1000)}

    async with stores(postgres_url, 2) as (first, second):
        finisher, signaller = engine_on(first, clock, seed=1), engine_on(second, clock, seed=2)

        async def complete(job: Job, start_line: asyncio.Barrier) -> None:
            await start_line.wait()
            await finisher.complete(job.id, job.lease_token or "", "A")

        async def signal(workflow_id: str, start_line: asyncio.Barrier) -> Any:
            await start_line.wait()
            return await signaller.signal_workflow(T, workflow_id, "go", {"ok": True})

        for workflow_id in ids:
            start_line = asyncio.Barrier(2)
            await asyncio.gather(complete(held[workflow_id], start_line), signal(workflow_id, start_line))
            workflow = await setup.get_workflow(T, workflow_id)
            assert [step.status for step in workflow.steps] == [
                StepStatus.COMPLETED, StepStatus.COMPLETED, StepStatus.ENQUEUED
            ]  # fmt: skip
            assert workflow.context == {"a": "A", "s": {"ok": True}}
    assert await step_jobs(postgres_url, "after") == dict.fromkeys(ids, 1)


async def test_two_processes_racing_a_sleeps_due_time_end_it_once(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    clock = TestClock(START)
    setup = engine_on(postgres_store, clock)
    flow = NewWorkflow(
        name="reminder",
        steps=[NewStep(name="nap", wait=Wait(seconds=60)), NewStep(name="remind", task_name="t", depends_on=["nap"])],
    )
    ids = [(await setup.create_workflow(T, flow))[0].id for _ in range(ROUNDS)]
    clock.advance(60)

    async with stores(postgres_url, 2) as (first, second):
        timers = [engine_on(first, clock, seed=1), engine_on(second, clock, seed=2)]

        async def sweep(index: int, start_line: asyncio.Barrier) -> int:
            await start_line.wait()
            ended = 0
            for _ in range(ROUNDS):  # small sweeps, so the two interleave over the same rows
                ended += await timers[index].end_due_waits(2)
            return ended

        start_line = asyncio.Barrier(2)
        counts = await asyncio.gather(sweep(0, start_line), sweep(1, start_line))
    assert sum(counts) == ROUNDS
    assert await step_jobs(postgres_url, "remind") == dict.fromkeys(ids, 1)
    for workflow_id in ids:
        workflow = await setup.get_workflow(T, workflow_id)
        assert workflow.status is WorkflowStatus.RUNNING
        assert [step.status for step in workflow.steps] == [StepStatus.COMPLETED, StepStatus.ENQUEUED]
