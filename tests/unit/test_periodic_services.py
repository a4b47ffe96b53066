"""What every periodic loop (janitor, scheduler) shares: starting and stopping are idempotent."""

from __future__ import annotations

import pytest
from queueflow.runtime.janitor import Janitor
from queueflow.runtime.scheduler import Scheduler
from queueflow.testing import make_engine


@pytest.mark.parametrize("service", [Janitor, Scheduler])
async def test_stopping_twice_or_never_started_is_harmless(service: type[Janitor] | type[Scheduler]) -> None:
    loop = service(make_engine(), interval=60)
    await loop.stop()
    await loop.start()
    await loop.start()
    assert loop.running
    await loop.stop()
    await loop.stop()
    assert not loop.running
