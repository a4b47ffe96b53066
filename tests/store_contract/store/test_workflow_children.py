"""The `WorkflowStore` methods of child workflows and deadlines, called directly on every store: a workflow's
parent, depth and deadline kept as given; children inserted with their parent; children listed by parent; the
sweeps of ended children and due deadlines, each against its docstring in `ports`."""

from __future__ import annotations

from dataclasses import replace

from queueflow.core.advance import AdvanceRequest, deadline_after, settle
from queueflow.core.children import cancel_child, child_key, record_with_children, time_out
from queueflow.core.waits import DueWait
from queueflow.core.workflow import NewStep, NewWorkflow, ParentRef, StepStatus, WorkflowQuery, WorkflowStatus
from queueflow.ports import Store

from tests.moments import START, T
from tests.store_contract.store_rows import IDS, at, workflow
from tests.store_contract.workflow_helpers import dag, step


def parcel() -> NewWorkflow:
    return dag(step("pack"), name="parcel")


async def test_a_workflow_keeps_its_deadline_and_the_sweep_finds_it_when_due(store: Store) -> None:
    row, jobs = workflow(step("a"))
    due = replace(row, timeout_seconds=60.0, deadline=deadline_after(START, 60.0))
    later, later_jobs = workflow(step("b"))
    later = replace(later, timeout_seconds=120.0, deadline=deadline_after(START, 120.0))
    await store.workflow_insert(due, jobs)
    await store.workflow_insert(later, later_jobs)
    stored = await store.workflow_get(due.id)
    assert stored is not None
    assert (stored.timeout_seconds, stored.deadline, stored.error) == (60.0, at(60), None)
    assert await store.workflow_next_deadline() == at(60)
    assert await store.workflow_deadlines_due(limit=10, now=at(59)) == []
    assert await store.workflow_deadlines_due(limit=10, now=at(120)) == [due.id, later.id]
    assert await store.workflow_deadlines_due(limit=1, now=at(120)) == [due.id]
    request = AdvanceRequest(workflow_id=due.id, decide=lambda w: time_out(w, at(60)), now=at(60))
    ended = await store.workflow_advance(request)
    assert ended is not None
    assert (ended.status, ended.error) == (WorkflowStatus.FAILED, "timed out after 60 s")
    assert (await store.workflow_get(due.id)) == ended
    assert await store.workflow_deadlines_due(limit=10, now=at(120)) == [later.id]
    assert await store.workflow_next_deadline() == at(120)


async def test_a_root_child_step_inserts_its_child_with_the_parent_and_lists_it_by_parent(store: Store) -> None:
    row, _ = workflow(NewStep(name="ship", workflow=parcel()), step("other"))
    pending = replace(row, steps=[replace(s, status=StepStatus.PENDING, job_id=None) for s in row.steps])
    recording = record_with_children(
        pending, settle(pending.steps), START, IDS.stream("job", START), IDS.stream("wf", START)
    )
    (start,) = recording.children
    assert start.recording is not None
    stored, created = await store.workflow_insert(recording.workflow, recording.jobs, children=recording.children)
    assert created
    child_id = start.recording.workflow.id
    assert [s.child_workflow_id for s in stored.steps] == [child_id, None]
    child = await store.workflow_get(child_id, tenant_id=T)
    assert child is not None
    assert (child.parent, child.depth, child.idempotency_key) == (
        ParentRef(workflow_id=row.id, step="ship"),
        1,
        child_key(row.id, "ship"),
    )
    listed = await store.workflow_list(WorkflowQuery(tenant_id=T, parent_id=row.id, limit=10))
    assert [w.id for w in listed] == [child_id]
    assert await store.workflow_list(WorkflowQuery(tenant_id="other", parent_id=row.id, limit=10)) == []
    # A waiting child step whose child ended is found only once the child ended before the bound.
    assert await store.workflow_children_ended(limit=10, ended_before=at(60)) == []
    await store.workflow_advance(AdvanceRequest(workflow_id=child_id, decide=cancel_child, now=at(1)))
    assert await store.workflow_children_ended(limit=10, ended_before=at(1)) == []
    found = await store.workflow_children_ended(limit=10, ended_before=at(2))
    assert found == [
        DueWait(workflow_id=row.id, name="ship", wait=None, due_at=None, signal=None, child_workflow_id=child_id)
    ]
