"""End to end on PostgreSQL: a 1,000-step random DAG run by four concurrent workers, each on its own store."""

from __future__ import annotations

import asyncio
import random

from queueflow.clocks import TestClock
from queueflow.core.types import Completion, Job
from queueflow.core.workflow import CONTEXT_KEY, NewStep, NewWorkflow, WorkflowStatus
from queueflow.stores.postgres import PostgresJobStore

from tests import pg
from tests.moments import START, T
from tests.postgres.helpers import engine_on
from tests.postgres.test_concurrency import stores

STEPS = 1000
WORKERS = 4


def random_dag(seed: int) -> NewWorkflow:
    """Steps in a random order of a random DAG: up to 3 dependencies each, mostly on recent steps (so it is deep)."""
    rng = random.Random(seed)
    names = [f"s{index}" for index in range(STEPS)]
    steps = []
    for index, name in enumerate(names):
        earlier = names[max(0, index - 40) : index]
        depends_on = rng.sample(earlier, k=min(len(earlier), rng.choice([0, 1, 1, 2, 2, 3]))) if index else []
        steps.append(NewStep(name=name, task_name="work", depends_on=depends_on))
    rng.shuffle(steps)  # submitted order is not a topological order
    return NewWorkflow(name="random", steps=steps)


class Progress:
    """Counts acks, so an idle worker waits for the next one instead of polling (new steps follow acks)."""

    def __init__(self) -> None:
        self.acks = 0
        self.completed = 0
        self.changed = asyncio.Condition()

    async def ack(self, completed: int) -> None:
        async with self.changed:
            self.acks += 1
            self.completed += completed
            self.changed.notify_all()

    async def wait_after(self, seen: int) -> None:
        async with self.changed:
            # The timeout is a wake-up only: should a step ever be left behind, the loop's next lease says so.
            await asyncio.wait_for(self.changed.wait_for(lambda: self.acks > seen), timeout=5)


async def test_a_thousand_step_random_dag_runs_each_step_once_in_dependency_order(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    clock = TestClock(START)
    new = random_dag(seed=2026)
    workflow, _ = await engine_on(postgres_store, clock).create_workflow(T, new)
    events: list[tuple[str, str]] = []  # ("start" | "done", step), in the order the workers saw them
    payloads: dict[str, dict[str, object]] = {}
    progress = Progress()

    async def worker(seed: int, store: PostgresJobStore) -> int:
        engine = engine_on(store, clock, seed=seed)
        ran = 0
        while True:
            seen = progress.acks
            jobs: list[Job] = await engine.lease(["default"], max_jobs=25, lease_seconds=300)
            if not jobs:
                if progress.completed == STEPS:
                    return ran
                await progress.wait_after(seen)
                continue
            for job in jobs:
                events.append(("start", job.workflow_step_id or ""))
                payloads[job.workflow_step_id or ""] = job.payload
            # Marked done before the ack is sent, so a dependent seen "start" after it proves nothing wrong,
            # while one seen before it proves a dependent ran before its dependency finished.
            events.extend(("done", job.workflow_step_id or "") for job in jobs)
            results = await engine.ack(complete=[Completion(job.id, job.lease_token or "", job.id) for job in jobs])
            assert all(result.outcome.value == "ok" for result in results)
            ran += len(jobs)
            await progress.ack(len(jobs))

    loop = asyncio.get_running_loop()
    began = loop.time()
    async with stores(postgres_url, WORKERS) as opened:
        ran = await asyncio.gather(*(worker(seed, store) for seed, store in enumerate(opened, start=100)))
    elapsed = loop.time() - began
    print(f"\n{STEPS}-step DAG, {WORKERS} workers: {elapsed:.1f} s, steps per worker {ran}")

    final = await engine_on(postgres_store, clock).get_workflow(T, workflow.id)
    assert final.status is WorkflowStatus.COMPLETED
    assert sum(ran) == STEPS
    assert sum(1 for count in ran if count) > 1, "the workers did not share the work"
    starts = [name for kind, name in events if kind == "start"]
    assert sorted(starts) == sorted(step.name for step in new.steps)  # each step exactly once
    position = {(kind, name): index for index, (kind, name) in enumerate(events)}
    by_name = {step.name: step for step in final.steps}
    for step in new.steps:
        for dependency in step.depends_on:
            assert position[("done", dependency)] < position[("start", step.name)], (dependency, step.name)
        context = payloads[step.name][CONTEXT_KEY]
        assert isinstance(context, dict)
        for dependency in step.depends_on:
            assert context[dependency] == by_name[dependency].job_id  # every result it depends on, in full
    async with pg.connect(postgres_url) as connection:
        deliveries = await connection.fetch(
            "SELECT delivery_count, count(*) AS jobs FROM queueflow.jobs WHERE workflow_id = $1 GROUP BY 1",
            workflow.id,
        )
    assert [tuple(row) for row in deliveries] == [(1, STEPS)]
