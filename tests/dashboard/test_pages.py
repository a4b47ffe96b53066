"""Every page and action through the test client, with data put in over the JSON API (as users would)."""

from __future__ import annotations

import random
import re
from typing import Any

from litestar import Litestar
from queueflow.clocks import TestClock
from queueflow.core.types import NewJob
from queueflow.engine import Engine
from queueflow.stores.memory import InMemoryJobStore

from tests.api.conftest import WORKER
from tests.dashboard.conftest import Browser, api

DIAMOND = [
    {"name": "a", "task_name": "extract"},
    {"name": "b", "task_name": "left", "depends_on": ["a"]},
    {"name": "c", "task_name": "right", "depends_on": ["a"]},
    {"name": "d", "task_name": "join", "depends_on": ["b", "c"]},
]


async def lease(browser: Browser, queue: str = "default", **body: Any) -> list[dict[str, Any]]:
    jobs: list[dict[str, Any]] = (
        await api(browser, "POST", "/v1/worker/lease", headers=WORKER, queues=[queue], **body)
    )["jobs"]
    return jobs


async def dead_letter(browser: Browser, **job: Any) -> dict[str, Any]:
    """A job that failed for good."""
    queue = job.setdefault("queue_name", "default")
    job.setdefault("priority", 1000)  # leased before anything else waiting in its queue
    created = await api(browser, "POST", "/v1/jobs", task_name=job.pop("task_name", "flaky"), max_retries=0, **job)
    (leased,) = await lease(browser, queue)
    assert leased["id"] == created["id"]
    failed = await api(
        browser,
        "POST",
        f"/v1/worker/jobs/{leased['id']}/fail",
        headers=WORKER,
        lease_token=leased["lease_token"],
        error="ConnectionError: smtp is down",
    )
    assert failed["status"] == "dead_letter"
    return created


def flash(text: str) -> str | None:
    found = re.search(
        r'<div class="flash flash-\w+" role="\w+">\s*<span aria-hidden="true">.</span>\s*([^<]*)</div>', text
    )
    return found.group(1).strip() if found else None


def count(text: str, queue: str, state: str) -> int:
    row = re.search(rf'<tr data-queue="{queue}">(.*?)</tr>', text, re.S)
    assert row, f"no row for queue {queue}"
    cell = re.search(rf'data-count="{state}">(?:<a[^>]*>)?([\d,]+)', row.group(1))
    assert cell
    return int(cell.group(1).replace(",", ""))


async def test_empty_pages_say_what_to_do(signed_in: Browser) -> None:
    expected = {
        "/ui": "No queues yet",
        "/ui/jobs": "No jobs yet",
        "/ui/dead-letters": "The dead-letter queue is empty",
        "/ui/workflows": "No workflows",
        "/ui/schedules": "No schedules yet",
    }
    for path, words in expected.items():
        response = await signed_in.get(path)
        assert response.status_code == 200, path
        assert "text/html" in response.headers["content-type"]
        assert words in response.text, path


async def test_queues_page_shows_the_disjoint_counts_and_the_last_hour(signed_in: Browser, clock: TestClock) -> None:
    for _ in range(3):
        await api(signed_in, "POST", "/v1/jobs", task_name="t", queue_name="mail")
    await api(signed_in, "POST", "/v1/jobs", task_name="t", queue_name="mail", delay_seconds=600)
    (running,) = await lease(signed_in, "mail")
    await api(
        signed_in,
        "POST",
        f"/v1/worker/jobs/{running['id']}/complete",
        headers=WORKER,
        lease_token=running["lease_token"],
        result=None,
    )
    await dead_letter(signed_in, queue_name="mail")
    clock.advance(seconds=90)
    page = (await signed_in.get("/ui/queues")).text
    assert (count(page, "mail", "pending"), count(page, "mail", "scheduled")) == (2, 1)
    assert (count(page, "mail", "completed"), count(page, "mail", "dead_letter")) == (1, 1)
    assert "1 ✓ · 1 ✕" in page
    assert 'aria-label="Last hour: 1 completed, 1 dead-lettered"' in page
    assert page.count('class="bar-done"') == 1
    assert page.count('class="bar-dead"') == 1
    assert "<td>1 min 30 s</td>" in page  # the oldest waiting job's age


async def test_queues_refresh_is_an_htmx_partial(signed_in: Browser) -> None:
    page = (await signed_in.get("/ui")).text
    assert 'hx-get="/ui/queues"' in page
    assert 'hx-trigger="every 5s"' in page
    assert '<script src="/ui/static/htmx.min.js"' in page
    await api(signed_in, "POST", "/v1/jobs", task_name="t", queue_name="fresh")
    partial = await signed_in.get("/ui/queues", headers={"HX-Request": "true"})
    assert partial.status_code == 200
    assert "<html" not in partial.text
    assert partial.text.lstrip().startswith('<section id="queues"')
    assert count(partial.text, "fresh", "pending") == 1


async def test_an_htmx_refresh_after_the_session_ended_redirects_the_page(browser: Browser) -> None:
    response = await browser.get("/ui/queues", headers={"HX-Request": "true"})
    assert response.headers["HX-Redirect"].startswith("/ui/sign-in")


async def test_jobs_filters(signed_in: Browser) -> None:
    a = await api(signed_in, "POST", "/v1/jobs", task_name="email", queue_name="mail", metadata={"customer": 42})
    b = await api(signed_in, "POST", "/v1/jobs", task_name="resize", queue_name="images", metadata={"customer": 7})
    c = await api(signed_in, "POST", "/v1/jobs", task_name="email", queue_name="mail")
    await api(signed_in, "POST", f"/v1/jobs/{c['id']}/cancel")

    async def shown(query: str) -> set[str]:
        text = (await signed_in.get(f"/ui/jobs?{query}")).text
        return set(re.findall(r'<tr data-job="(job_\w+)">', text))

    assert await shown("") == {a["id"], b["id"], c["id"]}
    assert await shown("queue=mail") == {a["id"], c["id"]}
    assert await shown("status=cancelled") == {c["id"]}
    assert await shown("task=resize") == {b["id"]}
    assert await shown("metadata=%7B%22customer%22%3A+42%7D") == {a["id"]}
    assert await shown("queue=mail&status=pending") == {a["id"]}
    assert await shown("queue=nothing-here") == set()
    assert "No job matches" in (await signed_in.get("/ui/jobs?queue=nothing-here")).text


async def test_a_jobs_unique_key_is_shown_and_lists_the_keys_jobs(signed_in: Browser) -> None:
    keyed = await api(signed_in, "POST", "/v1/jobs", task_name="sync", unique={"key": "customer <42>"})
    await api(signed_in, "POST", "/v1/jobs", task_name="sync")
    page = (await signed_in.get(f"/ui/jobs/{keyed['id']}")).text
    assert "<dt>Unique key</dt>" in page
    assert 'href="/ui/jobs?unique_key=customer+%3C42%3E"' in page
    assert "customer &lt;42&gt;" in page
    listing = (await signed_in.get("/ui/jobs?unique_key=customer+%3C42%3E")).text
    assert set(re.findall(r'<tr data-job="(job_\w+)">', listing)) == {keyed["id"]}


async def test_a_blocked_job_links_its_blocker_and_resumes_its_sequence(signed_in: Browser) -> None:
    dead = await dead_letter(signed_in, sequence={"key": "account <7>", "on_failure": "halt"})
    held = await api(signed_in, "POST", "/v1/jobs", task_name="post", sequence={"key": "account <7>"})
    page = (await signed_in.get(f"/ui/jobs/{held['id']}")).text
    assert 'href="/ui/jobs?sequence_key=account+%3C7%3E"' in page
    assert f'<dt>Blocked by</dt><dd><a class="mono" href="/ui/jobs/{dead["id"]}"' in page
    assert f'action="/ui/jobs/{held["id"]}/resume-sequence"' in page
    listing = (await signed_in.get("/ui/jobs?sequence_key=account+%3C7%3E")).text
    assert set(re.findall(r'<tr data-job="(job_\w+)">', listing)) == {dead["id"], held["id"]}
    await signed_in.submit(f"/ui/jobs/{held['id']}/resume-sequence")
    after = (await signed_in.get(f"/ui/jobs/{held['id']}")).text
    assert flash(after) == "Sequence resumed: the jobs the halt held may run."
    assert "<dt>Blocked by</dt>" not in after
    assert "resume-sequence" not in after
    await signed_in.submit(f"/ui/jobs/{held['id']}/resume-sequence")
    assert "nothing blocks sequence" in (flash((await signed_in.get(f"/ui/jobs/{held['id']}")).text) or "")


async def test_a_jobs_page_shows_its_deadline(signed_in: Browser) -> None:
    expiring = await api(signed_in, "POST", "/v1/jobs", task_name="offer", expires_at="2099-01-02T03:04:05Z")
    plain = await api(signed_in, "POST", "/v1/jobs", task_name="offer")
    page = (await signed_in.get(f"/ui/jobs/{expiring['id']}")).text
    assert re.search(r"<dt>Expires</dt><dd[^>]*>2099-01-02 03:04:05", page), page
    without = (await signed_in.get(f"/ui/jobs/{plain['id']}")).text
    assert re.search(r"<dt>Expires</dt><dd[^>]*>—</dd>", without), without


async def test_bad_filters_are_messages_not_errors(signed_in: Browser) -> None:
    for query, message in [
        ("metadata=not-json", "The metadata filter must be a JSON object"),
        ("metadata=%5B1%5D", "The metadata filter must be a JSON object"),
        ("status=exploded", "There is no status"),
        ("task=a%00b", "The task filter is not valid text"),
        ("cursor=garbage", "cursor"),
    ]:
        response = await signed_in.get(f"/ui/jobs?{query}")
        assert response.status_code == 200, query
        assert message in response.text, query


async def test_jobs_pages_with_a_cursor(signed_in: Browser) -> None:
    await api(signed_in, "POST", "/v1/jobs/batch", jobs=[{"task_name": f"t{i}"} for i in range(55)])
    first = (await signed_in.get("/ui/jobs?task=")).text
    assert len(re.findall(r'<tr data-job="', first)) == 50
    next_link = re.search(r'<a href="(/ui/jobs\?[^"]*cursor=[^"]+)" rel="next">', first)
    assert next_link
    second = (await signed_in.get(next_link.group(1).replace("&amp;", "&"))).text
    assert len(re.findall(r'<tr data-job="', second)) == 5
    assert 'rel="next"' not in second
    assert "« First page" in second


async def test_look_up_a_job_by_id(signed_in: Browser) -> None:
    job = await api(signed_in, "POST", "/v1/jobs", task_name="t")
    response = await signed_in.get(f"/ui/jobs?id=+{job['id']}+")
    assert response.status_code in (302, 303, 307)
    assert response.headers["location"] == f"/ui/jobs/{job['id']}"
    missing = await signed_in.get("/ui/jobs/job_00000000000000000000000000")
    assert missing.status_code == 404
    assert "no job job_00000000000000000000000000" in missing.text


async def test_job_page_shows_everything_escaped(signed_in: Browser) -> None:
    job = await api(
        signed_in,
        "POST",
        "/v1/jobs",
        task_name="render",
        payload={"html": "<script>alert(1)</script>"},
        metadata={"customer": 42},
        max_retries=5,
    )
    (leased,) = await lease(signed_in, lease_seconds=60)
    await api(
        signed_in,
        "POST",
        f"/v1/worker/jobs/{leased['id']}/fail",
        headers=WORKER,
        lease_token=leased["lease_token"],
        error="Timeout <b>talking</b> to smtp",
        retry_after_seconds=30,
    )
    page = (await signed_in.get(f"/ui/jobs/{job['id']}")).text
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "Timeout &lt;b&gt;talking&lt;/b&gt; to smtp" in page
    assert "1 of 5" in page  # retries
    assert re.search(r"<dt>Deliveries</dt><dd>1</dd>", page)
    assert "retrying" in page
    assert "&#34;customer&#34;: 42" in page
    for label in ["Created", "Scheduled", "Started", "Next retry", "Finished", "Lease expires", "Deadline"]:
        assert f"<dt>{label}</dt>" in page


async def test_cancel_and_retry_buttons_with_conflicts_as_messages(signed_in: Browser) -> None:
    job = await api(signed_in, "POST", "/v1/jobs", task_name="t")
    page = (await signed_in.get(f"/ui/jobs/{job['id']}")).text
    assert f'action="/ui/jobs/{job["id"]}/cancel"' in page
    assert f'action="/ui/jobs/{job["id"]}/retry"' not in page  # a pending job cannot be retried

    response = await signed_in.submit(f"/ui/jobs/{job['id']}/retry")
    assert (response.status_code, response.headers["location"]) == (303, f"/ui/jobs/{job['id']}")
    page = (await signed_in.get(f"/ui/jobs/{job['id']}")).text
    assert "flash-error" in page
    assert f"job {job['id']} is pending; only dead_letter or cancelled jobs can be retried" in flash(page)  # type: ignore[operator]

    await signed_in.submit(f"/ui/jobs/{job['id']}/cancel")
    page = (await signed_in.get(f"/ui/jobs/{job['id']}")).text
    assert flash(page) == "Job cancelled."
    assert (await api(signed_in, "GET", f"/v1/jobs/{job['id']}"))["status"] == "cancelled"

    await signed_in.submit(f"/ui/jobs/{job['id']}/cancel")
    page = (await signed_in.get(f"/ui/jobs/{job['id']}")).text
    assert "only unfinished jobs can be cancelled" in flash(page)  # type: ignore[operator]

    await signed_in.submit(f"/ui/jobs/{job['id']}/retry")
    assert (await api(signed_in, "GET", f"/v1/jobs/{job['id']}"))["status"] == "pending"


async def test_dead_letters_replay_one_and_all_matching(signed_in: Browser) -> None:
    mail = [await dead_letter(signed_in, queue_name="mail", task_name="email") for _ in range(3)]
    other = await dead_letter(signed_in, queue_name="mail", task_name="sms")
    image = await dead_letter(signed_in, queue_name="images", task_name="resize")
    page = (await signed_in.get("/ui/dead-letters")).text
    assert 'data-matching="5"' in page
    assert "ConnectionError: smtp is down" in page
    assert 'data-matching="4"' in (await signed_in.get("/ui/dead-letters?queue=mail")).text
    assert 'data-matching="3"' in (await signed_in.get("/ui/dead-letters?queue=mail&task=email")).text

    # one, from the list: back to the same filtered list
    await signed_in.get("/ui/dead-letters?queue=images")
    response = await signed_in.submit(f"/ui/jobs/{image['id']}/retry", next="/ui/dead-letters?queue=images")
    assert response.headers["location"] == "/ui/dead-letters?queue=images"
    assert (await api(signed_in, "GET", f"/v1/jobs/{image['id']}"))["status"] == "pending"

    # all that match a filter
    response = await signed_in.submit("/ui/dead-letters/replay", queue="mail", task="email", metadata="")
    assert response.headers["location"] == "/ui/dead-letters?queue=mail&task=email"
    page = (await signed_in.get(response.headers["location"])).text
    assert flash(page) == "Replayed 3 dead-lettered jobs."
    for job in mail:
        assert (await api(signed_in, "GET", f"/v1/jobs/{job['id']}"))["status"] == "pending"
    assert (await api(signed_in, "GET", f"/v1/jobs/{other['id']}"))["status"] == "dead_letter"

    response = await signed_in.submit("/ui/dead-letters/replay", queue="", task="", metadata="")
    assert flash((await signed_in.get(response.headers["location"])).text) == "Replayed 1 dead-lettered job."
    response = await signed_in.submit("/ui/dead-letters/replay", queue="", task="", metadata="")
    assert flash((await signed_in.get(response.headers["location"])).text) == "Replayed 0 dead-lettered jobs."
    bad = await signed_in.submit("/ui/dead-letters/replay", metadata="{oops")
    assert "must be a JSON object" in flash((await signed_in.get(bad.headers["location"])).text)  # type: ignore[operator]


async def test_replay_all_goes_in_batches_and_says_what_is_left(
    signed_in: Browser, store: InMemoryJobStore, clock: TestClock
) -> None:
    engine = Engine(store, clock, rng=random.Random(3))
    await engine.enqueue_many("tenant-a", [NewJob(task_name="t", max_retries=0)] * 1000)
    await engine.enqueue_many("tenant-a", [NewJob(task_name="t", max_retries=0)] * 30)
    leased = await engine.lease(["default"], max_jobs=1000) + await engine.lease(["default"], max_jobs=30)
    for job in leased:
        await engine.fail(job.id, job.lease_token or "", "boom")
    await signed_in.get("/ui/dead-letters")
    response = await signed_in.submit("/ui/dead-letters/replay")
    page = (await signed_in.get(response.headers["location"])).text
    assert flash(page) == "Replayed 1,000 dead-lettered jobs. 30 still match: replay again to continue."
    assert 'data-matching="30"' in page
    response = await signed_in.submit("/ui/dead-letters/replay")
    assert flash((await signed_in.get(response.headers["location"])).text) == "Replayed 30 dead-lettered jobs."


async def test_workflows_list_and_the_dag(signed_in: Browser) -> None:
    workflow = await api(signed_in, "POST", "/v1/workflows", name="etl", steps=DIAMOND, context={"run": 1})
    listing = (await signed_in.get("/ui/workflows")).text
    assert f'<tr data-workflow="{workflow["id"]}">' in listing
    assert "0 / 4 completed" in listing
    assert workflow["id"] not in (await signed_in.get("/ui/workflows?status=completed")).text

    (root,) = await lease(signed_in)
    await api(
        signed_in,
        "POST",
        f"/v1/worker/jobs/{root['id']}/complete",
        headers=WORKER,
        lease_token=root["lease_token"],
        result={"rows": 3},
    )
    page = (await signed_in.get(f"/ui/workflows/{workflow['id']}")).text
    statuses = dict(re.findall(r'<g class="dag-node s-\w+" data-step="(\w)" data-status="(\w+)">', page))
    assert statuses == {"a": "completed", "b": "enqueued", "c": "enqueued", "d": "pending"}
    assert page.count('class="dag-edge"') == 4
    assert f'<a href="/ui/jobs/{root["id"]}"><g class="dag-node s-completed"' in page
    assert "&#34;rows&#34;: 3" in page  # the context holds a's result
    assert "not enqueued" in page  # d has no job yet

    await signed_in.submit(f"/ui/workflows/{workflow['id']}/cancel")
    page = (await signed_in.get(f"/ui/workflows/{workflow['id']}")).text
    assert flash(page) == "Workflow cancelled, with every unfinished step."
    await signed_in.submit(f"/ui/workflows/{workflow['id']}/cancel")
    assert "only running workflows can be cancelled" in flash(
        (await signed_in.get(f"/ui/workflows/{workflow['id']}")).text
    )  # type: ignore[operator]


async def test_a_workflow_with_wait_steps_draws_them(signed_in: Browser) -> None:
    steps = [
        {"name": "a", "wait": {"signal": "approve", "timeout_seconds": 60}},
        {"name": "b", "wait": {"seconds": 30}},
        {"name": "c", "task_name": "ship", "depends_on": ["a", "b"]},
    ]
    workflow = await api(signed_in, "POST", "/v1/workflows", name="gate", steps=steps)
    page = (await signed_in.get(f"/ui/workflows/{workflow['id']}")).text
    statuses = dict(re.findall(r'<g class="dag-node s-\w+" data-step="(\w)" data-status="(\w+)">', page))
    assert statuses == {"a": "waiting", "b": "waiting", "c": "pending"}
    assert "waits for signal approve" in page
    assert "signal approve" in page
    assert "sleep 30 s" in page


async def test_schedules_enable_disable_delete(signed_in: Browser) -> None:
    await api(
        signed_in,
        "POST",
        "/v1/schedules",
        name="reports",
        cron="0 3 * * *",
        timezone="Europe/Berlin",
        task_name="report",
        queue_name="cron",
    )
    page = (await signed_in.get("/ui/schedules")).text
    assert '<tr data-schedule="reports">' in page
    assert "0 3 * * *" in page
    assert "Europe/Berlin" in page
    assert "● enabled" in page.replace('<span aria-hidden="true">●</span>', "●")

    await signed_in.submit("/ui/schedules/reports/disable")
    assert (await api(signed_in, "GET", "/v1/schedules/reports"))["enabled"] is False
    page = (await signed_in.get("/ui/schedules")).text
    assert "disabled: it fires no more" in flash(page)  # type: ignore[operator]
    assert 'action="/ui/schedules/reports/enable"' in page

    await signed_in.submit("/ui/schedules/reports/enable")
    schedule = await api(signed_in, "GET", "/v1/schedules/reports")
    assert schedule["enabled"] is True
    assert schedule["next_run_at"] is not None

    await signed_in.submit("/ui/schedules/reports/delete")
    assert "deleted" in flash((await signed_in.get("/ui/schedules")).text)  # type: ignore[operator]
    assert (await signed_in.submit("/ui/schedules/reports/delete")).status_code == 404


async def test_the_dashboard_is_not_in_the_api_schema(app: Litestar) -> None:
    paths = app.openapi_schema.to_schema()["paths"]
    assert all(path.startswith("/v1") or path in ("/healthz", "/readyz", "/metrics") for path in paths)


async def test_assets_are_served_from_the_package(signed_in: Browser) -> None:
    htmx = await signed_in.get("/ui/static/htmx.min.js")
    assert htmx.status_code == 200
    assert "javascript" in htmx.headers["content-type"]
    assert "htmx" in htmx.text[:200]
    assert (await signed_in.get("/ui/static/dashboard.css")).status_code == 200
    await api(signed_in, "POST", "/v1/jobs", task_name="t")
    for path in ["/ui", "/ui/jobs", "/ui/dead-letters", "/ui/workflows", "/ui/schedules", "/ui/sign-in"]:
        text = (await signed_in.get(path)).text
        assert not re.search(r'(src|href)="(https?:)?//', text), path


async def test_the_api_docs_load_nothing_from_a_cdn(signed_in: Browser) -> None:
    docs = await signed_in.get("/schema")
    assert docs.status_code == 200
    assert '<script src="/ui/static/redoc.standalone.js"' in docs.text
    assert not re.search(r'(src|href)=["\'](https?:)?//', docs.text)
    assert (await signed_in.get("/ui/static/redoc.standalone.js")).status_code == 200


async def test_queues_page_shows_each_queues_flow_control(signed_in: Browser) -> None:
    await api(signed_in, "POST", "/v1/jobs", task_name="t", queue_name="plain")
    await api(
        signed_in,
        "PATCH",
        "/v1/queues/exports",
        paused=True,
        concurrency_limit=3,
        key_concurrency_limit=1,
        rate_limit={"jobs": 50, "per_seconds": 60},
    )
    page = (await signed_in.get("/ui/queues")).text
    exports = page.split('data-flow="exports">', 1)[1].split("</td>", 1)[0]
    assert "paused" in exports
    assert "≤ 3 running" in exports
    assert "≤ 1 per key" in exports
    assert "50 per 60 s" in exports
    assert "none" in page.split('data-flow="plain">', 1)[1].split("</td>", 1)[0]
