"""Scheduler: the cron loop, `Engine.fire_due_schedules()` every `interval` seconds (default 1).

Any number of processes may run one against one database: each firing's job has a per-occurrence idempotency
key and each schedule advances by compare-and-set, so they insert one job per occurrence between them (see
`queueflow.schedules`). The loop holds no timers: what is due is read from the store on every tick, so a restart
loses nothing, and a scheduler that was down fires only the latest missed occurrence of each schedule, once.

    async with Scheduler(engine, interval=settings.scheduler_interval):
        ...  # serve
"""

from __future__ import annotations

from queueflow.engine import Engine
from queueflow.runtime.service import PeriodicService

DEFAULT_INTERVAL = 1.0
"""Seconds between ticks: a firing's job is inserted at most this long after its occurrence (it is claimable
at once: its `scheduled_at` is the occurrence)."""


class Scheduler(PeriodicService[int]):
    name = "scheduler"

    def __init__(self, engine: Engine, *, interval: float = DEFAULT_INTERVAL) -> None:
        super().__init__(interval=interval)
        self.engine = engine

    async def once(self) -> int:
        fired = await self.engine.fire_due_schedules()
        if fired:
            self.log.debug("scheduler: %d schedules fired", fired)
        return fired

    def backlog(self, result: int) -> bool:
        # A full tick means more schedules may be due: go again at once rather than let them wait an interval.
        return result >= self.engine.settings.sweep_limit
