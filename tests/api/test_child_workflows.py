"""Child workflows and a workflow's deadline over HTTP ("Workflows that nest, react and end on time")."""

from __future__ import annotations

from typing import Any

from httpx import AsyncClient
from queueflow.clocks import TestClock
from queueflow.engine import Engine

from tests.api.conftest import TENANT_A, WORKER, assert_problem, lease
from tests.api.test_workflows import complete, create, get, statuses


def parcel(n: int) -> dict[str, Any]:
    return {"name": f"parcel-{n}", "context": {"parcel": n}, "steps": [{"name": "pack", "task_name": "pack"}]}


def nested(levels: int) -> dict[str, Any]:
    body: dict[str, Any] = {"name": "leaf", "steps": [{"name": "leaf", "task_name": "leaf"}]}
    for _ in range(levels - 1):
        body = {"name": "level", "steps": [{"name": "down", "workflow": body}]}
    return body


async def test_a_child_step_runs_a_workflow_and_completes_with_its_context(client: AsyncClient) -> None:
    steps = [
        {"name": "charge", "task_name": "charge"},
        {"name": "ship", "workflow": parcel(1), "depends_on": ["charge"]},
    ]
    workflow = await create(client, steps, name="order", context={"order": 7})
    assert workflow["parent"] is None
    assert workflow["timeout_seconds"] is None
    assert workflow["deadline"] is None
    (charge,) = await lease(client)
    await complete(client, charge, {"paid": True})
    parent = await get(client, workflow["id"])
    ship = parent["steps"][1]
    assert ship["status"] == "waiting"
    assert ship["job_id"] is None
    child_id = ship["child_workflow_id"]
    assert ship["wait"] == {"workflow": child_id}
    child = await get(client, child_id)
    assert child["parent"] == {"workflow_id": workflow["id"], "step": "ship"}
    assert child["context"]["parent_context"] == {"order": 7, "charge": {"paid": True}}
    listed = await client.get(f"/v1/workflows?parent_id={workflow['id']}", headers=TENANT_A)
    assert [item["id"] for item in listed.json()["items"]] == [child_id]
    (pack,) = await lease(client)
    await complete(client, pack, {"box": 3})
    done = await get(client, workflow["id"])
    assert done["status"] == "completed"
    assert done["context"]["ship"]["pack"] == {"box": 3}


async def test_a_step_with_two_of_task_name_wait_and_workflow_or_job_fields_beside_workflow_is_400(
    client: AsyncClient,
) -> None:
    for step in (
        {"name": "s", "task_name": "t", "workflow": parcel(1)},
        {"name": "s", "wait": {"seconds": 1}, "workflow": parcel(1)},
        {"name": "s", "workflow": parcel(1), "queue_name": "default"},
        {"name": "s", "workflow": {"name": "bad", "steps": []}},
    ):
        response = await client.post("/v1/workflows", json={"name": "w", "steps": [step]}, headers=TENANT_A)
        assert_problem(response, 400, "validation_error")


async def test_nested_bodies_deeper_than_ten_levels_are_400(client: AsyncClient) -> None:
    ok = await client.post(
        "/v1/workflows", json={"name": "w", "steps": [{"name": "d", "workflow": nested(10)}]}, headers=TENANT_A
    )
    assert ok.status_code == 201, ok.text
    deep = await client.post(
        "/v1/workflows", json={"name": "w", "steps": [{"name": "d", "workflow": nested(11)}]}, headers=TENANT_A
    )
    assert "level 11" in assert_problem(deep, 400, "validation_error")["detail"]


async def test_cancelling_the_parent_cancels_its_child(client: AsyncClient) -> None:
    workflow = await create(client, [{"name": "ship", "workflow": parcel(1)}], name="order")
    child_id = workflow["steps"][0]["child_workflow_id"]
    response = await client.post(f"/v1/workflows/{workflow['id']}/cancel", headers=TENANT_A)
    assert response.status_code == 200
    assert (await get(client, child_id))["status"] == "cancelled"
    retried = await client.post(f"/v1/workflows/{workflow['id']}/retry", headers=TENANT_A)
    assert retried.json()["steps"][0]["child_workflow_id"] == child_id
    assert (await get(client, child_id))["status"] == "running"


async def test_a_workflow_with_a_deadline_times_out_failed(
    client: AsyncClient, clock: TestClock, engine: Engine
) -> None:
    workflow = await create(client, [{"name": "a", "task_name": "a"}], name="slow", timeout_seconds=3600)
    assert workflow["timeout_seconds"] == 3600
    assert workflow["deadline"] is not None
    for bad in (0, 31_536_001):
        response = await client.post(
            "/v1/workflows",
            json={"name": "w", "steps": [{"name": "a", "task_name": "a"}], "timeout_seconds": bad},
            headers=TENANT_A,
        )
        assert_problem(response, 400, "validation_error")
    clock.advance(3600)
    assert await engine.end_due_waits(100) == 1
    ended = await get(client, workflow["id"])
    assert (ended["status"], ended["error"]) == ("failed", "timed out after 3600 s")
    assert statuses(ended) == {"a": "cancelled"}


async def test_a_running_step_adds_child_workflow_steps_over_http(client: AsyncClient) -> None:
    workflow = await create(
        client,
        [{"name": "split", "task_name": "split"}, {"name": "reduce", "task_name": "reduce", "depends_on": ["split"]}],
    )
    (split,) = await lease(client)
    added = await client.post(
        f"/v1/worker/jobs/{split['id']}/steps",
        json={
            "lease_token": split["lease_token"],
            "steps": [{"name": f"map_{n}", "workflow": parcel(n), "required_by": ["reduce"]} for n in range(2)],
        },
        headers=WORKER,
    )
    assert added.status_code == 201, added.text
    shown = added.json()["steps"]
    assert [step["status"] for step in shown] == ["waiting", "waiting"]
    assert all(step["child_workflow_id"] for step in shown)
    listed = await client.get(f"/v1/workflows?parent_id={workflow['id']}", headers=TENANT_A)
    assert len(listed.json()["items"]) == 2


async def test_a_child_step_too_deep_at_run_time_fails_with_an_error(client: AsyncClient) -> None:
    top = await create(client, [{"name": "down", "workflow": nested(10)}], name="top")
    workflow_id = top["id"]
    for _ in range(10):
        step = (await get(client, workflow_id))["steps"][0]
        workflow_id = step["child_workflow_id"]
    (leaf,) = await lease(client)
    assert leaf["workflow_id"] == workflow_id
    added = await client.post(
        f"/v1/worker/jobs/{leaf['id']}/steps",
        json={
            "lease_token": leaf["lease_token"],
            "steps": [{"name": "deeper", "workflow": parcel(1), "on_failure": "continue"}],
        },
        headers=WORKER,
    )
    (deeper,) = added.json()["steps"]
    assert deeper["status"] == "failed"
    assert "level 11" in deeper["error"]
