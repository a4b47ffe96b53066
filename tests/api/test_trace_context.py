"""Trace context without OpenTelemetry on the server: the W3C headers of an enqueue are stored with the job (and
with every step job of a workflow) and returned on lease (README.md, "Traces")."""

from __future__ import annotations

from httpx import AsyncClient

from tests.api.conftest import TENANT_A, WORKER, lease

PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
TRACED = {**TENANT_A, "traceparent": PARENT, "tracestate": "rojo=00f067aa0ba902b7"}
CONTEXT = {"traceparent": PARENT, "tracestate": "rojo=00f067aa0ba902b7"}


async def test_an_enqueues_trace_context_is_stored_and_leased(client: AsyncClient) -> None:
    created = await client.post("/v1/jobs", json={"task_name": "t"}, headers=TRACED)
    assert created.json()["trace_context"] == CONTEXT
    (leased,) = await lease(client)
    assert leased["trace_context"] == CONTEXT
    plain = await client.post("/v1/jobs", json={"task_name": "t"}, headers=TENANT_A)
    assert plain.json()["trace_context"] is None


async def test_a_batch_shares_the_requests_trace_context(client: AsyncClient) -> None:
    body = {"jobs": [{"task_name": "a"}, {"task_name": "b"}]}
    created = await client.post("/v1/jobs/batch", json=body, headers=TRACED)
    assert [job["trace_context"] for job in created.json()["jobs"]] == [CONTEXT, CONTEXT]


async def test_an_invalid_traceparent_is_ignored_not_refused(client: AsyncClient) -> None:
    headers = {**TENANT_A, "traceparent": "00-not-a-trace-01", "tracestate": "rojo=1"}
    created = await client.post("/v1/jobs", json={"task_name": "t"}, headers=headers)
    assert created.status_code == 201
    assert created.json()["trace_context"] is None


async def test_every_step_job_of_a_workflow_inherits_its_trace_context(client: AsyncClient) -> None:
    steps = [{"name": "a", "task_name": "a"}, {"name": "b", "task_name": "b", "depends_on": ["a"]}]
    created = await client.post("/v1/workflows", json={"name": "two", "steps": steps}, headers=TRACED)
    assert created.status_code == 201
    (first,) = await lease(client)
    assert first["trace_context"] == CONTEXT
    await client.post(
        f"/v1/worker/jobs/{first['id']}/complete", json={"lease_token": first["lease_token"]}, headers=WORKER
    )
    (second,) = await lease(client)  # enqueued by the advancement, long after the request
    assert second["workflow_step_id"] == "b"
    assert second["trace_context"] == CONTEXT
