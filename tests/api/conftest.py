"""An app on the in-memory store and a TestClock, with two tenants and a worker key."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Any

import pytest
from httpx import ASGITransport, AsyncClient
from litestar import Litestar
from queueflow.api import create_app
from queueflow.clocks import TestClock
from queueflow.runtime.wakeups import Wakeups
from queueflow.settings import Settings
from queueflow.stores.memory import InMemoryJobStore

TENANT_A = {"Authorization": "Bearer key-a"}
TENANT_B = {"Authorization": "Bearer key-b"}
WORKER = {"Authorization": "Bearer key-w"}
SETTINGS = Settings(api_keys={"key-a": "tenant-a", "key-b": "tenant-b"}, worker_keys={"key-w": None})


@pytest.fixture
def settings() -> Settings:
    return SETTINGS


@pytest.fixture
def app(settings: Settings, store: InMemoryJobStore, clock: TestClock, wakeups: Wakeups) -> Litestar:
    return create_app(settings, store=store, clock=clock, wakeups=wakeups, rng=random.Random(7))


@pytest.fixture
async def client(app: Litestar) -> AsyncIterator[AsyncClient]:
    # httpx's ASGI transport runs the app on the test's own event loop, so a test can await a parked request.
    async with AsyncClient(transport=ASGITransport(app=app), base_url="http://testserver") as client:
        yield client


async def enqueue(client: AsyncClient, headers: dict[str, str] = TENANT_A, **body: Any) -> dict[str, Any]:
    body.setdefault("task_name", "send_email")
    response = await client.post("/v1/jobs", json=body, headers=headers)
    assert response.status_code == 201, response.text
    job: dict[str, Any] = response.json()
    return job


async def lease(client: AsyncClient, queues: list[str] | None = None, **body: Any) -> list[dict[str, Any]]:
    response = await client.post("/v1/worker/lease", json={"queues": queues or ["default"], **body}, headers=WORKER)
    assert response.status_code == 200, response.text
    jobs: list[dict[str, Any]] = response.json()["jobs"]
    return jobs


def assert_problem(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    assert body["code"] == code
    assert body["type"] == "about:blank"
    assert body["title"]
    assert body["detail"]
    return body


async def assert_lease_lost(client: Any, job_id: str, lease_token: str) -> None:
    """Heartbeat, complete and fail of `job_id` with `lease_token` are each 409 lease_lost."""
    for action, body in [
        ("heartbeat", {"lease_token": lease_token}),
        ("complete", {"lease_token": lease_token}),
        ("fail", {"lease_token": lease_token, "error": "boom"}),
    ]:
        response = await client.post(f"/v1/worker/jobs/{job_id}/{action}", json=body, headers=WORKER)
        assert_problem(response, 409, "lease_lost")
