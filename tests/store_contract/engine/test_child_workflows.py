"""Child workflows (the HTTP contract, "Workflows that nest, react and end on time"): a step that runs a whole
workflow, created once as the step waits, ending the step as the child ends; cancels cascading down the tree;
retries in place; the depth limit; children added at run time."""

from __future__ import annotations

from datetime import timedelta

import pytest
from queueflow.clocks import TestClock
from queueflow.core.children import child_key
from queueflow.core.errors import ValidationError
from queueflow.core.types import Completion
from queueflow.core.workflow import CONTEXT_KEY, MAX_DEPTH, NewStep, NewWorkflow, StepStatus, WorkflowStatus
from queueflow.engine import Engine
from queueflow.engine.workflows import Workflows, step_report
from queueflow.ports import Store

from tests.store_contract.store_rows import nested as nested_json
from tests.store_contract.workflow_helpers import CONTINUE, Worker, dag, named, statuses, step

T = "tenant-a"


def child(name: str, body: NewWorkflow, *depends_on: str, **fields: object) -> NewStep:
    return NewStep(name=name, workflow=body, depends_on=list(depends_on), **fields)  # type: ignore[arg-type]


def parcel(n: int) -> NewWorkflow:
    return dag(step("pack"), step("label", "pack"), name=f"parcel-{n}", context={"parcel": n})


async def child_of(engine: Engine, workflow_id: str, name: str):  # type: ignore[no-untyped-def]
    parent = await engine.get_workflow(T, workflow_id)
    child_id = named(parent, name).child_workflow_id
    assert child_id is not None
    return await engine.get_workflow(T, child_id)


async def test_a_child_step_creates_its_workflow_as_it_waits_and_completes_with_its_context(engine: Engine) -> None:
    workflow, _ = await engine.create_workflow(
        T, dag(step("charge"), child("ship", parcel(1), "charge"), step("notify", "ship"), context={"order": 7})
    )
    worker = Worker(engine, T)
    after = await worker.complete(workflow.id, "charge", {"paid": True})
    ship = named(after, "ship")
    assert (ship.status, ship.job_id) == (StepStatus.WAITING, None)
    kid = await child_of(engine, workflow.id, "ship")
    assert kid.parent is not None
    assert (kid.parent.workflow_id, kid.parent.step) == (workflow.id, "ship")
    assert kid.depth == 1
    assert kid.tenant_id == T
    assert kid.idempotency_key == child_key(workflow.id, "ship")
    assert kid.context == {
        "parcel": 1,
        "parent": {"workflow_id": workflow.id, "step": "ship"},
        "parent_context": {"order": 7, "charge": {"paid": True}},
    }
    assert statuses(kid) == {"pack": "enqueued", "label": "pending"}
    await worker.complete(kid.id, "pack", {"box": 1})
    done = await worker.complete(kid.id, "label", {"tracking": "X1"})
    assert done.status is WorkflowStatus.COMPLETED
    parent = await engine.get_workflow(T, workflow.id)
    assert statuses(parent) == {"charge": "completed", "ship": "completed", "notify": "enqueued"}
    assert parent.context["ship"] == done.context
    notify = await worker.job_of(workflow.id, "notify")
    assert notify.payload[CONTEXT_KEY]["ship"]["label"] == {"tracking": "X1"}
    assert (await worker.complete(workflow.id, "notify")).status is WorkflowStatus.COMPLETED
    page = await engine.list_workflows(T, parent_id=workflow.id)
    assert [w.id for w in page.items] == [kid.id]


async def test_a_root_child_step_creates_its_child_with_the_parent(engine: Engine) -> None:
    workflow, _ = await engine.create_workflow(T, dag(child("ship", parcel(1)), name="order"))
    assert named(workflow, "ship").status is StepStatus.WAITING
    kid = await child_of(engine, workflow.id, "ship")
    assert statuses(kid) == {"pack": "enqueued", "label": "pending"}


@pytest.mark.parametrize("ending", ["dead_letter", "cancel"])
async def test_a_child_that_fails_or_is_cancelled_fails_the_step_and_its_on_failure_applies(
    engine: Engine, ending: str
) -> None:
    workflow, _ = await engine.create_workflow(
        T, dag(child("ship", parcel(1), on_failure=CONTINUE), step("notify", "ship"))
    )
    worker = Worker(engine, T)
    kid = await child_of(engine, workflow.id, "ship")
    if ending == "dead_letter":
        await worker.dead_letter(kid.id, "pack")
    else:
        await engine.cancel_workflow(T, kid.id)
    parent = await engine.get_workflow(T, workflow.id)
    assert statuses(parent) == {"ship": "failed", "notify": "enqueued"}
    assert parent.context["ship"] is None


async def test_a_halting_child_failure_fails_the_parent(engine: Engine) -> None:
    workflow, _ = await engine.create_workflow(T, dag(child("ship", parcel(1)), step("notify", "ship")))
    kid = await child_of(engine, workflow.id, "ship")
    await Worker(engine, T).dead_letter(kid.id, "pack")
    parent = await engine.get_workflow(T, workflow.id)
    assert parent.status is WorkflowStatus.FAILED
    assert statuses(parent) == {"ship": "failed", "notify": "cancelled"}


async def test_cancelling_the_parent_cancels_its_children_and_theirs(engine: Engine) -> None:
    inner = dag(step("deep"), name="inner")
    middle = dag(child("inner", inner), step("side"), name="middle")
    workflow, _ = await engine.create_workflow(T, dag(child("middle", middle), step("other")))
    kid = await child_of(engine, workflow.id, "middle")
    grandchild = await child_of(engine, kid.id, "inner")
    assert grandchild.depth == 2
    cancelled = await engine.cancel_workflow(T, workflow.id)
    assert cancelled.status is WorkflowStatus.CANCELLED
    kid = await engine.get_workflow(T, kid.id)
    grandchild = await engine.get_workflow(T, grandchild.id)
    assert (kid.status, grandchild.status) == (WorkflowStatus.CANCELLED, WorkflowStatus.CANCELLED)
    assert statuses(grandchild) == {"deep": "cancelled"}
    deep_job = await engine.get_job(T, named(grandchild, "deep").job_id or "")
    assert deep_job.status.value == "cancelled"


async def test_a_halt_in_the_parent_cancels_its_running_children(engine: Engine) -> None:
    workflow, _ = await engine.create_workflow(T, dag(child("ship", parcel(1)), step("bill")))
    await Worker(engine, T).dead_letter(workflow.id, "bill")
    kid = await child_of(engine, workflow.id, "ship")
    assert kid.status is WorkflowStatus.CANCELLED
    parent = await engine.get_workflow(T, workflow.id)
    assert (parent.status, named(parent, "ship").status) == (WorkflowStatus.FAILED, StepStatus.CANCELLED)


async def test_a_retry_of_the_parent_retries_its_failed_child_in_place(engine: Engine) -> None:
    workflow, _ = await engine.create_workflow(T, dag(child("ship", parcel(1)), step("notify", "ship")))
    worker = Worker(engine, T)
    kid = await child_of(engine, workflow.id, "ship")
    await worker.complete(kid.id, "pack")
    await worker.dead_letter(kid.id, "label")
    assert (await engine.get_workflow(T, workflow.id)).status is WorkflowStatus.FAILED
    retried = await engine.retry_workflow(T, workflow.id)
    assert retried.status is WorkflowStatus.RUNNING
    assert named(retried, "ship").child_workflow_id == kid.id
    again = await engine.get_workflow(T, kid.id)
    assert again.status is WorkflowStatus.RUNNING
    assert statuses(again) == {"pack": "completed", "label": "enqueued"}
    assert len((await engine.list_workflows(T, parent_id=workflow.id)).items) == 1
    await worker.complete(kid.id, "label")
    parent = await engine.get_workflow(T, workflow.id)
    assert statuses(parent) == {"ship": "completed", "notify": "enqueued"}


async def test_a_step_that_never_created_its_child_creates_it_on_retry(engine: Engine) -> None:
    workflow, _ = await engine.create_workflow(T, dag(step("charge"), child("ship", parcel(1), "charge")))
    await Worker(engine, T).dead_letter(workflow.id, "charge")
    assert named(await engine.get_workflow(T, workflow.id), "ship").child_workflow_id is None
    await engine.retry_workflow(T, workflow.id)
    await Worker(engine, T).complete(workflow.id, "charge")
    kid = await child_of(engine, workflow.id, "ship")
    assert kid.status is WorkflowStatus.RUNNING


def nested(levels: int) -> NewWorkflow:
    body = dag(step("leaf"), name="level")
    for _ in range(levels - 1):
        body = dag(child("down", body), name="level")
    return body


async def test_nesting_deeper_than_ten_levels_in_one_request_is_refused(engine: Engine) -> None:
    await engine.create_workflow(T, dag(child("down", nested(MAX_DEPTH)), name="top"))
    with pytest.raises(ValidationError, match="level 11"):
        await engine.create_workflow(T, dag(child("down", nested(MAX_DEPTH + 1)), name="top"))


async def test_a_child_step_that_would_be_too_deep_at_run_time_fails_with_an_error(engine: Engine) -> None:
    top, _ = await engine.create_workflow(T, dag(child("down", nested(MAX_DEPTH)), name="top"))
    workflow = top
    for _ in range(MAX_DEPTH - 1):
        workflow = await child_of(engine, workflow.id, "down")
    assert workflow.depth == MAX_DEPTH - 1
    deepest = await child_of(engine, workflow.id, "down")
    assert deepest.depth == MAX_DEPTH
    worker = Worker(engine, T)
    job = await worker.job_of(deepest.id, "leaf")
    too_deep = [child("again", dag(step("x"), name="more"), on_failure=CONTINUE)]
    added = await engine.add_steps(job.id, job.lease_token or "", too_deep)
    assert added[0].status is StepStatus.FAILED
    assert added[0].error is not None
    assert "level 11" in added[0].error
    assert added[0].child_workflow_id is None


async def test_a_running_step_may_add_child_workflow_steps(engine: Engine) -> None:
    workflow, _ = await engine.create_workflow(T, dag(step("split"), step("reduce", "split")))
    worker = Worker(engine, T)
    job = await worker.job_of(workflow.id, "split")
    maps = [child(f"map_{n}", parcel(n), required_by=["reduce"]) for n in range(3)]  # type: ignore[arg-type]
    added = await engine.add_steps(job.id, job.lease_token or "", maps)
    assert {s.status for s in added} == {StepStatus.WAITING}
    await worker.complete(workflow.id, "split")
    for n in range(3):
        kid = await child_of(engine, workflow.id, f"map_{n}")
        assert kid.context["parcel"] == n
        await worker.complete(kid.id, "pack")
        await worker.complete(kid.id, "label")
    parent = await engine.get_workflow(T, workflow.id)
    assert named(parent, "reduce").status is StepStatus.ENQUEUED


async def test_the_janitor_ends_a_parent_step_whose_child_ended_unheard(
    engine: Engine, store: Store, clock: TestClock
) -> None:
    """A crash between the child's end and the parent's advance: the child's status is the durable row, and the
    heal replays the parent's step once it is older than the heal bound."""
    workflow, _ = await engine.create_workflow(
        T, dag(child("ship", dag(step("only"), name="c")), step("after", "ship"))
    )
    kid = await child_of(engine, workflow.id, "ship")
    # The child's finish alone, as a process that died before it ended the parent's step.
    job = (await engine.lease(["default"], max_jobs=10))[0]
    completion = Completion(job_id=job.id, lease_token=job.lease_token or "", result={"r": 1})
    finished = step_report(await store.job_complete(completion, now=clock.now()))
    assert finished is not None
    bare = Workflows(store, clock, engine.ids, engine.settings)
    await store.workflow_step_finish(finished, now=clock.now())
    assert (await engine.get_workflow(T, kid.id)).status is WorkflowStatus.COMPLETED
    assert named(await engine.get_workflow(T, workflow.id), "ship").status is StepStatus.WAITING
    assert await bare.heal(100) == 0  # not yet older than the bound
    clock.advance(engine.settings.heal_after.total_seconds() + 1)
    assert await bare.heal(100) == 1
    parent = await engine.get_workflow(T, workflow.id)
    assert statuses(parent) == {"ship": "completed", "after": "enqueued"}
    assert await bare.heal(100) == 0


async def test_a_workflow_past_its_deadline_ends_failed_as_a_halt_with_its_children(
    engine: Engine, clock: TestClock
) -> None:
    body = NewWorkflow(name="slow", steps=[step("a"), child("ship", parcel(1))], timeout_seconds=3600)
    workflow, _ = await engine.create_workflow(T, body)
    assert (workflow.timeout_seconds, workflow.deadline) == (3600, workflow.created_at + timedelta(hours=1))
    kid = await child_of(engine, workflow.id, "ship")
    worker = Worker(engine, T)
    job = await worker.job_of(workflow.id, "a")
    clock.advance(3599)
    assert await engine.end_due_waits(100) == 0
    assert await engine.next_wait_due() == workflow.deadline
    clock.advance(1)
    assert await engine.end_due_waits(100) == 1
    ended = await engine.get_workflow(T, workflow.id)
    assert (ended.status, ended.error) == (WorkflowStatus.FAILED, "timed out after 3600 s")
    assert statuses(ended) == {"a": "cancelled", "ship": "cancelled"}
    assert (await engine.get_job(T, job.id)).lease_token is None
    assert (await engine.get_workflow(T, kid.id)).status is WorkflowStatus.CANCELLED
    assert await engine.end_due_waits(100) == 0
    clock.advance(10)
    retried = await engine.retry_workflow(T, workflow.id)
    assert (retried.status, retried.error) == (WorkflowStatus.RUNNING, None)
    assert retried.deadline == clock.now() + timedelta(hours=1)
    assert (await engine.get_workflow(T, kid.id)).status is WorkflowStatus.RUNNING


@pytest.mark.parametrize("depth", [126, 127])
async def test_a_child_that_cannot_be_stored_fails_its_step_not_the_parents_advance(engine: Engine, depth: int) -> None:
    """The parent's context under `parent_context` makes the child's context (127), or its root job's `_context`
    (126), deeper than the store keeps: the step fails with an error (its `on_failure` applies), rather than the
    parent's creation or advance."""
    body = dag(child("ship", parcel(1), on_failure=CONTINUE), context={"d": nested_json(depth)})
    workflow, _ = await engine.create_workflow(T, body)
    ship = named(workflow, "ship")
    assert (ship.status, ship.child_workflow_id) == (StepStatus.FAILED, None)
    assert ship.error is not None
    assert ship.error.startswith("the child workflow cannot be stored")
    assert workflow.status is WorkflowStatus.PARTIALLY_FAILED
    assert (await engine.list_workflows(T, parent_id=workflow.id)).items == []
