"""Tenant-scoped worker keys (`QUEUEFLOW_WORKER_KEYS="wkey1,wkey2=tenant-a"`): a scoped worker leases only its
tenant's jobs, and every worker route answers another tenant's job as if it did not exist (README.md, "Credentials")
— even given that job's real lease token, and with exactly the answer a missing job gets."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Any

import pytest
from httpx import ASGITransport, AsyncClient
from queueflow.api import create_app
from queueflow.clocks import TestClock
from queueflow.runtime.wakeups import Wakeups
from queueflow.settings import Settings
from queueflow.stores.memory import InMemoryJobStore

from tests.api.conftest import TENANT_A, TENANT_B, WORKER, assert_problem, enqueue

SCOPED_A = {"Authorization": "Bearer key-wa"}
SETTINGS = Settings(
    api_keys={"key-a": "tenant-a", "key-b": "tenant-b"}, worker_keys={"key-w": None, "key-wa": "tenant-a"}
)
MISSING = "job_00000000000000000000000000"


@pytest.fixture
async def client(store: InMemoryJobStore, clock: TestClock, wakeups: Wakeups) -> AsyncIterator[AsyncClient]:
    app = create_app(SETTINGS, store=store, clock=clock, wakeups=wakeups, rng=random.Random(7))
    async with AsyncClient(transport=ASGITransport(app=app), base_url="http://testserver") as client:
        yield client


async def lease_as(client: AsyncClient, headers: dict[str, str], queue: str = "default", **body: Any) -> list[Any]:
    response = await client.post("/v1/worker/lease", json={"queues": [queue], "max_jobs": 10, **body}, headers=headers)
    assert response.status_code == 200, response.text
    jobs: list[Any] = response.json()["jobs"]
    return jobs


async def test_a_scoped_key_leases_only_its_tenants_jobs(client: AsyncClient) -> None:
    theirs = [await enqueue(client, TENANT_B, priority=10) for _ in range(3)]
    ours = [await enqueue(client, TENANT_A) for _ in range(2)]
    leased = await lease_as(client, SCOPED_A)
    assert sorted(job["id"] for job in leased) == sorted(job["id"] for job in ours)
    assert {job["tenant_id"] for job in leased} == {"tenant-a"}
    assert await lease_as(client, SCOPED_A) == []
    # A bare worker key still drains every tenant: the other tenant's jobs were left for it.
    assert sorted(job["id"] for job in await lease_as(client, WORKER)) == sorted(job["id"] for job in theirs)


async def test_a_scoped_long_poll_does_not_take_another_tenants_job(client: AsyncClient) -> None:
    await enqueue(client, TENANT_B, queue_name="mail")
    assert await lease_as(client, SCOPED_A, "mail", wait_seconds=0.01) == []


async def test_a_scoped_key_runs_its_own_jobs_through_every_route(client: AsyncClient) -> None:
    for _ in range(4):
        await enqueue(client, TENANT_A, max_retries=0)
    one, two, three, four = await lease_as(client, SCOPED_A)
    beat = await client.post(
        f"/v1/worker/jobs/{one['id']}/heartbeat", json={"lease_token": one["lease_token"]}, headers=SCOPED_A
    )
    assert beat.status_code == 200
    done = await client.post(
        f"/v1/worker/jobs/{one['id']}/complete", json={"lease_token": one["lease_token"]}, headers=SCOPED_A
    )
    assert done.json()["status"] == "completed"
    failed = await client.post(
        f"/v1/worker/jobs/{two['id']}/fail", json={"lease_token": two["lease_token"], "error": "x"}, headers=SCOPED_A
    )
    assert failed.json()["status"] == "dead_letter"
    acked = await client.post(
        "/v1/worker/ack",
        json={
            "complete": [{"id": three["id"], "lease_token": three["lease_token"]}],
            "fail": [{"id": four["id"], "lease_token": four["lease_token"], "error": "x"}],
        },
        headers=SCOPED_A,
    )
    assert [(r["outcome"], r["status"]) for r in acked.json()["results"]] == [
        ("ok", "completed"),
        ("ok", "dead_letter"),
    ]


def _without_ids(body: dict[str, Any], *ids: str) -> str:
    text = str(body)
    for job_id in ids:
        text = text.replace(job_id, "JOB")
    return text


@pytest.mark.parametrize("route", ["heartbeat", "complete", "fail"])
async def test_another_tenants_job_is_a_404_like_a_missing_one_even_with_its_token(
    client: AsyncClient, route: str
) -> None:
    job = await enqueue(client, TENANT_B)
    (held,) = await lease_as(client, WORKER)  # the bare worker holds it: its token is real
    body = {"lease_token": held["lease_token"], **({"error": "x"} if route == "fail" else {})}
    theirs = await client.post(f"/v1/worker/jobs/{job['id']}/{route}", json=body, headers=SCOPED_A)
    missing = await client.post(f"/v1/worker/jobs/{MISSING}/{route}", json=body, headers=SCOPED_A)
    assert_problem(theirs, 404, "not_found")
    assert _without_ids(theirs.json(), job["id"]) == _without_ids(missing.json(), MISSING)
    # Nothing changed: the bare worker still holds the job, and finishes it.
    after = await client.get(f"/v1/jobs/{job['id']}", headers=TENANT_B)
    assert (after.json()["status"], after.json()["locked_until"]) == ("running", held["locked_until"])
    done = await client.post(
        f"/v1/worker/jobs/{job['id']}/complete", json={"lease_token": held["lease_token"]}, headers=WORKER
    )
    assert done.status_code == 200


async def test_in_an_ack_another_tenants_job_is_lease_lost_without_a_status(client: AsyncClient) -> None:
    theirs_done, theirs_failed = await enqueue(client, TENANT_B), await enqueue(client, TENANT_B)
    held = {job["id"]: job for job in await lease_as(client, WORKER)}
    mine = await enqueue(client, TENANT_A)
    (own,) = await lease_as(client, SCOPED_A)
    body = {
        "complete": [
            {"id": theirs_done["id"], "lease_token": held[theirs_done["id"]]["lease_token"]},
            {"id": own["id"], "lease_token": own["lease_token"], "result": 1},
            {"id": MISSING, "lease_token": own["lease_token"]},
        ],
        "fail": [{"id": theirs_failed["id"], "lease_token": held[theirs_failed["id"]]["lease_token"], "error": "x"}],
    }
    response = await client.post("/v1/worker/ack", json=body, headers=SCOPED_A)
    assert response.status_code == 200
    assert response.json()["results"] == [
        {"id": theirs_done["id"], "outcome": "lease_lost", "status": None},
        {"id": mine["id"], "outcome": "ok", "status": "completed"},
        {"id": MISSING, "outcome": "lease_lost", "status": None},
        {"id": theirs_failed["id"], "outcome": "lease_lost", "status": None},
    ]
    for job in (theirs_done, theirs_failed):
        assert (await client.get(f"/v1/jobs/{job['id']}", headers=TENANT_B)).json()["status"] == "running"


async def test_in_a_batched_heartbeat_another_tenants_job_is_lease_lost_and_untouched(client: AsyncClient) -> None:
    theirs = await enqueue(client, TENANT_B)
    (held,) = await lease_as(client, WORKER)
    await enqueue(client, TENANT_A)
    (own,) = await lease_as(client, SCOPED_A)
    body = {
        "jobs": [
            {"id": theirs["id"], "lease_token": held["lease_token"], "progress": "hijacked"},
            {"id": own["id"], "lease_token": own["lease_token"], "progress": {"done": 1}},
            {"id": MISSING, "lease_token": own["lease_token"]},
        ],
        "lease_seconds": 600,
    }
    response = await client.post("/v1/worker/heartbeat", json=body, headers=SCOPED_A)
    assert response.status_code == 200, response.text
    assert [(r["id"], r["outcome"], r["locked_until"] is None) for r in response.json()["results"]] == [
        (theirs["id"], "lease_lost", True),
        (own["id"], "ok", False),
        (MISSING, "lease_lost", True),
    ]
    after = (await client.get(f"/v1/jobs/{theirs['id']}", headers=TENANT_B)).json()
    assert (after["locked_until"], after["progress"]) == (held["locked_until"], None)
    assert (await client.get(f"/v1/jobs/{own['id']}", headers=TENANT_A)).json()["progress"] == {"done": 1}


async def test_a_scoped_worker_key_is_still_no_tenant_key(client: AsyncClient) -> None:
    job = await enqueue(client, TENANT_A)
    assert_problem(await client.get(f"/v1/jobs/{job['id']}", headers=SCOPED_A), 403, "forbidden")
    assert_problem(await client.post("/v1/jobs", json={"task_name": "t"}, headers=SCOPED_A), 403, "forbidden")
    assert (await client.get(f"/v1/jobs/{job['id']}", headers=TENANT_A)).status_code == 200
