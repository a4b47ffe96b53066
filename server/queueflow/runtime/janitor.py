"""Janitor: the maintenance loop, `Engine.run_maintenance()` every `interval` seconds.

Each sweep reclaims expired leases through the failure policy, replays workflow advances missed for longer than
`EngineSettings.heal_after` (the engine logs each workflow's healed steps) and applies retention. Any
number of processes may run one: the store re-leases what a sweep takes, so two sweeps never take the same
row. A database outage is logged and the loop goes on; the next sweep picks up where this one could not.
"""

from __future__ import annotations

from queueflow.core.types import MaintenanceReport
from queueflow.engine import Engine
from queueflow.runtime.service import PeriodicService


class Janitor(PeriodicService[MaintenanceReport]):
    name = "janitor"

    def __init__(self, engine: Engine, *, interval: float = 5.0) -> None:
        super().__init__(interval=interval)
        self.engine = engine

    @property
    def sweeps(self) -> int:
        """Sweeps attempted so far, failed ones included."""
        return self.passes

    async def sweep(self) -> MaintenanceReport | None:
        """One maintenance sweep; None when it failed (the store could not be reached)."""
        return await self.tick()

    async def once(self) -> MaintenanceReport:
        report = await self.engine.run_maintenance()
        if report.reclaimed or report.deleted or report.healed:
            self.log.info(
                "janitor: reclaimed %d (%d retrying, %d dead-lettered), healed %d workflow steps, deleted %d",
                report.reclaimed, report.retried, report.dead_lettered, report.healed, report.deleted,
            )  # fmt: skip
        return report

    def backlog(self, result: MaintenanceReport) -> bool:
        # A full sweep means a backlog: go again at once rather than let it wait an interval.
        return self.engine.settings.sweep_limit in (
            result.reclaimed,
            result.deleted,
            result.healed,
            result.deleted_events,
        )
