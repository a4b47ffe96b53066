"""Workflow advances at scale on PostgreSQL (issue 29): a finish reads only the rows it touches, concurrent finishers
of one workflow neither double-enqueue a join nor deadlock, a halt racing completions leaves nothing runnable, and
the janitor never replays an advance that is merely in flight."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import random

import asyncpg
import pytest
from queueflow.clocks import TestClock
from queueflow.core.types import Completion, Job
from queueflow.core.workflow import CONTEXT_KEY, NewStep, NewWorkflow, OnFailure, StepStatus, WorkflowStatus
from queueflow.engine import Engine, EngineSettings
from queueflow.stores.postgres import PostgresJobStore
from queueflow.stores.postgres.workflow_sql import COUNT, CUSTOM_PLAN, WIDE_FINISH

from tests import pg
from tests.moments import START, T
from tests.postgres.helpers import engine_on
from tests.postgres.test_concurrency import stores
from tests.store_contract.engine.test_workflow_sizes import run_to_the_end

SIBLINGS = 10


def fan_out(width: int, *, halting: str | None = None, long_names: bool = False) -> NewWorkflow:
    """root → `width` siblings (m0, m1, …; with `long_names`, each followed by a digest, which does not compress)
    → join; the sibling named `halting`, if any, with on_failure=halt."""
    names = [f"m{i}-{hashlib.sha256(str(i).encode()).hexdigest()}" if long_names else f"m{i}" for i in range(width)]
    middle = [NewStep(name=name, task_name="t", depends_on=["root"], on_failure=OnFailure.HALT) for name in names]
    if halting is None:
        middle = [NewStep(name=s.name, task_name="t", depends_on=["root"], on_failure=OnFailure.SKIP) for s in middle]
    join = NewStep(name="join", task_name="t", depends_on=[step.name for step in middle])
    return NewWorkflow(name="fan", steps=[NewStep(name="root", task_name="t"), *middle, join])


async def started(
    store: PostgresJobStore, clock: TestClock, workflows: list[NewWorkflow]
) -> dict[tuple[str, str], Job]:
    """Create `workflows`, complete each root, and lease every sibling: the held jobs by (workflow id, step)."""
    engine = engine_on(store, clock)
    for new in workflows:
        await engine.create_workflow(T, new)
    for root in await engine.lease(["default"], max_jobs=len(workflows)):
        await engine.complete(root.id, root.lease_token or "", "R")
    held = await engine.lease(["default"], max_jobs=1000, lease_seconds=600)
    return {(job.workflow_id or "", job.workflow_step_id or ""): job for job in held}


async def test_ten_siblings_finishing_at_once_enqueue_the_join_once_with_every_result(
    postgres_url: str, postgres_store: PostgresJobStore, caplog: pytest.LogCaptureFixture
) -> None:
    clock = TestClock(START)
    held = await started(postgres_store, clock, [fan_out(SIBLINGS) for _ in range(10)])
    ids = sorted({workflow_id for workflow_id, _ in held})
    assert len(held) == 10 * SIBLINGS
    async with stores(postgres_url, SIBLINGS) as opened:
        engines = [engine_on(store, clock, seed=seed) for seed, store in enumerate(opened)]
        for workflow_id in ids:
            start_line = asyncio.Barrier(SIBLINGS)

            async def finish(
                index: int, workflow_id: str = workflow_id, start_line: asyncio.Barrier = start_line
            ) -> None:
                job = held[(workflow_id, f"m{index}")]
                await start_line.wait()
                await engines[index].complete(job.id, job.lease_token or "", f"r{index}")

            with caplog.at_level(logging.WARNING, logger="queueflow.workflows"):
                await asyncio.gather(*(finish(index) for index in range(SIBLINGS)))
    assert "not advanced" not in caplog.text  # no finish failed (a deadlock would be logged here)
    async with pg.connect(postgres_url) as connection:
        joins = await connection.fetch(
            "SELECT workflow_id, payload FROM queueflow.jobs WHERE workflow_step_id = 'join' ORDER BY workflow_id"
        )
    assert [row["workflow_id"] for row in joins] == ids  # exactly one join job per workflow
    expected = {"root": "R"} | {f"m{index}": f"r{index}" for index in range(SIBLINGS)}
    for row in joins:
        assert json.loads(row["payload"])[CONTEXT_KEY] == expected
    setup = engine_on(postgres_store, clock)
    for workflow_id in ids:
        workflow = await setup.get_workflow(T, workflow_id)
        assert workflow.status is WorkflowStatus.RUNNING
        assert workflow.steps[-1].status is StepStatus.ENQUEUED


async def test_a_halt_racing_completions_fails_the_workflow_and_leaves_nothing_runnable(
    postgres_url: str, postgres_store: PostgresJobStore, caplog: pytest.LogCaptureFixture
) -> None:
    clock = TestClock(START)
    held = await started(postgres_store, clock, [fan_out(SIBLINGS, halting="m0") for _ in range(10)])
    ids = sorted({workflow_id for workflow_id, _ in held})
    async with stores(postgres_url, SIBLINGS) as opened:
        engines = [engine_on(store, clock, seed=seed) for seed, store in enumerate(opened)]
        for round_, workflow_id in enumerate(ids):
            start_line = asyncio.Barrier(SIBLINGS)
            halting = round_ % SIBLINGS  # the failing sibling starts at a different place in the race each time

            async def finish(index: int, workflow_id: str = workflow_id, start_line: asyncio.Barrier = start_line,
                             halting: int = halting) -> None:  # fmt: skip
                job = held[(workflow_id, f"m{index}")]
                await start_line.wait()
                if index == halting:
                    await engines[index].fail(job.id, job.lease_token or "", "boom", retryable=False)
                else:
                    await engines[index].complete(job.id, job.lease_token or "", index)

            with caplog.at_level(logging.WARNING, logger="queueflow.workflows"):
                outcomes = await asyncio.gather(*(finish(index) for index in range(SIBLINGS)), return_exceptions=True)
            # A completion after the halt finds its job cancelled (lease_lost); nothing else may go wrong.
            assert all(outcome is None or type(outcome).__name__ == "LeaseLost" for outcome in outcomes), outcomes
    assert "not advanced" not in caplog.text
    async with pg.connect(postgres_url) as connection:
        runnable = await connection.fetchval(
            "SELECT count(*) FROM queueflow.jobs WHERE status IN ('pending', 'retrying', 'running')"
        )
        joins = await connection.fetchval("SELECT count(*) FROM queueflow.jobs WHERE workflow_step_id = 'join'")
    assert (runnable, joins) == (0, 0)
    setup = engine_on(postgres_store, clock)
    for workflow_id in ids:
        workflow = await setup.get_workflow(T, workflow_id)
        assert workflow.status is WorkflowStatus.FAILED
        assert not [step.name for step in workflow.steps if step.status in (StepStatus.PENDING, StepStatus.ENQUEUED)]


async def test_a_busy_fan_out_with_the_janitor_sweeping_finishes_with_no_step_healed(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    clock = TestClock(START)
    width, workers = 300, 4
    workflow, _ = await engine_on(postgres_store, clock).create_workflow(T, fan_out(width))
    done = asyncio.Event()
    healed: list[int] = []

    async def worker(seed: int, store: PostgresJobStore) -> None:
        engine = engine_on(store, clock, seed=seed)
        while not done.is_set():
            jobs = await engine.lease(["default"], max_jobs=10, lease_seconds=600)
            if jobs:
                await engine.ack(complete=[Completion(job.id, job.lease_token or "", None) for job in jobs])
            if (await engine.get_job(T, jobs[-1].id) if jobs else None) and jobs[-1].workflow_step_id == "join":
                done.set()
            await asyncio.sleep(0)

    async def janitor(store: PostgresJobStore) -> None:
        engine = engine_on(store, clock, seed=99)
        while not done.is_set():
            healed.append((await engine.run_maintenance()).healed)

    async with stores(postgres_url, workers + 1) as opened:
        await asyncio.wait_for(
            asyncio.gather(*(worker(seed, store) for seed, store in enumerate(opened[:workers])), janitor(opened[-1])),
            timeout=300,
        )
    final = await engine_on(postgres_store, clock).get_workflow(T, workflow.id)
    assert final.status is WorkflowStatus.COMPLETED
    assert len(healed) > 1  # the janitor did sweep while the fan-out ran
    assert sum(healed) == 0


async def steps_read(connection: asyncpg.Connection) -> tuple[int, int]:
    """Rows of queueflow.workflow_steps read so far (sequential scans' rows plus index scans' fetches), and blocks
    of its TOAST table read (from disk or the buffer cache: its long `depends_on` and `dependents` arrays)."""
    await connection.execute("SELECT pg_stat_clear_snapshot()")
    row = await connection.fetchrow(
        "SELECT seq_tup_read, idx_tup_fetch, toast_blks_read, toast_blks_hit FROM pg_stat_user_tables AS t"
        "  JOIN pg_statio_user_tables AS io USING (relid) WHERE t.relname = 'workflow_steps'"
    )
    assert row is not None
    rows = int(row["seq_tup_read"] or 0) + int(row["idx_tup_fetch"] or 0)
    return rows, int(row["toast_blks_read"] or 0) + int(row["toast_blks_hit"] or 0)


@pytest.mark.parametrize(
    ("long_names", "smaller_first"),
    [(False, False), (True, False), (False, True)],
    ids=["short names", "toasted join", "after a smaller workflow's statistics"],
)
async def test_a_finish_in_a_large_workflow_reads_only_the_rows_it_touches(
    postgres_url: str, postgres_store: PostgresJobStore, long_names: bool, smaller_first: bool
) -> None:
    """Counted by PostgreSQL (pg_stat_user_tables, pg_statio_user_tables), not timed: one sibling's finish in a
    2,002-step fan-out reads a handful of step rows (its own, the join's), where reading every step would read 2,002;
    and it leaves the join's `depends_on` unread: with long names that list (2,000 names) is stored out of line, and
    reading it in each finish — as an earlier version did — read dozens of TOAST blocks per finish, the whole
    fan's names each time, which made a 10,000-wide fan-out's cost quadratic. `smaller_first`: the statistics were
    taken when the table held one smaller workflow, finished — as the bench's 9,998-wide fan-out ran after the
    narrower ones: told that a new workflow has a row or two, PostgreSQL read the dependents (FINISH) and updated
    them (COUNT) by a scan of all the workflow's rows, and every sibling read 2,002 rows twice."""
    clock = TestClock(START)
    async with PostgresJobStore.from_url(postgres_url, pool_size=1) as store, pg.connect(postgres_url) as watcher:
        engine = engine_on(store, clock)
        if smaller_first:
            smaller = engine_on(store, clock, seed=7)  # ids of its own
            workflow, _ = await smaller.create_workflow(T, fan_out(50))
            await run_to_the_end(smaller)
            assert (await smaller.get_workflow(T, workflow.id)).status is WorkflowStatus.COMPLETED
            await watcher.execute("ANALYZE queueflow.workflow_steps")
        held = await started(store, clock, [fan_out(2000, long_names=long_names)])

        async def flushed() -> tuple[int, int]:
            # The store's one connection reports its table statistics when it goes idle after this (PostgreSQL
            # otherwise flushes them at most once a second).
            async with store._connection() as db:
                await db.execute("SELECT pg_stat_force_next_flush()")
            return await steps_read(watcher)

        reads, toast_reads = [], []
        siblings = [job for (_, name), job in held.items() if name.startswith("m")]
        assert len(siblings) >= 100
        # Twelve: past the fifth execution of a prepared statement PostgreSQL may switch to its generic plan.
        for job in siblings[:12]:
            rows_before, toast_before = await flushed()
            await engine.complete(job.id, job.lease_token or "", job.workflow_step_id)
            rows_after, toast_after = await flushed()
            reads.append(rows_after - rows_before)
            toast_reads.append(toast_after - toast_before)
        if long_names:  # the list really is out of line: reading it once costs blocks
            async with pg.connect(postgres_url) as connection:
                before = (await steps_read(watcher))[1]
                await connection.fetchval("SELECT depends_on FROM queueflow.workflow_steps WHERE name = 'join'")
                await connection.execute("SELECT pg_stat_force_next_flush()")
            assert (await steps_read(watcher))[1] - before >= 10
    assert max(reads) <= 10, reads
    assert max(toast_reads) <= 2, toast_reads


class Woken:
    """A wake-up port that tells the test when a queue's work was committed (the store's local wake)."""

    def __init__(self) -> None:
        self.queues: dict[str, asyncio.Event] = {}

    def notify(self, queue: str) -> None:
        self.queues.setdefault(queue, asyncio.Event()).set()

    async def until(self, queue: str) -> None:
        async with asyncio.timeout(10):
            await self.queues.setdefault(queue, asyncio.Event()).wait()


async def test_the_finishes_of_one_ack_run_side_by_side(postgres_url: str, postgres_store: PostgresJobStore) -> None:
    """An ack of two steps of two workflows advances both at once: with the first workflow's row locked elsewhere
    (its finish waits), the second's next step is enqueued all the same, before the first's lock comes free. One
    finish after the other, it waited behind the first."""
    clock = TestClock(START)
    woken = Woken()
    async with PostgresJobStore.from_url(postgres_url, pool_size=4, wakeups=woken) as store:
        engine = engine_on(store, clock)
        created = []
        for name in ("blocked", "free"):
            a = NewStep(name="a", task_name="t", queue_name=f"{name}-a")
            b = NewStep(name="b", task_name="t", queue_name=f"{name}-b", depends_on=["a"])
            workflow, _ = await engine.create_workflow(T, NewWorkflow(name=name, steps=[a, b]))
            created.append(workflow)
        blocked, free = created
        held = await engine.lease(["blocked-a", "free-a"], max_jobs=2)
        held.sort(key=lambda job: job.workflow_id != blocked.id)  # the blocked workflow's step first in the ack
        assert [job.workflow_id for job in held] == [blocked.id, free.id]
        async with pg.connect(postgres_url) as locker, locker.transaction():
            await locker.execute("SELECT 1 FROM queueflow.workflows WHERE id = $1 FOR UPDATE", blocked.id)
            ack = asyncio.create_task(
                engine.ack([Completion(job.id, job.lease_token or "", job.workflow_id) for job in held])
            )
            await woken.until("free-b")  # the free workflow advanced while the blocked one's finish waits
            assert not ack.done()
        results = await asyncio.wait_for(ack, 10)
        assert [result.outcome.value for result in results] == ["ok", "ok"]
        for workflow in (blocked, free):
            steps = {step.name: step.status for step in (await engine.get_workflow(T, workflow.id)).steps}
            assert steps == {"a": StepStatus.COMPLETED, "b": StepStatus.ENQUEUED}


async def test_a_wide_finish_plans_its_count_anew_and_a_narrow_one_keeps_the_cached_plan(postgres_url: str) -> None:
    """COUNT is a prepared statement: after a few narrow finishes PostgreSQL may keep its generic plan, costed for a
    few rows, and a root that enqueues thousands of dependents ran it past the statement timeout on every retry. A
    finish that records more than WIDE_FINISH steps asks for a custom plan, in its own transaction only."""
    await pg.empty(postgres_url)
    clock = TestClock(START)
    rng = random.Random(11)  # the engine's and the store's, as one engine's was
    async with PostgresJobStore.from_url(postgres_url, pool_size=1, rng=rng) as store:
        engine = Engine(store, clock, rng=rng, settings=EngineSettings())
        statements: list[str] = []
        async with store._connection() as db:
            db.add_query_logger(lambda record: statements.append(record.query))

        async def finish_root(width: int) -> list[str]:
            await engine.create_workflow(T, fan_out(width))
            (root,) = await engine.lease(["default"], max_jobs=1)
            statements.clear()
            await engine.complete(root.id, root.lease_token or "", "R")
            await asyncio.sleep(0)  # the query logger is called back on the loop
            root_finish = [statement for statement in statements if statement in (CUSTOM_PLAN, COUNT)]
            # The rest of the workflow (its siblings, then its join) runs to its end: the next root is then the
            # only job due, whatever order the ids put the jobs of one clock millisecond in.
            while rest := await engine.lease(["default"], max_jobs=1000):
                for job in rest:
                    await engine.complete(job.id, job.lease_token or "", "r")
            return root_finish

        for _ in range(8):
            assert await finish_root(3) == [COUNT]
        assert await finish_root(WIDE_FINISH + 1) == [CUSTOM_PLAN, COUNT]
        assert await finish_root(3) == [COUNT]  # SET LOCAL: gone with the wide finish's transaction
