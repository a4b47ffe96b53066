"""The dashboard in a real browser: Debian's Chromium, headless, driven by Playwright against `queueflow serve`.

Playwright downloads no browser here; it drives /usr/bin/chromium (`make test` installs it). Every test leaves
screenshots in test-output/dashboard/; with QUEUEFLOW_UPDATE_SCREENSHOTS=1 the Queues and Workflow shots are
also written to docs/screenshots/, which the README shows.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import pg
from tests.e2e.live import ROOT, live_server

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
OUTPUT = ROOT / "test-output" / "dashboard"
README_SHOTS = ROOT / "docs" / "screenshots"
TENANT_KEY, WORKER_KEY = "browser-key", "browser-worker"
TENANT = {"Authorization": f"Bearer {TENANT_KEY}"}
WORKER = {"Authorization": f"Bearer {WORKER_KEY}"}

if not CHROMIUM.exists() and not os.environ.get("CI"):
    pytest.skip("no /usr/bin/chromium (`make test` installs it when it runs as root)", allow_module_level=True)

sync_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    url = pg.blocking(pg.create_database)
    env = {"QUEUEFLOW_API_KEYS": f"{TENANT_KEY}=acme", "QUEUEFLOW_WORKER_KEYS": WORKER_KEY}
    try:
        with live_server("--database-url", url, env=env) as base:
            yield base
    finally:
        pg.blocking(lambda: pg.drop_database(url))


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    OUTPUT.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def api(server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server, timeout=10) as client:
        yield client


@pytest.fixture
def page(chromium: Any, server: str) -> Iterator[Any]:
    """A fresh browser context (no cookies), signed in as tenant acme, 1280 px wide."""
    context = chromium.new_context(viewport={"width": 1280, "height": 860}, base_url=server)
    page = context.new_page()
    page.goto("/ui")
    assert "/ui/sign-in" in page.url
    page.fill("#key", TENANT_KEY)
    page.click("button[type=submit]")
    sync_api.expect(page.locator(".flash-ok")).to_contain_text("Signed in as tenant acme")
    yield page
    context.close()


def shot(page: Any, name: str, *, readme: bool = False, full_page: bool = True) -> None:
    path = OUTPUT / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    if readme and os.environ.get("QUEUEFLOW_UPDATE_SCREENSHOTS"):
        README_SHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, README_SHOTS / f"{name}.png")


def enqueue(api: httpx.Client, **job: Any) -> dict[str, Any]:
    response = api.post("/v1/jobs", json={"task_name": "send_email", **job}, headers=TENANT)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def lease(api: httpx.Client, queue: str, max_jobs: int = 1) -> list[dict[str, Any]]:
    body = {"queues": [queue], "max_jobs": max_jobs, "lease_seconds": 300}
    response = api.post("/v1/worker/lease", json=body, headers=WORKER)
    assert response.status_code == 200, response.text
    jobs: list[dict[str, Any]] = response.json()["jobs"]
    return jobs


def finish(api: httpx.Client, job: dict[str, Any], *, error: str | None = None, **body: Any) -> dict[str, Any]:
    if error is None:
        path, body = "complete", {"result": body.get("result")}
    else:
        path, body = "fail", {"error": error, **body}
    response = api.post(
        f"/v1/worker/jobs/{job['id']}/{path}", json={"lease_token": job["lease_token"], **body}, headers=WORKER
    )
    assert response.status_code == 200, response.text
    finished: dict[str, Any] = response.json()
    return finished


def test_sign_in_and_watch_a_queues_counts_change(page: Any, api: httpx.Client) -> None:
    expect = sync_api.expect
    # Some history to chart: completions and a dead letter in "mail", a backlog in "images".
    for _ in range(6):
        enqueue(api, queue_name="mail")
    for job in lease(api, "mail", max_jobs=6)[:5]:
        finish(api, job, result={"sent": True})
    enqueue(api, queue_name="mail", max_retries=0, priority=10)
    (doomed,) = lease(api, "mail")
    finish(api, doomed, error="SMTPServerDisconnected: Connection unexpectedly closed", retryable=False)
    for _ in range(4):
        enqueue(api, queue_name="images", task_name="resize", delay_seconds=0)
    enqueue(api, queue_name="images", task_name="resize", delay_seconds=3600)

    page.goto("/ui")
    expect(page.locator('tr[data-queue="mail"] td[data-count="completed"]')).to_have_text("5")
    expect(page.locator('tr[data-queue="mail"] td[data-count="dead_letter"]')).to_have_text("1")
    assert page.locator('tr[data-queue="mail"] .bar-done').count() >= 1
    expect(page.locator('tr[data-queue="watched"]')).to_have_count(0)

    # Jobs enqueued over the API appear without a reload, through the page's own HTMX refresh.
    enqueue(api, queue_name="watched")
    pending = page.locator('tr[data-queue="watched"] td[data-count="pending"]')
    expect(pending).to_have_text("1", timeout=15_000)
    enqueue(api, queue_name="watched")
    enqueue(api, queue_name="watched")
    expect(pending).to_have_text("3", timeout=15_000)
    assert page.evaluate("performance.getEntriesByType('navigation').length") == 1  # never reloaded
    shot(page, "queues", readme=True)

    page.set_viewport_size({"width": 390, "height": 844})
    shot(page, "queues-phone")


def test_open_a_dead_lettered_job_and_replay_it(page: Any, api: httpx.Client) -> None:
    expect = sync_api.expect
    job = enqueue(api, queue_name="billing", task_name="charge_card", max_retries=0, priority=100,
                  payload={"invoice": "INV-2041", "amount_cents": 4999})  # fmt: skip
    (leased,) = lease(api, "billing")
    assert leased["id"] == job["id"]
    finish(api, leased, error="CardDeclined: insufficient funds (code 51)")

    page.goto("/ui/dead-letters?queue=billing")
    row = page.locator(f'tr[data-job="{job["id"]}"]')
    expect(row).to_contain_text("CardDeclined")
    shot(page, "dead-letters")
    row.locator(f'a[href="/ui/jobs/{job["id"]}"]').click()
    expect(page.locator("h1 .badge")).to_contain_text("dead letter")
    expect(page.locator("pre.error-text")).to_contain_text("insufficient funds")
    shot(page, "job-dead-letter")

    page.click("text=Retry now")
    expect(page.locator(".flash-ok")).to_contain_text("Job replayed")
    expect(page.locator("h1 .badge")).to_contain_text("pending")
    assert api.get(f"/v1/jobs/{job['id']}", headers=TENANT).json()["status"] == "pending"
    shot(page, "job-replayed")


def test_a_diamond_workflows_steps_are_coloured_by_status(page: Any, api: httpx.Client) -> None:
    expect = sync_api.expect
    steps = [
        {"name": "extract", "task_name": "extract", "queue_name": "etl"},
        {"name": "transform_a", "task_name": "transform", "depends_on": ["extract"], "on_failure": "continue",
         "queue_name": "etl"},
        {"name": "transform_b", "task_name": "transform", "depends_on": ["extract"], "queue_name": "etl"},
        {"name": "load", "task_name": "load", "depends_on": ["transform_a", "transform_b"], "queue_name": "etl"},
    ]  # fmt: skip
    response = api.post("/v1/workflows", json={"name": "nightly-etl", "steps": steps}, headers=TENANT)
    assert response.status_code == 201, response.text
    workflow = response.json()
    (extract,) = lease(api, "etl")
    finish(api, extract, result={"rows": 1200})
    by_step = {job["workflow_step_id"]: job for job in lease(api, "etl", max_jobs=2)}
    # transform_a fails for good (its on_failure is continue); transform_b is still running; load waits.
    finish(api, by_step["transform_a"], error="ValueError: bad row 17", retryable=False)

    page.goto("/ui/workflows")
    page.click(f'a[href="/ui/workflows/{workflow["id"]}"]')
    expected = {"extract": "completed", "transform_a": "failed", "transform_b": "enqueued", "load": "pending"}
    colours = {}
    for name, status in expected.items():
        node = page.locator(f'svg.dag g.dag-node[data-step="{name}"]')
        expect(node).to_have_attribute("data-status", status)
        expect(node).to_contain_text(status)  # the label beside the colour
        colours[name] = node.locator("rect").evaluate("el => getComputedStyle(el).stroke")
    assert len(set(colours.values())) == 4, colours
    shot(page, "workflow", readme=True)
    page.locator('svg.dag g.dag-node[data-step="extract"]').click()
    expect(page.locator("h1")).to_contain_text("extract")
    expect(page.locator("h1 .badge")).to_contain_text("completed")


def test_screenshots_of_the_other_pages(page: Any, api: httpx.Client) -> None:
    expect = sync_api.expect
    body = {"name": "nightly-report", "cron": "0 3 * * *", "timezone": "Europe/Berlin", "task_name": "report"}
    assert api.post("/v1/schedules", json=body, headers=TENANT).status_code == 201
    body = {"name": "hourly-sync", "cron": "0 * * * *", "task_name": "sync", "queue_name": "etl", "enabled": False}
    assert api.post("/v1/schedules", json=body, headers=TENANT).status_code == 201
    page.goto("/ui/schedules")
    expect(page.locator('tr[data-schedule="hourly-sync"]')).to_contain_text("disabled")
    page.locator('tr[data-schedule="hourly-sync"] button', has_text="Enable").click()
    expect(page.locator(".flash-ok")).to_contain_text("enabled")
    shot(page, "schedules")

    page.goto("/ui/jobs")
    expect(page.locator("tr[data-job]").first).to_be_visible()
    shot(page, "jobs")
    page.select_option("select[name=status]", "completed")
    page.click("text=Filter")
    expect(page.locator("tr[data-job] .badge").first).to_contain_text("completed")
    job_id = page.locator("tr[data-job]").first.get_attribute("data-job")
    page.fill("#lookup", job_id)
    page.click("text=Open")
    expect(page.locator("p.mono")).to_have_text(re.compile(job_id))
    shot(page, "job")
    page.goto("/ui/workflows")
    shot(page, "workflows")

    page.click("text=Sign out")
    expect(page.locator("#key")).to_be_visible()
    shot(page, "sign-in")


def test_every_page_and_the_api_docs_work_offline(page: Any, server: str, api: httpx.Client) -> None:
    """With every request off this server refused, the pages and the docs still render, and ask for nothing
    elsewhere. (Redoc's bundle would ask for Redocly's logo in its footer: the docs' CSP stops it in the browser.)"""
    expect = sync_api.expect
    outside: list[str] = []

    def only_this_server(route: Any) -> None:
        if route.request.url.startswith(server):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.context.route("**/*", only_this_server)
    job = enqueue(api, queue_name="offline")
    for path in ["/ui", "/ui/jobs", f"/ui/jobs/{job['id']}", "/ui/dead-letters", "/ui/workflows", "/ui/schedules"]:
        page.goto(path)
        expect(page.locator("header.top")).to_be_visible()
        assert page.evaluate("typeof htmx") == "object", path
    assert outside == []

    # The docs' Content-Security-Policy allows this server only: Redoc's footer logo (on Redocly's CDN) is refused
    # by the browser before any request goes out, and nothing else the pages need is refused.
    refused: list[str] = []
    page.on(
        "console", lambda message: refused.append(message.text) if "Content Security Policy" in message.text else None
    )
    page.goto("/schema")
    expect(page.get_by_text("Enqueue a job").first).to_be_visible(timeout=20_000)
    shot(page, "api-docs", full_page=False)
    page.goto("/schema/swagger")  # Swagger UI, to try calls out
    expect(page.get_by_role("button", name="Authorize")).to_be_visible(timeout=20_000)
    expect(page.locator(".opblock-summary-path", has_text="/v1/jobs").first).to_be_visible()
    shot(page, "api-docs-swagger", full_page=False)
    assert outside == []
    assert all("https://cdn.redoc.ly/redoc/logo-mini.svg" in text for text in refused), refused
