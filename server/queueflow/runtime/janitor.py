"""Janitor: the maintenance loop, `Engine.run_maintenance()` every `interval` seconds.

Each sweep reclaims expired leases through the failure policy, advances workflows whose advancement a crash
lost, and applies retention (see the engine). Any
number of processes may run one: the store re-leases what a sweep takes, so two sweeps never take the same
row. A database outage is logged and the loop goes on; the next sweep picks up where this one could not.
"""

from __future__ import annotations

import asyncio
import logging

from queueflow.core.errors import StoreUnavailable
from queueflow.core.types import MaintenanceReport
from queueflow.engine import Engine
from queueflow.runtime.service import BackgroundService

log = logging.getLogger("queueflow.janitor")


class Janitor(BackgroundService):
    name = "janitor"

    def __init__(self, engine: Engine, *, interval: float = 5.0) -> None:
        super().__init__()
        self.engine = engine
        self.interval = interval
        self.sweeps = 0
        """Sweeps attempted so far, failed ones included (for metrics and tests)."""

    async def sweep(self) -> MaintenanceReport | None:
        """One maintenance sweep; None when the store could not be reached."""
        self.sweeps += 1
        try:
            report = await self.engine.run_maintenance()
        except StoreUnavailable as exc:
            log.warning("janitor sweep skipped, the store is unavailable: %s", exc)
            return None
        except Exception:
            # Whatever went wrong with this sweep, the next one deserves its chance.
            log.exception("janitor sweep failed")
            return None
        if report.reclaimed or report.deleted or report.healed:
            log.info(
                "janitor: reclaimed %d (%d retrying, %d dead-lettered), healed %d workflow steps, deleted %d",
                report.reclaimed, report.retried, report.dead_lettered, report.healed, report.deleted,
            )  # fmt: skip
        return report

    async def run(self) -> None:
        while True:
            report = await self.sweep()
            limit = self.engine.settings.sweep_limit
            if report is not None and limit in (report.reclaimed, report.deleted):
                # A full sweep means a backlog: go again at once rather than let it wait an interval.
                await asyncio.sleep(0)
                continue
            await asyncio.sleep(self.interval)
