"""`sequence` on POST /v1/jobs and per batch item (README.md, "Sequences"): Job's `sequence_key` and `blocked_by`
(with a link to nothing else: the blocking job's id), the 400s, `GET /v1/jobs?sequence_key=`, and
`POST /v1/sequences/{key}/resume` with its 200, 404 and 409."""

from __future__ import annotations

from typing import Any

from httpx import AsyncClient

from tests.api.conftest import TENANT_A, TENANT_B, WORKER, assert_problem, enqueue, lease


def step(key: str = "acct-1", **fields: Any) -> dict[str, Any]:
    return {"task_name": "post", "sequence": {"key": key, **fields}}


async def test_jobs_of_a_sequence_show_their_key_and_run_one_at_a_time(client: AsyncClient) -> None:
    first = await enqueue(client, **step())
    second = await enqueue(client, **step(), priority=10)
    plain = await enqueue(client)
    assert (first["sequence_key"], first["blocked_by"], plain["sequence_key"]) == ("acct-1", None, None)
    assert sorted(job["id"] for job in await lease(client, max_jobs=10)) == sorted([first["id"], plain["id"]])
    listed = (await client.get("/v1/jobs", params={"sequence_key": "acct-1"}, headers=TENANT_A)).json()["items"]
    assert [job["id"] for job in listed] == [second["id"], first["id"]]  # newest first, as every list


async def test_a_batch_item_carries_its_sequence_and_bad_ones_are_400(client: AsyncClient) -> None:
    response = await client.post(
        "/v1/jobs/batch", json={"jobs": [step(on_failure="halt"), {"task_name": "b"}]}, headers=TENANT_A
    )
    assert response.status_code == 201
    assert [job["sequence_key"] for job in response.json()["jobs"]] == ["acct-1", None]
    for bad in ({"key": ""}, {"key": "k" * 256}, {"key": "k", "on_failure": "stop"}, {"on_failure": "halt"},
                {"key": "k", "extra": 1}):  # fmt: skip
        response = await client.post("/v1/jobs", json={"task_name": "t", "sequence": bad}, headers=TENANT_A)
        assert_problem(response, 400, "validation_error")


async def test_halt_blocks_until_resumed_and_resume_answers_404_and_409(client: AsyncClient) -> None:
    first = await enqueue(client, **step(on_failure="halt"), max_retries=0)
    second = await enqueue(client, **step())
    [leased] = await lease(client)
    failed = await client.post(
        f"/v1/worker/jobs/{leased['id']}/fail",
        json={"lease_token": leased["lease_token"], "error": "bad", "retryable": False},
        headers=WORKER,
    )
    assert failed.status_code == 200, failed.text
    assert (await client.get(f"/v1/jobs/{second['id']}", headers=TENANT_A)).json()["blocked_by"] == first["id"]
    assert await lease(client) == []
    assert_problem(await client.post("/v1/sequences/nothing/resume", headers=TENANT_A), 404, "not_found")
    assert_problem(await client.post("/v1/sequences/acct-1/resume", headers=TENANT_B), 404, "not_found")
    resumed = await client.post("/v1/sequences/acct-1/resume", headers=TENANT_A)
    assert resumed.status_code == 200
    assert resumed.json() == {"key": "acct-1", "blocked_by": None}
    assert (await client.get(f"/v1/jobs/{second['id']}", headers=TENANT_A)).json()["blocked_by"] is None
    assert [job["id"] for job in await lease(client)] == [second["id"]]
    assert_problem(await client.post("/v1/sequences/acct-1/resume", headers=TENANT_A), 409, "invalid_state")
