"""The chaos suite's task code: one task, `chaos`, whose behaviour each delivery draws from the job id and the
delivery number — succeed, raise, ask to retry, run past its timeout, or fail for good — and that records every
execution and every acknowledged outcome in the ledger (`QUEUEFLOW_CHAOS_LEDGER`).

The same `registry` runs in SDK worker processes (`python -m tests.chaos.sdk_worker`) and inside servers
(`queueflow serve --tasks tests.chaos.tasks:registry`).
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from typing import Any

from queueflow_client import TaskRegistry
from queueflow_client.tasks import Fatal, JobContext, Retry
from queueflow_worker import Outcome

from tests.chaos.ledger import Ledger

TIMEOUT_SECONDS = 2.0
"""Every chaos job's `timeout_seconds`: a delivery that runs past it loses its lease."""
OVERRUN = (0.12, 0.14)
"""A first delivery whose draw falls in this range runs past its timeout on purpose."""


def draw(job_id: str, delivery: int) -> float:
    """A number in [0, 1) fixed by the job and its delivery, so a run can be replayed: the TypeScript worker's
    (ts_worker.mjs) too, so the checks know which deliveries overran on purpose whoever ran them."""
    digest = hashlib.sha256(f"{job_id}:{delivery}".encode()).digest()
    return int.from_bytes(digest[:4], "big") / 2**32


def ends_the_job(job_id: str, delivery: int) -> bool:
    """Whether this delivery's execution, run to its end, settles the job for good — it succeeds, or fails for
    good — as `chaos` decides: not one that raises or asks to retry (the job is meant to run again), nor a first
    delivery that overruns its timeout on purpose (its lease is lost, the job is meant to run again)."""
    roll = draw(job_id, delivery)
    return roll >= OVERRUN[1] if delivery == 1 else roll >= OVERRUN[0]


class LedgerRegistry(TaskRegistry):
    def __init__(self) -> None:
        super().__init__()
        self._ledger: Ledger | None = None

    @property
    def ledger(self) -> Ledger:
        if self._ledger is None:
            self._ledger = Ledger.from_env()
        return self._ledger

    def recorded(self, outcome: Outcome, *, held: bool) -> None:
        """Write each outcome the server answered into the ledger."""
        if outcome.error is None:
            nonce = outcome.result.get("nonce") if isinstance(outcome.result, dict) else None
            self.ledger.outcome(outcome.job_id, "complete", nonce, held)
        else:
            self.ledger.outcome(outcome.job_id, "fail", None, held)


registry = LedgerRegistry()


@registry.task("chaos")
async def chaos(payload: dict[str, Any], ctx: JobContext) -> dict[str, Any]:
    nonce = uuid.uuid4().hex
    registry.ledger.executed(ctx.job_id, ctx.delivery_count, nonce)
    try:
        if payload.get("ms"):
            await asyncio.sleep(payload["ms"] / 1000)  # the task's own work
        roll = draw(ctx.job_id, ctx.delivery_count)
        if roll < 0.07:
            raise RuntimeError("chaos: this delivery raised")
        if roll < 0.12:
            raise Retry("chaos: asked to retry", after=0.1)
        if roll < OVERRUN[1] and ctx.delivery_count == 1:
            await asyncio.sleep(TIMEOUT_SECONDS + 1)  # past the lease: the janitor reclaims it as timed out
        if roll < 0.15:
            raise Fatal("chaos: failed for good")
        return {"nonce": nonce}
    finally:
        if payload.get("seq"):  # a job of a sequence: when each execution ended, for `checks.sequence_violations`
            registry.ledger.returned(ctx.job_id, ctx.delivery_count, nonce)


@registry.task("chaos_grow")
async def chaos_grow(payload: dict[str, Any], ctx: JobContext) -> dict[str, Any]:
    """A growing workflow's step: adds the steps its payload lists (`add`: the maps its join waits for), then meets
    the fate `chaos` draws. A later delivery (after a raise, a retry, a lost lease) adds them again: a repeat, which
    adds nothing twice (`checks`: one job a step)."""
    await ctx.add_steps(payload["add"])
    return await chaos(payload, ctx)
