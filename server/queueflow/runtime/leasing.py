"""Lease or wait: the one idle loop behind the HTTP long-poll (`POST /v1/worker/lease` with `wait_seconds`) and
the in-process runner's lease source.

Claim now; if nothing is claimable, park until the first of: a wake-up for one of the queues (the notifier's
NOTIFY, or the in-memory store's signal), the next due time of a delayed job, retry or rate-limit token of those
queues, the safety poll, the caller's deadline; then claim again. A job that becomes due announces nothing when
it does (no row is inserted), so without the due time an idle lessee would take it up to a safety poll late.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from queueflow.core.types import Job
from queueflow.engine import Engine
from queueflow.runtime.wakeups import Watch


@dataclass(frozen=True, slots=True)
class LeaseAsk:
    """What one lease asks the engine for (`Engine.lease`'s arguments)."""

    queues: Sequence[str]
    max_jobs: int = 1
    lease_seconds: float = 30.0
    task_names: Sequence[str] | None = None
    scope: str | None = None
    """The tenant a worker key is scoped to; None: every tenant."""

    async def claim(self, engine: Engine) -> list[Job]:
        return await engine.lease(
            self.queues,
            max_jobs=self.max_jobs,
            lease_seconds=self.lease_seconds,
            task_names=self.task_names,
            scope=self.scope,
        )


def never() -> bool:
    return False


async def lease_or_wait(
    engine: Engine,
    watch: Watch,
    ask: LeaseAsk,
    *,
    safety_poll: float,
    deadline: float | None = None,
    stopped: Callable[[], bool] = never,
    since: datetime | None = None,
    claim_after_wait: bool = True,
    claiming: Callable[[], object] = never,
) -> list[Job]:
    """The jobs claimed, as soon as there are any; [] once `deadline` (a `time.monotonic()` value; None: no
    deadline) has passed, or once `stopped()` is true after a claim or a wait. Without `claim_after_wait`, [] as
    soon as a wait ends: the caller leases again, at once (the in-process runner, whose worker loop counts a
    lease's time from when it asked for it, so a claim made after a long wait would look as old as the wait).

    `watch` must be armed on `ask.queues` before the call (`Wakeups.watching`), so that work arriving between a
    claim and the wait is never missed; whoever stops the wait sets its event. The deadline is wall-clock
    (monotonic) time, not the engine's clock: it is about the caller's patience. The due time is the engine's
    clock, and the wait until it is measured on that clock too (a TestClock's tests move it, and wake the watch).
    Each wait is capped at the safety poll, so a lost wake-up costs at most that long. Store errors propagate:
    the HTTP route answers them, the in-process source logs them and waits.

    `claiming` is called just before each claim (the HTTP route times the claim that answers).

    `since`: the time of an empty claim made with `watch` already armed, and nothing notified since: a claim now
    would find nothing new either, so the first claim is left out and the wait begins at once (as after that
    claim). The in-process source passes it after a lease that came back short.
    """
    claimed_at = since
    while True:
        if claimed_at is None:
            claimed_at = engine.clock.now()
            claiming()
            jobs = await ask.claim(engine)
            if jobs or stopped():
                return jobs
        wait = safety_poll
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            wait = min(wait, remaining)
        # Asked from the time of the empty claim, so a job that became due since is answered (in the past: no
        # wait, claim again at once), and one of another task that stays unclaimed is not (no busy loop).
        due = await engine.next_due(ask.queues, after=claimed_at)
        if due is not None:
            wait = min(wait, max((due - engine.clock.now()).total_seconds(), 0.0))
        await watch.wait(wait)
        claimed_at = None
        if stopped() or not claim_after_wait:
            return []
