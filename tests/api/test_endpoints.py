"""Push endpoint routes: create (the secret shown once), list, get, patch, rotate-secret, delete, their errors, and
the addresses a server without `--allow-private-endpoints` refuses (README.md, "Push delivery")."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

import pytest
from httpx import ASGITransport, AsyncClient
from litestar import Litestar
from queueflow.api import create_app
from queueflow.clocks import TestClock
from queueflow.resolver import StaticResolver, SystemResolver
from queueflow.runtime.wakeups import Wakeups
from queueflow.settings import Settings
from queueflow.stores.memory import InMemoryJobStore

from tests.api.conftest import SETTINGS, TENANT_A, TENANT_B, assert_problem

PUBLIC = "https://hooks.example.com/queueflow"
RESOLVER = StaticResolver(
    {
        "hooks.example.com": ["93.184.215.14"],
        "rebind.example.com": ["93.184.215.14", "10.0.0.7"],
        "metadata.example.com": ["169.254.169.254"],
    }
)
ENDPOINT_FIELDS = {
    "id", "tenant_id", "name", "url", "queues", "task_names", "concurrency", "timeout_seconds", "paused", "secret",
    "previous_secret_until", "in_flight", "delivered", "failed", "last_error", "last_delivery_at", "created_at",
    "updated_at",
}  # fmt: skip


@pytest.fixture
def app(settings: Settings, store: InMemoryJobStore, clock: TestClock, wakeups: Wakeups) -> Litestar:
    return create_app(settings, store=store, clock=clock, wakeups=wakeups, rng=random.Random(7), resolver=RESOLVER)


async def create(client: AsyncClient, headers: dict[str, str] = TENANT_A, **body: Any) -> dict[str, Any]:
    body.setdefault("name", "hooks")
    body.setdefault("url", PUBLIC)
    response = await client.post("/v1/endpoints", json=body, headers=headers)
    assert response.status_code == 201, response.text
    endpoint: dict[str, Any] = response.json()
    return endpoint


async def test_create_shows_the_secret_once_and_reads_mask_it(client: AsyncClient) -> None:
    created = await create(client, queues=["mail"], task_names=["send"], concurrency=5, timeout_seconds=10)
    assert set(created) == ENDPOINT_FIELDS
    assert created["secret"].startswith("qfsec_")
    assert len(created["secret"]) > 40
    expected = {
        "tenant_id": "tenant-a", "name": "hooks", "url": PUBLIC, "queues": ["mail"], "task_names": ["send"],
        "concurrency": 5, "timeout_seconds": 10, "paused": False, "previous_secret_until": None, "in_flight": 0,
        "delivered": 0, "failed": 0, "last_error": None, "last_delivery_at": None,
    }  # fmt: skip
    assert {name: created[name] for name in expected} == expected
    assert created["id"].startswith("ep_")
    got = (await client.get("/v1/endpoints/hooks", headers=TENANT_A)).json()
    masked = "qfsec_…" + created["secret"][-4:]
    assert got == created | {"secret": masked}
    listed = (await client.get("/v1/endpoints", headers=TENANT_A)).json()
    assert listed == {"items": [got], "next_cursor": None}


async def test_defaults(client: AsyncClient) -> None:
    created = await create(client)
    assert (created["queues"], created["task_names"], created["concurrency"], created["timeout_seconds"]) == (
        ["default"], None, 10, 30,
    )  # fmt: skip


async def test_patch_pauses_and_changes_settings(client: AsyncClient, clock: TestClock) -> None:
    created = await create(client, task_names=["send"])
    clock.advance(seconds=1)
    response = await client.patch(
        "/v1/endpoints/hooks", json={"paused": True, "concurrency": 3, "task_names": None}, headers=TENANT_A
    )
    assert response.status_code == 200, response.text
    patched = response.json()
    assert (patched["paused"], patched["concurrency"], patched["task_names"]) == (True, 3, None)
    assert patched["secret"] == "qfsec_…" + created["secret"][-4:]
    assert patched["updated_at"] > created["updated_at"]


async def test_rotate_secret_shows_the_new_one_and_keeps_the_old_for_a_day(
    client: AsyncClient, app: Litestar, clock: TestClock
) -> None:
    created = await create(client)
    clock.advance(seconds=1)
    response = await client.post("/v1/endpoints/hooks/rotate-secret", headers=TENANT_A)
    assert response.status_code == 200, response.text
    rotated = response.json()
    assert rotated["secret"] != created["secret"]
    assert rotated["secret"].startswith("qfsec_")
    until = clock.now() + timedelta(hours=24)
    assert rotated["previous_secret_until"] == until.isoformat().replace("+00:00", "Z")
    engine = app.state["services"].engine
    endpoint = await engine.endpoints.get("tenant-a", "hooks")
    assert endpoint.signing_secrets(clock.now()) == [rotated["secret"], created["secret"]]
    clock.advance(hours=24)
    assert endpoint.signing_secrets(clock.now()) == [rotated["secret"]]


async def test_delete_then_404(client: AsyncClient) -> None:
    await create(client)
    assert (await client.delete("/v1/endpoints/hooks", headers=TENANT_A)).status_code == 204
    assert_problem(await client.get("/v1/endpoints/hooks", headers=TENANT_A), 404, "not_found")
    assert_problem(await client.delete("/v1/endpoints/hooks", headers=TENANT_A), 404, "not_found")


async def test_a_taken_name_is_409_and_another_tenants_endpoint_is_404(client: AsyncClient) -> None:
    await create(client)
    response = await client.post("/v1/endpoints", json={"name": "hooks", "url": PUBLIC}, headers=TENANT_A)
    assert_problem(response, 409, "invalid_state")
    for method, path in [
        ("GET", "/v1/endpoints/hooks"),
        ("PATCH", "/v1/endpoints/hooks"),
        ("DELETE", "/v1/endpoints/hooks"),
        ("POST", "/v1/endpoints/hooks/rotate-secret"),
    ]:
        body = {"paused": True} if method == "PATCH" else None
        assert_problem(await client.request(method, path, json=body, headers=TENANT_B), 404, "not_found")
    assert (await client.get("/v1/endpoints", headers=TENANT_B)).json()["items"] == []
    await create(client, TENANT_B)  # names are per tenant


@pytest.mark.parametrize(
    "body",
    [
        {"name": "bad name", "url": PUBLIC},
        {"name": "hooks", "url": "ftp://hooks.example.com/"},
        {"name": "hooks", "url": "hooks.example.com"},
        {"name": "hooks", "url": "https://user:pw@hooks.example.com/"},
        {"name": "hooks", "url": "https:///nohost"},
        {"name": "hooks", "url": PUBLIC, "concurrency": 0},
        {"name": "hooks", "url": PUBLIC, "concurrency": 1001},
        {"name": "hooks", "url": PUBLIC, "timeout_seconds": 0},
        {"name": "hooks", "url": PUBLIC, "timeout_seconds": 901},
        {"name": "hooks", "url": PUBLIC, "queues": []},
        {"name": "hooks", "url": PUBLIC, "queues": ["bad queue"]},
        {"name": "hooks", "url": PUBLIC, "task_names": []},
        {"name": "hooks", "url": PUBLIC, "secret": "mine"},
    ],
)
async def test_invalid_bodies_are_400(client: AsyncClient, body: dict[str, Any]) -> None:
    assert_problem(await client.post("/v1/endpoints", json=body, headers=TENANT_A), 400, "validation_error")
    assert (await client.get("/v1/endpoints", headers=TENANT_A)).json()["items"] == []


REFUSED = [
    "http://127.0.0.1:8080/",
    "http://127.1.2.3/",
    "http://10.0.0.1/",
    "http://172.16.5.4/",
    "http://192.168.1.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://0.0.0.0/",
    "http://[::1]/",
    "http://[::]/",
    "http://[fe80::1]/",
    "http://[fd00::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://224.0.0.1/",
    "http://240.0.0.1/",
    "http://100.64.0.1/",
    "http://localhost:9000/",
    "https://rebind.example.com/",
    "https://metadata.example.com/",
    "https://nowhere.example.com/",
]


@pytest.mark.parametrize("url", REFUSED)
async def test_private_addresses_are_refused_without_the_flag(client: AsyncClient, url: str) -> None:
    body = assert_problem(
        await client.post("/v1/endpoints", json={"name": "hooks", "url": url}, headers=TENANT_A), 400,
        "validation_error",
    )  # fmt: skip
    assert [error["field"] for error in body["errors"]] == ["url"]
    await create(client)
    response = await client.patch("/v1/endpoints/hooks", json={"url": url}, headers=TENANT_A)
    assert_problem(response, 400, "validation_error")
    assert (await client.get("/v1/endpoints/hooks", headers=TENANT_A)).json()["url"] == PUBLIC


async def test_localhost_is_refused_by_the_systems_resolver_too(
    store: InMemoryJobStore, clock: TestClock, wakeups: Wakeups
) -> None:
    app = create_app(SETTINGS, store=store, clock=clock, wakeups=wakeups, resolver=SystemResolver())
    async with AsyncClient(transport=ASGITransport(app=app), base_url="http://testserver") as client:
        for url in ("http://localhost:9000/", "http://127.0.0.1/"):
            response = await client.post("/v1/endpoints", json={"name": "hooks", "url": url}, headers=TENANT_A)
            assert_problem(response, 400, "validation_error")


@pytest.mark.parametrize(
    "settings", [Settings(api_keys=SETTINGS.api_keys, allow_private_endpoints=True), Settings()], ids=["flag", "dev"]
)
async def test_the_flag_and_development_mode_allow_private_addresses(
    settings: Settings, store: InMemoryJobStore, clock: TestClock, wakeups: Wakeups
) -> None:
    app = create_app(settings, store=store, clock=clock, wakeups=wakeups, resolver=RESOLVER)
    headers = TENANT_A if settings.api_keys else {}
    async with AsyncClient(transport=ASGITransport(app=app), base_url="http://testserver") as client:
        for number, url in enumerate(["http://127.0.0.1:8080/", "http://[::1]/", "http://10.0.0.1/"]):
            await create(client, headers, name=f"local-{number}", url=url)
