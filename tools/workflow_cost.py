"""What a workflow's advances cost the server: one workflow run to the end through `Engine` on PostgreSQL.

    python -m tools.workflow_cost fanout 998     # 1 root -> 998 parallel -> 1 join
    python -m tools.workflow_cost chain 300

A single process plays the workers and the server: it leases up to 100 due step jobs, acks them all in one
`Engine.ack` (each completion advances its workflow, as the HTTP ack does), and repeats until the workflow has
finished. It prints the wall time and this process's CPU (the engine's side: decisions, encoding, decoding) per
step; PostgreSQL's own CPU is not in it. A fresh database per run.
"""

from __future__ import annotations

import asyncio
import random
import sys
import time
from datetime import UTC, datetime

from queueflow.clocks import TestClock
from queueflow.core.types import Completion
from queueflow.core.workflow import NewStep, NewWorkflow, WorkflowStatus
from queueflow.engine import Engine, EngineSettings
from queueflow.stores.postgres import PostgresJobStore
from queueflow.stores.postgres import schema as pgschema

from tests import pg


def shape(kind: str, size: int) -> NewWorkflow:
    if kind == "fanout":
        middle = [NewStep(name=f"m{i}", task_name="t", depends_on=["root"]) for i in range(size)]
        join = NewStep(name="join", task_name="t", depends_on=[step.name for step in middle])
        return NewWorkflow(name="fanout", steps=[NewStep(name="root", task_name="t"), *middle, join])
    steps = [NewStep(name=f"s{i}", task_name="t", depends_on=[f"s{i - 1}"] if i else []) for i in range(size)]
    return NewWorkflow(name="chain", steps=steps)


async def run(kind: str, size: int) -> tuple[int, float, float]:
    async with pg.fresh_database() as url:
        await pgschema.upgrade_async(url)
        async with PostgresJobStore.from_url(url, pool_size=2) as store:
            engine = Engine(store, TestClock(datetime(2026, 3, 1, tzinfo=UTC)), rng=random.Random(1),
                            settings=EngineSettings())  # fmt: skip
            new = shape(kind, size)
            wall, cpu = time.perf_counter(), time.process_time()
            workflow, _ = await engine.create_workflow("t", new)
            while True:
                jobs = await engine.lease(["default"], max_jobs=100, lease_seconds=600)
                if not jobs:
                    break
                await engine.ack(complete=[Completion(job.id, job.lease_token or "", None) for job in jobs])
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            final = await engine.get_workflow("t", workflow.id)
            assert final.status is WorkflowStatus.COMPLETED, final.status
            return len(new.steps), wall, cpu


def main() -> None:
    kind, size = sys.argv[1], int(sys.argv[2])
    steps, wall, cpu = asyncio.run(run(kind, size))
    print(f"{kind} {size}: {steps} steps, {wall:.2f} s wall, {cpu / steps * 1000:.2f} ms CPU per step")


if __name__ == "__main__":
    main()
