"""The Queues page's warning about a held xmin horizon (README.md, "Seeing pressure"): from the threshold on, it
names the backend that holds it and says what that does to the queues. The in-memory store has no horizon, so these
pages run on one that reports a holder, and time passes on the TestClock; tests/postgres/test_pressure.py holds a
real one."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from queueflow.clocks import TestClock
from queueflow.core.pressure import Pressure
from queueflow.runtime.wakeups import Wakeups
from queueflow.stores.memory import InMemoryJobStore

from tests.api.conftest import SETTINGS
from tests.dashboard.conftest import Browser
from tests.moments import HOLDER, START


class HeldHorizon(InMemoryJobStore):
    """The in-memory store, on a database where `HOLDER` has held the horizon since START."""

    async def store_pressure(self) -> Pressure:
        return Pressure(oldest_xact_start=START, horizon=HOLDER)


@pytest.fixture
def store(request: pytest.FixtureRequest, wakeups: Wakeups) -> InMemoryJobStore:
    kind: type[InMemoryJobStore] = getattr(request, "param", HeldHorizon)
    return kind(wakeups=wakeups)


def banner(text: str) -> str | None:
    found = re.search(
        r'<div class="flash flash-error horizon" role="alert" data-horizon-pid="\d+">(.*?)</div>', text, re.S
    )
    return " ".join(found.group(1).split()) if found else None


async def test_the_queues_page_warns_from_the_threshold_on_naming_the_backend(
    signed_in: Browser, clock: TestClock
) -> None:
    clock.advance(299)
    assert banner((await signed_in.get("/ui/queues")).text) is None

    clock.advance(1)
    said = banner((await signed_in.get("/ui/queues")).text)

    assert said is not None
    assert "held for 5 min" in said
    assert "pid 4242" in said
    assert "nightly-report" in said
    assert "idle in transaction" in said
    assert "last query started 2026-03-01 12:00:02 UTC" in said
    assert "every claim of every queue steps over the dead rows it pins" in said
    assert "31,000 transactions" in said


async def test_the_pages_own_refresh_brings_the_warning_too(signed_in: Browser, clock: TestClock) -> None:
    clock.advance(hours=1)
    partial = await signed_in.get("/ui/queues", headers={"HX-Request": "true"})
    assert "<html" not in partial.text
    assert banner(partial.text) is not None


@pytest.mark.parametrize("settings", [replace(SETTINGS, horizon_warning_seconds=1)])
async def test_the_threshold_is_a_setting(signed_in: Browser, clock: TestClock) -> None:
    clock.advance(1)
    assert banner((await signed_in.get("/ui/queues")).text) is not None


@pytest.mark.parametrize("store", [InMemoryJobStore], indirect=True)
async def test_nothing_is_said_where_nothing_holds_the_horizon(signed_in: Browser, clock: TestClock) -> None:
    clock.advance(hours=1)
    page = await signed_in.get("/ui/queues")
    assert page.status_code == 200
    assert banner(page.text) is None
    assert "data-horizon-pid" not in page.text
