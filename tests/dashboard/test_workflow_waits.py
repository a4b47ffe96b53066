"""A workflow that grows and waits, on its page: wait steps drawn as such (their signal and timeout, or their
wake time), steps added at run time marked with who added them, the "Send signal" form and "Retry workflow"."""

from __future__ import annotations

import re

from queueflow.clocks import TestClock
from queueflow.core.waits import Wait
from queueflow.core.workflow import NewStep, NewWorkflow
from queueflow.engine import Engine

from tests.dashboard.conftest import Browser
from tests.dashboard.test_pages import flash

TENANT = "tenant-a"


async def review(engine: Engine) -> str:
    """draft → approval (a signal, 1 h timeout) → nap (60 s) → publish."""
    workflow, _ = await engine.create_workflow(
        TENANT,
        NewWorkflow(
            name="review",
            steps=[
                NewStep(name="draft", task_name="write"),
                NewStep(name="approval", wait=Wait(signal="approval", timeout_seconds=3600), depends_on=["draft"]),
                NewStep(name="nap", wait=Wait(seconds=60), depends_on=["approval"]),
                NewStep(name="publish", task_name="publish", depends_on=["nap"]),
            ],
        ),
    )
    return workflow.id


def cell(page: str, step: str) -> str:
    """The step's row of the table, its times as their text ("in 1 h")."""
    found = re.search(rf'<tr data-step="{step}">(.*?)</tr>', page, re.S)
    assert found, step
    return re.sub(r"</?time[^>]*>", "", found.group(1))


async def test_wait_steps_added_steps_and_the_signal_form(signed_in: Browser, engine: Engine, clock: TestClock) -> None:
    workflow_id = await review(engine)
    page = (await signed_in.get(f"/ui/workflows/{workflow_id}")).text
    assert "signal <code>approval</code> · timeout 1 h" in cell(page, "approval")
    assert "a wait: no job" in cell(page, "approval")
    assert "sleep 1 min" in cell(page, "nap")
    assert 'data-step="approval" data-status="pending"' in page
    assert "<title>approval · waits for signal approval · pending</title>" in page
    assert '<option value="approval">approval (step approval, pending)</option>' in page  # an early signal is kept

    (draft,) = await engine.lease(["default"])
    await engine.add_steps(
        draft.id, draft.lease_token or "", [NewStep(name="spell_check", task_name="spell", required_by=["approval"])]
    )
    await engine.complete(draft.id, draft.lease_token or "", {"text": "hello"})
    page = (await signed_in.get(f"/ui/workflows/{workflow_id}")).text
    assert '<span class="added-by" data-added-by="draft">added by draft</span>' in cell(page, "spell_check")
    assert "added-by" not in cell(page, "draft")
    assert "<title>spell_check · task spell · enqueued added by draft</title>" in page
    assert 'class="dag-node s-enqueued added"' in page

    (spell,) = await engine.lease(["default"])
    await engine.complete(spell.id, spell.lease_token or "", None)
    page = (await signed_in.get(f"/ui/workflows/{workflow_id}")).text
    assert "signal <code>approval</code> · times out in 1 h" in cell(page, "approval")
    assert '<span class="badge s-waiting"><span aria-hidden="true">◷</span> waiting</span>' in cell(page, "approval")
    assert '<option value="approval">approval (step approval, waiting)</option>' in page

    await signed_in.submit(f"/ui/workflows/{workflow_id}/signal", name="approval", payload="{not json")
    page = (await signed_in.get(f"/ui/workflows/{workflow_id}")).text
    assert (flash(page) or "").startswith("The payload is not JSON")
    await signed_in.submit(f"/ui/workflows/{workflow_id}/signal", name="nope", payload="")
    assert "nope" in (flash((await signed_in.get(f"/ui/workflows/{workflow_id}")).text) or "")

    await signed_in.submit(f"/ui/workflows/{workflow_id}/signal", name="approval", payload='{"ok": true}')
    clock.advance(seconds=10)
    page = (await signed_in.get(f"/ui/workflows/{workflow_id}")).text
    assert flash(page) == "Signal &#39;approval&#39; sent."
    assert "s-completed" in cell(page, "approval")
    assert "received 10 s ago" in cell(page, "approval")
    assert "sleep 1 min · wakes in 50 s" in cell(page, "nap")
    assert 'id="signal"' not in page  # no step waits for a signal any more
    workflow = await engine.get_workflow(TENANT, workflow_id)
    assert workflow.context["approval"] == {"ok": True}


async def test_retry_workflow_on_a_failed_one(signed_in: Browser, engine: Engine) -> None:
    workflow_id = await review(engine)
    page = (await signed_in.get(f"/ui/workflows/{workflow_id}")).text
    assert "/retry" not in page  # running: it can be cancelled, not retried
    (draft,) = await engine.lease(["default"])
    await engine.fail(draft.id, draft.lease_token or "", "boom", retryable=False)
    page = (await signed_in.get(f"/ui/workflows/{workflow_id}")).text
    assert f'action="/ui/workflows/{workflow_id}/retry"' in page
    assert 'id="signal"' not in page  # a failed workflow takes no signal

    await signed_in.submit(f"/ui/workflows/{workflow_id}/retry")
    page = (await signed_in.get(f"/ui/workflows/{workflow_id}")).text
    assert (flash(page) or "").startswith("Workflow retried")
    assert (await engine.get_workflow(TENANT, workflow_id)).status == "running"
    assert f'action="/ui/workflows/{workflow_id}/cancel"' in page

    await signed_in.submit(f"/ui/workflows/{workflow_id}/retry")  # from a page shown before the retry
    assert "only a failed, partially failed or cancelled" in (
        flash((await signed_in.get(f"/ui/workflows/{workflow_id}")).text) or ""
    )
