"""A `WorkerLoop`'s batched acks: an outcome is queued when its task ends (its slot is freed at once), and the queue
is sent in one call when it reaches `ack_batch` or `ack_interval` after its first item, whichever comes first, one
call at a time — or at once when no more outcomes can join it soon: no job is held any more, or leasing waits for
these acks (a capacity below `ack_batch`, as with few slots and slow tasks, stalled every capacity of jobs for
`ack_interval`). A job whose outcome is still queued when the process dies is delivered again once its lease
expires (at-least-once, as after any crash). While a whole capacity of outcomes waits for its acks (a slow store),
the loop leases no more jobs: they would only wait with them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Sequence
from typing import Protocol

from queueflow_worker.host import RecordingHost
from queueflow_worker.joblog import log
from queueflow_worker.outcomes import Outcome
from queueflow_worker.ports import TaskRunner
from queueflow_worker.timing import MAX_BATCH

__all__ = ["ACK_BATCHES_KEPT", "Acks"]

ACK_BATCHES_KEPT = 1000
"""How many of the latest ack sizes `Acks.batches` keeps."""


class Host(RecordingHost, Protocol):
    """What the acks need of their `WorkerLoop`."""

    tasks: TaskRunner

    @property
    def held(self) -> int: ...
    @property
    def waits_for_acks(self) -> bool: ...
    @property
    def stopping(self) -> bool: ...
    def offer_room(self) -> None: ...


class Acks:
    def __init__(self, loop: Host, *, ack_batch: int, ack_interval: float) -> None:
        self.loop = loop
        self.ack_batch = max(1, min(ack_batch, MAX_BATCH))
        self.ack_interval = ack_interval
        """Real time (the event loop's), not the loop's `clock`: it is a batching window of milliseconds."""
        self.batches: deque[int] = deque(maxlen=ACK_BATCHES_KEPT)
        """The sizes of the last `ACK_BATCHES_KEPT` acks sent, oldest first (for tests and metrics): bounded, so a
        worker that runs for days does not grow by a number per ack."""
        self.unacked = 0
        """Outcomes recorded whose ack has not answered yet: queued, or being sent."""
        self._outcomes: list[Outcome] = []
        self._due = asyncio.Event()
        self._full = asyncio.Event()
        self._last = False

    def record(self, outcome: Outcome) -> None:
        self._outcomes.append(outcome)
        self.unacked += 1
        self._due.set()
        if self._now():
            self._full.set()

    def _now(self) -> bool:
        """Whether the queued outcomes go now rather than `ack_interval` after the first: the batch is full, or
        no more can join it soon (nothing is held: more come only with a lease; or leasing waits for these)."""
        loop = self.loop
        return len(self._outcomes) >= self.ack_batch or not loop.held or loop.waits_for_acks

    async def run(self) -> None:
        while True:
            await self._due.wait()
            if not self._now() and not self.loop.stopping and self.ack_interval > 0:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.ack_interval):
                        await self._full.wait()
            self._due.clear()
            self._full.clear()
            while self._outcomes:
                batch, self._outcomes = self._outcomes[:MAX_BATCH], self._outcomes[MAX_BATCH:]
                await self.send(batch)
            if self._last:
                return

    def close(self) -> None:
        """Send what is queued, then let `run()` return."""
        self._last = True
        self._due.set()
        self._full.set()

    async def send(self, batch: list[Outcome]) -> None:
        loop = self.loop
        self.batches.append(len(batch))
        try:
            # Made again while the server is away, as long as a lease of the batch may hold (`retries`); later
            # outcomes wait behind it, so outcomes are recorded in the order they came.
            held: Sequence[bool | None] = await loop.persist(lambda: loop.source.ack(batch))
        except Exception as exc:
            # Left to the leases' expiry: the janitor reclaims the jobs and they are delivered again.
            if not loop.is_fatal(exc):
                log.exception("%s: could not record %d outcomes", loop.name, len(batch))
            held = [None] * len(batch)
        self.unacked -= len(batch)
        loop.offer_room()
        for outcome, ok in zip(batch, held, strict=True):
            loop.settled(outcome.job_id, outcome.lease_token)
            if ok is None:
                continue
            if not ok:
                log.warning("job %s: the lease was lost before the outcome could be recorded", outcome.job_id)
            loop.tasks.recorded(outcome, held=ok)
