"""No input of any shape produces a 500: every bad request is a 4xx problem."""

from __future__ import annotations

import pytest
from httpx import AsyncClient

from tests.api.conftest import TENANT_A, WORKER, assert_problem, enqueue, lease

JSON = {**TENANT_A, "Content-Type": "application/json"}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b'{"task_name": "a\\u0000b"}', "task_name"),
        (b'{"task_name": "t", "payload": {"k\\u0000": 1}}', "payload.k\x00"),
        (b'{"task_name": "t", "payload": {"k": "v\\u0000"}}', "payload.k"),
        (b'{"task_name": "t", "metadata": {"deep": [{"x": "\\u0000"}]}}', "metadata.deep.0.x"),
        (b'{"task_name": "t", "priority": 1180591620717411303424}', "priority"),
        (b'{"task_name": "t", "max_retries": -1180591620717411303424}', "max_retries"),
        (b'{"task_name": "t", "run_at": 0}', "run_at"),
        (b'{"task_name": "t", "run_at": "2026-03-01T12:00:00"}', "run_at"),
        (b'{"task_name": "t", "run_at": "yesterday"}', "run_at"),
        (b'{"task_name": "t", "run_at": "0001-01-01T00:00:00+04:06"}', "run_at"),
        (b'{"task_name": "t", "run_at": "9999-12-31T23:00:00-05:00"}', "run_at"),
        (b'{"task_name": "t", "priority": "0"}', "priority"),
        (b'{"task_name": "t", "priority": 1.5}', "priority"),
        (b'{"task_name": "t", "delay_seconds": "5"}', "delay_seconds"),
        (b'{"task_name": "t", "backoff": {"jitter": "yes"}}', "backoff.jitter"),
        (b'{"task_name": "t", "backoff": {"strategy": "random"}}', "backoff.strategy"),
        (b'{"task_name": "t", "backoff": {"base_seconds": 0}}', "backoff.base_seconds"),
        (b'{"task_name": "t", "payload": []}', "payload"),
        (b'{"task_name": 5}', "task_name"),
        (b'{"task_name": "t", "surprise": 1}', "surprise"),
        (b'{"task_name": "t", "backoff": {"surprise": 1}}', "backoff.surprise"),
        (b'{"queue_name": "default"}', ""),
        (b'{"task_name": "t", "timeout_seconds": 0}', "timeout_seconds"),
        (b'{"task_name": "t", "delay_seconds": 1e400}', "delay_seconds"),
    ],
)
async def test_bad_enqueue_bodies_are_validation_errors(client: AsyncClient, body: bytes, field: str) -> None:
    response = await client.post("/v1/jobs", content=body, headers=JSON)
    problem = assert_problem(response, 400, "validation_error")
    assert field in [error["field"] for error in problem["errors"]], problem


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"   ",
        b"{",
        b"not json",
        b"[]",
        b"null",
        b'"\\ud800"',
        b'{"task_name": "\\ud800"}',
        b'{"task_name": "\\udc00\\ud800"}',
        b'{"\\ud800": 1}',
        b'{"task_name": "\xff"}',
        b"[" * 10_000 + b"]" * 10_000,
        b'{"task_name": "t", "payload": ' + b'{"a": ' * 10_000 + b"1" + b"}" * 10_001,
        b'{"task_name": "t", "payload": ' + b'{"a": ' * 200 + b"1" + b"}" * 201,
    ],
)
async def test_malformed_json_is_a_validation_error(client: AsyncClient, body: bytes) -> None:
    response = await client.post("/v1/jobs", content=body, headers=JSON)
    assert_problem(response, 400, "validation_error")


async def test_a_huge_integer_inside_a_payload_is_kept_exactly(client: AsyncClient) -> None:
    # Typed fields reject it (above); inside free-form JSON it is a valid value that JSONB stores exactly.
    job = await enqueue(client, payload={"n": 2**70})
    assert job["payload"] == {"n": 2**70}


async def test_a_body_over_the_limit_is_413(client: AsyncClient) -> None:
    body = b'{"task_name": "t", "payload": {"blob": "' + b"x" * (5 * 1024 * 1024) + b'"}}'
    response = await client.post("/v1/jobs", content=body, headers=JSON)
    problem = assert_problem(response, 413, "payload_too_large")
    assert "limit of 4,194,304 bytes (QUEUEFLOW_MAX_BODY_BYTES)" in problem["detail"]


async def test_path_ids_that_cannot_be_ids_are_rejected(client: AsyncClient) -> None:
    for job_id in ["job_" + "x" * 200, "job%00x", "job%20x", "%F0%9F%98%80"]:
        response = await client.get(f"/v1/jobs/{job_id}", headers=TENANT_A)
        assert response.status_code in (400, 404), response.text
        assert_problem(
            response, response.status_code, "validation_error" if response.status_code == 400 else "not_found"
        )
    response = await client.post(
        "/v1/worker/jobs/" + "j" * 300 + "/complete", json={"lease_token": "t"}, headers=WORKER
    )
    assert_problem(response, 400, "validation_error")


async def test_bad_worker_bodies_are_validation_errors(client: AsyncClient) -> None:
    await enqueue(client)
    (job,) = await lease(client)
    path = f"/v1/worker/jobs/{job['id']}"
    for suffix, body in [
        ("/heartbeat", {"lease_token": job["lease_token"], "lease_seconds": 0}),
        ("/heartbeat", {"lease_token": job["lease_token"], "lease_seconds": 3601}),
        ("/heartbeat", {"lease_token": ""}),
        ("/complete", {"lease_token": "a\x00b"}),
        ("/complete", {"lease_token": job["lease_token"], "result": {"k": "\x00"}}),
        ("/fail", {"lease_token": job["lease_token"]}),
        ("/fail", {"lease_token": job["lease_token"], "error": "e", "retry_after_seconds": -1}),
        ("/fail", {"lease_token": job["lease_token"], "error": "e", "retryable": "no"}),
    ]:
        response = await client.post(path + suffix, json=body, headers=WORKER)
        assert_problem(response, 400, "validation_error")
    still = await client.post(path + "/complete", json={"lease_token": job["lease_token"]}, headers=WORKER)
    assert still.status_code == 200  # none of the bad requests touched the lease


async def test_lease_rejects_out_of_range_values(client: AsyncClient) -> None:
    for body in [
        {"queues": ["default"], "max_jobs": 0},
        {"queues": ["default"], "max_jobs": 1001},
        {"queues": ["default"], "lease_seconds": 0.5},
        {"queues": ["default"], "wait_seconds": -1},
        {"queues": ["q"] * 51},
        {"queues": ["default"], "worker_id": ""},
        {"queues": "default"},
    ]:
        response = await client.post("/v1/worker/lease", json=body, headers=WORKER)
        assert_problem(response, 400, "validation_error")


async def test_unknown_routes_and_methods_are_problems(client: AsyncClient) -> None:
    assert_problem(await client.get("/v1/nothing", headers=TENANT_A), 404, "not_found")
    assert_problem(await client.get("/nothing"), 404, "not_found")
    response = await client.delete("/v1/jobs", headers=TENANT_A)
    assert_problem(response, 405, "method_not_allowed")


async def test_integral_floats_are_integers_as_json_schema_says(client: AsyncClient) -> None:
    job = await enqueue(client, priority=5.0, max_retries=2.0, payload={"x": 1.0})
    assert (job["priority"], job["max_retries"]) == (5, 2)
    assert job["payload"] == {"x": 1.0}  # the caller's own JSON is kept as sent
    response = await client.post("/v1/jobs", json={"task_name": "t", "priority": 5.5}, headers=TENANT_A)
    problem = assert_problem(response, 400, "validation_error")
    assert problem["errors"][0]["field"] == "priority"


@pytest.mark.parametrize("body", [b"9K\xff", b"1 2", b'{"complete": []} x', b"[1.0, 2"])
async def test_a_body_that_fails_both_decodes_is_a_validation_error(client: AsyncClient, body: bytes) -> None:
    response = await client.post("/v1/worker/ack", content=body, headers={**WORKER, "Content-Type": "application/json"})
    assert_problem(response, 400, "validation_error")
