"""Workflow routes: create (validated DAG, idempotent), get, list, cancel, and workflows driven by HTTP workers."""

from __future__ import annotations

from typing import Any

import pytest
from httpx import AsyncClient
from queueflow.clocks import TestClock

from tests.api.conftest import TENANT_A, TENANT_B, WORKER, assert_problem, lease

WORKFLOW_FIELDS = {
    "id", "tenant_id", "name", "status", "context", "steps", "created_at", "completed_at",
    "parent", "timeout_seconds", "deadline", "error",
}  # fmt: skip
STEP_FIELDS = {
    "name", "task_name", "status", "job_id", "depends_on", "on_failure", "wait", "due_at", "added_by",
    "child_workflow_id", "error",
}  # fmt: skip
JSON = {**TENANT_A, "Content-Type": "application/json"}

DIAMOND = [
    {"name": "a", "task_name": "extract"},
    {"name": "b", "task_name": "left", "depends_on": ["a"]},
    {"name": "c", "task_name": "right", "depends_on": ["a"]},
    {"name": "d", "task_name": "join", "depends_on": ["b", "c"]},
]


async def create(
    client: AsyncClient, steps: list[dict[str, Any]] | None = None, headers: dict[str, str] = TENANT_A, **body: Any
) -> dict[str, Any]:
    body.setdefault("name", "etl")
    response = await client.post("/v1/workflows", json={"steps": steps or DIAMOND, **body}, headers=headers)
    assert response.status_code == 201, response.text
    workflow: dict[str, Any] = response.json()
    return workflow


async def get(client: AsyncClient, workflow_id: str) -> dict[str, Any]:
    response = await client.get(f"/v1/workflows/{workflow_id}", headers=TENANT_A)
    assert response.status_code == 200, response.text
    workflow: dict[str, Any] = response.json()
    return workflow


async def complete(client: AsyncClient, job: dict[str, Any], result: Any) -> None:
    response = await client.post(
        f"/v1/worker/jobs/{job['id']}/complete",
        json={"lease_token": job["lease_token"], "result": result},
        headers=WORKER,
    )
    assert response.status_code == 200, response.text


def statuses(workflow: dict[str, Any]) -> dict[str, str]:
    return {step["name"]: step["status"] for step in workflow["steps"]}


# ---- create ----------------------------------------------------------------------------------------


async def test_create_answers_201_and_enqueues_the_roots_only(client: AsyncClient) -> None:
    response = await client.post("/v1/workflows", json={"name": "etl", "steps": DIAMOND}, headers=TENANT_A)

    assert response.status_code == 201
    workflow = response.json()
    assert set(workflow) == WORKFLOW_FIELDS
    assert workflow["id"].startswith("wf_")
    assert (workflow["tenant_id"], workflow["name"], workflow["status"]) == ("tenant-a", "etl", "running")
    assert workflow["context"] == {}
    assert (workflow["created_at"], workflow["completed_at"]) == ("2026-03-01T12:00:00Z", None)
    assert all(set(step) == STEP_FIELDS for step in workflow["steps"])
    root, *rest = workflow["steps"]
    assert root == {
        "name": "a",
        "task_name": "extract",
        "status": "enqueued",
        "job_id": root["job_id"],
        "depends_on": [],
        "on_failure": "halt",
        "wait": None,
        "due_at": None,
        "added_by": None,
        "child_workflow_id": None,
        "error": None,
    }
    assert root["job_id"].startswith("job_")
    assert [(step["name"], step["status"], step["job_id"]) for step in rest] == [
        ("b", "pending", None),
        ("c", "pending", None),
        ("d", "pending", None),
    ]
    assert rest[2]["depends_on"] == ["b", "c"]


async def test_a_step_job_carries_its_options_the_context_and_its_workflow(client: AsyncClient) -> None:
    workflow = await create(
        client,
        [
            {
                "name": "only",
                "task_name": "report",
                "payload": {"day": 1},
                "queue_name": "reports",
                "priority": 7,
                "max_retries": 0,
                "backoff": {"strategy": "fixed"},
                "timeout_seconds": 60,
                "on_failure": "skip",
            }
        ],
        context={"tenant": "acme"},
    )

    job = (await client.get(f"/v1/jobs/{workflow['steps'][0]['job_id']}", headers=TENANT_A)).json()
    assert job["payload"] == {"day": 1, "_context": {"tenant": "acme"}}
    assert (job["queue_name"], job["priority"], job["max_retries"], job["timeout_seconds"]) == ("reports", 7, 0, 60)
    assert job["backoff"] == {"strategy": "fixed", "base_seconds": 1.0, "max_seconds": 3600.0, "jitter": True}
    assert (job["workflow_id"], job["workflow_step_id"]) == (workflow["id"], "only")
    assert workflow["steps"][0]["on_failure"] == "skip"
    listed = (await client.get("/v1/jobs", params={"workflow_id": workflow["id"]}, headers=TENANT_A)).json()
    assert [item["id"] for item in listed["items"]] == [job["id"]]


async def test_an_idempotent_repeat_answers_200_with_the_original_workflow(client: AsyncClient) -> None:
    headers = {**TENANT_A, "Idempotency-Key": "nightly-2026-03-01"}
    first = await client.post("/v1/workflows", json={"name": "etl", "steps": DIAMOND}, headers=headers)
    again = await client.post(
        "/v1/workflows", json={"name": "other", "steps": [{"name": "x", "task_name": "x"}]}, headers=headers
    )
    other_tenant = await client.post(
        "/v1/workflows",
        json={"name": "etl", "steps": DIAMOND},
        headers={**TENANT_B, "Idempotency-Key": "nightly-2026-03-01"},
    )

    assert (first.status_code, again.status_code, other_tenant.status_code) == (201, 200, 201)
    assert again.json() == first.json()
    assert other_tenant.json()["id"] != first.json()["id"]
    jobs = (await client.get("/v1/jobs", headers=TENANT_A)).json()["items"]
    assert len(jobs) == 1  # the repeat enqueued nothing


@pytest.mark.parametrize(
    ("steps", "errors"),
    [
        (
            [
                {"name": "a", "task_name": "t", "depends_on": ["c"]},
                {"name": "b", "task_name": "t", "depends_on": ["a"]},
                {"name": "c", "task_name": "t", "depends_on": ["b"]},
            ],
            [{"field": "steps.0.depends_on", "message": "cycle: a → c → b → a"}],
        ),
        (
            [{"name": "a", "task_name": "t", "depends_on": ["a"]}],
            [{"field": "steps.0.depends_on.0", "message": "cycle: a → a (a step cannot depend on itself)"}],
        ),
        (
            [{"name": "a", "task_name": "t"}, {"name": "b", "task_name": "t", "depends_on": ["nope"]}],
            [{"field": "steps.1.depends_on.0", "message": "unknown step 'nope'"}],
        ),
        (
            [{"name": "a", "task_name": "t"}, {"name": "a", "task_name": "t"}],
            [{"field": "steps.1.name", "message": "duplicate step name 'a' (also steps.0)"}],
        ),
        (
            [{"name": "a", "task_name": "t"}, {"name": "b", "task_name": "t", "depends_on": ["a", "a"]}],
            [{"field": "steps.1.depends_on.1", "message": "'a' is listed twice"}],
        ),
        (
            [{"name": "a", "task_name": "t", "payload": {"_context": 1}}],
            [{"field": "steps.0.payload._context", "message": "is reserved for the workflow's context"}],
        ),
        (
            [{"name": "a", "task_name": "t", "backoff": {"base_seconds": 10, "max_seconds": 5}}],
            [{"field": "steps.0.backoff.max_seconds", "message": "must be at least base_seconds"}],
        ),
    ],
)
async def test_an_invalid_dag_is_a_validation_error_naming_the_fields(
    client: AsyncClient, steps: list[dict[str, Any]], errors: list[dict[str, str]]
) -> None:
    response = await client.post("/v1/workflows", json={"name": "bad", "steps": steps}, headers=TENANT_A)

    assert assert_problem(response, 400, "validation_error")["errors"] == errors
    assert (await client.get("/v1/workflows", headers=TENANT_A)).json()["items"] == []
    assert (await client.get("/v1/jobs", headers=TENANT_A)).json()["items"] == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b'{"name": "w", "steps": [{"name": "a", "task_name": "t"}], "surprise": 1}', "surprise"),
        (b'{"name": "w", "steps": [{"name": "a", "task_name": "t", "surprise": 1}]}', "steps.0.surprise"),
        (b'{"name": "w", "steps": [{"name": "a", "task_name": "t", "backoff": {"x": 1}}]}', "steps.0.backoff.x"),
        (b'{"name": "w", "steps": []}', "steps"),
        (b'{"name": "w"}', ""),
        (b'{"steps": [{"name": "a", "task_name": "t"}]}', ""),
        (b'{"name": "", "steps": [{"name": "a", "task_name": "t"}]}', "name"),
        (b'{"name": "w\\u0000", "steps": [{"name": "a", "task_name": "t"}]}', "name"),
        (b'{"name": "w", "context": {"k": "\\u0000"}, "steps": [{"name": "a", "task_name": "t"}]}', "context.k"),
        (b'{"name": "w", "context": [], "steps": [{"name": "a", "task_name": "t"}]}', "context"),
        (b'{"name": "w", "steps": [{"name": "a b", "task_name": "t"}]}', "steps.0.name"),
        (b'{"name": "w", "steps": [{"name": "a", "task_name": "t\\u0000"}]}', "steps.0.task_name"),
        (b'{"name": "w", "steps": [{"name": "a", "task_name": "t", "depends_on": "b"}]}', "steps.0.depends_on"),
        (b'{"name": "w", "steps": [{"name": "a", "task_name": "t", "on_failure": "retry"}]}', "steps.0.on_failure"),
        (b'{"name": "w", "steps": [{"name": "a", "task_name": "t", "priority": 1e400}]}', "steps.0.priority"),
        (
            b'{"name": "w", "steps": [{"name": "a", "task_name": "t", "priority": 1180591620717411303424}]}',
            "steps.0.priority",
        ),
        (b'{"name": "w", "steps": [{"name": "a", "task_name": "t", "priority": "1"}]}', "steps.0.priority"),
        (b'{"name": "w", "steps": [{"name": "a", "task_name": "t", "timeout_seconds": 0}]}', "steps.0.timeout_seconds"),
        (b'{"name": "w", "steps": [{"name": "a", "task_name": "t", "queue_name": "a/b"}]}', "steps.0.queue_name"),
    ],
)
async def test_bad_create_bodies_are_validation_errors(client: AsyncClient, body: bytes, field: str) -> None:
    response = await client.post("/v1/workflows", content=body, headers=JSON)
    problem = assert_problem(response, 400, "validation_error")
    assert field in [error["field"] for error in problem["errors"]], problem


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{",
        b"[]",
        b'{"name": "\\ud800", "steps": [{"name": "a", "task_name": "t"}]}',
        b'{"name": "w", "steps": ' + b"[" * 10_000 + b"]" * 10_000 + b"}",
        b'{"name": "w", "context": ' + b'{"a": ' * 10_000 + b"1" + b"}" * 10_001 + b', "steps": []}',
        b'{"name": "w", "steps": [{"name": "a", "task_name": "t", "payload": ' + b"[" * 200 + b"]" * 200 + b"}]}",
    ],
)
async def test_malformed_or_deep_json_is_a_validation_error(client: AsyncClient, body: bytes) -> None:
    assert_problem(await client.post("/v1/workflows", content=body, headers=JSON), 400, "validation_error")


async def test_more_than_10000_steps_are_rejected_and_10000_are_accepted(client: AsyncClient) -> None:
    chain = [{"name": f"s{i}", "task_name": "t", "depends_on": [f"s{i - 1}"] if i else []} for i in range(10_001)]

    too_many = await client.post("/v1/workflows", json={"name": "long", "steps": chain}, headers=TENANT_A)
    assert [e["field"] for e in assert_problem(too_many, 400, "validation_error")["errors"]] == ["steps"]

    workflow = await create(client, chain[:10_000], name="long")  # one request
    assert len(workflow["steps"]) == 10_000
    assert [step["status"] for step in workflow["steps"][:2]] == ["enqueued", "pending"]


async def test_a_long_cycle_is_reported_with_a_bounded_path(client: AsyncClient) -> None:
    ring = [{"name": f"s{i}", "task_name": "t", "depends_on": [f"s{(i + 1) % 1000}"]} for i in range(1000)]

    response = await client.post("/v1/workflows", json={"name": "ring", "steps": ring}, headers=TENANT_A)

    (error,) = assert_problem(response, 400, "validation_error")["errors"]
    assert error["field"] == "steps.0.depends_on"
    assert error["message"].startswith("cycle: s0 → s1 → ")
    assert error["message"].endswith("… 989 more … → s999 → s0")


async def test_a_body_over_the_limit_is_413(client: AsyncClient) -> None:
    body = b'{"name": "w", "context": {"blob": "' + b"x" * (5 * 1024 * 1024) + b'"}, "steps": []}'
    assert_problem(await client.post("/v1/workflows", content=body, headers=JSON), 413, "payload_too_large")


async def test_creating_counts_the_enqueued_root_jobs_by_queue(client: AsyncClient) -> None:
    await create(
        client,
        [
            {"name": "a", "task_name": "t", "queue_name": "mail"},
            {"name": "b", "task_name": "t", "queue_name": "mail"},
            {"name": "c", "task_name": "t", "queue_name": "sms", "depends_on": ["a"]},
        ],
        headers={**TENANT_A, "Idempotency-Key": "k"},
    )
    repeat = await client.post(
        "/v1/workflows", json={"name": "w", "steps": DIAMOND}, headers={**TENANT_A, "Idempotency-Key": "k"}
    )
    assert repeat.status_code == 200

    text = (await client.get("/metrics")).text
    assert 'queueflow_jobs_enqueued_total{queue="mail"} 2.0' in text
    assert 'queueflow_jobs_enqueued_total{queue="sms"}' not in text  # not enqueued until `a` completes


# ---- read ------------------------------------------------------------------------------------------


async def test_get_workflow_and_tenant_isolation(client: AsyncClient) -> None:
    workflow = await create(client)

    assert await get(client, workflow["id"]) == workflow
    for method, path in [("GET", ""), ("POST", "/cancel")]:
        response = await client.request(method, f"/v1/workflows/{workflow['id']}{path}", headers=TENANT_B)
        assert_problem(response, 404, "not_found")
    assert (await client.get("/v1/workflows", headers=TENANT_B)).json() == {"items": [], "next_cursor": None}


async def test_an_unknown_or_malformed_workflow_id(client: AsyncClient) -> None:
    assert_problem(await client.get("/v1/workflows/wf_nope", headers=TENANT_A), 404, "not_found")
    assert_problem(await client.post("/v1/workflows/wf_nope/cancel", headers=TENANT_A), 404, "not_found")
    assert_problem(await client.get("/v1/workflows/wf%00x", headers=TENANT_A), 400, "validation_error")


async def test_list_pages_newest_first_and_filters_by_status(client: AsyncClient, clock: TestClock) -> None:
    ids = []
    for _ in range(3):
        ids.append((await create(client))["id"])
        clock.advance(1)
    await client.post(f"/v1/workflows/{ids[1]}/cancel", headers=TENANT_A)

    first = (await client.get("/v1/workflows", params={"limit": 2}, headers=TENANT_A)).json()
    assert [item["id"] for item in first["items"]] == [ids[2], ids[1]]
    assert all(set(item) == WORKFLOW_FIELDS for item in first["items"])
    rest = (
        await client.get("/v1/workflows", params={"limit": 2, "cursor": first["next_cursor"]}, headers=TENANT_A)
    ).json()
    assert rest == {"items": [await get(client, ids[0])], "next_cursor": None}

    cancelled = (await client.get("/v1/workflows", params={"status": "cancelled"}, headers=TENANT_A)).json()
    assert [item["id"] for item in cancelled["items"]] == [ids[1]]
    running = (await client.get("/v1/workflows", params={"status": "running"}, headers=TENANT_A)).json()
    assert [item["id"] for item in running["items"]] == [ids[2], ids[0]]


@pytest.mark.parametrize(
    "params", [{"status": "done"}, {"limit": 0}, {"limit": 501}, {"limit": "x"}, {"cursor": "garbage"}]
)
async def test_list_rejects_bad_parameters(client: AsyncClient, params: dict[str, Any]) -> None:
    response = await client.get("/v1/workflows", params=params, headers=TENANT_A)
    assert_problem(response, 400, "validation_error")


async def test_options_lists_every_method_of_the_workflows_collection(client: AsyncClient) -> None:
    response = await client.options("/v1/workflows")
    assert response.status_code == 204
    assert response.headers["allow"] == "GET, OPTIONS, POST"


async def test_credentials_are_checked_on_every_workflow_route(client: AsyncClient) -> None:
    workflow = await create(client)
    routes = [
        ("POST", "/v1/workflows", {"name": "w", "steps": DIAMOND}),
        ("GET", "/v1/workflows", None),
        ("GET", f"/v1/workflows/{workflow['id']}", None),
        ("POST", f"/v1/workflows/{workflow['id']}/cancel", None),
    ]
    for method, path, body in routes:
        missing = await client.request(method, path, json=body)
        assert_problem(missing, 401, "unauthorized")
        unknown = await client.request(method, path, json=body, headers={"Authorization": "Bearer nope"})
        assert_problem(unknown, 401, "unauthorized")
        assert_problem(await client.request(method, path, json=body, headers=WORKER), 403, "forbidden")
    assert (await get(client, workflow["id"]))["status"] == "running"


# ---- cancel ----------------------------------------------------------------------------------------


async def test_cancel_cancels_every_unfinished_step_and_its_job(client: AsyncClient, clock: TestClock) -> None:
    workflow = await create(client)
    (job,) = await lease(client)
    clock.advance(5)

    response = await client.post(f"/v1/workflows/{workflow['id']}/cancel", headers=TENANT_A)

    assert response.status_code == 200
    cancelled = response.json()
    assert cancelled["status"] == "cancelled"
    assert cancelled["completed_at"] == "2026-03-01T12:00:05Z"
    assert set(statuses(cancelled).values()) == {"cancelled"}
    assert (await client.get(f"/v1/jobs/{job['id']}", headers=TENANT_A)).json()["status"] == "cancelled"
    late = await client.post(
        f"/v1/worker/jobs/{job['id']}/complete", json={"lease_token": job["lease_token"]}, headers=WORKER
    )
    assert_problem(late, 409, "lease_lost")

    again = await client.post(f"/v1/workflows/{workflow['id']}/cancel", headers=TENANT_A)
    assert "cancelled" in assert_problem(again, 409, "invalid_state")["detail"]


async def test_cancel_of_a_completed_workflow_is_invalid_state(client: AsyncClient) -> None:
    workflow = await create(client, [{"name": "only", "task_name": "t"}])
    (job,) = await lease(client)
    await complete(client, job, 1)

    response = await client.post(f"/v1/workflows/{workflow['id']}/cancel", headers=TENANT_A)

    assert_problem(response, 409, "invalid_state")
    assert (await get(client, workflow["id"]))["status"] == "completed"


# ---- driven by HTTP workers ------------------------------------------------------------------------


async def test_a_diamond_runs_to_completion_through_the_worker_routes(client: AsyncClient, clock: TestClock) -> None:
    workflow = await create(client, context={"run": 1})

    (a,) = await lease(client, max_jobs=10)
    assert (a["task_name"], a["workflow_step_id"], a["payload"]) == ("extract", "a", {"_context": {"run": 1}})
    await complete(client, a, {"rows": 3})
    assert statuses(await get(client, workflow["id"])) == {
        "a": "completed",
        "b": "enqueued",
        "c": "enqueued",
        "d": "pending",
    }

    middle = await lease(client, max_jobs=10)
    assert sorted(job["workflow_step_id"] for job in middle) == ["b", "c"]
    assert all(job["payload"]["_context"] == {"run": 1, "a": {"rows": 3}} for job in middle)
    for job in middle:
        await complete(client, job, job["workflow_step_id"].upper())

    (d,) = await lease(client, max_jobs=10)
    assert d["workflow_step_id"] == "d"
    assert d["payload"]["_context"] == {"run": 1, "a": {"rows": 3}, "b": "B", "c": "C"}
    clock.advance(2)
    await complete(client, d, "joined")

    done = await get(client, workflow["id"])
    assert done["status"] == "completed"
    assert done["completed_at"] == "2026-03-01T12:00:02Z"
    assert set(statuses(done).values()) == {"completed"}
    assert done["context"] == {"run": 1, "a": {"rows": 3}, "b": "B", "c": "C", "d": "joined"}
    completed = (await client.get("/v1/workflows", params={"status": "completed"}, headers=TENANT_A)).json()
    assert [item["id"] for item in completed["items"]] == [workflow["id"]]


async def test_a_halt_failure_fails_the_workflow_and_cancels_its_siblings(client: AsyncClient) -> None:
    workflow = await create(
        client,
        [
            {"name": "a", "task_name": "t"},
            {"name": "b", "task_name": "t", "depends_on": ["a"]},
            {"name": "c", "task_name": "t", "depends_on": ["a"]},
            {"name": "d", "task_name": "t", "depends_on": ["b", "c"]},
        ],
    )
    (a,) = await lease(client)
    await complete(client, a, None)
    b, c = sorted(await lease(client, max_jobs=10), key=lambda job: job["workflow_step_id"])

    response = await client.post(
        f"/v1/worker/jobs/{b['id']}/fail",
        json={"lease_token": b["lease_token"], "error": "bad row", "retryable": False},
        headers=WORKER,
    )

    assert response.status_code == 200
    assert response.json()["status"] == "dead_letter"
    failed = await get(client, workflow["id"])
    assert failed["status"] == "failed"
    assert failed["completed_at"] is not None
    assert statuses(failed) == {"a": "completed", "b": "failed", "c": "cancelled", "d": "cancelled"}
    assert (await client.get(f"/v1/jobs/{c['id']}", headers=TENANT_A)).json()["status"] == "cancelled"
    sibling = await client.post(
        f"/v1/worker/jobs/{c['id']}/complete", json={"lease_token": c["lease_token"]}, headers=WORKER
    )
    assert_problem(sibling, 409, "lease_lost")
    assert await lease(client, max_jobs=10) == []


async def test_a_skip_failure_skips_downstream_and_the_workflow_partially_fails(client: AsyncClient) -> None:
    workflow = await create(
        client,
        [
            {"name": "a", "task_name": "t", "on_failure": "skip", "max_retries": 0},
            {"name": "b", "task_name": "t", "depends_on": ["a"]},
            {"name": "c", "task_name": "t"},
        ],
    )
    jobs = {job["workflow_step_id"]: job for job in await lease(client, max_jobs=10)}
    await client.post(
        f"/v1/worker/jobs/{jobs['a']['id']}/fail",
        json={"lease_token": jobs["a"]["lease_token"], "error": "boom"},  # retryable, but no retries left
        headers=WORKER,
    )
    await complete(client, jobs["c"], "ok")

    done = await get(client, workflow["id"])
    assert done["status"] == "partially_failed"
    assert statuses(done) == {"a": "failed", "b": "skipped", "c": "completed"}
