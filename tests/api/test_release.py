"""`POST /v1/worker/release` (README.md, "The HTTP API"): a worker hands back held jobs it has not started; each is
claimable again at once, exactly as before that delivery, or `lease_lost` on its own."""

from __future__ import annotations

import asyncio
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

from tests.api.conftest import TENANT_A, TENANT_B, WORKER, assert_lease_lost, assert_problem, enqueue, lease
from tests.inprocess import WatchedWakeups


async def release(client: AsyncClient, items: list[dict[str, Any]], headers: dict[str, str] = WORKER) -> Any:
    response = await client.post("/v1/worker/release", json={"jobs": items}, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()["results"]


def held(job: dict[str, Any]) -> dict[str, Any]:
    return {"id": job["id"], "lease_token": job["lease_token"]}


async def job_as_tenant(client: AsyncClient, job_id: str, headers: dict[str, str] = TENANT_A) -> dict[str, Any]:
    response = await client.get(f"/v1/jobs/{job_id}", headers=headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_released_jobs_are_claimable_at_once_exactly_as_before_that_delivery(
    client: AsyncClient, clock: TestClock
) -> None:
    fresh = await enqueue(client, priority=2)
    again = await enqueue(client, priority=1, max_retries=3)
    # `again` had a delivery that failed: it is retrying, with that delivery's started_at and one retry counted.
    (first,) = await lease(client, max_jobs=1)
    assert first["id"] == fresh["id"]
    clock.advance(1)
    (delivered,) = await lease(client)
    retry = {"lease_token": delivered["lease_token"], "error": "boom", "retry_after_seconds": 5}
    assert (await client.post(f"/v1/worker/jobs/{again['id']}/fail", json=retry, headers=WORKER)).status_code == 200
    before = [await job_as_tenant(client, fresh["id"]), await job_as_tenant(client, again["id"])]
    before[0] = {**before[0], "status": "pending", "delivery_count": 0, "started_at": None, "locked_until": None}
    clock.advance(10)
    (retried,) = await lease(client)
    assert retried["id"] == again["id"]

    results = await release(client, [held(retried), held(first)])  # answered in the request's order

    assert results == [
        {"id": again["id"], "outcome": "ok", "status": "retrying"},
        {"id": fresh["id"], "outcome": "ok", "status": "pending"},
    ]
    after = [await job_as_tenant(client, fresh["id"]), await job_as_tenant(client, again["id"])]
    assert after[0] == before[0]  # no delivery left: as enqueued
    assert after[1] == before[1]  # status, scheduled_at, started_at, delivery_count, retry_count as before
    assert (after[1]["delivery_count"], after[1]["retry_count"]) == (1, 1)
    # Claimable at once, in claim order, and the next delivery is counted as the one released was.
    relaunched = await lease(client, max_jobs=2)
    assert [(job["id"], job["delivery_count"]) for job in relaunched] == [(fresh["id"], 1), (again["id"], 2)]


async def test_a_released_job_costs_no_retry(client: AsyncClient) -> None:
    job = await enqueue(client, max_retries=0)
    for _ in range(3):
        (leased,) = await lease(client)
        assert await release(client, [held(leased)]) == [{"id": job["id"], "outcome": "ok", "status": "pending"}]
    (leased,) = await lease(client)
    assert leased["delivery_count"] == 1
    done = await client.post(
        f"/v1/worker/jobs/{job['id']}/complete", json={"lease_token": leased["lease_token"]}, headers=WORKER
    )
    assert done.json()["status"] == "completed"


async def test_release_items_that_hold_nothing_are_lease_lost_and_change_nothing(
    client: AsyncClient, clock: TestClock
) -> None:
    for priority in (3, 2, 1):
        await enqueue(client, priority=priority)
    await enqueue(client, queue_name="short")
    kept, done, twice = await lease(client, max_jobs=3, lease_seconds=60)
    (expired,) = await lease(client, ["short"], lease_seconds=5)
    complete = {"lease_token": done["lease_token"]}
    assert (await client.post(f"/v1/worker/jobs/{done['id']}/complete", json=complete, headers=WORKER)).is_success
    clock.advance(6)  # `expired`'s lease has passed; no janitor came by

    results = await release(
        client,
        [
            {"id": kept["id"], "lease_token": "0b3f3c59-3c39-4a4e-9f0f-8d2c84a1b9aa"},  # not its token
            held(done),  # finished
            held(expired),
            {"id": "job_missing", "lease_token": "x"},
            held(twice),
            held(twice),  # the second of two items for one job
        ],
    )

    assert results == [
        {"id": kept["id"], "outcome": "lease_lost", "status": "running"},
        {"id": done["id"], "outcome": "lease_lost", "status": "completed"},
        {"id": expired["id"], "outcome": "lease_lost", "status": "running"},
        {"id": "job_missing", "outcome": "lease_lost", "status": None},
        {"id": twice["id"], "outcome": "ok", "status": "pending"},
        {"id": twice["id"], "outcome": "lease_lost", "status": "pending"},
    ]
    for job in (kept, expired):
        assert (await job_as_tenant(client, job["id"]))["delivery_count"] == 1
    # The worker that still holds `kept` is not disturbed by the stale item.
    beat = await client.post(
        f"/v1/worker/jobs/{kept['id']}/heartbeat", json={"lease_token": kept["lease_token"]}, headers=WORKER
    )
    assert beat.status_code == 200, beat.text


async def test_a_released_token_no_longer_holds_the_job(client: AsyncClient) -> None:
    await enqueue(client)
    (job,) = await lease(client)
    await release(client, [held(job)])
    await assert_lease_lost(client, job["id"], job["lease_token"])


async def test_a_release_wakes_a_parked_lease_as_an_insert_does(client: AsyncClient, wakeups: WatchedWakeups) -> None:
    await enqueue(client, queue_name="mail")
    (job,) = await lease(client, ["mail"])
    parked = asyncio.create_task(
        client.post("/v1/worker/lease", json={"queues": ["mail"], "wait_seconds": 30}, headers=WORKER)
    )
    await wakeups.until_waiting(1)

    await release(client, [held(job)])

    async with asyncio.timeout(5):
        response = await parked
    assert [(leased["id"], leased["delivery_count"]) for leased in response.json()["jobs"]] == [(job["id"], 1)]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"jobs": []},
        {"jobs": [{"id": "job_x", "lease_token": "t"}] * 1001},
        {"jobs": [{"id": "job_x"}]},
        {"jobs": [{"lease_token": "t"}]},
        {"jobs": [{"id": "job_x", "lease_token": ""}]},
        {"jobs": [{"id": "job_x", "lease_token": "nul\u0000"}]},
        {"jobs": [{"id": "not an id", "lease_token": "t"}]},
        {"jobs": [{"id": "job_x", "lease_token": "t", "progress": 1}]},
        {"jobs": [{"id": "job_x", "lease_token": "t"}], "lease_seconds": 30},
        {"jobs": {"id": "job_x", "lease_token": "t"}},
    ],
)
async def test_a_malformed_release_is_400_and_releases_nothing(client: AsyncClient, body: dict[str, Any]) -> None:
    await enqueue(client)
    (job,) = await lease(client)
    if isinstance(body.get("jobs"), list) and body["jobs"]:
        body = {**body, "jobs": [held(job), *body["jobs"]]}  # a good item beside the bad ones
    response = await client.post("/v1/worker/release", json=body, headers=WORKER)
    assert_problem(response, 400, "validation_error")
    assert (await job_as_tenant(client, job["id"]))["status"] == "running"


async def test_release_takes_a_worker_key(client: AsyncClient) -> None:
    body = {"jobs": [{"id": "job_x", "lease_token": "t"}]}
    assert_problem(await client.post("/v1/worker/release", json=body, headers=TENANT_A), 403, "forbidden")
    assert_problem(await client.post("/v1/worker/release", json=body), 401, "unauthorized")


# ---- tenant-scoped worker keys -------------------------------------------------------------------------------

SCOPED_A = {"Authorization": "Bearer key-wa"}


@pytest.fixture
async def scoped(store: InMemoryJobStore, clock: TestClock, wakeups: Wakeups) -> AsyncIterator[AsyncClient]:
    settings = Settings(
        api_keys={"key-a": "tenant-a", "key-b": "tenant-b"}, worker_keys={"key-w": None, "key-wa": "tenant-a"}
    )
    app = create_app(settings, store=store, clock=clock, wakeups=wakeups, rng=random.Random(7))
    async with AsyncClient(transport=ASGITransport(app=app), base_url="http://testserver") as client:
        yield client


async def test_a_scoped_key_releases_only_its_tenants_jobs(scoped: AsyncClient) -> None:
    ours = await enqueue(scoped, TENANT_A, priority=1)
    theirs = await enqueue(scoped, TENANT_B)
    leased = {job["id"]: job for job in await lease(scoped, max_jobs=2)}

    # Even with the other tenant's real token, its job is to this key as if it did not exist.
    results = await release(scoped, [held(leased[theirs["id"]]), held(leased[ours["id"]])], SCOPED_A)

    assert results == [
        {"id": theirs["id"], "outcome": "lease_lost", "status": None},
        {"id": ours["id"], "outcome": "ok", "status": "pending"},
    ]
    assert (await job_as_tenant(scoped, theirs["id"], TENANT_B))["status"] == "running"
    assert await release(scoped, [held(leased[theirs["id"]])]) == [
        {"id": theirs["id"], "outcome": "ok", "status": "pending"}
    ]
