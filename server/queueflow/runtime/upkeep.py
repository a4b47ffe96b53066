"""Upkeep: the store's own claim upkeep, `Engine.run_upkeep()` every `interval` seconds (1 s), beside the janitor.

Kept apart from the janitor's sweep (every `--janitor-interval`, 5 s by default) because what it keeps up has to
follow the job rate, not the sweep's: on PostgreSQL it rotates the claim index's generations
(`stores.postgres.generations`), and under a held xmin horizon every claim walks the entries of the jobs claimed
since the oldest live generation opened, which the hold keeps. Rotated with the sweep, every 5 s, a claim read
1,200–1,500 buffers under a hold at 150 jobs/s; every second, about 350 (bench/results/2026-12-08-ten-minute-hold.md).
A pass is a handful of short statements; any number of processes may run one (the switch to a new generation takes
an advisory lock, and opens one only when the current one is a second old). The in-memory store has nothing to keep.
"""

from __future__ import annotations

from queueflow.engine import Engine
from queueflow.runtime.service import PeriodicService

INTERVAL = 1.0


class Upkeep(PeriodicService[None]):
    name = "upkeep"

    def __init__(self, engine: Engine, *, interval: float = INTERVAL) -> None:
        super().__init__(interval=interval)
        self.engine = engine

    async def once(self) -> None:
        await self.engine.run_upkeep()
