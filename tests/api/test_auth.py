"""Credentials: tenant keys on tenant routes, worker keys on worker routes, development mode."""

from __future__ import annotations

import re

from httpx import ASGITransport, AsyncClient
from litestar import Litestar
from queueflow.api import create_app
from queueflow.api.auth import Keyring
from queueflow.clocks import TestClock
from queueflow.settings import Settings
from queueflow.stores.memory import InMemoryJobStore

from tests.api.conftest import TENANT_A, WORKER, assert_problem

TENANT_ROUTES = [
    ("GET", "/v1/jobs"),
    ("POST", "/v1/jobs"),
    ("POST", "/v1/jobs/batch"),
    ("GET", "/v1/jobs/job_x"),
    ("POST", "/v1/jobs/job_x/cancel"),
    ("POST", "/v1/jobs/job_x/retry"),
    ("GET", "/v1/queues"),
]
WORKER_ROUTES = [
    ("POST", "/v1/worker/lease"),
    ("POST", "/v1/worker/jobs/job_x/heartbeat"),
    ("POST", "/v1/worker/jobs/job_x/complete"),
    ("POST", "/v1/worker/jobs/job_x/fail"),
    ("POST", "/v1/worker/ack"),
    ("POST", "/v1/worker/heartbeat"),
]


async def test_missing_unknown_or_malformed_credentials_are_401_with_a_challenge(client: AsyncClient) -> None:
    for headers in [
        {},
        {"Authorization": "Bearer nope"},
        {"Authorization": "Basic key-a"},
        {"Authorization": "Bearer"},
    ]:
        for method, path in TENANT_ROUTES + WORKER_ROUTES:
            response = await client.request(method, path, headers=headers)
            assert_problem(response, 401, "unauthorized")
            assert response.headers["www-authenticate"].startswith("Bearer")


async def test_a_worker_key_on_a_tenant_route_is_403(client: AsyncClient) -> None:
    for method, path in TENANT_ROUTES:
        assert_problem(await client.request(method, path, headers=WORKER), 403, "forbidden")


async def test_a_tenant_key_on_a_worker_route_is_403(client: AsyncClient) -> None:
    for method, path in WORKER_ROUTES:
        assert_problem(await client.request(method, path, headers=TENANT_A), 403, "forbidden")


async def test_the_bearer_scheme_is_case_insensitive(client: AsyncClient) -> None:
    response = await client.get("/v1/queues", headers={"Authorization": "bearer key-a"})
    assert response.status_code == 200


async def test_operations_and_the_schema_need_no_credential(client: AsyncClient) -> None:
    for path in ["/healthz", "/readyz", "/metrics", "/schema/openapi.json"]:
        assert (await client.get(path)).status_code == 200, path


async def test_development_mode_has_no_auth_and_one_tenant(clock: TestClock) -> None:
    app = create_app(Settings(), store=InMemoryJobStore(), clock=clock)
    async with AsyncClient(transport=ASGITransport(app=app), base_url="http://testserver") as client:
        created = await client.post("/v1/jobs", json={"task_name": "t"})
        leased = await client.post("/v1/worker/lease", json={"queues": ["default"]})
        also = await client.get("/v1/queues", headers={"Authorization": "Bearer anything"})

    assert created.status_code == 201
    assert created.json()["tenant_id"] == "default"
    assert [job["id"] for job in leased.json()["jobs"]] == [created.json()["id"]]
    assert also.status_code == 200


async def test_only_worker_keys_configured_is_not_development_mode(clock: TestClock) -> None:
    app = create_app(Settings(worker_keys={"w": None}), store=InMemoryJobStore(), clock=clock)
    async with AsyncClient(transport=ASGITransport(app=app), base_url="http://testserver") as client:
        assert_problem(await client.get("/v1/jobs"), 401, "unauthorized")
        assert_problem(await client.get("/v1/jobs", headers={"Authorization": "Bearer w"}), 403, "forbidden")


async def test_every_v1_route_of_the_app_refuses_a_request_without_a_key(app: Litestar, client: AsyncClient) -> None:
    """Every route under /v1, read from the app itself (a route added later is covered without a list to extend):
    the key check is the /v1 router's `before_request` hook, which a handler or controller defining its own
    `before_request` would replace — silently, but for this test."""
    checked = []
    for route in app.routes:
        if not route.path.startswith("/v1/"):
            continue
        path = re.sub(r"\{[^}]+\}", "x", route.path)
        for method in sorted(route.methods - {"OPTIONS", "HEAD"}):
            response = await client.request(method, path)
            assert response.status_code == 401, f"{method} {route.path}: {response.status_code}"
            checked.append(f"{method} {route.path}")
    assert len(checked) >= len(TENANT_ROUTES + WORKER_ROUTES)


def test_the_keyring_identifies_each_kind_of_key() -> None:
    keyring = Keyring(Settings(api_keys={"a": "tenant-a", "b": "tenant-b"}, worker_keys={"w": None}))
    assert keyring.identify("a") == ("tenant", "tenant-a")
    assert keyring.identify("b") == ("tenant", "tenant-b")
    assert keyring.identify("w") == ("worker", None)
    assert keyring.identify("ab") is None
    assert keyring.identify("\ud800") is None
