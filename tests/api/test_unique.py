"""`unique` on POST /v1/jobs and per batch item (README.md, "Unique jobs and debounce"): 201 for a new job, 200 with
`QueueFlow-Unique: skipped | replaced`, 409 `duplicate` with `existing_job_id` (and `index`), the 400s, Job's
`unique_key`, `GET /v1/jobs?unique_key=` and the metrics."""

from __future__ import annotations

from typing import Any

import pytest
from httpx import AsyncClient
from queueflow.clocks import TestClock

from tests.api.conftest import TENANT_A, TENANT_B, assert_problem, enqueue, lease


async def post(client: AsyncClient, headers: dict[str, str] = TENANT_A, **body: Any) -> Any:
    return await client.post("/v1/jobs", json={"task_name": "sync", **body}, headers=headers)


async def test_a_new_key_is_201_and_a_repeat_skipped_is_200_with_the_header(client: AsyncClient) -> None:
    created = await post(client, payload={"n": 1}, unique={"key": "customer-1"})
    assert created.status_code == 201
    assert "QueueFlow-Unique" not in created.headers
    assert created.json()["unique_key"] == "customer-1"
    again = await post(client, payload={"n": 2}, unique={"key": "customer-1"})
    assert again.status_code == 200
    assert again.headers["QueueFlow-Unique"] == "skipped"
    assert again.json() == created.json()
    # Another tenant's key is its own.
    assert (await post(client, TENANT_B, unique={"key": "customer-1"})).status_code == 201
    assert (await enqueue(client))["unique_key"] is None


async def test_replace_is_200_replaced_with_the_new_fields(client: AsyncClient, clock: TestClock) -> None:
    first = (await post(client, payload={"n": 1}, unique={"key": "k", "on_conflict": "replace"})).json()
    replaced = await post(
        client,
        payload={"n": 2},
        priority=5,
        metadata={"m": 1},
        delay_seconds=30,
        unique={"key": "k", "on_conflict": "replace"},
    )
    assert replaced.status_code == 200
    assert replaced.headers["QueueFlow-Unique"] == "replaced"
    job = replaced.json()
    assert (job["id"], job["payload"], job["priority"], job["metadata"]) == (first["id"], {"n": 2}, 5, {"m": 1})
    assert job["scheduled_at"] == "2026-03-01T12:00:30Z"
    clock.advance(seconds=30)
    (held,) = await lease(client)
    started = await post(client, payload={"n": 3}, unique={"key": "k", "on_conflict": "replace"})
    assert (started.status_code, started.headers["QueueFlow-Unique"]) == (200, "skipped")
    assert started.json()["payload"] == {"n": 2}
    assert held["id"] == first["id"]


async def test_error_is_409_duplicate_with_the_existing_job_id(client: AsyncClient) -> None:
    first = (await post(client, unique={"key": "k", "on_conflict": "error"})).json()
    body = assert_problem(await post(client, unique={"key": "k", "on_conflict": "error"}), 409, "duplicate")
    assert body["existing_job_id"] == first["id"]
    assert "index" not in body


async def test_a_batch_answers_each_position_and_fails_whole_on_a_duplicate(client: AsyncClient) -> None:
    first = (await post(client, unique={"key": "k"})).json()
    batch = await client.post(
        "/v1/jobs/batch",
        json={"jobs": [{"task_name": "a", "unique": {"key": "k"}}, {"task_name": "b", "unique": {"key": "new"}},
                       {"task_name": "c", "unique": {"key": "new"}}]},
        headers=TENANT_A,
    )  # fmt: skip
    assert batch.status_code == 201
    ids = [job["id"] for job in batch.json()["jobs"]]
    assert ids[0] == first["id"]
    assert ids[1] == ids[2] != first["id"]
    failed = await client.post(
        "/v1/jobs/batch",
        json={"jobs": [{"task_name": "a", "unique": {"key": "other"}}, {"task_name": "b"},
                       {"task_name": "c", "unique": {"key": "k", "on_conflict": "error"}}]},
        headers=TENANT_A,
    )  # fmt: skip
    body = assert_problem(failed, 409, "duplicate")
    assert (body["existing_job_id"], body["index"]) == (first["id"], 2)
    listed = await client.get("/v1/jobs", params={"unique_key": "other"}, headers=TENANT_A)
    assert listed.json()["items"] == []


async def test_the_list_filters_by_unique_key(client: AsyncClient) -> None:
    mine = (await post(client, unique={"key": "k", "states": ["completed"]})).json()
    again = (await post(client, unique={"key": "k", "states": ["completed"]})).json()
    await post(client, unique={"key": "other"})
    listed = await client.get("/v1/jobs", params={"unique_key": "k"}, headers=TENANT_A)
    assert sorted(job["id"] for job in listed.json()["items"]) == sorted([mine["id"], again["id"]])
    assert (await client.get("/v1/jobs", params={"unique_key": ""}, headers=TENANT_A)).status_code == 400


async def test_the_idempotency_key_comes_first(client: AsyncClient) -> None:
    rule = {"key": "k", "on_conflict": "error"}
    first = await client.post(
        "/v1/jobs", json={"task_name": "t", "unique": rule}, headers={**TENANT_A, "Idempotency-Key": "r1"}
    )
    repeat = await client.post(
        "/v1/jobs", json={"task_name": "t", "unique": rule}, headers={**TENANT_A, "Idempotency-Key": "r1"}
    )
    assert (first.status_code, repeat.status_code) == (201, 200)
    assert "QueueFlow-Unique" not in repeat.headers
    assert repeat.json()["id"] == first.json()["id"]


async def test_debounce_schedules_from_the_last_enqueue(client: AsyncClient, clock: TestClock) -> None:
    rule = {"key": "hook", "on_conflict": "replace", "debounce_seconds": 10}
    first = (await post(client, payload={"n": 1}, unique=rule)).json()
    assert first["scheduled_at"] == "2026-03-01T12:00:10Z"
    clock.advance(seconds=5)
    moved = await post(client, payload={"n": 2}, unique=rule)
    assert (moved.headers["QueueFlow-Unique"], moved.json()["scheduled_at"]) == ("replaced", "2026-03-01T12:00:15Z")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"unique": {"key": ""}}, "unique.key"),
        ({"unique": {"key": "k", "states": []}}, "unique.states"),
        ({"unique": {"key": "k", "states": ["done"]}}, "unique.states.0"),
        ({"unique": {"key": "k", "states": ["pending"], "period_seconds": 60}}, "unique.states"),
        ({"unique": {"key": "k", "period_seconds": 0}}, "unique.period_seconds"),
        ({"unique": {"key": "k", "on_conflict": "merge"}}, "unique.on_conflict"),
        ({"unique": {"key": "k", "debounce_seconds": 5}}, "unique.debounce_seconds"),
        ({"unique": {"key": "k", "on_conflict": "replace", "debounce_seconds": 5, "states": ["pending"]}},
         "unique.debounce_seconds"),
        ({"unique": {"key": "k", "on_conflict": "replace", "debounce_seconds": 5}, "delay_seconds": 3},
         "delay_seconds"),
        ({"unique": {"key": "k", "on_conflict": "replace", "debounce_seconds": 5},
          "run_at": "2026-03-01T13:00:00Z"}, "run_at"),
        ({"unique": {"key": "k", "on_conflict": "replace", "debounce_seconds": 5, "debounce_max_seconds": 1}},
         "unique.debounce_max_seconds"),
        ({"unique": {"key": "k", "extra": 1}}, "unique.extra"),
    ],
)  # fmt: skip
async def test_a_bad_rule_is_400_naming_its_field(client: AsyncClient, body: dict[str, Any], field: str) -> None:
    problem = assert_problem(await post(client, **body), 400, "validation_error")
    assert field in {error["field"] for error in problem["errors"]}, problem


async def test_metrics_count_skipped_and_replaced_by_queue(client: AsyncClient) -> None:
    await post(client, queue_name="sync", unique={"key": "k", "on_conflict": "replace"})
    await post(client, queue_name="sync", unique={"key": "k", "on_conflict": "replace"})
    await post(client, queue_name="sync", unique={"key": "k"})
    text = (await client.get("/metrics")).text
    assert 'queueflow_jobs_unique_total{outcome="replaced",queue="sync"} 1.0' in text
    assert 'queueflow_jobs_unique_total{outcome="skipped",queue="sync"} 1.0' in text
