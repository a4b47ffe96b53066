"""Signing in and out, the session cookie, CSRF, development mode, and one tenant never seeing another's data."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from httpx import ASGITransport, AsyncClient
from queueflow.api import create_app
from queueflow.clocks import TestClock
from queueflow.settings import Settings
from queueflow.stores.memory import InMemoryJobStore

from tests.api.conftest import TENANT_A, TENANT_B
from tests.dashboard.conftest import Browser, api

PAGES = ["/ui", "/ui/queues", "/ui/jobs", "/ui/dead-letters", "/ui/workflows", "/ui/schedules", "/ui/triggers"]


async def test_root_redirects_to_the_dashboard(browser: Browser) -> None:
    response = await browser.get("/")
    assert response.status_code in (301, 302, 303, 307, 308)
    assert response.headers["location"] == "/ui"


@pytest.mark.parametrize("path", [*PAGES, "/ui/jobs/job_x"])
async def test_every_page_sends_a_stranger_to_sign_in(browser: Browser, path: str) -> None:
    response = await browser.get(path)
    assert response.status_code == 303
    assert response.headers["location"].startswith("/ui/sign-in?next=")


async def test_sign_in_with_a_tenant_key_sets_a_locked_down_cookie(browser: Browser) -> None:
    await browser.get("/ui/sign-in?next=/ui/schedules")
    response = await browser.submit("/ui/sign-in", key="key-a", next="/ui/schedules")
    assert response.status_code == 303
    assert response.headers["location"] == "/ui/schedules"
    (session,) = [c for c in response.headers.get_list("set-cookie") if c.startswith("qf_session=")]
    attributes = {part.strip().lower() for part in session.split(";")[1:]}
    assert {"httponly", "samesite=lax", "path=/ui"} <= attributes
    assert "secure" not in attributes  # plain HTTP here; see the HTTPS test
    assert "key-a" not in session
    page = await browser.get("/ui/schedules")
    assert page.status_code == 200
    assert "tenant-a" in page.text
    assert "Signed in as tenant tenant-a." in page.text  # the flash, shown once
    assert "Signed in as" not in (await browser.get("/ui/schedules")).text


async def test_the_cookie_is_secure_over_https(app: object) -> None:
    async with AsyncClient(transport=ASGITransport(app=app), base_url="https://testserver") as client:  # type: ignore[arg-type]
        browser = Browser(client)
        response = await browser.sign_in("key-a")
        (session,) = [c for c in response.headers.get_list("set-cookie") if c.startswith("qf_session=")]
        assert "secure" in session.lower()


@pytest.mark.parametrize(
    ("key", "status", "message"),
    [
        ("key-w", 403, "A worker key drains queues for every tenant and cannot sign in"),
        ("wrong", 401, "That is not a key this server knows"),
        ("", 401, "That is not a key this server knows"),
    ],
)
async def test_only_tenant_keys_sign_in(browser: Browser, key: str, status: int, message: str) -> None:
    response = await browser.sign_in(key)
    assert response.status_code == status
    assert message in response.text
    assert "qf_session=" not in response.headers.get("set-cookie", "")
    assert (await browser.get("/ui")).status_code == 303


async def test_sign_in_never_redirects_off_the_dashboard(browser: Browser) -> None:
    await browser.get("/ui/sign-in")
    for target in ["https://evil.example/", "//evil.example/ui/", "/v1/jobs", "/ui\\evil"]:
        response = await browser.submit("/ui/sign-in", key="key-a", next=target)
        assert response.headers["location"] == "/ui"


async def test_sign_out_ends_the_session(signed_in: Browser) -> None:
    await signed_in.get("/ui")
    response = await signed_in.submit("/ui/sign-out")
    assert response.status_code == 303
    assert response.headers["location"] == "/ui/sign-in"
    assert (await signed_in.get("/ui")).status_code == 303


async def test_a_session_expires(signed_in: Browser, clock: TestClock) -> None:
    clock.advance(timedelta(hours=12, seconds=1).total_seconds())
    assert (await signed_in.get("/ui")).status_code == 303


async def test_a_forged_session_cookie_is_refused(browser: Browser) -> None:
    browser.client.cookies.set("qf_session", "eyJ0IjoidGVuYW50LWIiLCJleHAiOjk5OTk5OTk5OTl9.AAAA", path="/ui")
    assert (await browser.get("/ui")).status_code == 303


async def test_sessions_end_when_the_keys_change(signed_in: Browser, clock: TestClock) -> None:
    other = create_app(
        Settings(api_keys={"key-a": "tenant-a", "key-new": "tenant-c"}),
        store=InMemoryJobStore(),
        clock=clock,
        rng=random.Random(1),
    )
    async with AsyncClient(transport=ASGITransport(app=other), base_url="http://testserver") as client:
        client.cookies = signed_in.client.cookies
        assert (await client.get("/ui")).status_code == 303


@pytest.mark.parametrize("token", [None, "", "0" * 64])
async def test_every_form_needs_the_csrf_token(signed_in: Browser, token: str | None) -> None:
    job = await api(signed_in, "POST", "/v1/jobs", task_name="t")
    await signed_in.get("/ui")
    data = {} if token is None else {"_csrf": token}
    for path in [
        f"/ui/jobs/{job['id']}/cancel",
        f"/ui/jobs/{job['id']}/retry",
        "/ui/dead-letters/replay",
        "/ui/workflows/wf_x/cancel",
        "/ui/workflows/wf_x/signal",
        "/ui/workflows/wf_x/retry",
        "/ui/schedules/s/enable",
        "/ui/schedules/s/disable",
        "/ui/schedules/s/delete",
        "/ui/queues/q/pause",
        "/ui/queues/q/resume",
        "/ui/queues/q/limits",
        "/ui/sign-out",
        "/ui/sign-in",
    ]:
        response = await signed_in.client.post(path, data=data)
        assert response.status_code == 403, path
        assert "did not come from this dashboard" in response.text
    assert (await api(signed_in, "GET", f"/v1/jobs/{job['id']}"))["status"] == "pending"
    assert (await signed_in.client.get("/v1/queues/q", headers=TENANT_A)).status_code == 404  # never configured


async def test_a_csrf_token_from_another_browser_is_refused(app: object, signed_in: Browser) -> None:
    async with AsyncClient(transport=ASGITransport(app=app), base_url="http://testserver") as client:  # type: ignore[arg-type]
        other = Browser(client)
        await other.get("/ui/sign-in")
    response = await signed_in.client.post("/ui/sign-out", data={"_csrf": other.csrf})
    assert response.status_code == 403


async def test_the_csrf_header_works_for_htmx_requests(signed_in: Browser) -> None:
    await signed_in.get("/ui")
    response = await signed_in.client.post("/ui/sign-out", headers={"X-CSRF-Token": signed_in.csrf})
    assert response.status_code == 303


async def test_another_tenants_objects_are_404_pages(signed_in: Browser) -> None:
    theirs = await api(signed_in, "POST", "/v1/jobs", headers=TENANT_B, task_name="secret-task", payload={"pin": 1234})
    workflow = await api(
        signed_in, "POST", "/v1/workflows", headers=TENANT_B, name="theirs", steps=[{"name": "a", "task_name": "a"}]
    )
    await api(signed_in, "POST", "/v1/schedules", headers=TENANT_B, name="their-sched", cron="0 3 * * *", task_name="r")
    for path in [f"/ui/jobs/{theirs['id']}", f"/ui/workflows/{workflow['id']}"]:
        response = await signed_in.get(path)
        assert response.status_code == 404
        assert "text/html" in response.headers["content-type"]
        assert "secret-task" not in response.text
    for path in [
        f"/ui/jobs/{theirs['id']}/cancel",
        f"/ui/workflows/{workflow['id']}/cancel",
        f"/ui/workflows/{workflow['id']}/signal",
        f"/ui/workflows/{workflow['id']}/retry",
        "/ui/schedules/their-sched/delete",
    ]:
        assert (await signed_in.submit(path)).status_code == 404
    for page in PAGES:
        text = (await signed_in.get(page)).text
        assert "secret-task" not in text
        assert theirs["id"] not in text
        assert "their-sched" not in text
    assert (await api(signed_in, "GET", f"/v1/jobs/{theirs['id']}", headers=TENANT_B))["status"] == "pending"
    assert (await api(signed_in, "GET", "/v1/schedules/their-sched", headers=TENANT_B))["name"] == "their-sched"


async def test_development_mode_needs_no_sign_in(clock: TestClock) -> None:
    app = create_app(Settings(), store=InMemoryJobStore(), clock=clock, rng=random.Random(1))
    async with AsyncClient(transport=ASGITransport(app=app), base_url="http://testserver") as client:
        browser = Browser(client)
        page = await browser.get("/ui")
        assert page.status_code == 200
        assert "development mode" in page.text
        assert "Sign out" not in page.text
        assert (await browser.get("/ui/sign-in")).headers["location"] == "/ui"
        job = (await client.post("/v1/jobs", json={"task_name": "t"})).json()
        assert (await browser.get(f"/ui/jobs/{job['id']}")).status_code == 200
        response = await browser.submit(f"/ui/jobs/{job['id']}/cancel")
        assert response.status_code == 303
        assert (await client.get(f"/v1/jobs/{job['id']}")).json()["status"] == "cancelled"
