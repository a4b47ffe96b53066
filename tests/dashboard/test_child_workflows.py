"""A workflow with a child workflow step, on its page and its child's: the child linked from the parent's DAG and
its steps table, a breadcrumb from the child back to its parent, and a deadline shown while it runs."""

from __future__ import annotations

from queueflow.core.workflow import NewStep, NewWorkflow
from queueflow.engine import Engine

from tests.dashboard.conftest import Browser
from tests.dashboard.test_workflow_waits import cell

TENANT = "tenant-a"


async def test_a_child_step_links_its_child_and_the_child_links_back(signed_in: Browser, engine: Engine) -> None:
    parcel = NewWorkflow(name="parcel", steps=[NewStep(name="pack", task_name="pack")])
    workflow, _ = await engine.create_workflow(
        TENANT, NewWorkflow(name="order", steps=[NewStep(name="ship", workflow=parcel)], timeout_seconds=3600)
    )
    child_id = workflow.steps[0].child_workflow_id
    assert child_id is not None
    page = (await signed_in.get(f"/ui/workflows/{workflow.id}")).text
    assert f'<a class="dag-child" href="/ui/workflows/{child_id}">' in page
    assert "<title>ship · runs workflow parcel · waiting</title>" in page
    assert "workflow parcel" in cell(page, "ship")
    assert f'href="/ui/workflows/{child_id}">{child_id}</a>' in cell(page, "ship")
    assert "deadline" in page
    child = (await signed_in.get(f"/ui/workflows/{child_id}")).text
    assert f'<a class="parent-crumb" href="/ui/workflows/{workflow.id}">{workflow.id}</a> › step ship' in child
