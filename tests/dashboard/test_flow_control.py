"""Changing a queue's flow control from the dashboard: Pause / Resume, and the limits form, checked through the API."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest

from tests.api.conftest import TENANT_A, TENANT_B
from tests.dashboard.conftest import Browser, api
from tests.dashboard.test_pages import flash, lease

NO_LIMITS = {"concurrency_limit": "", "key_concurrency_limit": "", "rate_jobs": "", "rate_per_seconds": ""}


async def settings(browser: Browser, queue: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """The queue's flow control as `GET /v1/queues/{name}` reports it."""
    reported = await api(browser, "GET", f"/v1/queues/{queue}", headers=headers or TENANT_A)
    return {key: reported[key] for key in ("paused", "concurrency_limit", "key_concurrency_limit", "rate_limit")}


def row(page: str, queue: str) -> str:
    found = re.search(rf'<tr data-queue="{queue}"[^>]*>.*?</tr>', page, re.S)
    assert found, f"no row for queue {queue}"
    return found.group(0)


def said(page: str) -> str:
    """The page's flash message, as the reader sees it."""
    return html.unescape(flash(page) or "")


def errors(page: str) -> list[str]:
    return [
        html.unescape(text).strip()
        for text in re.findall(
            r'<div class="flash flash-error" role="alert"><span aria-hidden="true">⚠</span>([^<]*)<', page
        )
    ]


async def test_pause_and_resume_from_the_queues_page(signed_in: Browser) -> None:
    job = await api(signed_in, "POST", "/v1/jobs", task_name="t", queue_name="mail")
    page = (await signed_in.get("/ui/queues")).text
    assert 'action="/ui/queues/mail/pause"' in row(page, "mail")
    assert 'class="paused"' not in row(page, "mail")

    response = await signed_in.submit("/ui/queues/mail/pause")
    assert (response.status_code, response.headers["location"]) == (303, "/ui/queues")
    assert (await settings(signed_in, "mail"))["paused"] is True
    assert await lease(signed_in, "mail") == []
    page = (await signed_in.get("/ui/queues")).text
    assert "Queue 'mail' paused" in said(page)
    mail = row(page, "mail")
    assert '<tr data-queue="mail" class="paused">' in mail
    assert 'class="held"' in mail  # its waiting job is held back
    assert '<span class="badge s-paused">' in mail
    assert 'action="/ui/queues/mail/resume"' in mail

    await signed_in.submit("/ui/queues/mail/resume")
    assert (await settings(signed_in, "mail"))["paused"] is False
    page = (await signed_in.get("/ui/queues")).text
    assert "Queue 'mail' resumed" in said(page)
    assert 'class="paused"' not in row(page, "mail")
    assert [leased["id"] for leased in await lease(signed_in, "mail")] == [job["id"]]


async def test_pause_from_the_queues_own_page_comes_back_to_it(signed_in: Browser) -> None:
    await api(signed_in, "POST", "/v1/jobs", task_name="t", queue_name="mail")
    page = (await signed_in.get("/ui/queues/mail")).text
    assert 'action="/ui/queues/mail/pause"' in page
    response = await signed_in.submit("/ui/queues/mail/pause", next="/ui/queues/mail")
    assert response.headers["location"] == "/ui/queues/mail"
    page = (await signed_in.get("/ui/queues/mail")).text
    assert 'action="/ui/queues/mail/resume"' in page
    assert '<span class="badge s-paused">' in page
    response = await signed_in.submit("/ui/queues/mail/resume", next="https://elsewhere.example/")
    assert response.headers["location"] == "/ui"  # only a dashboard path


async def test_set_and_clear_each_limit(signed_in: Browser) -> None:
    await api(signed_in, "POST", "/v1/jobs", task_name="t", queue_name="exports")
    await api(signed_in, "PATCH", "/v1/queues/exports", paused=True)
    await signed_in.get("/ui/queues/exports")
    every = {"concurrency_limit": "3", "key_concurrency_limit": "1", "rate_jobs": "50", "rate_per_seconds": "0.5"}
    response = await signed_in.submit("/ui/queues/exports/limits", **every)
    assert (response.status_code, response.headers["location"]) == (303, "/ui/queues/exports")
    assert await settings(signed_in, "exports") == {
        "paused": True,  # the form leaves pausing alone
        "concurrency_limit": 3,
        "key_concurrency_limit": 1,
        "rate_limit": {"jobs": 50, "per_seconds": 0.5},
    }
    page = (await signed_in.get("/ui/queues/exports")).text
    assert said(page) == "Queue 'exports' limits saved: ≤ 3 running, ≤ 1 per key, 50 per 0.5 s."
    for field, value in every.items():
        assert f'name="{field}" value="{value}"' in page
    assert "≤ 3 running, ≤ 1 per key, 50 per 0.5 s" in row((await signed_in.get("/ui/queues")).text, "exports")

    cleared: list[str] = []
    for field, reported in [
        ("concurrency_limit", "concurrency_limit"),
        ("key_concurrency_limit", "key_concurrency_limit"),
        ("rate_jobs", "rate_limit"),
    ]:
        cleared += [field, "rate_per_seconds"] if field == "rate_jobs" else [field]
        await signed_in.submit("/ui/queues/exports/limits", **{**every, **dict.fromkeys(cleared, "")})
        now = await settings(signed_in, "exports")
        assert now[reported] is None, field
        assert now["paused"] is True
    assert await settings(signed_in, "exports") == {
        "paused": True,
        "concurrency_limit": None,
        "key_concurrency_limit": None,
        "rate_limit": None,
    }
    assert said((await signed_in.get("/ui/queues/exports")).text) == "Queue 'exports' limits saved: no limits."

    await signed_in.submit("/ui/queues/exports/limits", **{**NO_LIMITS, "key_concurrency_limit": "2"})
    assert (await settings(signed_in, "exports"))["key_concurrency_limit"] == 2
    assert (await settings(signed_in, "exports"))["concurrency_limit"] is None

    # The form shows a rate back exactly, so saving it unchanged changes nothing.
    await api(signed_in, "PATCH", "/v1/queues/exports", rate_limit={"jobs": 7, "per_seconds": 1.2345678})
    page = (await signed_in.get("/ui/queues/exports")).text
    assert 'name="rate_per_seconds" value="1.2345678"' in page
    assert 'name="key_concurrency_limit" value="2"' in page


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"concurrency_limit": "-1"}, "Running at once must be between 1 and 100000"),
        ({"concurrency_limit": "0"}, "Running at once must be between 1 and 100000"),
        ({"concurrency_limit": "100001"}, "Running at once must be between 1 and 100000"),
        ({"concurrency_limit": "three"}, "Running at once must be a whole number."),
        ({"concurrency_limit": "2.5"}, "Running at once must be a whole number."),
        ({"key_concurrency_limit": "0"}, "Running per key must be between 1 and 100000"),
        ({"key_concurrency_limit": "1e3"}, "Running per key must be a whole number."),
        ({"rate_jobs": "0", "rate_per_seconds": "1"}, "Rate limit (jobs) must be between 1 and 100000."),
        ({"rate_jobs": "x", "rate_per_seconds": "1"}, "Rate limit (jobs) must be a whole number."),
        ({"rate_jobs": "5", "rate_per_seconds": "0"}, "Rate limit (seconds) must be between 0.001 and 86400."),
        ({"rate_jobs": "5", "rate_per_seconds": "-1"}, "Rate limit (seconds) must be between 0.001 and 86400."),
        ({"rate_jobs": "5", "rate_per_seconds": "nan"}, "Rate limit (seconds) must be between 0.001 and 86400."),
        ({"rate_jobs": "5", "rate_per_seconds": "1e999"}, "Rate limit (seconds) must be between 0.001 and 86400."),
        ({"rate_jobs": "5", "rate_per_seconds": "soon"}, "Rate limit (seconds) must be a number."),
        ({"rate_jobs": "5"}, "Rate limit needs both the jobs and the seconds, or neither for no limit."),
        ({"rate_per_seconds": "60"}, "Rate limit needs both the jobs and the seconds, or neither for no limit."),
    ],
)
async def test_invalid_limits_are_a_400_page_that_says_why_and_change_nothing(
    signed_in: Browser, fields: dict[str, str], message: str
) -> None:
    await api(signed_in, "PATCH", "/v1/queues/exports", concurrency_limit=4, rate_limit={"jobs": 9, "per_seconds": 3})
    before = await settings(signed_in, "exports")
    await signed_in.get("/ui/queues/exports")
    # Valid values in the other fields: a bad one rejects the whole form.
    valid = {"concurrency_limit": "7", "key_concurrency_limit": "2", "rate_jobs": "", "rate_per_seconds": ""}
    response = await signed_in.submit("/ui/queues/exports/limits", **{**valid, **fields})
    assert response.status_code == 400
    assert "text/html" in response.headers["content-type"]
    assert any(error.startswith(message) for error in errors(response.text)), errors(response.text)
    for field, value in fields.items():
        assert f'name="{field}" value="{value}"' in response.text  # what was typed stays, to correct it
    assert await settings(signed_in, "exports") == before


async def test_every_bad_field_is_named_at_once(signed_in: Browser) -> None:
    await signed_in.get("/ui/queues")
    response = await signed_in.submit(
        "/ui/queues/fresh/limits", concurrency_limit="0", key_concurrency_limit="x", rate_jobs="", rate_per_seconds=""
    )
    assert response.status_code == 400
    assert [error.split(" must")[0] for error in errors(response.text)] == ["Running at once", "Running per key"]
    other = await signed_in.client.get("/v1/queues/fresh", headers=TENANT_A)
    assert other.status_code == 404  # not even created


async def test_a_bad_queue_name_is_a_400_page(signed_in: Browser) -> None:
    await signed_in.get("/ui/queues")
    for path in ["/ui/queues/bad%20name/pause", "/ui/queues/bad%20name/limits"]:
        response = await signed_in.submit(path, **NO_LIMITS)
        assert response.status_code == 400, path
        assert "name" in response.text
    assert (await signed_in.get("/ui/queues/nobody-has-this")).status_code == 404


async def test_another_tenants_queue_settings_are_untouched(signed_in: Browser) -> None:
    await api(signed_in, "PATCH", "/v1/queues/shared", headers=TENANT_B, concurrency_limit=7)
    await api(signed_in, "PATCH", "/v1/queues/theirs", headers=TENANT_B, key_concurrency_limit=2)
    theirs_before = await settings(signed_in, "shared", TENANT_B)
    assert (await signed_in.get("/ui/queues/theirs")).status_code == 404
    assert 'data-queue="theirs"' not in (await signed_in.get("/ui/queues")).text

    await signed_in.submit("/ui/queues/shared/pause")
    await signed_in.submit("/ui/queues/shared/limits", **{**NO_LIMITS, "concurrency_limit": "1", "rate_jobs": "2",
                                                          "rate_per_seconds": "1"})  # fmt: skip
    ours = await settings(signed_in, "shared")
    assert (ours["paused"], ours["concurrency_limit"], ours["rate_limit"]) == (True, 1, {"jobs": 2, "per_seconds": 1})
    assert await settings(signed_in, "shared", TENANT_B) == theirs_before
    await signed_in.submit("/ui/queues/shared/resume")
    await signed_in.submit("/ui/queues/shared/limits", **NO_LIMITS)
    assert await settings(signed_in, "shared", TENANT_B) == theirs_before
    assert (await settings(signed_in, "theirs", TENANT_B))["key_concurrency_limit"] == 2


async def test_the_queue_page_says_finished_jobs_are_kept_without_a_retention(signed_in: Browser) -> None:
    await api(signed_in, "POST", "/v1/jobs", task_name="t", queue_name="reports")
    page = (await signed_in.get("/ui/queues/reports")).text
    assert "<dd data-retention>kept: neither this queue nor the server sets a retention</dd>" in page
