"""`expires_at` / `expires_in_seconds` on POST /v1/jobs and per batch item (README.md, "Deadlines"): Job's
`expires_at`, the 400s, no lease after the deadline, the wait timer's expiry as a client sees it, a replay clearing
the deadline, and the metric of expired jobs by queue."""

from __future__ import annotations

from typing import Any

import pytest
from httpx import AsyncClient
from litestar import Litestar
from queueflow.api.services import STATE_KEY
from queueflow.clocks import TestClock
from queueflow.engine import Engine
from queueflow.runtime.waits import WaitTimer

from tests.api.conftest import TENANT_A, assert_problem, enqueue, lease


async def post(client: AsyncClient, **body: Any) -> Any:
    return await client.post("/v1/jobs", json={"task_name": "send", **body}, headers=TENANT_A)


async def test_a_job_shows_its_deadline_and_null_without_one(client: AsyncClient) -> None:
    by_time = await post(client, expires_at="2026-03-01T14:00:00+01:00")
    assert by_time.status_code == 201
    assert by_time.json()["expires_at"] == "2026-03-01T13:00:00Z"
    by_seconds = await enqueue(client, expires_in_seconds=90)
    assert by_seconds["expires_at"] == "2026-03-01T12:01:30Z"
    assert (await enqueue(client))["expires_at"] is None
    fetched = (await client.get(f"/v1/jobs/{by_seconds['id']}", headers=TENANT_A)).json()
    assert fetched["expires_at"] == "2026-03-01T12:01:30Z"


async def test_batch_items_carry_their_own_deadlines(client: AsyncClient) -> None:
    items = [{"task_name": "a", "expires_in_seconds": 60}, {"task_name": "b"}, {"task_name": "c", "delay_seconds": 10,
             "expires_at": "2026-03-01T12:05:00Z"}]  # fmt: skip
    response = await client.post("/v1/jobs/batch", json={"jobs": items}, headers=TENANT_A)
    assert response.status_code == 201
    assert [job["expires_at"] for job in response.json()["jobs"]] == [
        "2026-03-01T12:01:00Z",
        None,
        "2026-03-01T12:05:00Z",
    ]
    late = [{"task_name": "a"}, {"task_name": "b", "delay_seconds": 120, "expires_in_seconds": 60}]
    problem = assert_problem(
        await client.post("/v1/jobs/batch", json={"jobs": late}, headers=TENANT_A), 400, "validation_error"
    )
    assert [error["field"] for error in problem["errors"]] == ["jobs.1.expires_in_seconds"]
    assert len((await client.get("/v1/jobs", headers=TENANT_A)).json()["items"]) == 3  # nothing of it written


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"expires_in_seconds": 60, "expires_at": "2026-03-01T13:00:00Z"}, "expires_in_seconds"),
        ({"expires_at": "2026-03-01T12:00:00Z"}, "expires_at"),
        ({"expires_at": "2026-03-01T11:00:00Z"}, "expires_at"),
        ({"run_at": "2026-03-01T14:00:00Z", "expires_at": "2026-03-01T13:00:00Z"}, "expires_at"),
        ({"delay_seconds": 30, "expires_in_seconds": 30}, "expires_in_seconds"),
        ({"expires_in_seconds": 0}, "expires_in_seconds"),
        ({"expires_in_seconds": -5}, "expires_in_seconds"),
        ({"expires_in_seconds": "soon"}, "expires_in_seconds"),
        ({"expires_at": "2026-03-01T13:00:00"}, "expires_at"),
        ({"expires_at": "tomorrow"}, "expires_at"),
    ],
)
async def test_a_bad_deadline_is_400_naming_its_field(client: AsyncClient, body: dict[str, Any], field: str) -> None:
    problem = assert_problem(await post(client, **body), 400, "validation_error")
    assert field in {error["field"] for error in problem["errors"]}, problem


async def test_an_expired_job_is_not_leased_and_the_timer_dead_letters_it(
    client: AsyncClient, engine: Engine, clock: TestClock
) -> None:
    job = await enqueue(client, expires_in_seconds=5)
    clock.advance(seconds=5)
    assert await lease(client) == []
    await WaitTimer(engine).tick()
    dead = (await client.get(f"/v1/jobs/{job['id']}", headers=TENANT_A)).json()
    assert (dead["status"], dead["error_message"]) == ("dead_letter", "expired: not started by 2026-03-01T12:00:05Z")
    assert dead["completed_at"] == "2026-03-01T12:00:05Z"
    replayed = await client.post(f"/v1/jobs/{job['id']}/retry", headers=TENANT_A)
    assert replayed.status_code == 200
    assert (replayed.json()["status"], replayed.json()["expires_at"]) == ("pending", None)
    (leased,) = await lease(client)
    assert leased["id"] == job["id"]


async def test_a_failure_whose_retry_comes_too_late_is_dead_lettered_at_once(
    client: AsyncClient, clock: TestClock
) -> None:
    job = await enqueue(client, expires_in_seconds=30, backoff={"strategy": "fixed", "base_seconds": 60})
    (leased,) = await lease(client)
    failed = await client.post(
        f"/v1/worker/jobs/{job['id']}/fail",
        json={"lease_token": leased["lease_token"], "error": "boom"},
        headers={"Authorization": "Bearer key-w"},
    )
    assert failed.status_code == 200
    assert (failed.json()["status"], failed.json()["error_message"]) == (
        "dead_letter",
        "expired: not started by 2026-03-01T12:00:30Z",
    )


async def test_metrics_count_expired_jobs_by_queue(
    client: AsyncClient, app: Litestar, engine: Engine, clock: TestClock
) -> None:
    for queue in ("mail", "mail", "sms"):
        await enqueue(client, queue_name=queue, expires_in_seconds=1)
    await enqueue(client, queue_name="mail", expires_in_seconds=100)
    clock.advance(seconds=1)
    timer = WaitTimer(engine, expired=app.state[STATE_KEY].metrics.jobs_expired)
    assert await timer.tick() == 3
    text = (await client.get("/metrics")).text
    assert 'queueflow_jobs_expired_total{queue="mail"} 2.0' in text
    assert 'queueflow_jobs_expired_total{queue="sms"} 1.0' in text
    assert 'queueflow_jobs_dead_lettered_total{queue="mail"} 2.0' in text
