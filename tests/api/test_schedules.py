"""Schedule routes: create, list, get, patch, delete, their errors, and a firing seen by a worker."""

from __future__ import annotations

import json
from typing import Any

import pytest
from httpx import AsyncClient
from queueflow.clocks import TestClock
from queueflow.engine import Engine
from queueflow.stores.memory import InMemoryJobStore

from tests.api.conftest import TENANT_A, TENANT_B, WORKER, assert_problem, lease

SCHEDULE_FIELDS = {
    "id", "tenant_id", "name", "cron", "timezone", "task_name", "queue_name", "payload", "priority", "max_retries",
    "enabled", "next_run_at", "last_run_at", "created_at", "updated_at", "workflow",
}  # fmt: skip
ROUTES = [
    ("POST", "/v1/schedules"),
    ("GET", "/v1/schedules"),
    ("GET", "/v1/schedules/nightly"),
    ("PATCH", "/v1/schedules/nightly"),
    ("DELETE", "/v1/schedules/nightly"),
]


async def create(client: AsyncClient, headers: dict[str, str] = TENANT_A, **body: Any) -> dict[str, Any]:
    body.setdefault("name", "nightly")
    body.setdefault("cron", "* * * * *")
    body.setdefault("task_name", "report")
    response = await client.post("/v1/schedules", json=body, headers=headers)
    assert response.status_code == 201, response.text
    schedule: dict[str, Any] = response.json()
    return schedule


async def update(client: AsyncClient, name: str, **body: Any) -> dict[str, Any]:
    response = await client.patch(f"/v1/schedules/{name}", json=body, headers=TENANT_A)
    assert response.status_code == 200, response.text
    schedule: dict[str, Any] = response.json()
    return schedule


async def test_create_answers_201_with_every_field_and_the_defaults(client: AsyncClient) -> None:
    response = await client.post(
        "/v1/schedules", json={"name": "every-minute", "cron": "* * * * *", "task_name": "tick"}, headers=TENANT_A
    )

    assert response.status_code == 201
    schedule = response.json()
    assert set(schedule) == SCHEDULE_FIELDS
    assert schedule["id"].startswith("sch_")
    assert schedule["tenant_id"] == "tenant-a"
    assert (schedule["timezone"], schedule["queue_name"], schedule["payload"]) == ("UTC", "default", {})
    assert (schedule["priority"], schedule["max_retries"], schedule["enabled"]) == (0, 3, True)
    assert schedule["next_run_at"] == "2026-03-01T12:01:00Z"  # strictly after the creation at 12:00:00
    assert schedule["last_run_at"] is None
    assert schedule["created_at"] == schedule["updated_at"] == "2026-03-01T12:00:00Z"


async def test_create_takes_every_field_and_follows_the_time_zone(client: AsyncClient) -> None:
    schedule = await create(
        client,
        cron="0 3 * * *",
        timezone="Europe/Berlin",
        queue_name="reports.daily",
        payload={"kind": "daily"},
        priority=5,
        max_retries=0,
    )

    assert schedule["next_run_at"] == "2026-03-02T02:00:00Z"  # 03:00 CET
    assert (schedule["cron"], schedule["timezone"], schedule["queue_name"]) == (
        "0 3 * * *",
        "Europe/Berlin",
        "reports.daily",
    )
    assert (schedule["payload"], schedule["priority"], schedule["max_retries"]) == ({"kind": "daily"}, 5, 0)


async def test_a_disabled_schedule_is_created_without_a_next_run(client: AsyncClient) -> None:
    schedule = await create(client, enabled=False)
    assert (schedule["enabled"], schedule["next_run_at"]) == (False, None)


async def test_a_taken_name_is_409_but_another_tenant_may_use_it(client: AsyncClient) -> None:
    await create(client)
    response = await client.post(
        "/v1/schedules", json={"name": "nightly", "cron": "@daily", "task_name": "other"}, headers=TENANT_A
    )
    problem = assert_problem(response, 409, "invalid_state")
    assert "nightly" in problem["detail"]

    assert (await create(client, headers=TENANT_B))["tenant_id"] == "tenant-b"


@pytest.mark.parametrize(
    ("cron", "says"),
    [
        ("* * * * * *", "has 6 fields, but only 5 are supported"),
        ("* * *", "must have 5 fields"),
        ("61 * * * *", "minute field '61' is not valid"),
        ("0 25 * * *", "hour field '25' is not valid"),
        ("0 0 30 2 *", "never matches a date"),
        ("@reboot", "@reboot is not supported"),
        ("@sometimes", "unknown alias '@sometimes'"),
        ("H * * * *", "hashed (H) and random (R) values are not supported"),
    ],
)
async def test_an_invalid_cron_is_400_saying_what_is_wrong(client: AsyncClient, cron: str, says: str) -> None:
    response = await client.post("/v1/schedules", json={"name": "n", "cron": cron, "task_name": "t"}, headers=TENANT_A)
    problem = assert_problem(response, 400, "validation_error")
    assert [error["field"] for error in problem["errors"]] == ["cron"]
    assert says in problem["errors"][0]["message"]
    assert says in problem["detail"]


@pytest.mark.parametrize(
    ("timezone", "says"),
    [
        ("europe/berlin", "unknown time zone 'europe/berlin'; did you mean 'Europe/Berlin'?"),
        ("Mars/Olympus", "unknown time zone 'Mars/Olympus'; use an IANA name"),
        ("localtime", "unknown time zone 'localtime'"),
    ],
)
async def test_an_unknown_time_zone_is_400_saying_what_is_wrong(client: AsyncClient, timezone: str, says: str) -> None:
    response = await client.post(
        "/v1/schedules", json={"name": "n", "cron": "@daily", "task_name": "t", "timezone": timezone}, headers=TENANT_A
    )
    problem = assert_problem(response, 400, "validation_error")
    assert [error["field"] for error in problem["errors"]] == ["timezone"]
    assert problem["errors"][0]["message"].startswith(says)


async def test_a_bad_cron_and_a_bad_time_zone_are_named_at_once(client: AsyncClient) -> None:
    response = await client.post(
        "/v1/schedules", json={"name": "n", "cron": "bad", "timezone": "Nowhere", "task_name": "t"}, headers=TENANT_A
    )
    problem = assert_problem(response, 400, "validation_error")
    assert [error["field"] for error in problem["errors"]] == ["cron", "timezone"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "n", "cron": "@daily", "task_name": "t", "surprise": 1}, "surprise"),
        ({"name": "n", "cron": "@daily", "task_name": "t", "next_run_at": "2026-03-02T00:00:00Z"}, "next_run_at"),
        ({"name": "n", "cron": "@daily"}, ""),
        ({"name": "bad name", "cron": "@daily", "task_name": "t"}, "name"),
        ({"name": "n" * 101, "cron": "@daily", "task_name": "t"}, "name"),
        ({"name": "n", "cron": "@daily", "task_name": "t", "timezone": None}, "timezone"),
        ({"name": "n", "cron": 5, "task_name": "t"}, "cron"),
        ({"name": "n", "cron": "@daily", "task_name": "t", "enabled": "yes"}, "enabled"),
        ({"name": "n", "cron": "@daily", "task_name": "t", "priority": 1001}, "priority"),
        ({"name": "n", "cron": "@daily", "task_name": "t", "max_retries": -1}, "max_retries"),
        ({"name": "n", "cron": "@daily", "task_name": "t", "payload": []}, "payload"),
        ({"name": "n", "cron": "@daily\u0000", "task_name": "t"}, "cron"),
    ],
)
async def test_bad_create_bodies_are_400_naming_the_field(
    client: AsyncClient, body: dict[str, Any], field: str
) -> None:
    response = await client.post("/v1/schedules", json=body, headers=TENANT_A)
    problem = assert_problem(response, 400, "validation_error")
    assert field in [error["field"] for error in problem["errors"]], problem
    assert (await client.get("/v1/schedules", headers=TENANT_A)).json()["items"] == []


async def test_get_and_list_show_only_the_tenants_own_schedules(client: AsyncClient) -> None:
    created = await create(client)
    await create(client, headers=TENANT_B, name="theirs")

    response = await client.get("/v1/schedules/nightly", headers=TENANT_A)
    assert response.status_code == 200
    assert response.json() == created
    assert (await client.get("/v1/schedules", headers=TENANT_A)).json() == {"items": [created], "next_cursor": None}
    for method in ("GET", "PATCH", "DELETE"):
        response = await client.request(method, "/v1/schedules/theirs", json={}, headers=TENANT_A)
        assert_problem(response, 404, "not_found")
    assert (await client.get("/v1/schedules/theirs", headers=TENANT_B)).status_code == 200


async def test_the_list_pages_newest_first(client: AsyncClient, clock: TestClock) -> None:
    for name in ("a", "b", "c"):
        await create(client, name=name)
        clock.advance(1)

    first = (await client.get("/v1/schedules", params={"limit": 2}, headers=TENANT_A)).json()
    assert [item["name"] for item in first["items"]] == ["c", "b"]
    assert first["next_cursor"]
    params = {"limit": 2, "cursor": first["next_cursor"]}
    second = (await client.get("/v1/schedules", params=params, headers=TENANT_A)).json()
    assert [item["name"] for item in second["items"]] == ["a"]
    assert second["next_cursor"] is None


@pytest.mark.parametrize("params", [{"limit": 0}, {"limit": 501}, {"limit": "x"}, {"cursor": "not-a-cursor"}])
async def test_bad_list_parameters_are_400(client: AsyncClient, params: dict[str, Any]) -> None:
    assert_problem(await client.get("/v1/schedules", params=params, headers=TENANT_A), 400, "validation_error")


async def test_unknown_names_are_404(client: AsyncClient) -> None:
    for method in ("GET", "PATCH", "DELETE"):
        response = await client.request(method, "/v1/schedules/nope", json={}, headers=TENANT_A)
        problem = assert_problem(response, 404, "not_found")
        assert "nope" in problem["detail"]


async def test_path_names_that_cannot_be_names_are_400_or_404(client: AsyncClient) -> None:
    for name in ["n" * 101, "a%20b", "a%00b", "%F0%9F%98%80", "a%2Fb", "%2e%2e"]:
        for method in ("GET", "PATCH", "DELETE"):
            response = await client.request(method, f"/v1/schedules/{name}", json={}, headers=TENANT_A)
            assert response.status_code in (400, 404), (method, name, response.text)
            code = "validation_error" if response.status_code == 400 else "not_found"
            assert_problem(response, response.status_code, code)


async def test_names_may_use_dots_colons_dashes_and_underscores(client: AsyncClient) -> None:
    await create(client, name="team.a:reports-daily_1")
    response = await client.get("/v1/schedules/team.a:reports-daily_1", headers=TENANT_A)
    assert response.json()["name"] == "team.a:reports-daily_1"


@pytest.mark.parametrize(("method", "path"), ROUTES)
async def test_missing_or_unknown_keys_are_401_and_worker_keys_403(client: AsyncClient, method: str, path: str) -> None:
    for headers in [{}, {"Authorization": "Bearer nope"}]:
        response = await client.request(method, path, json={}, headers=headers)
        assert_problem(response, 401, "unauthorized")
        assert response.headers["www-authenticate"].startswith("Bearer")
    assert_problem(await client.request(method, path, json={}, headers=WORKER), 403, "forbidden")


async def test_patch_changes_only_the_fields_it_names(client: AsyncClient, clock: TestClock) -> None:
    created = await create(client, payload={"a": 1}, priority=3)
    clock.advance(10)

    updated = await update(client, "nightly", task_name="report-v2", payload={"b": 2})

    assert (updated["task_name"], updated["payload"]) == ("report-v2", {"b": 2})
    unchanged = {key: value for key, value in updated.items() if key not in ("task_name", "payload", "updated_at")}
    assert unchanged == {
        key: value for key, value in created.items() if key not in ("task_name", "payload", "updated_at")
    }
    assert updated["updated_at"] == "2026-03-01T12:00:10Z"
    assert (await client.get("/v1/schedules/nightly", headers=TENANT_A)).json() == updated


async def test_an_empty_patch_changes_nothing_but_updated_at(client: AsyncClient) -> None:
    created = await create(client)
    updated = await update(client, "nightly")
    assert {**updated, "updated_at": None} == {**created, "updated_at": None}


async def test_patch_disables_and_re_enables_from_now(client: AsyncClient, clock: TestClock) -> None:
    await create(client)

    disabled = await update(client, "nightly", enabled=False)
    assert (disabled["enabled"], disabled["next_run_at"]) == (False, None)

    clock.advance(minutes=10, seconds=30)  # 12:10:30; the firings missed meanwhile never come
    enabled = await update(client, "nightly", enabled=True)
    assert (enabled["enabled"], enabled["next_run_at"]) == (True, "2026-03-01T12:11:00Z")


async def test_patching_the_cron_or_time_zone_recomputes_the_next_run(client: AsyncClient) -> None:
    await create(client, cron="0 3 * * *")
    assert (await update(client, "nightly", cron="30 12 * * *"))["next_run_at"] == "2026-03-01T12:30:00Z"
    moved = await update(client, "nightly", timezone="America/New_York")
    assert moved["next_run_at"] == "2026-03-01T17:30:00Z"  # 12:30 EST


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"cron": "* * * * * *"}, "cron"),
        ({"timezone": "europe/berlin"}, "timezone"),
        ({"name": "renamed"}, "name"),
        ({"id": "sch_x"}, "id"),
        ({"surprise": True}, "surprise"),
        ({"enabled": None}, "enabled"),
        ({"cron": None}, "cron"),
        ({"payload": None}, "payload"),
        ({"priority": None}, "priority"),
        ({"priority": "1"}, "priority"),
        ({"max_retries": 101}, "max_retries"),
        ({"queue_name": ""}, "queue_name"),
    ],
)
async def test_a_bad_patch_is_400_and_changes_nothing(client: AsyncClient, body: dict[str, Any], field: str) -> None:
    created = await create(client)
    response = await client.patch("/v1/schedules/nightly", json=body, headers=TENANT_A)
    problem = assert_problem(response, 400, "validation_error")
    assert field in [error["field"] for error in problem["errors"]], problem
    assert (await client.get("/v1/schedules/nightly", headers=TENANT_A)).json() == created


@pytest.mark.parametrize("body", [b"", b"null", b"[]", b"{", b'"x"'])
async def test_a_patch_body_that_is_not_an_object_is_400(client: AsyncClient, body: bytes) -> None:
    await create(client)
    headers = {**TENANT_A, "Content-Type": "application/json"}
    response = await client.patch("/v1/schedules/nightly", content=body, headers=headers)
    assert_problem(response, 400, "validation_error")


async def test_delete_answers_204_and_the_schedule_is_gone(client: AsyncClient) -> None:
    await create(client)

    response = await client.delete("/v1/schedules/nightly", headers=TENANT_A)

    assert response.status_code == 204
    assert response.content == b""
    assert_problem(await client.get("/v1/schedules/nightly", headers=TENANT_A), 404, "not_found")
    assert_problem(await client.delete("/v1/schedules/nightly", headers=TENANT_A), 404, "not_found")
    assert (await client.get("/v1/schedules", headers=TENANT_A)).json()["items"] == []
    await create(client)  # the name is free again


async def test_options_lists_every_method_of_each_path(client: AsyncClient) -> None:
    collection = await client.options("/v1/schedules")
    assert set(collection.headers["allow"].split(", ")) == {"GET", "OPTIONS", "POST"}
    item = await client.options("/v1/schedules/nightly")
    assert set(item.headers["allow"].split(", ")) == {"DELETE", "GET", "OPTIONS", "PATCH"}


async def test_a_firing_is_a_job_a_worker_leases_with_its_schedule_and_occurrence(
    client: AsyncClient, store: InMemoryJobStore, clock: TestClock
) -> None:
    await create(client, queue_name="reports", payload={"kind": "minutely"}, priority=7, max_retries=1)
    # The app builds its own engine; a scheduler is just another engine on the same store and clock.
    scheduler = Engine(store, clock)
    assert await scheduler.fire_due_schedules() == 0  # nothing is due at 12:00:00

    clock.advance(61)
    assert await scheduler.fire_due_schedules() == 1
    assert await scheduler.fire_due_schedules() == 0  # each occurrence fires once

    (job,) = await lease(client, ["reports"])
    assert job["metadata"] == {"schedule": "nightly", "occurrence": "2026-03-01T12:01:00Z"}
    assert (job["task_name"], job["payload"], job["priority"], job["max_retries"]) == (
        "report",
        {"kind": "minutely"},
        7,
        1,
    )
    assert job["scheduled_at"] == "2026-03-01T12:01:00Z"
    assert job["tenant_id"] == "tenant-a"
    assert job["idempotency_key"].startswith("cron:sch_")

    schedule = (await client.get("/v1/schedules/nightly", headers=TENANT_A)).json()
    assert (schedule["last_run_at"], schedule["next_run_at"]) == ("2026-03-01T12:01:00Z", "2026-03-01T12:02:00Z")
    found = await client.get("/v1/jobs", params={"metadata": json.dumps({"schedule": "nightly"})}, headers=TENANT_A)
    assert [item["id"] for item in found.json()["items"]] == [job["id"]]


async def test_a_disabled_or_deleted_schedule_does_not_fire(
    client: AsyncClient, store: InMemoryJobStore, clock: TestClock
) -> None:
    await create(client, name="off")
    await create(client, name="gone")
    await update(client, "off", enabled=False)
    assert (await client.delete("/v1/schedules/gone", headers=TENANT_A)).status_code == 204

    clock.advance(minutes=5)
    assert await Engine(store, clock).fire_due_schedules() == 0
    assert await lease(client) == []
