"""Workflows of 1 to 10,000 steps, advanced through the engine on every store (issue 29): fan-outs with a join and
chains run to the end, each step once, every fan-in with all of its dependencies' results; a 10,000-step workflow
is created in one call and advances step by step."""

from __future__ import annotations

import pytest
from queueflow.core.types import Completion, Job, JobStatus
from queueflow.core.workflow import CONTEXT_KEY, MAX_STEPS, NewStep, NewWorkflow, StepStatus, WorkflowStatus
from queueflow.engine import Engine

from tests.moments import T
from tests.store_contract.workflow_helpers import statuses


def fan_out(size: int) -> NewWorkflow:
    """`root` → `size - 2` parallel steps → `join` (one step alone for size 1)."""
    if size == 1:
        return NewWorkflow(name="one", steps=[NewStep(name="root", task_name="t")])
    middle = [NewStep(name=f"m{i}", task_name="t", depends_on=["root"]) for i in range(size - 2)]
    join = NewStep(name="join", task_name="t", depends_on=[step.name for step in middle] or ["root"])
    return NewWorkflow(name="fan", steps=[NewStep(name="root", task_name="t"), *middle, join])


def chain(size: int) -> NewWorkflow:
    steps = [NewStep(name=f"s{i}", task_name="t", depends_on=[f"s{i - 1}"] if i else []) for i in range(size)]
    return NewWorkflow(name="chain", steps=steps)


async def finish_due(engine: Engine, limit: int = 1000) -> list[Job]:
    """Lease up to `limit` due step jobs and complete each with its step's name as the result, in one ack."""
    jobs = await engine.lease(["default"], max_jobs=limit, lease_seconds=600)
    if jobs:
        await engine.ack(complete=[Completion(job.id, job.lease_token or "", job.workflow_step_id) for job in jobs])
    return jobs


async def run_to_the_end(engine: Engine) -> dict[str, Job]:
    """Every step job, by step, as it was leased (with its `_context`)."""
    ran: dict[str, Job] = {}
    while jobs := await finish_due(engine):
        for job in jobs:
            assert job.workflow_step_id not in ran, f"{job.workflow_step_id} ran twice"
            ran[job.workflow_step_id or ""] = job
    return ran


@pytest.mark.parametrize("size", [1, 3, 1000])
async def test_a_fan_out_and_its_join_run_each_step_once_and_the_join_sees_every_result(
    engine: Engine, size: int
) -> None:
    new = fan_out(size)
    workflow, _ = await engine.create_workflow(T, new)
    ran = await run_to_the_end(engine)
    final = await engine.get_workflow(T, workflow.id)
    assert final.status is WorkflowStatus.COMPLETED
    assert final.completed_at is not None
    assert set(ran) == {step.name for step in new.steps}
    names = [step.name for step in new.steps]
    assert final.context == {name: name for name in names}
    last = ran[names[-1]]
    assert last.payload[CONTEXT_KEY] == {name: name for name in names[:-1]}


@pytest.mark.parametrize("size", [1, 3, 100])
async def test_a_chain_runs_in_order_each_step_with_every_earlier_result(engine: Engine, size: int) -> None:
    workflow, _ = await engine.create_workflow(T, NewWorkflow(name="c", steps=chain(size).steps, context={"n": 1}))
    order: list[str] = []
    while jobs := await finish_due(engine):
        assert len(jobs) == 1  # a chain never has two steps due at once
        (job,) = jobs
        assert job.payload[CONTEXT_KEY] == {"n": 1} | {name: name for name in order}
        order.append(job.workflow_step_id or "")
    assert order == [f"s{i}" for i in range(size)]
    final = await engine.get_workflow(T, workflow.id)
    assert final.status is WorkflowStatus.COMPLETED
    assert final.context == {"n": 1} | {name: name for name in order}


async def test_a_10000_step_workflow_is_created_in_one_call_and_advances_step_by_step(engine: Engine) -> None:
    new = fan_out(MAX_STEPS)
    workflow, created = await engine.create_workflow(T, new)
    assert created
    assert statuses(workflow) == {"root": "enqueued"} | {f"m{i}": "pending" for i in range(MAX_STEPS - 2)} | {
        "join": "pending"
    }
    (root,) = await finish_due(engine)
    assert root.workflow_step_id == "root"
    # One finish enqueued 9,998 steps, each job with the root's result in its `_context`.
    middle = await finish_due(engine, limit=50)
    assert len(middle) == 50
    assert all(job.payload[CONTEXT_KEY] == {"root": "root"} for job in middle)
    after = await engine.get_workflow(T, workflow.id)
    counts: dict[StepStatus, int] = {}
    for step in after.steps:
        counts[step.status] = counts.get(step.status, 0) + 1
    assert counts == {StepStatus.COMPLETED: 51, StepStatus.ENQUEUED: MAX_STEPS - 2 - 50, StepStatus.PENDING: 1}
    join = after.steps[-1]
    assert (join.name, join.remaining) == ("join", MAX_STEPS - 2 - 50)
    assert after.status is WorkflowStatus.RUNNING
    cancelled = await engine.cancel_workflow(T, workflow.id)
    assert cancelled.status is WorkflowStatus.CANCELLED
    assert {step.status for step in cancelled.steps} == {StepStatus.COMPLETED, StepStatus.CANCELLED}
    leftover = await engine.lease(["default"], max_jobs=1000)
    assert leftover == []
    assert (await engine.get_job(T, middle[0].id)).status is JobStatus.COMPLETED
