"""`GET /v1/jobs/{id}?wait_seconds=` and `GET /v1/workflows/{id}?wait_seconds=` on the in-memory store: a parked
request answers when the object finishes, however it finishes (README.md, "A job's life with curl")."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from httpx import AsyncClient

from tests.api.conftest import TENANT_A, TENANT_B, WORKER, assert_problem, enqueue, lease
from tests.inprocess import WatchedWakeups


async def parked_get(client: AsyncClient, wakeups: WatchedWakeups, path: str, count: int = 1) -> asyncio.Task[Any]:
    request = asyncio.create_task(client.get(path, params={"wait_seconds": 30}, headers=TENANT_A))
    await wakeups.until_watching_finishes(count)
    return request


async def test_a_waiting_get_answers_when_the_job_completes(client: AsyncClient, wakeups: WatchedWakeups) -> None:
    job = await enqueue(client)
    request = await parked_get(client, wakeups, f"/v1/jobs/{job['id']}")
    (leased,) = await lease(client)
    assert not request.done()  # leased is not finished
    done = await client.post(
        f"/v1/worker/jobs/{job['id']}/complete",
        json={"lease_token": leased["lease_token"], "result": 7},
        headers=WORKER,
    )
    assert done.status_code == 200
    response = await asyncio.wait_for(request, 5)
    assert response.status_code == 200
    assert (response.json()["status"], response.json()["result"]) == ("completed", 7)


@pytest.mark.parametrize("ending", ["dead_letter", "cancelled", "ack"])
async def test_every_way_of_finishing_wakes_it(client: AsyncClient, wakeups: WatchedWakeups, ending: str) -> None:
    job = await enqueue(client, max_retries=0)
    request = await parked_get(client, wakeups, f"/v1/jobs/{job['id']}")
    if ending == "cancelled":
        await client.post(f"/v1/jobs/{job['id']}/cancel", headers=TENANT_A)
    else:
        (leased,) = await lease(client)
        if ending == "ack":
            item = {"id": job["id"], "lease_token": leased["lease_token"], "result": None}
            await client.post("/v1/worker/ack", json={"complete": [item]}, headers=WORKER)
        else:
            body = {"lease_token": leased["lease_token"], "error": "boom"}
            await client.post(f"/v1/worker/jobs/{job['id']}/fail", json=body, headers=WORKER)
    response = await asyncio.wait_for(request, 5)
    assert response.json()["status"] == {"ack": "completed"}.get(ending, ending)


async def test_a_retry_is_not_a_finish(client: AsyncClient, wakeups: WatchedWakeups) -> None:
    job = await enqueue(client, max_retries=1)
    request = await parked_get(client, wakeups, f"/v1/jobs/{job['id']}")
    (leased,) = await lease(client)
    body = {"lease_token": leased["lease_token"], "error": "once", "retry_after_seconds": 0}
    assert (await client.post(f"/v1/worker/jobs/{job['id']}/fail", json=body, headers=WORKER)).json()["status"] == (
        "retrying"
    )
    (again,) = await lease(client)
    assert not request.done()
    body = {"lease_token": again["lease_token"], "result": "second time"}
    await client.post(f"/v1/worker/jobs/{job['id']}/complete", json=body, headers=WORKER)
    assert (await asyncio.wait_for(request, 5)).json()["result"] == "second time"


async def test_a_finished_job_answers_at_once_and_an_unknown_one_is_404(client: AsyncClient) -> None:
    job = await enqueue(client)
    await client.post(f"/v1/jobs/{job['id']}/cancel", headers=TENANT_A)
    response = await client.get(f"/v1/jobs/{job['id']}", params={"wait_seconds": 60}, headers=TENANT_A)
    assert response.json()["status"] == "cancelled"
    missing = await client.get("/v1/jobs/job_00000000000000000000000000", params={"wait_seconds": 60}, headers=TENANT_A)
    assert_problem(missing, 404, "not_found")
    # Another tenant's job is a 404 at once too, however long it would wait.
    other = await client.get(f"/v1/jobs/{job['id']}", params={"wait_seconds": 60}, headers=TENANT_B)
    assert_problem(other, 404, "not_found")


async def test_when_the_time_runs_out_it_answers_the_job_as_it_is(client: AsyncClient) -> None:
    job = await enqueue(client)
    response = await client.get(f"/v1/jobs/{job['id']}", params={"wait_seconds": 0.01}, headers=TENANT_A)
    assert response.status_code == 200
    assert response.json()["status"] == "pending"


@pytest.mark.parametrize("value", ["-1", "61", "soon", "nan"])
async def test_a_bad_wait_is_a_400(client: AsyncClient, value: str) -> None:
    job = await enqueue(client)
    response = await client.get(f"/v1/jobs/{job['id']}", params={"wait_seconds": value}, headers=TENANT_A)
    assert_problem(response, 400, "validation_error")
    response = await client.get("/v1/workflows/wf_x", params={"wait_seconds": value}, headers=TENANT_A)
    assert_problem(response, 400, "validation_error")


async def test_a_waiting_workflow_get_answers_when_the_workflow_finishes(
    client: AsyncClient, wakeups: WatchedWakeups
) -> None:
    steps = [{"name": "a", "task_name": "a"}, {"name": "b", "task_name": "b", "depends_on": ["a"]}]
    created = await client.post("/v1/workflows", json={"name": "two", "steps": steps}, headers=TENANT_A)
    workflow = created.json()
    request = await parked_get(client, wakeups, f"/v1/workflows/{workflow['id']}")
    for _ in range(2):
        (leased,) = await lease(client)
        assert not request.done()
        body = {"lease_token": leased["lease_token"], "result": leased["task_name"]}
        await client.post(f"/v1/worker/jobs/{leased['id']}/complete", json=body, headers=WORKER)
    response = await asyncio.wait_for(request, 5)
    assert response.json()["status"] == "completed"
    assert response.json()["context"] == {"a": "a", "b": "b"}
