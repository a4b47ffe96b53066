"""Tenant routes: enqueue (single, batch, idempotent), get, list, cancel, retry, queue counts."""

from __future__ import annotations

import json

from httpx import AsyncClient
from queueflow.clocks import TestClock

from tests.api.conftest import TENANT_A, TENANT_B, WORKER, assert_problem, enqueue, lease

JOB_FIELDS = {
    "id", "tenant_id", "queue_name", "task_name", "payload", "status", "priority", "scheduled_at", "locked_until",
    "delivery_count", "retry_count", "max_retries", "backoff", "timeout_seconds", "next_retry_at", "result",
    "error_message", "workflow_id", "workflow_step_id", "metadata", "idempotency_key", "created_at", "started_at",
    "completed_at", "progress", "trace_context", "concurrency_key", "unique_key", "expires_at", "sequence_key",
    "blocked_by",
}  # fmt: skip


async def test_enqueue_answers_201_with_every_job_field_and_the_defaults(client: AsyncClient) -> None:
    response = await client.post("/v1/jobs", json={"task_name": "send_email"}, headers=TENANT_A)

    assert response.status_code == 201
    job = response.json()
    assert set(job) == JOB_FIELDS
    assert job["id"].startswith("job_")
    assert job["tenant_id"] == "tenant-a"
    assert job["queue_name"] == "default"
    assert job["status"] == "pending"
    assert job["payload"] == job["metadata"] == {}
    assert (job["priority"], job["max_retries"], job["delivery_count"], job["retry_count"]) == (0, 3, 0, 0)
    assert job["backoff"] == {"strategy": "exponential", "base_seconds": 1.0, "max_seconds": 3600.0, "jitter": True}
    assert job["scheduled_at"] == job["created_at"] == "2026-03-01T12:00:00Z"
    assert job["progress"] is None


async def test_enqueue_takes_every_field_and_merges_a_partial_backoff(client: AsyncClient) -> None:
    job = await enqueue(
        client,
        task_name="report",
        queue_name="reports.daily",
        payload={"user": 7, "tags": ["a"]},
        priority=9,
        run_at="2026-03-01T14:00:00+02:00",
        max_retries=0,
        backoff={"strategy": "linear", "base_seconds": 2.5},
        timeout_seconds=30,
        metadata={"team": "x"},
    )

    assert job["scheduled_at"] == "2026-03-01T12:00:00Z"  # converted to UTC
    assert job["backoff"] == {"strategy": "linear", "base_seconds": 2.5, "max_seconds": 3600.0, "jitter": True}
    assert (job["priority"], job["max_retries"], job["timeout_seconds"]) == (9, 0, 30.0)
    assert job["payload"] == {"user": 7, "tags": ["a"]}
    assert job["metadata"] == {"team": "x"}


async def test_delay_seconds_schedules_later(client: AsyncClient) -> None:
    job = await enqueue(client, delay_seconds=90.5)
    assert job["scheduled_at"] == "2026-03-01T12:01:30.500000Z"


async def test_run_at_and_delay_seconds_together_are_rejected(client: AsyncClient) -> None:
    response = await client.post(
        "/v1/jobs", json={"task_name": "t", "run_at": "2026-03-02T00:00:00Z", "delay_seconds": 1}, headers=TENANT_A
    )
    body = assert_problem(response, 400, "validation_error")
    assert [error["field"] for error in body["errors"]] == ["delay_seconds"]


async def test_backoff_max_below_base_is_rejected(client: AsyncClient) -> None:
    response = await client.post(
        "/v1/jobs", json={"task_name": "t", "backoff": {"base_seconds": 10, "max_seconds": 5}}, headers=TENANT_A
    )
    body = assert_problem(response, 400, "validation_error")
    assert body["errors"] == [{"field": "backoff.max_seconds", "message": "must be at least base_seconds"}]


async def test_an_idempotent_repeat_answers_200_with_the_original_job(client: AsyncClient) -> None:
    headers = {**TENANT_A, "Idempotency-Key": "order-42"}
    first = await client.post("/v1/jobs", json={"task_name": "charge"}, headers=headers)
    repeat = await client.post("/v1/jobs", json={"task_name": "something else", "priority": 5}, headers=headers)
    other_tenant = await client.post(
        "/v1/jobs", json={"task_name": "charge"}, headers={**TENANT_B, "Idempotency-Key": "order-42"}
    )

    assert first.status_code == 201
    assert repeat.status_code == 200
    assert repeat.json() == first.json()
    assert first.json()["idempotency_key"] == "order-42"
    assert other_tenant.status_code == 201  # keys are scoped to the tenant


async def test_an_overlong_idempotency_key_is_rejected(client: AsyncClient) -> None:
    response = await client.post(
        "/v1/jobs", json={"task_name": "t"}, headers={**TENANT_A, "Idempotency-Key": "k" * 256}
    )
    assert_problem(response, 400, "validation_error")


async def test_batch_enqueues_all_and_resolves_known_keys_in_place(client: AsyncClient) -> None:
    existing = await client.post("/v1/jobs", json={"task_name": "a"}, headers={**TENANT_A, "Idempotency-Key": "k1"})

    response = await client.post(
        "/v1/jobs/batch",
        json={
            "jobs": [
                {"task_name": "b"},
                {"task_name": "a2", "idempotency_key": "k1"},
                {"task_name": "c", "queue_name": "q"},
            ]
        },
        headers=TENANT_A,
    )

    assert response.status_code == 201
    jobs = response.json()["jobs"]
    assert [job["task_name"] for job in jobs] == ["b", "a", "c"]
    assert jobs[1] == existing.json()


async def test_batch_is_all_or_nothing(client: AsyncClient) -> None:
    response = await client.post(
        "/v1/jobs/batch", json={"jobs": [{"task_name": "ok"}, {"task_name": "bad", "priority": 5000}]}, headers=TENANT_A
    )
    body = assert_problem(response, 400, "validation_error")
    assert body["errors"][0]["field"] == "jobs.1.priority"
    listed = await client.get("/v1/jobs", headers=TENANT_A)
    assert listed.json()["items"] == []


async def test_batch_limits(client: AsyncClient) -> None:
    for jobs in ([], [{"task_name": "t"}] * 1001):
        response = await client.post("/v1/jobs/batch", json={"jobs": jobs}, headers=TENANT_A)
        assert_problem(response, 400, "validation_error")


async def test_get_job_and_tenant_isolation(client: AsyncClient) -> None:
    job = await enqueue(client)

    mine = await client.get(f"/v1/jobs/{job['id']}", headers=TENANT_A)
    assert mine.status_code == 200
    assert mine.json() == job
    for method, path in [
        ("GET", f"/v1/jobs/{job['id']}"),
        ("POST", f"/v1/jobs/{job['id']}/cancel"),
        ("POST", f"/v1/jobs/{job['id']}/retry"),
    ]:
        assert_problem(await client.request(method, path, headers=TENANT_B), 404, "not_found")
    assert (await client.get("/v1/jobs", headers=TENANT_B)).json() == {"items": [], "next_cursor": None}
    assert (await client.get("/v1/queues", headers=TENANT_B)).json() == {"queues": []}


async def test_get_unknown_job_is_404(client: AsyncClient) -> None:
    assert_problem(await client.get("/v1/jobs/job_01ARZ3NDEKTSV4RRFFQ69G5FAV", headers=TENANT_A), 404, "not_found")


async def test_list_pages_newest_first_with_a_cursor(client: AsyncClient, clock: TestClock) -> None:
    ids = []
    for index in range(5):
        ids.append((await enqueue(client, task_name=f"t{index}"))["id"])
        clock.advance(1)

    seen: list[str] = []
    cursor = None
    while True:
        params: dict[str, str | int] = {"limit": 2}
        if cursor:
            params["cursor"] = cursor
        page = (await client.get("/v1/jobs", params=params, headers=TENANT_A)).json()
        seen += [job["id"] for job in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == ids[::-1]


async def test_list_filters(client: AsyncClient, clock: TestClock) -> None:
    a = await enqueue(client, task_name="a", queue_name="q1", metadata={"team": "x", "n": 1})
    clock.advance(1)
    b = await enqueue(client, task_name="b", queue_name="q2", metadata={"team": "y"})
    await lease(client, ["q2"])

    async def ids(**params: str) -> list[str]:
        response = await client.get("/v1/jobs", params=params, headers=TENANT_A)
        assert response.status_code == 200, response.text
        return [job["id"] for job in response.json()["items"]]

    assert await ids(queue_name="q1") == [a["id"]]
    assert await ids(status="running") == [b["id"]]
    assert await ids(task_name="b") == [b["id"]]
    assert await ids(metadata=json.dumps({"team": "x"})) == [a["id"]]
    assert await ids(metadata="{}") == [b["id"], a["id"]]
    assert await ids(workflow_id="wf_1") == []


async def test_list_rejects_bad_metadata_cursor_limit_and_status(client: AsyncClient) -> None:
    for params in [
        {"metadata": "not json"},
        {"metadata": "[1]"},
        {"metadata": '{"a": "\\u0000"}'},
        {"cursor": "garbage!"},
        {"cursor": "bm9wZQ"},
        {"limit": "0"},
        {"limit": "501"},
        {"limit": "ten"},
        {"status": "sleeping"},
        {"queue_name": "no spaces"},
    ]:
        response = await client.get("/v1/jobs", params=params, headers=TENANT_A)
        assert_problem(response, 400, "validation_error")


async def test_cancel_then_cancel_again_is_invalid_state(client: AsyncClient) -> None:
    job = await enqueue(client)

    cancelled = await client.post(f"/v1/jobs/{job['id']}/cancel", headers=TENANT_A)
    assert cancelled.status_code == 200
    assert cancelled.json()["status"] == "cancelled"
    assert_problem(await client.post(f"/v1/jobs/{job['id']}/cancel", headers=TENANT_A), 409, "invalid_state")


async def test_retry_replays_dead_letter_and_cancelled_jobs_only(client: AsyncClient) -> None:
    job = await enqueue(client, max_retries=0)
    assert_problem(await client.post(f"/v1/jobs/{job['id']}/retry", headers=TENANT_A), 409, "invalid_state")
    (leased,) = await lease(client)
    await client.post(
        f"/v1/worker/jobs/{job['id']}/fail", json={"lease_token": leased["lease_token"], "error": "x"}, headers=WORKER
    )

    response = await client.post(f"/v1/jobs/{job['id']}/retry", headers=TENANT_A)

    assert response.status_code == 200
    replayed = response.json()
    assert (replayed["status"], replayed["retry_count"]) == ("pending", 0)


UNCONFIGURED = {
    "paused": False,
    "concurrency_limit": None,
    "key_concurrency_limit": None,
    "rate_limit": None,
    "retention_seconds": None,
}


async def test_queue_counts(client: AsyncClient) -> None:
    await enqueue(client)
    await enqueue(client, delay_seconds=60)
    await enqueue(client, queue_name="other")
    await lease(client, ["other"])

    response = await client.get("/v1/queues", headers=TENANT_A)

    assert response.status_code == 200
    assert response.json() == {
        "queues": [
            {
                "name": "default", "pending": 1, "scheduled": 1, "running": 0, "retrying": 0, "completed": 0,
                "dead_letter": 0, "cancelled": 0, "oldest_pending_age_seconds": 0.0, **UNCONFIGURED,
            },
            {
                "name": "other", "pending": 0, "scheduled": 0, "running": 1, "retrying": 0, "completed": 0,
                "dead_letter": 0, "cancelled": 0, "oldest_pending_age_seconds": None, **UNCONFIGURED,
            },
        ]
    }  # fmt: skip


async def test_options_lists_every_method_of_the_jobs_collection(client: AsyncClient) -> None:
    response = await client.options("/v1/jobs")
    assert response.status_code == 204
    assert set(response.headers["allow"].replace(" ", "").split(",")) == {"GET", "POST", "OPTIONS"}


async def test_retry_replays_a_cancelled_job(client: AsyncClient) -> None:
    job = await enqueue(client)
    await client.post(f"/v1/jobs/{job['id']}/cancel", headers=TENANT_A)

    response = await client.post(f"/v1/jobs/{job['id']}/retry", headers=TENANT_A)

    assert response.status_code == 200
    assert response.json()["status"] == "pending"
    assert [leased["id"] for leased in await lease(client)] == [job["id"]]
