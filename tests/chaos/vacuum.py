"""The `vacuum_pressure` scenario's fault and its measurement: a snapshot held open in the middle of the run (the
xmin horizon held back, so no row version that dies meanwhile can be vacuumed away), and the throughput before,
during and after it.

The run is cut into windows by its acknowledged outcomes, read from the ledger: the snapshot is taken once a
quarter of the profile's jobs have an outcome and released at half, and each window's throughput is a quarter's
outcomes over the time they took (the last window is the third quarter). Each window holds as much work, and all
three lie inside the backlog the load builds, so each measures how fast the cluster drains work, not how fast the
driver enqueues it.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import asyncpg

from tests.chaos.ledger import Ledger

PATIENCE = 600.0
"""Upper bound on the wait for a window's outcomes; a run that does not get there has failed anyway."""


@dataclass
class Pressure:
    quarter: int
    held_at: float | None = None
    released_at: float | None = None
    dead_rows: int | None = None
    """Dead row versions in queueflow.jobs when the snapshot was released (what vacuum could not remove)."""
    windows: dict[str, float] = field(default_factory=dict)
    """Jobs per second, by window: before, during, after."""

    def describe(self) -> str:
        if len(self.windows) < 3:
            return "the run ended before every window was measured"
        rates = ", ".join(f"{name} {rate:.0f}" for name, rate in self.windows.items())
        held = (self.released_at or 0) - (self.held_at or 0)
        return (
            f"throughput in jobs/s (each window {self.quarter:,} outcomes) {rates}; "
            f"snapshot held {held:.0f} s, {self.dead_rows if self.dead_rows is not None else '?'} dead row versions "
            "in queueflow.jobs at its release"
        )


async def hold_snapshot(database_url: str, ledger: Ledger, jobs: int) -> Pressure:
    """Take the snapshot after a quarter of `jobs` outcomes and release it at half. The outcomes are written by
    other processes into the ledger, which announces nothing: poll it, with a deadline."""
    pressure = Pressure(quarter=max(jobs // 4, 1))
    await _until_outcomes(ledger, pressure.quarter)
    holder = await asyncpg.connect(database_url)
    try:
        await holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        await holder.fetchval("SELECT txid_current()")  # a transaction id of its own: the horizon stops here
        pressure.held_at = time.time()
        await _until_outcomes(ledger, 2 * pressure.quarter)
        await holder.execute("ROLLBACK")
        pressure.released_at = time.time()
        pressure.dead_rows = await holder.fetchval(
            "SELECT n_dead_tup FROM pg_stat_user_tables WHERE schemaname = 'queueflow' AND relname = 'jobs'"
        )
    finally:
        await holder.close()
    return pressure


def measure(pressure: Pressure, ledger: Ledger) -> None:
    """Fill in each window's throughput from the ledger's outcome times."""
    times = [float(at) for (at,) in ledger.rows("SELECT at FROM outcomes WHERE acked = 1 ORDER BY at")]  # type: ignore[arg-type]
    q = pressure.quarter
    for n, name in enumerate(("before", "during", "after")):
        if len(times) > (n + 1) * q:
            took = times[(n + 1) * q] - times[n * q]
            pressure.windows[name] = q / took if took > 0 else float("inf")


async def _until_outcomes(ledger: Ledger, count: int) -> None:
    deadline = time.monotonic() + PATIENCE
    while ledger.rows("SELECT count(*) FROM outcomes WHERE acked = 1")[0][0] < count:  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise TimeoutError(f"fewer than {count} outcomes after {PATIENCE:.0f} s")
        await asyncio.sleep(0.1)  # the ledger's writers are other processes: poll, with a deadline
