"""Progress: heartbeats carry an optional `progress` that replaces the job's, which the Job shows (README.md,
"A job's life with curl")."""

from __future__ import annotations

from typing import Any

import pytest
from httpx import AsyncClient
from queueflow.clocks import TestClock

from tests.api.conftest import TENANT_A, WORKER, assert_problem, enqueue, lease


def nested(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = [value]
    return value


async def beat(client: AsyncClient, job: dict[str, Any], **body: Any) -> Any:
    return await client.post(
        f"/v1/worker/jobs/{job['id']}/heartbeat", json={"lease_token": job["lease_token"], **body}, headers=WORKER
    )


async def progress_of(client: AsyncClient, job_id: str) -> Any:
    return (await client.get(f"/v1/jobs/{job_id}", headers=TENANT_A)).json()["progress"]


async def test_a_heartbeats_progress_replaces_the_last_and_outlives_the_job(client: AsyncClient) -> None:
    job = await enqueue(client)
    assert job["progress"] is None
    (held,) = await lease(client)
    assert (await beat(client, held, progress={"done": 1, "of": 10})).status_code == 200
    assert await progress_of(client, job["id"]) == {"done": 1, "of": 10}
    await beat(client, held, progress=0.5)
    assert await progress_of(client, job["id"]) == 0.5
    await beat(client, held)  # no progress: it stays
    assert await progress_of(client, job["id"]) == 0.5
    await beat(client, held, progress=None)  # an explicit null replaces it
    assert await progress_of(client, job["id"]) is None
    await beat(client, held, progress=["last", 9])
    done = await client.post(
        f"/v1/worker/jobs/{job['id']}/complete", json={"lease_token": held["lease_token"]}, headers=WORKER
    )
    assert done.json()["progress"] == ["last", 9]
    assert await progress_of(client, job["id"]) == ["last", 9]


async def test_a_lost_lease_records_no_progress(client: AsyncClient, clock: TestClock) -> None:
    job = await enqueue(client)
    (held,) = await lease(client, lease_seconds=10)
    await beat(client, held, progress="first")
    clock.advance(31)  # past the first heartbeat's 30 s
    assert_problem(await beat(client, held, progress="too late"), 409, "lease_lost")
    assert await progress_of(client, job["id"]) == "first"


@pytest.mark.parametrize(
    "progress",
    [
        "x" * 65_536,  # 65,538 bytes encoded, with its quotes
        {"text": "nul \u0000"},
        nested(127),
    ],
    ids=["too-large", "nul", "too-deep"],
)
async def test_a_progress_that_cannot_be_stored_is_a_400_and_records_nothing(
    client: AsyncClient, progress: Any
) -> None:
    job = await enqueue(client)
    (held,) = await lease(client)
    await beat(client, held, progress="kept")
    response = await beat(client, held, progress=progress)
    problem = assert_problem(response, 400, "validation_error")
    assert problem["errors"][0]["field"].startswith("progress")
    assert await progress_of(client, job["id"]) == "kept"


async def test_the_largest_progress_is_accepted(client: AsyncClient) -> None:
    await enqueue(client)
    (held,) = await lease(client)
    assert (await beat(client, held, progress="x" * 65_534)).status_code == 200
