"""`GET /v1/queues/{name}` and `PATCH /v1/queues/{name}` (README.md, "Flow control") over HTTP."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from httpx import AsyncClient

from tests.api.conftest import TENANT_A, TENANT_B, WORKER, assert_problem, enqueue, lease
from tests.inprocess import WatchedWakeups

DEFAULTS = {
    "paused": False,
    "concurrency_limit": None,
    "key_concurrency_limit": None,
    "rate_limit": None,
    "retention_seconds": None,
}


async def test_every_queue_shows_its_settings(client: AsyncClient) -> None:
    await enqueue(client, queue_name="mail")
    (queue,) = (await client.get("/v1/queues", headers=TENANT_A)).json()["queues"]
    assert {key: queue[key] for key in DEFAULTS} == DEFAULTS
    response = await client.get("/v1/queues/mail", headers=TENANT_A)
    assert response.status_code == 200
    assert response.json() == queue


async def test_patch_configures_a_queue_with_no_jobs_yet_and_only_for_its_tenant(client: AsyncClient) -> None:
    assert_problem(await client.get("/v1/queues/exports", headers=TENANT_A), 404, "not_found")
    body = {"concurrency_limit": 3, "rate_limit": {"jobs": 50, "per_seconds": 1}}
    response = await client.patch("/v1/queues/exports", json=body, headers=TENANT_A)
    assert response.status_code == 200, response.text
    queue = response.json()
    assert queue["name"] == "exports"
    assert queue["pending"] == 0
    assert {key: queue[key] for key in DEFAULTS} == {**DEFAULTS, **body}
    listed = (await client.get("/v1/queues", headers=TENANT_A)).json()["queues"]
    assert [queue["name"] for queue in listed] == ["exports"]
    assert (await client.get("/v1/queues", headers=TENANT_B)).json() == {"queues": []}
    assert_problem(await client.get("/v1/queues/exports", headers=TENANT_B), 404, "not_found")

    response = await client.patch(
        "/v1/queues/exports", json={"concurrency_limit": None, "paused": True}, headers=TENANT_A
    )
    assert {key: response.json()[key] for key in DEFAULTS} == {
        **DEFAULTS,
        "paused": True,
        "rate_limit": {"jobs": 50, "per_seconds": 1.0},
    }


@pytest.mark.parametrize(
    "body",
    [
        {"concurrency_limit": 0},
        {"concurrency_limit": 100_001},
        {"key_concurrency_limit": 1.5},
        {"paused": "yes"},
        {"paused": None},
        {"rate_limit": {"jobs": 0, "per_seconds": 1}},
        {"rate_limit": {"jobs": 1, "per_seconds": 0}},
        {"rate_limit": {"jobs": 1, "per_seconds": 86_401}},
        {"rate_limit": {"jobs": 1}},
        {"rate_limit": {"jobs": 1, "per_seconds": 1, "burst": 2}},
        {"concurrency": 3},
        {"retention_seconds": 59},
        {"retention_seconds": 315_360_001},
        {"retention_seconds": 3600.5},
        {"retention_seconds": "1h"},
        [],
    ],
)
async def test_bad_settings_are_a_400_and_change_nothing(client: AsyncClient, body: Any) -> None:
    assert_problem(await client.patch("/v1/queues/q", json=body, headers=TENANT_A), 400, "validation_error")
    assert (await client.get("/v1/queues", headers=TENANT_A)).json() == {"queues": []}


async def test_retention_is_set_kept_by_other_patches_and_removed_with_null(client: AsyncClient) -> None:
    response = await client.patch("/v1/queues/reports", json={"retention_seconds": 86_400}, headers=TENANT_A)
    assert response.status_code == 200, response.text
    assert response.json()["retention_seconds"] == 86_400
    await client.patch("/v1/queues/reports", json={"paused": True}, headers=TENANT_A)
    (listed,) = (await client.get("/v1/queues", headers=TENANT_A)).json()["queues"]
    assert (listed["retention_seconds"], listed["paused"]) == (86_400, True)
    for bound in (60, 315_360_000):
        response = await client.patch("/v1/queues/reports", json={"retention_seconds": bound}, headers=TENANT_A)
        assert response.json()["retention_seconds"] == bound
    response = await client.patch("/v1/queues/reports", json={"retention_seconds": None}, headers=TENANT_A)
    assert response.json()["retention_seconds"] is None


async def test_a_bad_queue_name_is_a_400_and_workers_may_not_configure(client: AsyncClient) -> None:
    assert_problem(await client.get("/v1/queues/bad%20name", headers=TENANT_A), 400, "validation_error")
    assert_problem(await client.patch("/v1/queues/bad%20name", json={}, headers=TENANT_A), 400, "validation_error")
    assert_problem(await client.patch("/v1/queues/q", json={"paused": True}, headers=WORKER), 403, "forbidden")


async def test_a_paused_queue_is_not_leased_and_a_parked_lease_wakes_on_resume(
    client: AsyncClient, wakeups: WatchedWakeups
) -> None:
    job = await enqueue(client, queue_name="mail")
    await client.patch("/v1/queues/mail", json={"paused": True}, headers=TENANT_A)
    assert await lease(client, ["mail"]) == []
    parked = asyncio.create_task(
        client.post("/v1/worker/lease", json={"queues": ["mail"], "wait_seconds": 30, "max_jobs": 10}, headers=WORKER)
    )
    await wakeups.until_waiting(1)
    await client.patch("/v1/queues/mail", json={"paused": False}, headers=TENANT_A)
    async with asyncio.timeout(5):
        response = await parked
    assert [leased["id"] for leased in response.json()["jobs"]] == [job["id"]]


async def test_concurrency_key_on_jobs_batches_and_workflow_steps(client: AsyncClient) -> None:
    job = await enqueue(client, concurrency_key="user-42")
    assert job["concurrency_key"] == "user-42"
    assert (await enqueue(client))["concurrency_key"] is None
    batch = await client.post(
        "/v1/jobs/batch",
        json={"jobs": [{"task_name": "t", "concurrency_key": "u1"}, {"task_name": "t"}]},
        headers=TENANT_A,
    )
    assert [item["concurrency_key"] for item in batch.json()["jobs"]] == ["u1", None]
    workflow = await client.post(
        "/v1/workflows",
        json={"name": "w", "steps": [{"name": "a", "task_name": "a", "concurrency_key": "u2"}]},
        headers=TENANT_A,
    )
    step_job = await client.get(f"/v1/jobs/{workflow.json()['steps'][0]['job_id']}", headers=TENANT_A)
    assert step_job.json()["concurrency_key"] == "u2"
    for bad in ["", "x" * 201, 5, "nul\u0000"]:
        response = await client.post("/v1/jobs", json={"task_name": "t", "concurrency_key": bad}, headers=TENANT_A)
        assert_problem(response, 400, "validation_error")


async def test_one_job_per_key_at_a_time_over_http(client: AsyncClient) -> None:
    for user in ["ada", "ada", "bob"]:
        await enqueue(client, queue_name="exports", concurrency_key=user)
    await client.patch("/v1/queues/exports", json={"key_concurrency_limit": 1}, headers=TENANT_A)
    leased = await lease(client, ["exports"], max_jobs=10)
    assert sorted(job["concurrency_key"] for job in leased) == ["ada", "bob"]
    assert await lease(client, ["exports"], max_jobs=10) == []


@pytest.mark.parametrize("ending", ["complete", "fail", "cancel"])
async def test_a_lease_the_concurrency_limit_held_back_wakes_when_a_slot_frees(
    client: AsyncClient, wakeups: WatchedWakeups, ending: str
) -> None:
    # Not on the safety poll (5 s): the ending of the running job announces the queue.
    await client.patch("/v1/queues/mail", json={"concurrency_limit": 1}, headers=TENANT_A)
    jobs = {(await enqueue(client, queue_name="mail"))["id"] for _ in range(2)}
    (running,) = await lease(client, ["mail"])
    (waiting,) = jobs - {running["id"]}
    parked = asyncio.create_task(
        client.post("/v1/worker/lease", json={"queues": ["mail"], "wait_seconds": 30}, headers=WORKER)
    )
    await wakeups.until_waiting(1)
    token = {"lease_token": running["lease_token"]}
    if ending == "complete":
        ended = await client.post(f"/v1/worker/jobs/{running['id']}/complete", json=token, headers=WORKER)
    elif ending == "fail":
        body = {**token, "error": "boom", "retryable": False}
        ended = await client.post(f"/v1/worker/jobs/{running['id']}/fail", json=body, headers=WORKER)
    else:
        ended = await client.post(f"/v1/jobs/{running['id']}/cancel", headers=TENANT_A)
    assert ended.status_code == 200, ended.text
    async with asyncio.timeout(2):
        response = await parked
    assert [leased["id"] for leased in response.json()["jobs"]] == [waiting]


async def test_metrics_count_the_jobs_flow_control_holds_back_by_queue_and_reason(client: AsyncClient) -> None:
    for headers in (TENANT_A, TENANT_B):
        await client.patch("/v1/queues/paused", json={"paused": True}, headers=headers)
        await enqueue(client, headers, queue_name="paused")
    await client.patch("/v1/queues/capped", json={"concurrency_limit": 1}, headers=TENANT_A)
    await client.patch("/v1/queues/keyed", json={"key_concurrency_limit": 1}, headers=TENANT_A)
    await client.patch("/v1/queues/rated", json={"rate_limit": {"jobs": 1, "per_seconds": 3600}}, headers=TENANT_A)
    for queue, keys in (("capped", [None] * 3), ("keyed", ["u1", "u1", "u2", None]), ("rated", [None] * 3)):
        for key in keys:
            await enqueue(client, queue_name=queue, **({} if key is None else {"concurrency_key": key}))
    await lease(client, ["capped", "keyed", "rated"], max_jobs=100)

    text = (await client.get("/metrics")).text

    assert 'queueflow_jobs_held_back{queue="paused",reason="paused"} 2.0' in text  # summed over both tenants
    assert 'queueflow_jobs_held_back{queue="capped",reason="concurrency"} 2.0' in text
    assert 'queueflow_jobs_held_back{queue="keyed",reason="key_concurrency"} 1.0' in text  # u1's second job
    assert 'queueflow_jobs_held_back{queue="rated",reason="rate"} 2.0' in text
    assert 'queueflow_jobs_held_back{queue="rated",reason="paused"} 0.0' in text
    await client.patch("/v1/queues/paused", json={"paused": False}, headers=TENANT_A)
    text = (await client.get("/metrics")).text
    assert 'queueflow_jobs_held_back{queue="paused",reason="paused"} 1.0' in text
