"""Child workflows on PostgreSQL under concurrent workers: a parent fanning out to child workflows whose steps four
workers finish side by side (children ending at once, each ending its parent's step, the parent's join counted
down by all of them), and a parent cancelled while its children's steps are being finished."""

from __future__ import annotations

import asyncio

from queueflow.clocks import TestClock
from queueflow.core.types import Completion, Job
from queueflow.core.workflow import NewStep, NewWorkflow, StepStatus, WorkflowStatus
from queueflow.stores.postgres import PostgresJobStore

from tests.moments import START, T
from tests.postgres.helpers import engine_on
from tests.postgres.test_concurrency import stores

CHILDREN = 20
CHAIN = 3
WORKERS = 4


def fan_of_children() -> NewWorkflow:
    child = NewWorkflow(
        name="child",
        steps=[NewStep(name=f"s{n}", task_name="work", depends_on=[f"s{n - 1}"] if n else []) for n in range(CHAIN)],
    )
    steps = [NewStep(name=f"c{n}", workflow=child) for n in range(CHILDREN)]
    return NewWorkflow(
        name="parent", steps=[*steps, NewStep(name="join", task_name="join", depends_on=[s.name for s in steps])]
    )


async def test_children_finished_by_concurrent_workers_end_their_parent_once(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    clock = TestClock(START)
    workflow, _ = await engine_on(postgres_store, clock).create_workflow(T, fan_of_children())
    total = CHILDREN * CHAIN + 1
    done: list[str] = []

    async def worker(seed: int, store: PostgresJobStore) -> None:
        engine = engine_on(store, clock, seed=seed)
        idle = 0
        while len(done) < total and idle < 200:
            jobs: list[Job] = await engine.lease(["default"], max_jobs=5, lease_seconds=300)
            if not jobs:
                idle += 1
                await asyncio.sleep(0)  # another worker's ack makes the next steps
                continue
            idle = 0
            results = await engine.ack(complete=[Completion(job.id, job.lease_token or "", job.id) for job in jobs])
            assert all(result.outcome.value == "ok" for result in results)
            done.extend(job.id for job in jobs)

    async with stores(postgres_url, WORKERS) as opened:
        await asyncio.gather(*(worker(seed, store) for seed, store in enumerate(opened, start=200)))

    engine = engine_on(postgres_store, clock)
    final = await engine.get_workflow(T, workflow.id)
    assert len(done) == len(set(done)) == total
    assert final.status is WorkflowStatus.COMPLETED
    assert {step.status for step in final.steps} == {StepStatus.COMPLETED}
    children = (await engine.list_workflows(T, parent_id=workflow.id, limit=100)).items
    assert len(children) == CHILDREN
    assert {child.status for child in children} == {WorkflowStatus.COMPLETED}


async def test_a_parent_cancelled_while_workers_finish_its_childrens_steps_leaves_no_child_running(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    clock = TestClock(START)
    workflow, _ = await engine_on(postgres_store, clock).create_workflow(T, fan_of_children())

    async def worker(seed: int, store: PostgresJobStore) -> None:
        engine = engine_on(store, clock, seed=seed)
        for _ in range(10):
            jobs = await engine.lease(["default"], max_jobs=5, lease_seconds=300)
            if jobs:
                await engine.ack(complete=[Completion(job.id, job.lease_token or "", None) for job in jobs])

    async def cancel(store: PostgresJobStore) -> None:
        await engine_on(store, clock, seed=300).cancel_workflow(T, workflow.id)

    async with stores(postgres_url, WORKERS + 1) as opened:
        await asyncio.gather(*(worker(seed, store) for seed, store in enumerate(opened[:WORKERS])), cancel(opened[-1]))

    engine = engine_on(postgres_store, clock)
    assert (await engine.get_workflow(T, workflow.id)).status is WorkflowStatus.CANCELLED
    children = (await engine.list_workflows(T, parent_id=workflow.id, limit=100)).items
    assert len(children) == CHILDREN
    assert all(child.status is not WorkflowStatus.RUNNING for child in children)
    running = [
        job for job in (await engine.list_jobs(T, limit=500)).items if job.status.value in ("pending", "running")
    ]
    assert running == []
