"""Retries, transport failures and the error table, on a scripted transport (no server needed)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from queueflow_client import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    AsyncQueueFlow,
    ConflictError,
    InvalidStateError,
    LeaseLostError,
    QueueFlow,
    UnavailableError,
)
from queueflow_client.errors import error_from_response

from tests.sdk.conftest import BASE

JOB = {
    "id": "job_1", "tenant_id": "default", "queue_name": "default", "task_name": "t", "payload": {},
    "status": "pending", "priority": 0, "scheduled_at": "2026-03-01T12:00:00Z", "locked_until": None,
    "delivery_count": 0, "retry_count": 0, "max_retries": 3,
    "backoff": {"strategy": "exponential", "base_seconds": 1, "max_seconds": 3600, "jitter": True},
    "timeout_seconds": None, "next_retry_at": None, "result": None, "error_message": None, "workflow_id": None,
    "workflow_step_id": None, "metadata": {}, "idempotency_key": None, "created_at": "2026-03-01T12:00:00Z",
    "started_at": None, "completed_at": None, "progress": None, "trace_context": None, "concurrency_key": None,
}  # fmt: skip
UNAVAILABLE = {"type": "about:blank", "title": "Unavailable", "status": 503, "detail": "db", "code": "unavailable"}


def scripted_transport(*answers: httpx.Response | Exception) -> tuple[httpx.MockTransport, list[httpx.Request]]:
    """A transport (for a sync or an async client) that gives each request the next answer, or raises it; and
    the requests it saw."""
    seen: list[httpx.Request] = []
    queue = list(answers)

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = queue.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return httpx.MockTransport(handle), seen


def scripted(*answers: httpx.Response | Exception) -> tuple[httpx.Client, list[httpx.Request]]:
    transport, seen = scripted_transport(*answers)
    return httpx.Client(transport=transport), seen


def client_for(http: httpx.Client, **options: Any) -> QueueFlow:
    return QueueFlow(BASE, "key", http_client=http, retry_delay=0, **options)


def test_503_is_retried_then_succeeds_with_the_same_idempotency_key() -> None:
    http, seen = scripted(httpx.Response(503, json=UNAVAILABLE), httpx.Response(201, json=JOB))
    job = client_for(http).jobs.enqueue("t")
    assert job.id == "job_1"
    assert len(seen) == 2
    assert seen[0].headers["Idempotency-Key"] == seen[1].headers["Idempotency-Key"]
    assert seen[0].headers["Authorization"] == "Bearer key"


def test_503_after_every_retry_raises_unavailable() -> None:
    http, seen = scripted(*[httpx.Response(503, json=UNAVAILABLE)] * 3)
    with pytest.raises(UnavailableError) as caught:
        client_for(http, max_retries=2).jobs.get("job_1")
    assert len(seen) == 3
    assert caught.value.code == "unavailable"


def test_a_refused_connection_is_retried_even_for_a_call_that_is_not_replayable() -> None:
    http, seen = scripted(httpx.ConnectError("refused"), httpx.Response(200, json=JOB | {"status": "cancelled"}))
    assert client_for(http).jobs.cancel("job_1").status == "cancelled"
    assert len(seen) == 2


def test_connection_failures_after_every_retry_raise_api_connection_error() -> None:
    http, seen = scripted(*[httpx.ConnectError("refused")] * 2)
    with pytest.raises(APIConnectionError):
        client_for(http, max_retries=1).jobs.get("job_1")
    assert len(seen) == 2


def test_a_read_timeout_is_retried_for_a_replayable_call_only() -> None:
    http, seen = scripted(httpx.ReadTimeout("slow"), httpx.Response(200, json=JOB))
    assert client_for(http).jobs.get("job_1").id == "job_1"
    assert len(seen) == 2

    http, seen = scripted(httpx.ReadTimeout("slow"))
    with pytest.raises(APITimeoutError):
        client_for(http).jobs.cancel("job_1")  # it may have landed: a repeat would answer invalid_state
    assert len(seen) == 1


def test_api_key_none_sends_no_authorization() -> None:
    http, seen = scripted(httpx.Response(200, json={"queues": []}))
    assert QueueFlow(BASE, None, http_client=http).queues.list() == []
    assert "Authorization" not in seen[0].headers


@pytest.mark.parametrize(
    ("status", "code", "expected"),
    [
        (409, "lease_lost", LeaseLostError),
        (409, "invalid_state", InvalidStateError),
        (409, "something_new", ConflictError),
        (418, None, APIError),
        (500, None, APIError),
    ],
)
def test_the_error_table(status: int, code: str | None, expected: type[APIError]) -> None:
    body = json.dumps({"status": status, "code": code, "detail": "why"}).encode() if code else b"teapot"
    error = error_from_response(status, body)
    assert type(error) is expected
    assert error.status == status
    assert error.detail == ("why" if code else "teapot")


# ---- workflows and schedules: exactly the requests the SDK sends (partial bodies) ------------------

WORKFLOW = {
    "id": "wf_1", "tenant_id": "default", "name": "etl", "status": "running", "context": {},
    "steps": [{"name": "extract", "task_name": "extract", "status": "enqueued", "job_id": "job_1",
               "depends_on": [], "on_failure": "halt"}],
    "created_at": "2026-03-01T12:00:00Z", "completed_at": None,
}  # fmt: skip
SCHEDULE = {
    "id": "sch_1", "tenant_id": "default", "name": "nightly", "cron": "0 3 * * *", "timezone": "Europe/Berlin",
    "task_name": "report", "queue_name": "default", "payload": {}, "priority": 0, "max_retries": 3, "enabled": True,
    "next_run_at": "2026-03-02T02:00:00Z", "last_run_at": None, "created_at": "2026-03-01T12:00:00Z",
    "updated_at": "2026-03-01T12:00:00Z",
}  # fmt: skip


def recording(answer: Callable[[httpx.Request], httpx.Response]) -> tuple[httpx.AsyncClient, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answer(request)

    return httpx.AsyncClient(transport=httpx.MockTransport(handle)), seen


async def test_workflow_calls() -> None:
    from queueflow_client import Step

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/workflows" and request.method == "GET":
            return httpx.Response(200, json={"items": [WORKFLOW], "next_cursor": None})
        status = 201 if request.method == "POST" and request.url.path == "/v1/workflows" else 200
        return httpx.Response(status, json=WORKFLOW)

    http, seen = recording(answer)
    async with AsyncQueueFlow(BASE, "key", http_client=http) as client:
        steps = [
            Step(name="extract", task_name="extract"),
            {"name": "load", "task_name": "load", "depends_on": ["extract"]},
        ]
        created = await client.workflows.create("etl", steps, context={"day": 1})
        assert created.steps[0].job_id == "job_1"
        assert (await client.workflows.get("wf_1")).name == "etl"
        assert [workflow.id async for workflow in client.workflows.list(status="running")] == ["wf_1"]
        await client.workflows.cancel("wf_1")
    body = json.loads(seen[0].content)
    assert body["steps"][0] == {
        "name": "extract", "task_name": "extract", "payload": {}, "depends_on": [], "on_failure": "halt"
    }  # fmt: skip
    assert body["context"] == {"day": 1}
    assert seen[0].headers["Idempotency-Key"].startswith("qf-client-")
    assert [(r.method, r.url.path) for r in seen[1:]] == [
        ("GET", "/v1/workflows/wf_1"),
        ("GET", "/v1/workflows"),
        ("POST", "/v1/workflows/wf_1/cancel"),
    ]
    assert seen[2].url.params["status"] == "running"


async def test_schedule_calls() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.method == "DELETE":
            return httpx.Response(204)
        if request.method == "GET" and request.url.path == "/v1/schedules":
            return httpx.Response(200, json={"items": [SCHEDULE], "next_cursor": None})
        return httpx.Response(201 if request.method == "POST" else 200, json=SCHEDULE)

    http, seen = recording(answer)
    async with AsyncQueueFlow(BASE, "key", http_client=http) as client:
        schedule = await client.schedules.create(
            "nightly", cron="0 3 * * *", task_name="report", timezone="Europe/Berlin"
        )
        assert schedule.next_run_at is not None
        assert (await client.schedules.get("nightly")).cron == "0 3 * * *"
        assert [item.name async for item in client.schedules.list()] == ["nightly"]
        await client.schedules.update("nightly", enabled=False)
        assert await client.schedules.delete("nightly") is None
    assert json.loads(seen[0].content) == {
        "name": "nightly", "cron": "0 3 * * *", "task_name": "report", "timezone": "Europe/Berlin"
    }  # fmt: skip
    assert json.loads(seen[3].content) == {"enabled": False}
    assert [(r.method, r.url.path) for r in seen] == [
        ("POST", "/v1/schedules"),
        ("GET", "/v1/schedules/nightly"),
        ("GET", "/v1/schedules"),
        ("PATCH", "/v1/schedules/nightly"),
        ("DELETE", "/v1/schedules/nightly"),
    ]
