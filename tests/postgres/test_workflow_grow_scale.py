"""Adding steps costs what it adds, not what the workflow holds (issue 31), counted by PostgreSQL: rows of
queueflow.workflow_steps read (`test_workflow_scale.steps_read`), not timed."""

from __future__ import annotations

from queueflow.clocks import TestClock
from queueflow.core.workflow import NewStep, NewWorkflow, StepStatus
from queueflow.stores.postgres import PostgresJobStore

from tests import pg
from tests.moments import START, T
from tests.postgres.helpers import engine_on
from tests.postgres.test_workflow_scale import steps_read

WIDTH = 2000


async def test_adding_steps_to_a_large_workflow_reads_only_the_steps_it_touches(postgres_url: str) -> None:
    """root → 2,000 pending steps → join; root, running, adds 10 steps at a time, each waiting for one of the
    pending steps and required by join. Each addition reads the handful of rows it names (the new names, the
    step they wait for, join and what depends on join), where reading the workflow would read 2,002 each time —
    as an earlier version did (the whole snapshot under the workflow's lock, O(n) in the workflow's size)."""
    clock = TestClock(START)
    middle = [NewStep(name=f"old{i}", task_name="t", depends_on=["root"]) for i in range(WIDTH)]
    join = NewStep(name="join", task_name="t", depends_on=[step.name for step in middle])
    async with PostgresJobStore.from_url(postgres_url, pool_size=1) as store, pg.connect(postgres_url) as watcher:
        # A seed of its own: the session's database may hold a workflow another test made with the default one.
        engine = engine_on(store, clock, seed=31)
        workflow, _ = await engine.create_workflow(
            T,
            NewWorkflow(
                name="big", steps=[NewStep(name="root", task_name="t", queue_name="grow-scale"), *middle, join]
            ),
        )
        # A queue of its own: the session's database holds other tests' jobs.
        [root] = await engine.lease(["grow-scale"], max_jobs=1, lease_seconds=600)

        async def flushed() -> int:
            # The store's one connection reports its table statistics when it goes idle after this.
            async with store._connection() as db:
                await db.execute("SELECT pg_stat_force_next_flush()")
            return (await steps_read(watcher))[0]

        reads = []
        # Twelve: past the fifth execution of a prepared statement PostgreSQL may switch to its generic plan.
        for batch in range(12):
            new = [
                NewStep(name=f"new{batch}-{i}", task_name="t", depends_on=[f"old{i}"], required_by=["join"])
                for i in range(10)
            ]
            before = await flushed()
            added = await engine.add_steps(root.id, root.lease_token or "", new)
            reads.append(await flushed() - before)
            assert [(step.name, step.status, step.remaining) for step in added] == [
                (step.name, StepStatus.PENDING, 1) for step in new
            ]
        grown = await engine.get_workflow(T, workflow.id)
    assert max(reads) <= 60, reads
    by_name = {step.name: step for step in grown.steps}
    assert len(grown.steps) == WIDTH + 2 + 12 * 10
    assert (by_name["join"].remaining, len(by_name["join"].depends_on)) == (WIDTH + 120, WIDTH + 120)
    assert list(by_name["old3"].dependents) == ["join", *(f"new{batch}-3" for batch in range(12))]
    assert sorted(step.idx for step in grown.steps) == list(range(WIDTH + 2 + 120))
