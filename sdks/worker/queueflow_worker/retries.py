"""Persisting with an outcome or a release while the server is away (restarting, its database blipping): an ack or
a release whose call fails with a `transient` error — no answer, or a 5xx — is made again, with backoff on the
loop's clock, for as long as a lease it carries could still hold. Given up sooner, the outcome would be lost while
the lease still held, the job would come back when the lease expired, and a task that had finished would run again;
kept up longer, it could only be answered `lease_lost`. A `lease_lost` answer is an answer, and final.

How long a lease can hold, on the worker's clock: the server starts or extends a lease no later than its answer
arrives, so none of the leases a loop holds lasts past the last answer of a lease or a heartbeat that held, plus
`lease_seconds` (`LeaseHorizon`). While the server is away no answer comes, and that moment does not move.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from queueflow_worker.ports import Clock
from queueflow_worker.timing import first

__all__ = ["FIRST_PAUSE", "LONGEST_PAUSE", "LeaseHorizon", "persist"]

T = TypeVar("T")

FIRST_PAUSE = 0.05
"""The pause before the first repeat, doubled after each (with jitter): a server that restarts is back in
a second or two."""
LONGEST_PAUSE = 1.0


class LeaseHorizon:
    """The latest moment, on the loop's clock, that a lease the loop holds could still hold: the last answer of a
    lease or a heartbeat that held, plus `lease_seconds`."""

    __slots__ = ("lease_seconds", "until")

    def __init__(self, lease_seconds: float) -> None:
        self.lease_seconds = lease_seconds
        self.until = float("-inf")

    def answered(self, at: float) -> None:
        """The server started or extended a lease, at the latest at `at` (when its answer arrived)."""
        self.until = max(self.until, at + self.lease_seconds)


async def persist(
    call: Callable[[], Awaitable[T]],
    *,
    clock: Clock,
    transient: Callable[[Exception], bool],
    horizon: LeaseHorizon,
    abandon: asyncio.Event,
) -> T:
    """`call()`'s answer, made again after each transient failure until `horizon` has passed (read anew each time:
    a heartbeat that gets through meanwhile moves it) or `abandon` is set; then the last error is raised."""
    pause = FIRST_PAUSE
    while True:
        try:
            return await call()
        except Exception as exc:
            left = horizon.until - clock.now()
            if not transient(exc) or left <= 0 or abandon.is_set():
                raise
            # Jitter: workers that lost one server together do not come back to it in step.
            if await first(abandon, clock, min(random.uniform(pause / 2, pause), left)):
                raise  # a quit: what could not be sent is left to the leases' expiry
        pause = min(2 * pause, LONGEST_PAUSE)
