"""The key behaviours once more, end to end: a real `queueflow serve` process on PostgreSQL, over HTTP."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import datetime

import httpx
import pytest

from tests import pg
from tests.e2e.live import live_server

TENANT_A = {"Authorization": "Bearer key-a"}
TENANT_B = {"Authorization": "Bearer key-b"}
WORKER = {"Authorization": "Bearer key-w"}
KEYS = {"QUEUEFLOW_API_KEYS": "key-a=tenant-a,key-b=tenant-b", "QUEUEFLOW_WORKER_KEYS": "key-w"}
SAFETY_POLL = 30.0  # far longer than any wake-up below may take: only NOTIFY can be that fast


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    url = pg.blocking(pg.create_database)
    try:
        with live_server("--database-url", url, "--safety-poll", str(SAFETY_POLL), env=KEYS) as base:
            yield base
    finally:
        pg.blocking(lambda: pg.drop_database(url))


async def test_a_job_is_enqueued_leased_and_completed(server: str) -> None:
    async with httpx.AsyncClient(base_url=server) as http:
        created = await http.post("/v1/jobs", json={"task_name": "e2e", "queue_name": "e2e-life"}, headers=TENANT_A)
        assert created.status_code == 201
        job = created.json()
        leased = await http.post("/v1/worker/lease", json={"queues": ["e2e-life"]}, headers=WORKER)
        (held,) = leased.json()["jobs"]
        assert (held["id"], held["status"]) == (job["id"], "running")
        done = await http.post(
            f"/v1/worker/jobs/{job['id']}/complete",
            json={"lease_token": held["lease_token"], "result": [1]},
            headers=WORKER,
        )
        assert done.json()["status"] == "completed"
        again = await http.post(
            f"/v1/worker/jobs/{job['id']}/complete",
            json={"lease_token": held["lease_token"], "result": [2]},
            headers=WORKER,
        )
        assert (again.status_code, again.json()["code"]) == (409, "lease_lost")
        final = (await http.get(f"/v1/jobs/{job['id']}", headers=TENANT_A)).json()
        assert (final["result"], "lease_token" in final) == ([1], False)


async def test_idempotent_enqueue_survives_the_round_trip(server: str) -> None:
    async with httpx.AsyncClient(base_url=server, headers={**TENANT_A, "Idempotency-Key": "e2e-once"}) as http:
        first = await http.post("/v1/jobs", json={"task_name": "once"})
        second = await http.post("/v1/jobs", json={"task_name": "twice"})
    assert (first.status_code, second.status_code) == (201, 200)
    assert second.json() == first.json()


async def test_tenants_never_see_each_other(server: str) -> None:
    async with httpx.AsyncClient(base_url=server) as http:
        job = (await http.post("/v1/jobs", json={"task_name": "secret"}, headers=TENANT_A)).json()
        foreign = await http.get(f"/v1/jobs/{job['id']}", headers=TENANT_B)
        assert (foreign.status_code, foreign.json()["code"]) == (404, "not_found")
        cancel = await http.post(f"/v1/jobs/{job['id']}/cancel", headers=TENANT_B)
        assert cancel.status_code == 404
        listed = (await http.get("/v1/jobs", headers=TENANT_B)).json()["items"]
        assert job["id"] not in [item["id"] for item in listed]
        wrong_kind = await http.post("/v1/worker/lease", json={"queues": ["default"]}, headers=TENANT_A)
        assert (wrong_kind.status_code, wrong_kind.json()["code"]) == (403, "forbidden")
        nobody = await http.get("/v1/jobs", headers={"Authorization": "Bearer nope"})
        assert (nobody.status_code, nobody.json()["code"]) == (401, "unauthorized")


async def test_a_parked_lease_wakes_on_notify_not_on_the_safety_poll(server: str) -> None:
    async with httpx.AsyncClient(base_url=server, timeout=60) as http:
        body = {"queues": ["e2e-wake"], "wait_seconds": 20}
        parked = asyncio.create_task(http.post("/v1/worker/lease", json=body, headers=WORKER))
        await until_parked(http)
        started = time.monotonic()
        created = await http.post("/v1/jobs", json={"task_name": "wake", "queue_name": "e2e-wake"}, headers=TENANT_A)
        response = await parked
        waited = time.monotonic() - started
    assert [job["id"] for job in response.json()["jobs"]] == [created.json()["id"]]
    assert waited < 5, f"the parked lease took {waited:.2f} s to wake"


async def until_parked(http: httpx.AsyncClient) -> None:
    """Return once the server reports a parked lease (its own gauge), so the job below arrives after it."""
    async with asyncio.timeout(10):
        while True:
            if "queueflow_lease_waiters 1.0" in (await http.get("/metrics")).text:
                return
            await asyncio.sleep(0.01)  # a poll of the condition itself, not a guess at how long it takes


async def test_operations_answer_without_a_credential(server: str) -> None:
    async with httpx.AsyncClient(base_url=server) as http:
        assert (await http.get("/healthz")).status_code == 200
        assert (await http.get("/readyz")).status_code == 200
        metrics = (await http.get("/metrics")).text
        assert "queueflow_jobs_enqueued_total" in metrics
        assert (await http.get("/schema/openapi.json")).json()["openapi"].startswith("3.1")


async def test_bad_input_is_a_problem_not_a_500(server: str) -> None:
    async with httpx.AsyncClient(base_url=server) as http:
        nul = await http.post("/v1/jobs", json={"task_name": "t", "payload": {"s": "a\u0000b"}}, headers=TENANT_A)
        assert (nul.status_code, nul.json()["code"]) == (400, "validation_error")
        raw = await http.post(
            "/v1/jobs", content=b'{"task_name": "\\ud800"}', headers={**TENANT_A, "Content-Type": "application/json"}
        )
        assert raw.status_code == 400
        big = await http.post("/v1/jobs", content=b"x" * (5 * 1024 * 1024), headers=TENANT_A)  # the default is 4 MiB
        assert (big.status_code, big.json()["code"]) == (413, "payload_too_large")


@pytest.mark.parametrize("how", ["delayed", "retry"])
async def test_a_parked_lease_takes_a_job_at_its_due_time(server: str, how: str) -> None:
    # A job that becomes due later announces nothing when it does: the parked lease must know when to look.
    queue = f"e2e-due-{how}"
    async with httpx.AsyncClient(base_url=server, timeout=60) as http:
        if how == "delayed":
            body = {"task_name": "later", "queue_name": queue, "delay_seconds": 1}
            job = (await http.post("/v1/jobs", json=body, headers=TENANT_A)).json()
        else:
            body = {"task_name": "again", "queue_name": queue, "backoff": {"strategy": "fixed", "base_seconds": 1}}
            await http.post("/v1/jobs", json=body, headers=TENANT_A)
            (leased,) = (await http.post("/v1/worker/lease", json={"queues": [queue]}, headers=WORKER)).json()["jobs"]
            failed = {"lease_token": leased["lease_token"], "error": "not yet"}
            job = (await http.post(f"/v1/worker/jobs/{leased['id']}/fail", json=failed, headers=WORKER)).json()
        due = job["next_retry_at"] if how == "retry" else job["scheduled_at"]
        response = await http.post("/v1/worker/lease", json={"queues": [queue], "wait_seconds": 20}, headers=WORKER)
        returned = time.time()
    (got,) = response.json()["jobs"]
    assert got["id"] == job["id"]
    late = returned - datetime.fromisoformat(due).timestamp()
    assert late < 1.0, f"leased {late:.2f} s after it became due (the safety poll is {SAFETY_POLL:g} s)"
