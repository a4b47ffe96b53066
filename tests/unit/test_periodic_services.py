"""What every periodic loop (janitor, upkeep, scheduler, wait timer) shares: starting and stopping are idempotent."""

from __future__ import annotations

import pytest
from queueflow.runtime.janitor import Janitor
from queueflow.runtime.scheduler import Scheduler
from queueflow.runtime.upkeep import Upkeep
from queueflow.runtime.waits import WaitTimer
from queueflow.testing import make_engine


@pytest.mark.parametrize("service", [Janitor, Upkeep, Scheduler, WaitTimer])
async def test_stopping_twice_or_never_started_is_harmless(
    service: type[Janitor] | type[Upkeep] | type[Scheduler] | type[WaitTimer],
) -> None:
    loop = service(make_engine(), interval=60)
    await loop.stop()
    await loop.start()
    await loop.start()
    assert loop.running
    await loop.stop()
    await loop.stop()
    assert not loop.running
