"""Workflows that grow and wait, over HTTP: POST /v1/worker/jobs/{id}/steps, wait steps, POST
/v1/workflows/{id}/signals/{name} and POST /v1/workflows/{id}/retry — each rule's status code and problem."""

from __future__ import annotations

from typing import Any

import pytest
from httpx import AsyncClient
from litestar import Litestar
from queueflow.api import create_app
from queueflow.clocks import TestClock
from queueflow.runtime.wakeups import Wakeups
from queueflow.settings import Settings
from queueflow.stores.memory import InMemoryJobStore

from tests.api.conftest import TENANT_A, TENANT_B, WORKER, assert_problem, lease
from tests.api.test_workflows import create, get, statuses

SCOPED_B = {"Authorization": "Bearer key-wb"}
MAP_REDUCE = [
    {"name": "split", "task_name": "split"},
    {"name": "reduce", "task_name": "reduce", "depends_on": ["split"]},
]


@pytest.fixture
def settings() -> Settings:
    return Settings(
        api_keys={"key-a": "tenant-a", "key-b": "tenant-b"}, worker_keys={"key-w": None, "key-wb": "tenant-b"}
    )


@pytest.fixture
def app(settings: Settings, store: InMemoryJobStore, clock: TestClock, wakeups: Wakeups) -> Litestar:
    return create_app(settings, store=store, clock=clock, wakeups=wakeups)


async def add_steps(
    client: AsyncClient, job: dict[str, Any], steps: list[dict[str, Any]], headers: dict[str, str] = WORKER
) -> Any:
    return await client.post(
        f"/v1/worker/jobs/{job['id']}/steps", json={"lease_token": job["lease_token"], "steps": steps}, headers=headers
    )


def maps(count: int) -> list[dict[str, Any]]:
    return [{"name": f"map_{i}", "task_name": "map", "required_by": ["reduce"]} for i in range(count)]


async def test_a_running_step_adds_steps_201_and_a_repeat_answers_them_as_they_are(client: AsyncClient) -> None:
    workflow = await create(client, MAP_REDUCE)
    (split,) = await lease(client)
    response = await add_steps(client, split, maps(2))
    assert response.status_code == 201, response.text
    steps = response.json()["steps"]
    assert [(s["name"], s["status"], s["added_by"]) for s in steps] == [
        ("map_0", "enqueued", "split"), ("map_1", "enqueued", "split")
    ]  # fmt: skip
    again = await add_steps(client, split, maps(2))
    assert (again.status_code, again.json()["steps"]) == (201, steps)
    reduce = {s["name"]: s for s in (await get(client, workflow["id"]))["steps"]}["reduce"]
    assert reduce["depends_on"] == ["split", "map_0", "map_1"]


@pytest.mark.parametrize(
    ("steps", "status", "code"),
    [
        ([{"name": "x", "task_name": "t", "required_by": ["ghost"]}], 400, "validation_error"),
        ([{"name": "x", "task_name": "t", "required_by": ["split"]}], 409, "invalid_state"),
        ([{"name": "reduce", "task_name": "t"}], 409, "invalid_state"),
        (
            [{"name": "x", "task_name": "t", "depends_on": ["reduce"], "required_by": ["reduce"]}],
            400,
            "validation_error",
        ),
        ([], 400, "validation_error"),
        ([{"name": "x", "task_name": "t", "bogus": 1}], 400, "validation_error"),
    ],
)
async def test_add_steps_rules(client: AsyncClient, steps: list[dict[str, Any]], status: int, code: str) -> None:
    await create(client, MAP_REDUCE)
    (split,) = await lease(client)
    assert_problem(await add_steps(client, split, steps), status, code)


async def test_add_steps_lease_rules(client: AsyncClient) -> None:
    await create(client, MAP_REDUCE)
    (split,) = await lease(client)
    stale = {**split, "lease_token": "00000000-0000-0000-0000-000000000000"}
    assert_problem(await add_steps(client, stale, maps(1)), 409, "lease_lost")
    missing = {**split, "id": "job_01KJMMA2G01HEAD8X4A1JH69RE"}
    assert_problem(await add_steps(client, missing, maps(1)), 404, "not_found")
    assert_problem(await add_steps(client, split, maps(1), headers=SCOPED_B), 404, "not_found")
    assert_problem(await add_steps(client, split, maps(1), headers=TENANT_A), 403, "forbidden")
    await client.post("/v1/jobs", json={"task_name": "plain", "queue_name": "solo"}, headers=TENANT_A)
    (plain,) = await lease(client, ["solo"])
    assert_problem(await add_steps(client, plain, maps(1)), 409, "invalid_state")


@pytest.mark.parametrize(
    "step",
    [
        {"name": "w", "task_name": "t", "wait": {"seconds": 1}},  # both
        {"name": "w"},  # neither
        {"name": "w", "wait": {"seconds": 1}, "payload": {}},  # a job field, even at its default
        {"name": "w", "wait": {"seconds": 1}, "priority": 0},
        {"name": "w", "wait": {"seconds": 0}},
        {"name": "w", "wait": {"signal": "go", "timeout_seconds": 0.5}},
        {"name": "w", "wait": {"signal": "go", "seconds": 1}},
        {"name": "w", "wait": {}},
    ],
)
async def test_wait_step_rules(client: AsyncClient, step: dict[str, Any]) -> None:
    response = await client.post("/v1/workflows", json={"name": "wf", "steps": [step]}, headers=TENANT_A)
    assert_problem(response, 400, "validation_error")


async def test_a_waiting_step_shows_its_wait_and_due_time_and_a_signal_completes_it(
    client: AsyncClient, clock: TestClock
) -> None:
    workflow = await create(
        client,
        [
            {"name": "ok", "wait": {"signal": "approve", "timeout_seconds": 3600}},
            {"name": "ship", "task_name": "ship", "depends_on": ["ok"]},
        ],
    )
    ok = workflow["steps"][0]
    assert (ok["status"], ok["job_id"], ok["task_name"]) == ("waiting", None, None)
    assert ok["wait"] == {"signal": "approve", "timeout_seconds": 3600.0, "seconds": None}
    assert ok["due_at"] == "2026-03-01T13:00:00Z"
    response = await client.post(
        f"/v1/workflows/{workflow['id']}/signals/approve", json={"payload": {"by": "ada"}}, headers=TENANT_A
    )
    assert response.status_code == 200, response.text
    assert statuses(response.json()) == {"ok": "completed", "ship": "enqueued"}
    assert response.json()["steps"][0]["due_at"] is None
    assert response.json()["context"] == {"ok": {"by": "ada"}}


async def test_signal_without_a_body_is_null_and_its_checks_answer_in_order(client: AsyncClient) -> None:
    workflow = await create(client, [{"name": "ok", "wait": {"signal": "go"}}, {"name": "b", "task_name": "b"}])
    url = f"/v1/workflows/{workflow['id']}/signals"
    assert_problem(await client.post(f"{url}/go", headers=TENANT_B), 404, "not_found")
    assert_problem(await client.post(f"{url}/nobody", headers=TENANT_A), 404, "not_found")
    empty = await client.post(f"{url}/go", headers=TENANT_A)
    assert empty.status_code == 200, empty.text
    assert empty.json()["context"] == {"ok": None}
    assert (await client.post(f"{url}/go", json={}, headers=TENANT_A)).status_code == 200  # the same: null
    assert_problem(await client.post(f"{url}/go", json={"payload": 1}, headers=TENANT_A), 409, "invalid_state")
    bad = await client.post(f"{url}/go", json={"payload": "\u0000"}, headers=TENANT_A)
    assert_problem(bad, 400, "validation_error")
    assert_problem(await client.post(f"{url}/go", json={"other": 1}, headers=TENANT_A), 400, "validation_error")
    assert_problem(await client.post(f"{url}/go", headers=WORKER), 403, "forbidden")


async def test_retry_reruns_a_failed_workflow_and_refuses_a_running_one(client: AsyncClient) -> None:
    workflow = await create(client, [{"name": "a", "task_name": "a", "max_retries": 0}])
    url = f"/v1/workflows/{workflow['id']}/retry"
    assert_problem(await client.post(url, headers=TENANT_A), 409, "invalid_state")
    assert_problem(
        await client.post("/v1/workflows/wf_01KJMMA2G01HEAD8X4A1JH69RE/retry", headers=TENANT_A), 404, "not_found"
    )
    (job,) = await lease(client)
    failed = await client.post(
        f"/v1/worker/jobs/{job['id']}/fail", json={"lease_token": job["lease_token"], "error": "boom"}, headers=WORKER
    )
    assert failed.status_code == 200, failed.text
    assert (await get(client, workflow["id"]))["status"] == "failed"
    retried = await client.post(url, headers=TENANT_A)
    assert retried.status_code == 200, retried.text
    body = retried.json()
    assert (body["status"], body["completed_at"], statuses(body)) == ("running", None, {"a": "enqueued"})
    assert body["steps"][0]["job_id"] != job["id"]


# ---- schedules that start workflows -------------------------------------------------------------------------

NIGHTLY = {
    "name": "etl",
    "context": {"region": "eu"},
    "steps": [
        {"name": "extract", "task_name": "extract"},
        {"name": "nap", "wait": {"seconds": 5}, "depends_on": ["extract"]},
    ],
}


async def test_a_schedule_with_a_workflow_starts_one_per_occurrence(
    client: AsyncClient, clock: TestClock, engine: Any
) -> None:
    response = await client.post(
        "/v1/schedules", json={"name": "nightly", "cron": "0 3 * * *", "workflow": NIGHTLY}, headers=TENANT_A
    )
    assert response.status_code == 201, response.text
    schedule = response.json()
    assert [schedule[name] for name in ("task_name", "queue_name", "payload", "priority", "max_retries")] == [None] * 5
    assert schedule["workflow"]["steps"][1]["wait"] == {"seconds": 5.0}
    clock.advance(hours=15)
    assert await engine.fire_due_schedules() == 1
    (started,) = (await client.get("/v1/workflows", headers=TENANT_A)).json()["items"]
    assert started["context"] == {"region": "eu", "schedule": "nightly", "occurrence": "2026-03-02T03:00:00Z"}
    plain = await client.post(
        "/v1/schedules", json={"name": "jobs", "cron": "@daily", "task_name": "t"}, headers=TENANT_A
    )
    assert plain.json()["workflow"] is None
    assert plain.json()["queue_name"] == "default"


@pytest.mark.parametrize(
    "body",
    [
        {"task_name": "t", "workflow": NIGHTLY},
        {},
        {"workflow": NIGHTLY, "payload": {}},
        {"workflow": NIGHTLY, "max_retries": 3},
        {"workflow": {**NIGHTLY, "steps": [{"name": "a", "task_name": "t", "depends_on": ["a"]}]}},
    ],
)
async def test_a_schedule_takes_a_task_or_a_workflow(client: AsyncClient, body: dict[str, Any]) -> None:
    response = await client.post("/v1/schedules", json={"name": "n", "cron": "@daily", **body}, headers=TENANT_A)
    assert_problem(response, 400, "validation_error")
