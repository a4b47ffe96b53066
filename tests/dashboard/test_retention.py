"""A queue's page says how long the queue keeps its finished jobs: its own retention, else the server's
`--retention-hours` (24 here), and, with neither, that they are kept."""

from __future__ import annotations

import html
import re
from dataclasses import replace

import pytest
from queueflow.settings import Settings

from tests.api.conftest import SETTINGS
from tests.dashboard.conftest import Browser, api


@pytest.fixture
def settings() -> Settings:
    return replace(SETTINGS, retention_hours=24)


def retention(page: str) -> str:
    found = re.search(r"<dd data-retention>(.*?)</dd>", page, re.S)
    assert found, "no retention on the page"
    return html.unescape(re.sub(r"<[^>]+>", "", found.group(1))).strip()


async def test_the_queue_page_shows_its_own_retention_or_the_server_s(signed_in: Browser) -> None:
    await api(signed_in, "POST", "/v1/jobs", task_name="t", queue_name="reports")
    said = retention((await signed_in.get("/ui/queues/reports")).text)
    assert said.startswith("1 d, the server's --retention-hours (finished jobs older than this are deleted")
    await api(signed_in, "PATCH", "/v1/queues/reports", retention_seconds=7 * 86_400 + 3600)
    assert retention((await signed_in.get("/ui/queues/reports")).text).startswith("7 d 1 h, this queue's own (")
