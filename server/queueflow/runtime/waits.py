"""WaitTimer: ends workflow waits when they are due — a sleep over, a signal's timeout passed, a signal kept but not
yet acted on (its request's process died before it ended the step) —, running workflows past their deadline
(`core.children.time_out`, a row too: `workflows.deadline`) and jobs not started by their `expires_at`
(`core.deadlines`: dead-lettered), within `interval` seconds of their time.

Waits are rows with a due time (`workflow_steps.due_at`), like a delayed job's `scheduled_at`: nothing is held in
memory, so a restart loses nothing. A pass reads the due rows (`Engine.end_due_waits`) and ends each by a
guarded step finish; any number of processes may run a timer, and of two that reach one wait at once exactly one
records its end (the other's finish matches no row: `core.advance.is_reported`). Between passes the loop sleeps
until the next due time, or `interval` at most, so a wait made by another process is ended in time too.

    async with WaitTimer(engine):
        ...  # serve
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from queueflow.core.types import Job
from queueflow.engine import Engine
from queueflow.runtime.service import PeriodicService

DEFAULT_INTERVAL = 1.0
"""The longest pause between passes: a wait ends at most about this long after its time."""
MIN_PAUSE = 0.01
"""The shortest: a wait still due after a pass (another process is ending it) is not re-read in a busy loop."""


def pause_until(next_due: datetime | None, now: datetime, interval: float) -> float:
    """Seconds to sleep before the next pass: until `next_due` (at least `MIN_PAUSE`), `interval` at most."""
    if next_due is None:
        return interval
    return min(interval, max(MIN_PAUSE, (next_due - now).total_seconds()))


class WaitTimer(PeriodicService[int]):
    name = "wait-timer"

    def __init__(
        self,
        engine: Engine,
        *,
        interval: float = DEFAULT_INTERVAL,
        expired: Callable[[Sequence[Job]], None] | None = None,
    ) -> None:
        """`expired` hears each pass's expired jobs (the HTTP API's metrics, in all mode)."""
        super().__init__(interval=interval)
        self.engine = engine
        self.expired = expired

    async def once(self) -> int:
        limit = self.engine.settings.sweep_limit
        ended = await self.engine.end_due_waits(limit)
        if ended:
            self.log.debug("wait timer: %d waits ended", ended)
        expired = await self.engine.expire_due_jobs(limit)
        if expired:
            self.log.info("wait timer: %d jobs expired, not started by their deadline", len(expired))
            if self.expired is not None:
                self.expired(expired)
        return max(ended, len(expired))  # either one at the limit is a backlog

    def backlog(self, result: int) -> bool:
        return result >= self.engine.settings.sweep_limit

    async def pause(self, result: int | None) -> float:
        try:
            due = [await self.engine.next_wait_due(), await self.engine.next_expiry()]
            next_due = min((moment for moment in due if moment is not None), default=None)
        except Exception:  # the pass logs the store's outage; the next one is only an interval away
            return self.interval
        return pause_until(next_due, self.engine.clock.now(), self.interval)
