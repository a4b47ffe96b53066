"""A process killed between a child step's decision and its child's creation (issue 44): the child is created
exactly once, by whoever replays the step's finish.

The finish runs in a subprocess whose store has a failpoint where the child is inserted (`start_children` calls
`insert_workflow` for it, in the parent's transaction): the failpoint SIGKILLs the process just before the
child's insert, or just after it (before the commit). Deterministic, no sleep: the kill happens at that line.
The job's own completion committed before, so the step is left `enqueued` with its job finished — what the
janitor's heal replays."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from datetime import timedelta

import pytest
from queueflow.clocks import TestClock
from queueflow.core.types import Completion
from queueflow.core.workflow import NewStep, NewWorkflow, StepStatus, WorkflowStatus
from queueflow.engine.workflows import Workflows, step_report

from tests import pg
from tests.moments import START, T
from tests.postgres.helpers import engine_on

# The subprocess: a store on the database whose child insert is a failpoint, finishing the reported step.
FINISH_AND_DIE = """
import asyncio, json, os, signal, sys
from datetime import datetime
from queueflow.core.finish import StepReport
from queueflow.core.advance import StepOutcome
from queueflow.stores.postgres import PostgresJobStore
from queueflow.stores.postgres import workflows

url, where, raw = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
insert = workflows.insert_workflow

async def failpoint(db, workflow, jobs, announce):
    if workflow.parent is None:
        return await insert(db, workflow, jobs, announce)
    if where == "before":
        os.kill(os.getpid(), signal.SIGKILL)
    inserted = await insert(db, workflow, jobs, announce)
    os.kill(os.getpid(), signal.SIGKILL)
    return inserted

workflows.insert_workflow = failpoint

async def main():
    report = StepReport(workflow_id=raw["workflow_id"], step=raw["step"], job_id=raw["job_id"],
                        outcome=StepOutcome.COMPLETED, result=raw["result"])
    async with PostgresJobStore.from_url(url, pool_size=1) as store:
        await store.workflow_step_finish(report, now=datetime.fromisoformat(raw["now"]))

asyncio.run(main())
"""


@pytest.mark.parametrize("where", ["before", "after"])
async def test_a_crash_between_a_child_steps_decision_and_its_childs_creation_creates_it_once(
    postgres_url: str, where: str
) -> None:
    clock = TestClock(START)
    async with pg.emptied_store(postgres_url) as store:
        engine = engine_on(store, clock)
        body = NewWorkflow(name="parcel", steps=[NewStep(name="pack", task_name="pack")])
        new = NewWorkflow(
            name="order",
            steps=[
                NewStep(name="charge", task_name="charge"),
                NewStep(name="ship", workflow=body, depends_on=["charge"]),
            ],
        )
        workflow, _ = await engine.create_workflow(T, new)
        (job,) = await engine.lease(["default"], max_jobs=1)
        completed = await store.job_complete(
            Completion(job_id=job.id, lease_token=job.lease_token or "", result={"paid": True}), now=clock.now()
        )
        report = step_report(completed)
        assert report is not None
        raw = {
            "workflow_id": report.workflow_id,
            "step": report.step,
            "job_id": report.job_id,
            "result": report.result,
            "now": clock.now().isoformat(),
        }
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", FINISH_AND_DIE, postgres_url, where, json.dumps(raw)
        )
        assert await process.wait() == -signal.SIGKILL
        # Killed inside the parent's transaction: nothing of the finish, nor of the child, was committed.
        after_crash = await engine.get_workflow(T, workflow.id)
        assert [s.status for s in after_crash.steps] == [StepStatus.ENQUEUED, StepStatus.PENDING]
        assert (await engine.list_workflows(T, parent_id=workflow.id)).items == []

        healer = Workflows(store, clock, engine.ids, engine.settings)
        clock.advance(engine.settings.heal_after.total_seconds() + 1)
        assert await healer.heal(100) == 1
        assert await healer.heal(100) == 0
        children = (await engine.list_workflows(T, parent_id=workflow.id)).items
        assert len(children) == 1
        parent = await engine.get_workflow(T, workflow.id)
        assert [s.status for s in parent.steps] == [StepStatus.COMPLETED, StepStatus.WAITING]
        assert parent.steps[1].child_workflow_id == children[0].id
        assert children[0].status is WorkflowStatus.RUNNING
        assert children[0].context["parent_context"] == {"charge": {"paid": True}}
        # A repeat of the finish (a late worker report) creates nothing more.
        await store.workflow_step_finish(report, now=clock.now() + timedelta(seconds=1))
        assert len((await engine.list_workflows(T, parent_id=workflow.id)).items) == 1
