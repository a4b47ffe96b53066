"""The Triggers page: the tenant's triggers, and the last events with links to what each started."""

from __future__ import annotations

import re

from tests.dashboard.conftest import Browser, api

FULFIL = {"name": "fulfil", "steps": [{"name": "pack", "task_name": "pack"}]}


async def test_an_empty_page_says_what_to_do(signed_in: Browser) -> None:
    page = await signed_in.get("/ui/triggers")
    assert page.status_code == 200
    assert "No triggers yet" in page.text
    assert "No events in the last day" in page.text
    assert 'href="/ui/triggers" aria-current="page"' in page.text


async def test_triggers_and_the_last_events_with_what_they_started(signed_in: Browser) -> None:
    await api(signed_in, "POST", "/v1/triggers", name="receipt", event="order.*", filter={"plan": "pro"},
              task={"task_name": "send_receipt", "queue_name": "mail"})  # fmt: skip
    await api(signed_in, "POST", "/v1/triggers", name="fulfil", event="order.paid", workflow=FULFIL, enabled=False)
    sent = await api(signed_in, "POST", "/v1/events", name="order.paid", payload={"plan": "pro"}, id="order-7")
    await api(signed_in, "POST", "/v1/events", name="order.refunded", payload={}, id="order-8")
    page = (await signed_in.get("/ui/triggers")).text
    receipt = re.search(r'<tr data-trigger="receipt">(.*?)</tr>', page, re.S)
    assert receipt
    assert "order.*" in receipt.group(1)
    assert "send_receipt" in receipt.group(1)
    assert "mail" in receipt.group(1)
    fulfil = re.search(r'<tr data-trigger="fulfil">(.*?)</tr>', page, re.S)
    assert fulfil
    assert "disabled" in fulfil.group(1)
    paid = re.search(r'<tr data-event="order-7">(.*?)</tr>', page, re.S)
    assert paid
    [started] = sent["started"]
    assert f'href="/ui/jobs/{started["job_id"]}" data-started="receipt"' in paid.group(1)
    refunded = re.search(r'<tr data-event="order-8">(.*?)</tr>', page, re.S)
    assert refunded
    assert "nothing matched" in refunded.group(1)
    assert page.index('data-event="order-8"') < page.index('data-event="order-7"')  # newest first
