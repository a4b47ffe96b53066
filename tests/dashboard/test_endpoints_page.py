"""The Endpoints page: each endpoint's state, deliveries in flight, counters and last error, and its buttons (pause,
resume, rotate the secret: the new one shown once, on a page of its own)."""

from __future__ import annotations

from tests.dashboard.conftest import TENANT_B, Browser, api
from tests.dashboard.test_pages import flash

PUBLIC = "https://93.184.215.14/hooks"  # a literal public address: nothing to resolve


async def test_endpoints_pause_resume_and_rotate(signed_in: Browser) -> None:
    created = await api(signed_in, "POST", "/v1/endpoints", name="billing", url=PUBLIC, queues=["billing"])
    await api(signed_in, "POST", "/v1/endpoints", TENANT_B, name="theirs", url=PUBLIC)
    page = (await signed_in.get("/ui/endpoints")).text
    assert '<tr data-endpoint="billing">' in page
    assert "theirs" not in page  # another tenant's
    assert PUBLIC in page
    assert '<td data-in-flight="0">0 / 10</td>' in page
    assert created["secret"] not in page  # a read never shows it
    assert 'aria-current="page">Endpoints' in page

    await signed_in.submit("/ui/endpoints/billing/pause")
    assert (await api(signed_in, "GET", "/v1/endpoints/billing"))["paused"] is True
    page = (await signed_in.get("/ui/endpoints")).text
    assert "paused: no new deliveries" in flash(page)  # type: ignore[operator]
    assert 'action="/ui/endpoints/billing/resume"' in page

    await signed_in.submit("/ui/endpoints/billing/resume")
    assert (await api(signed_in, "GET", "/v1/endpoints/billing"))["paused"] is False

    rotated = await signed_in.submit("/ui/endpoints/billing/rotate-secret")
    assert rotated.status_code == 200
    after = await api(signed_in, "GET", "/v1/endpoints/billing")
    assert after["previous_secret_until"] is not None
    shown = rotated.text.split('<pre class="mono" data-secret>', 1)[1].split("</pre>", 1)[0]
    assert shown.startswith("qfsec_")
    assert shown[-4:] == after["secret"][-4:]
    assert shown != created["secret"]


async def test_no_endpoints_yet(signed_in: Browser) -> None:
    assert "No endpoints yet" in (await signed_in.get("/ui/endpoints")).text


async def test_a_form_without_the_csrf_token_changes_nothing(signed_in: Browser) -> None:
    await api(signed_in, "POST", "/v1/endpoints", name="billing", url=PUBLIC)
    response = await signed_in.client.post("/ui/endpoints/billing/pause", data={})
    assert response.status_code == 403
    assert (await api(signed_in, "GET", "/v1/endpoints/billing"))["paused"] is False
