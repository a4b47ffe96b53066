"""`steps.child`, a workflow's `timeout_seconds` and `workflows.list(parent_id=)` through the SDK, against the real
app in-process."""

from __future__ import annotations

from queueflow_client import AsyncQueueFlow, steps
from queueflow_client.types import ParentRef, Wait


async def test_a_child_step_and_a_deadline_go_out_and_come_back_typed(client: AsyncQueueFlow) -> None:
    parcel = steps.workflow("parcel", [steps.task("pack", "pack")], context={"parcel": 1}, timeout_seconds=600)
    order = steps.workflow("order", [steps.child("ship", parcel)], timeout_seconds=3600)
    workflow = await client.workflows.create(order)
    assert workflow.timeout_seconds == 3600
    assert workflow.deadline is not None
    assert workflow.parent is None
    ship = workflow.steps[0]
    assert ship.status == "waiting"
    assert ship.child_workflow_id is not None
    assert ship.wait == Wait(workflow=ship.child_workflow_id)
    child = await client.workflows.get(ship.child_workflow_id)
    assert child.parent == ParentRef(workflow_id=workflow.id, step="ship")
    assert child.timeout_seconds == 600
    assert child.context["parcel"] == 1
    listed = [found.id async for found in client.workflows.list(parent_id=workflow.id)]
    assert listed == [child.id]
