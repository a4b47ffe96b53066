"""Trigger routes (create, list, get, patch, delete) and `POST /v1/events`: every rule of the contract's "Events and
triggers", on the in-memory store."""

from __future__ import annotations

from typing import Any

import pytest
from httpx import AsyncClient
from queueflow.clocks import TestClock

from tests.api.conftest import TENANT_A, TENANT_B, assert_problem, lease

TRIGGER_FIELDS = {
    "id", "tenant_id", "name", "event", "filter", "task", "workflow", "enabled", "created_at", "updated_at",
}  # fmt: skip
WORKFLOW = {
    "name": "fulfil",
    "steps": [{"name": "pack", "task_name": "pack"}, {"name": "ship", "task_name": "ship", "depends_on": ["pack"]}],
}
UNRESOLVED = {"name": "w", "steps": [{"name": "a", "task_name": "a", "depends_on": ["zz"]}]}


async def create(
    client: AsyncClient, headers: dict[str, str] = TENANT_A, *, clock: TestClock | None = None, **body: Any
) -> dict[str, Any]:
    """Create a trigger; with `clock`, a millisecond after the one before (triggers start in creation order)."""
    if clock is not None:
        clock.advance(0.001)
    body.setdefault("name", "on-paid")
    body.setdefault("event", "order.paid")
    if "workflow" not in body:
        body.setdefault("task", {"task_name": "receipt"})
    response = await client.post("/v1/triggers", json=body, headers=headers)
    assert response.status_code == 201, response.text
    trigger: dict[str, Any] = response.json()
    return trigger


async def send(client: AsyncClient, headers: dict[str, str] = TENANT_A, **body: Any) -> dict[str, Any]:
    body.setdefault("payload", {})
    response = await client.post("/v1/events", json=body, headers=headers)
    assert response.status_code == 202, response.text
    accepted: dict[str, Any] = response.json()
    return accepted


async def started_triggers(client: AsyncClient, **body: Any) -> list[str]:
    return [item["trigger"] for item in (await send(client, **body))["started"]]


# ---- triggers as rows -------------------------------------------------------------------------------------


async def test_create_answers_201_with_every_field(client: AsyncClient) -> None:
    trigger = await create(client, filter={"plan": "pro"})
    assert set(trigger) == TRIGGER_FIELDS
    assert trigger["id"].startswith("trg_")
    assert trigger["tenant_id"] == "tenant-a"
    assert (trigger["name"], trigger["event"], trigger["filter"], trigger["enabled"]) == (
        "on-paid", "order.paid", {"plan": "pro"}, True,
    )  # fmt: skip
    assert trigger["task"]["task_name"] == "receipt"
    assert trigger["task"]["queue_name"] == "default"
    assert trigger["workflow"] is None


async def test_a_workflow_trigger_shows_its_workflow_and_no_task(client: AsyncClient) -> None:
    trigger = await create(client, workflow=WORKFLOW)
    assert trigger["task"] is None
    assert trigger["workflow"]["name"] == "fulfil"
    assert [step["name"] for step in trigger["workflow"]["steps"]] == ["pack", "ship"]


async def test_get_list_patch_delete(client: AsyncClient, clock: TestClock) -> None:
    await create(client, clock=clock, name="a")
    await create(client, clock=clock, name="b", event="order.*")
    listed = (await client.get("/v1/triggers", headers=TENANT_A)).json()
    assert [item["name"] for item in listed["items"]] == ["b", "a"]
    assert listed["next_cursor"] is None
    first = (await client.get("/v1/triggers?limit=1", headers=TENANT_A)).json()
    assert [item["name"] for item in first["items"]] == ["b"]
    rest = (await client.get(f"/v1/triggers?limit=1&cursor={first['next_cursor']}", headers=TENANT_A)).json()
    assert [item["name"] for item in rest["items"]] == ["a"]
    assert (await client.get("/v1/triggers/a", headers=TENANT_A)).json()["event"] == "order.paid"
    patched = await client.patch("/v1/triggers/a", json={"enabled": False, "filter": {"x": 1}}, headers=TENANT_A)
    assert patched.status_code == 200, patched.text
    assert (patched.json()["enabled"], patched.json()["filter"], patched.json()["task"]["task_name"]) == (
        False, {"x": 1}, "receipt",
    )  # fmt: skip
    assert (await client.delete("/v1/triggers/a", headers=TENANT_A)).status_code == 204
    assert_problem(await client.get("/v1/triggers/a", headers=TENANT_A), 404, "not_found")
    assert_problem(await client.delete("/v1/triggers/a", headers=TENANT_A), 404, "not_found")
    assert_problem(await client.patch("/v1/triggers/a", json={}, headers=TENANT_A), 404, "not_found")


async def test_patch_swaps_task_and_workflow(client: AsyncClient) -> None:
    await create(client)
    became = (await client.patch("/v1/triggers/on-paid", json={"workflow": WORKFLOW}, headers=TENANT_A)).json()
    assert (became["task"], became["workflow"]["name"]) == (None, "fulfil")
    back = (await client.patch("/v1/triggers/on-paid", json={"task": {"task_name": "t"}}, headers=TENANT_A)).json()
    assert (back["task"]["task_name"], back["workflow"]) == ("t", None)
    both = {"task": {"task_name": "t"}, "workflow": WORKFLOW}
    assert_problem(await client.patch("/v1/triggers/on-paid", json=both, headers=TENANT_A), 400, "validation_error")


async def test_names_are_unique_per_tenant(client: AsyncClient) -> None:
    await create(client)
    response = await client.post(
        "/v1/triggers", json={"name": "on-paid", "event": "x", "task": {"task_name": "t"}}, headers=TENANT_A
    )
    assert_problem(response, 409, "invalid_state")
    await create(client, headers=TENANT_B)  # another tenant's name is its own


async def test_another_tenants_trigger_is_a_404(client: AsyncClient) -> None:
    await create(client)
    assert_problem(await client.get("/v1/triggers/on-paid", headers=TENANT_B), 404, "not_found")
    assert (await client.get("/v1/triggers", headers=TENANT_B)).json()["items"] == []


@pytest.mark.parametrize(
    "body",
    [
        {"name": "bad name", "event": "x", "task": {"task_name": "t"}},
        {"name": "n", "event": "order paid", "task": {"task_name": "t"}},
        {"name": "n", "event": "order*", "task": {"task_name": "t"}},
        {"name": "n", "event": ".*", "task": {"task_name": "t"}},
        {"name": "n", "event": "*", "task": {"task_name": "t"}},
        {"name": "n", "event": "a.*.b", "task": {"task_name": "t"}},
        {"name": "n", "event": "x" * 201, "task": {"task_name": "t"}},
        {"name": "n", "event": "x"},
        {"name": "n", "event": "x", "task": {"task_name": "t"}, "workflow": WORKFLOW},
        {"name": "n", "event": "x", "task": {"task_name": "t", "priority": 5000}},
        {"name": "n", "event": "x", "task": {"task_name": "t", "payload": {"_event": 1}}},
        {"name": "n", "event": "x", "task": {"task_name": "t", "unique": {"key": "k"}}},
        {"name": "n", "event": "x", "task": {"task_name": "t"}, "filter": []},
        {"name": "n", "event": "x", "workflow": UNRESOLVED},
        {"name": "n", "event": "x", "task": {"task_name": "t"}, "surprise": 1},
    ],
)  # fmt: skip
async def test_invalid_triggers_are_400(client: AsyncClient, body: dict[str, Any]) -> None:
    assert_problem(await client.post("/v1/triggers", json=body, headers=TENANT_A), 400, "validation_error")


async def test_a_prefix_of_200_characters_is_a_valid_pattern(client: AsyncClient) -> None:
    await create(client, event="x" * 198 + ".*")
    await create(client, name="exact", event="x" * 200)


# ---- events -------------------------------------------------------------------------------------------------


async def test_an_event_starts_a_job_with_the_event_in_its_payload(client: AsyncClient) -> None:
    await create(client, task={"task_name": "receipt", "payload": {"copy": 2}, "queue_name": "mail"})
    accepted = await send(client, name="order.paid", payload={"order": 7}, id="evt-1")
    assert accepted["event_id"] == "evt-1"
    [started] = accepted["started"]
    assert set(started) == {"trigger", "job_id"}
    assert started["trigger"] == "on-paid"
    job = (await client.get(f"/v1/jobs/{started['job_id']}", headers=TENANT_A)).json()
    assert job["queue_name"] == "mail"
    assert job["payload"] == {"copy": 2, "_event": {"id": "evt-1", "name": "order.paid", "payload": {"order": 7}}}
    assert job["metadata"] == {"trigger": "on-paid", "event": "evt-1"}
    [leased] = await lease(client, ["mail"])
    assert leased["id"] == started["job_id"]


async def test_an_event_starts_a_workflow_with_the_event_in_its_context(client: AsyncClient) -> None:
    await create(client, workflow={**WORKFLOW, "context": {"region": "eu"}})
    [started] = (await send(client, name="order.paid", payload={"order": 7}))["started"]
    assert set(started) == {"trigger", "workflow_id"}
    workflow = (await client.get(f"/v1/workflows/{started['workflow_id']}", headers=TENANT_A)).json()
    assert workflow["status"] == "running"
    event = workflow["context"]["event"]
    assert (event["name"], event["payload"]) == ("order.paid", {"order": 7})
    assert event["id"].startswith("evt_")
    assert workflow["context"]["region"] == "eu"
    assert [step["status"] for step in workflow["steps"]] == ["enqueued", "pending"]
    [job] = await lease(client)
    assert job["payload"]["_context"]["event"] == event


async def test_no_trigger_matched_is_202_with_nothing_started(client: AsyncClient) -> None:
    accepted = await send(client, name="order.refunded")
    assert accepted["started"] == []
    assert accepted["event_id"].startswith("evt_")


async def test_one_event_starts_every_matching_trigger_in_creation_order(client: AsyncClient, clock: TestClock) -> None:
    await create(client, clock=clock, name="one")
    await create(client, clock=clock, name="two", workflow=WORKFLOW)
    await create(client, clock=clock, name="three", event="order.*")
    await create(client, clock=clock, name="other", event="invoice.paid")
    assert await started_triggers(client, name="order.paid") == ["one", "two", "three"]


async def test_prefixes_match_names_that_start_with_them_and_not_the_bare_word(
    client: AsyncClient, clock: TestClock
) -> None:
    await create(client, clock=clock, name="orders", event="order.*")
    await create(client, clock=clock, name="eu-orders", event="order.eu.*")
    assert await started_triggers(client, name="order.paid") == ["orders"]
    assert await started_triggers(client, name="order.eu.paid") == ["orders", "eu-orders"]
    assert await started_triggers(client, name="order.eu.") == ["orders", "eu-orders"]
    assert await started_triggers(client, name="order") == []
    assert await started_triggers(client, name="orders.paid") == []
    assert await started_triggers(client, name="order.eu") == ["orders"]


@pytest.mark.parametrize(
    ("filter", "payload", "matched"),
    [
        ({"plan": "pro"}, {"plan": "pro", "other": 1}, True),
        ({"plan": "pro"}, {"plan": "free"}, False),
        ({"plan": "pro"}, {}, False),
        ({"count": 3}, {"count": "3"}, False),
        ({"count": "3"}, {"count": 3}, False),
        ({"count": 1}, {"count": 1.0}, True),
        ({"flag": True}, {"flag": 1}, False),
        ({"flag": None}, {}, False),
        ({"flag": None}, {"flag": None}, True),
        ({"address": {"city": "Oslo"}}, {"address": {"city": "Oslo"}}, True),
        ({"address": {"city": "Oslo"}}, {"address": {"city": "Oslo", "zip": "0150"}}, False),
        ({"tags": ["a", "b"]}, {"tags": ["a", "b"]}, True),
        ({"tags": ["a"]}, {"tags": ["a", "b"]}, False),
        ({"tags": ["a", "b"]}, {"tags": ["b", "a"]}, False),
        ({"a": 1, "b": 2}, {"a": 1, "b": 3}, False),
        ({}, {"anything": 1}, True),
    ],
)
async def test_filters_compare_top_level_values_as_json(
    client: AsyncClient, filter: dict[str, Any], payload: dict[str, Any], matched: bool
) -> None:
    await create(client, filter=filter)
    assert await started_triggers(client, name="order.paid", payload=payload) == (["on-paid"] if matched else [])


async def test_disabled_triggers_start_nothing_until_enabled(client: AsyncClient) -> None:
    await create(client, enabled=False)
    assert await started_triggers(client, name="order.paid") == []
    await client.patch("/v1/triggers/on-paid", json={"enabled": True}, headers=TENANT_A)
    assert await started_triggers(client, name="order.paid") == ["on-paid"]


async def test_a_patched_event_pattern_is_what_matches(client: AsyncClient) -> None:
    await create(client)
    await client.patch("/v1/triggers/on-paid", json={"event": "invoice.*"}, headers=TENANT_A)
    assert await started_triggers(client, name="order.paid") == []
    assert await started_triggers(client, name="invoice.sent") == ["on-paid"]


async def test_a_deleted_trigger_starts_nothing(client: AsyncClient) -> None:
    await create(client)
    await client.delete("/v1/triggers/on-paid", headers=TENANT_A)
    assert await started_triggers(client, name="order.paid") == []


async def test_a_repeated_event_id_starts_nothing_again_and_answers_alike(client: AsyncClient) -> None:
    await create(client)
    first = await send(client, name="order.paid", id="evt-7")
    await create(client, name="later")  # would match, but the repeat starts nothing
    again = await send(client, name="order.paid", payload={"other": "body"}, id="evt-7")
    assert again == first
    jobs = (await client.get("/v1/jobs", headers=TENANT_A)).json()["items"]
    assert len(jobs) == 1


async def test_event_ids_are_per_tenant(client: AsyncClient) -> None:
    await create(client)
    await create(client, headers=TENANT_B)
    a = await send(client, name="order.paid", id="same")
    b = await send(client, TENANT_B, name="order.paid", id="same")
    assert a["started"][0]["job_id"] != b["started"][0]["job_id"]


async def test_another_tenants_triggers_are_never_started(client: AsyncClient) -> None:
    await create(client, headers=TENANT_B)
    assert await started_triggers(client, name="order.paid") == []


async def test_a_payload_too_deep_for_what_a_trigger_starts_is_400(client: AsyncClient) -> None:
    await create(client, workflow=WORKFLOW)
    deep: Any = 1
    for _ in range(124):  # the payload's innermost list at depth 124, and 127 in a step job's `_context.event.payload`
        deep = [deep]
    assert await started_triggers(client, name="order.paid", payload={"d": deep}) == ["on-paid"]
    response = await client.post("/v1/events", json={"name": "order.paid", "payload": {"d": [deep]}}, headers=TENANT_A)
    assert_problem(response, 400, "validation_error")
    assert len((await client.get("/v1/workflows", headers=TENANT_A)).json()["items"]) == 1


@pytest.mark.parametrize(
    "body",
    [
        {"name": "order paid"},
        {"name": ""},
        {"name": "x" * 201},
        {"name": "order.*"},
        {"name": "a", "payload": []},
        {"name": "a", "id": ""},
        {"name": "a", "id": "x" * 256},
        {"name": "a", "id": "nul\u0000"},
        {"payload": {}},
        {"name": "a", "extra": 1},
    ],
)
async def test_invalid_events_are_400(client: AsyncClient, body: dict[str, Any]) -> None:
    assert_problem(await client.post("/v1/events", json=body, headers=TENANT_A), 400, "validation_error")


async def test_routes_need_a_tenant_key(client: AsyncClient) -> None:
    assert_problem(await client.post("/v1/events", json={"name": "a"}), 401, "unauthorized")
    assert_problem(await client.get("/v1/triggers"), 401, "unauthorized")


async def test_metrics_count_events_and_their_starts(client: AsyncClient) -> None:
    await create(client)
    await create(client, name="flow", workflow=WORKFLOW)
    await send(client, name="order.paid", id="m1")
    await send(client, name="order.paid", id="m1")
    text = (await client.get("/metrics")).text
    assert "queueflow_events_received_total 1.0" in text
    assert 'queueflow_trigger_starts_total{kind="job",trigger="on-paid"} 1.0' in text
    assert 'queueflow_trigger_starts_total{kind="workflow",trigger="flow"} 1.0' in text
