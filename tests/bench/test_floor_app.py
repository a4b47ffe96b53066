"""bench/floor_app.py: the per-request bench's one-query route, on QueueFlow's own app and store."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from httpx import ASGITransport, AsyncClient
from queueflow.clocks import SystemClock
from queueflow.settings import Settings, SettingsError
from queueflow.stores.memory import InMemoryJobStore
from queueflow.stores.postgres import PostgresJobStore

from bench.floor_app import FLOOR_PATH, create_floor_app

SETTINGS = Settings(api_keys={"key-a": "tenant-a"}, worker_keys={"key-w": None})
TENANT = {"Authorization": "Bearer key-a"}


@pytest.fixture
async def client(postgres_store: PostgresJobStore) -> AsyncIterator[AsyncClient]:
    app = create_floor_app(SETTINGS, store=postgres_store, clock=SystemClock())
    async with AsyncClient(transport=ASGITransport(app=app), base_url="http://testserver") as client:
        yield client


async def test_the_floor_answers_one_job_row_by_id(client: AsyncClient) -> None:
    job = {"task_name": "noop", "queue_name": "q", "priority": 3}
    created = await client.post("/v1/jobs", json=job, headers=TENANT)
    assert created.status_code == 201, created.text
    job_id = created.json()["id"]

    answer = await client.get(f"{FLOOR_PATH}/{job_id}", headers=TENANT)

    assert answer.status_code == 200, answer.text
    assert answer.json() == {"id": job_id, "queue_name": "q", "task_name": "noop", "status": "pending", "priority": 3}


async def test_the_floor_takes_a_tenant_key_as_tenant_routes_do(client: AsyncClient) -> None:
    assert (await client.get(f"{FLOOR_PATH}/x")).status_code == 401
    assert (await client.get(f"{FLOOR_PATH}/x", headers={"Authorization": "Bearer key-w"})).status_code == 403
    assert (await client.get(f"{FLOOR_PATH}/job_none", headers=TENANT)).status_code == 404


async def test_the_floor_is_no_part_of_the_api_document(client: AsyncClient) -> None:
    document = (await client.get("/schema/openapi.json")).json()
    assert not [path for path in document["paths"] if path.startswith(FLOOR_PATH)]
    assert "/v1/jobs/{job_id}" in document["paths"]


def test_the_floor_needs_postgresql() -> None:
    with pytest.raises(SettingsError):
        create_floor_app(SETTINGS, store=InMemoryJobStore(), clock=SystemClock())
