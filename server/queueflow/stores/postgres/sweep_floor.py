"""Where a janitor's lease-expiry sweep (`sql.LEASE_EXPIRED`) starts reading idx_jobs_lease_expiry: its floor.

Under a held xmin horizon every lease that was taken and then ended (completed, failed, released) leaves a dead
`running` version in idx_jobs_lease_expiry, which VACUUM may not remove while the horizon is held, and a sweep read
from the bottom of the index steps over every one of them: 300,030 index tuples and 33,618 buffers a sweep with
300,000 pinned, every 5 s, per janitor process (bench/results/2026-12-07-claim-under-horizon.md). Started at a
floor, a sweep reads only the entries whose lease ran out since the floor: the leases of about one sweep interval.

Why no expired lease is left below the floor: a sweep that ran to its end (fewer rows than its limit) at `now` took
every lease with `locked_until <= now` that it could see. Every lease written after it is later than the floor
`now - MARGIN`: a claim, a heartbeat and the janitor's own re-lease write `locked_until` as their `now` plus at
least a second (the shortest lease and timeout), and their `now` is the engine clock of some server, at most MARGIN
behind this one (the clock skew allowed between servers). What could still slip below: a claim whose transaction
outlived its own lease by MARGIN, a lease a sweep skipped because another janitor or an ack held its row and which
that transaction then rolled back. For those, a sweep from the bottom every BOTTOM_EVERY (and the first one of each
process): a backstop that bounds their delay, as a missed lease was never lost for longer than one sweep anyway.

A sweep cut by its limit leaves the floor where it was (the rest lies above it); a clock that went back (a test's
clock, or a stepped system clock) starts from the bottom again.
"""

from __future__ import annotations

from datetime import datetime, timedelta

MARGIN = timedelta(seconds=10)
"""How far a lease written after a sweep may lie below that sweep's `now`: the clock skew allowed between servers."""

BOTTOM_EVERY = timedelta(minutes=5)
"""How often (by the sweeps' own `now`) a sweep reads the whole index anyway: the backstop above."""


class SweepFloor:
    """One janitor process's floor: where its next lease-expiry sweep starts (None: from the bottom)."""

    def __init__(self) -> None:
        self._floor: datetime | None = None
        self._last: datetime | None = None
        self._bottom: datetime | None = None

    def start(self, now: datetime) -> datetime | None:
        """The floor of a sweep at `now`: None (the bottom) for the process's first, after the clock went back, and
        once every BOTTOM_EVERY."""
        if self._last is not None and now < self._last:
            self._floor = self._bottom = None
        if self._bottom is None or now - self._bottom >= BOTTOM_EVERY:
            return None
        return self._floor

    def swept(self, now: datetime, floor: datetime | None, *, complete: bool) -> None:
        """A sweep at `now` from `floor` ended; `complete`: it took fewer rows than its limit (nothing it could
        take is left below `now`)."""
        self._last = now
        if not complete:
            return
        if floor is None:
            self._bottom = now
        self._floor = now - MARGIN
