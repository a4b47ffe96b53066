"""The chaos suite's short profile, run by `make test`: 5,000 jobs, 40 workflows and 10 per-minute schedules
through real `queueflow serve` processes and SDK workers while workers are SIGKILLed, servers are SIGKILLed or
SIGTERMed and restarted, and our database blips. `make chaos` runs every scenario at full size."""

from __future__ import annotations

from tests.chaos import scenario
from tests.chaos.report import table


async def test_nothing_is_lost_finished_twice_or_stuck_under_mixed_faults() -> None:
    outcome = await scenario.run("mixed", scenario.SHORT)
    print(table([outcome]))
    assert outcome.holds, table([outcome])
    assert outcome.faults > 0
