"""What one step of a workflow chain costs the database when the in-process runner runs it (issue 46): the
statements the store sends per step, each a round trip the chain waits for, or one beside it that the server pays.

Counted on every connection of the store's pool, over two chains of different lengths run by an `InProcessWorker`
as `queueflow serve --mode worker` runs it: what the longer chain sent beyond the shorter, per step beyond it, so
that what happens once per run (the first claim's transaction, the last step's end of the workflow, the stop)
cancels out.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from contextlib import AsyncExitStack
from typing import Any

from queueflow.clocks import TestClock
from queueflow.core.workflow import NewStep, NewWorkflow, WorkflowStatus
from queueflow.runtime.inprocess import InProcessWorker
from queueflow.runtime.wakeups import Wakeups
from queueflow.stores.postgres import PostgresJobStore
from queueflow.stores.postgres.claim.function import CLAIM_CALL
from queueflow.stores.postgres.claim.unrestricted_sql import NEXT_DUE
from queueflow.stores.postgres.sql import COMPLETE
from queueflow.stores.postgres.workflow_sql import BEGIN_FINISH, COUNT, FINISH
from queueflow_client import JobContext, TaskRegistry

from tests import pg
from tests.moments import START, T
from tests.postgres.helpers import engine_on
from tests.postgres.test_idle_claim import logged

POOL = 4
SHORT, LONG = 5, 25

NAMES = {
    CLAIM_CALL: "claim",
    NEXT_DUE: "next due",
    COMPLETE: "complete",
    BEGIN_FINISH: "begin (asynchronous commit)",
    FINISH: "finish",
    COUNT: "count",
    "COMMIT": "commit",
}


async def run_chain(url: str, length: int) -> Counter[str]:
    """The statements sent while an in-process runner ran a chain of `length` steps, by name (`NAMES`; any other
    by its first line)."""
    await pg.empty(url)
    clock, hub = TestClock(START), Wakeups()
    async with PostgresJobStore.from_url(url, pool_size=POOL, wakeups=hub, rng=random.Random(pg.STORE_SEED)) as store:
        engine = engine_on(store, clock)
        statements: list[str] = []
        async with AsyncExitStack() as every:
            for _ in range(POOL):
                connection = await every.enter_async_context(store._connection())
                connection.add_query_logger(lambda record: statements.append(record.query))
        steps = [NewStep(name=f"s{i}", task_name="step", depends_on=[f"s{i - 1}"] if i else []) for i in range(length)]
        workflow, _ = await engine.create_workflow(T, NewWorkflow(name="chain", steps=steps))
        tasks, ran, last = TaskRegistry(), [0], asyncio.Event()

        @tasks.task("step")
        async def step(payload: dict[str, Any], ctx: JobContext) -> int:
            ran[0] += 1
            if ran[0] == length:
                last.set()
            return ran[0]

        await logged()
        statements.clear()
        async with InProcessWorker(engine, hub, tasks, queues=["default"], poll=60):
            await asyncio.wait_for(last.wait(), 30)
        # Stopped: the last step's outcome is acked and its workflow advanced.
        await logged()
        counted = Counter(NAMES.get(text, text.strip().splitlines()[0]) for text in statements)
        assert (await engine.get_workflow(T, workflow.id)).status is WorkflowStatus.COMPLETED
    return counted


async def test_a_chain_step_run_in_process_costs_seven_statements(postgres_url: str) -> None:
    short, long = await run_chain(postgres_url, SHORT), await run_chain(postgres_url, LONG)
    per_step = {name: (long[name] - short[name]) / (LONG - SHORT) for name in long | short}
    assert {name: count for name, count in per_step.items() if count} == {
        # The step's job, claimed by the runner's lease (one statement: its queue is known unrestricted).
        "claim": 1,
        # The runner's next lease, as it parks until the step's advance announces the next job: when is the
        # next job of its queues due (none: it waits for the announcement).
        "next due": 1,
        # The job's completion, committed on its own and synchronously: the job's outcome is durable before its
        # workflow moves.
        "complete": 1,
        # The advance (`workflow_step_finish`), its own transaction, committed asynchronously: BEGIN with its
        # SET LOCAL, FINISH (the locks, the step's row), COUNT (what `core.finish` decided, the next job), COMMIT.
        "begin (asynchronous commit)": 1,
        "finish": 1,
        "count": 1,
        "commit": 1,
    }
    assert sum(per_step.values()) == 7
