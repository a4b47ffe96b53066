"""A `WorkerLoop`'s batched heartbeats: every `heartbeat_every` one call extends every lease held, waiting ones
included (and at once when the loop asks: a lease answer that arrived with less than a period of its leases left,
as a long-poll's may). A lease found lost is the loop's to drop (`WorkerLoop.lost`); a waiting job's lease that
held now lasts, on the loop's clock, until the heartbeat's sending plus `lease_seconds` (never past its deadline).
A running task's own `ctx.heartbeat()` and `ctx.progress()` are one job's heartbeat, now (`JobLease`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from queueflow_worker.context import AddedStep
from queueflow_worker.host import LoopHost
from queueflow_worker.joblog import log
from queueflow_worker.timing import MAX_BATCH, Held, first

__all__ = ["JobLease", "run"]


class Host(LoopHost, Protocol):
    """What the heartbeats need of their `WorkerLoop`."""

    heartbeat_every: float
    lease_seconds: float
    beat_now: asyncio.Event
    leases: dict[str, str]

    @property
    def waiting(self) -> Iterable[Held]: ...

    def lost(self, job_id: str, token: str) -> None: ...


async def run(loop: Host) -> None:
    clock = loop.clock
    while True:
        await first(loop.beat_now, clock, loop.heartbeat_every)
        loop.beat_now.clear()
        held = list(loop.leases.items())
        waiting = {(entry.job.id, entry.token): entry for entry in loop.waiting}
        for start in range(0, len(held), MAX_BATCH):
            chunk = held[start : start + MAX_BATCH]
            sent = clock.now()
            try:
                alive = await loop.source.heartbeat(chunk)
            except Exception as exc:  # unreachable for now: try again next time; the leases may still hold
                if not loop.is_fatal(exc):
                    log.warning("%s: heartbeat failed: %s", loop.name, exc)
                continue
            if any(alive):
                loop.horizon.answered(clock.now())
            for lease, ok in zip(chunk, alive, strict=True):
                if not ok:
                    loop.lost(*lease)
                elif (entry := waiting.get(lease)) is not None:
                    entry.extended(sent, loop.lease_seconds)


class JobLease:
    """What `ctx.heartbeat()`, `ctx.progress()` and `ctx.add_steps()` call, under this job's lease, now."""

    __slots__ = ("job_id", "loop", "token")

    def __init__(self, loop: Host, job_id: str, token: str) -> None:
        self.loop, self.job_id, self.token = loop, job_id, token

    async def heartbeat(self) -> bool:
        (held,) = await self.loop.source.heartbeat([(self.job_id, self.token)])
        return self._extended(held)

    async def progress(self, value: Any) -> bool:
        return self._extended(await self.loop.source.progress(self.job_id, self.token, value))

    async def add_steps(self, steps: list[dict[str, Any]]) -> Sequence[AddedStep]:
        return await self.loop.source.add_steps(self.job_id, self.token, steps)

    def _extended(self, held: bool) -> bool:
        if held:
            self.loop.horizon.answered(self.loop.clock.now())
        return held
