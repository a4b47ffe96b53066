"""The phases of one run (a system at an offered rate) and how one is measured.

Each sustained fault lasts a phase and is followed by a recovery at the offered rate; the instant ones (a PostgreSQL
restart, the worker killed) start their phase, which is as long as a recovery. The overload offers
1.5× the highest rate the system sustained in its ramp, whatever the run's rate.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass

from bench.endurance import faults, wire
from bench.endurance.probe import Probe
from bench.endurance.processes import Driver
from bench.endurance.profiles import Profile
from bench.endurance.recorder import Counts, Recorder
from bench.endurance.results import PhaseResult, Sample, usual_depth

OVERLOAD = 1.5
DRAIN_LIMIT = 2
"""A draining recovery lasts at most this many (full) phases."""


@dataclass(frozen=True, slots=True)
class Plan:
    name: str
    title: str
    fault: str | None
    recovery: bool = False
    """As long as a recovery (else as long as a phase)."""
    overload: bool = False
    drains: bool = False
    """Goes on past its length while the backlog of the phase before is still there (up to DRAIN_LIMIT phases):
    the phases after it would otherwise measure that backlog rather than their fault."""
    shared_title: str | None = None
    """The title on a shared server, where the fault is a stand-in (`faults.restart`)."""


PLAN = (
    Plan("clean", "clean", None),
    Plan("hold", "an idle-in-transaction connection holding the xmin horizon", "hold"),
    Plan("after-hold", "recovery after the hold", None, recovery=True),
    Plan("readers", "four REPEATABLE READ connections scanning the hot tables", "readers"),
    Plan("after-readers", "recovery after the readers", None, recovery=True),
    Plan("overload", f"overload: {OVERLOAD}× the highest rate sustained in the ramp", None, overload=True),
    Plan("after-overload", "recovery after the overload, until its backlog is gone", None, recovery=True, drains=True),
    Plan(
        "restart",
        "PostgreSQL restarted (pg_ctl restart -m fast), then recovery",
        "restart",
        recovery=True,
        shared_title="every connection cut at once (what a restart does; the server is shared), then recovery",
    ),
    Plan("kill-worker", "worker SIGKILL (started again at once), then recovery", "kill-worker", recovery=True),
    Plan("churn", "the system's connections cut every second", "churn"),
    Plan("after-churn", "recovery after the cuts", None, recovery=True),
)


class Session:
    """A run's live parts: its producer and worker, what they report, the probe, the clock."""

    def __init__(
        self, recorder: Recorder, producer: Driver, worker: Driver, probe: Probe, target: faults.Target
    ) -> None:
        self.recorder, self.producer, self.worker, self.probe, self.target = recorder, producer, worker, probe, target
        self.began = time.monotonic()

    def check(self) -> None:
        for driver in (self.producer, self.worker):
            if driver.failure:
                raise RuntimeError(driver.failure)

    async def offer(self, rate: float) -> None:
        await self.producer.send({"rate": rate})

    async def measure(
        self,
        plan: Plan,
        seconds: float,
        rate: float,
        every: float,
        *,
        exact: bool = True,
        give_up: int | None = None,
        drain_until: float | None = None,
    ) -> PhaseResult:
        """Offer `rate` for `seconds` under the plan's fault, a sample every `every` seconds; at the end, with
        `exact`, pgstattuple of every relation. It ends early once more than `give_up` jobs wait, and goes on
        while more than a kept-up phase leaves wait, up to `drain_until` seconds."""
        recorder = self.recorder
        await self.offer(rate)
        recorder.take_phase()
        before, crashes = recorder.counts(), self.worker.crashes
        start = time.monotonic()
        stop = await faults.FAULT[plan.fault](self.target)
        samples: list[Sample] = []
        mark = (start, before)
        try:
            while (left := self._left(start, seconds, drain_until, rate, every)) > 0:
                await asyncio.sleep(min(every, left))
                self.check()
                sample, mark = await self._sample(plan.name, mark)
                samples.append(sample)
                if give_up is not None and recorder.depth > give_up:
                    break
        finally:
            await stop()
        elapsed = time.monotonic() - start
        span = recorder.counts().minus(before)
        return PhaseResult(
            name=plan.name,
            title=self.title(plan),
            start=start - self.began,
            seconds=elapsed,
            offered=rate,
            sent_per_s=span.sent / elapsed,
            finished_per_s=span.finished / elapsed,
            latency=recorder.take_phase(),
            depth_end=recorder.depth,
            depth_max=max([recorder.depth, *(sample.depth for sample in samples)]),
            redeliveries=span.redeliveries,
            enqueue_errors=span.errors,
            worker_crashes=self.worker.crashes - crashes,
            xid_age_max=max((sample.pressure.xid_age for sample in samples), default=0),
            xact_seconds_max=max((sample.pressure.xact_seconds for sample in samples), default=0.0),
            storage=await self.probe.storage() if exact else [],
            samples=samples,
        )

    def title(self, plan: Plan) -> str:
        if self.target.restart is None and plan.shared_title is not None:
            return plan.shared_title
        return plan.title

    def _left(self, start: float, seconds: float, drain_until: float | None, rate: float, every: float) -> float:
        """Seconds the phase has left (one more window while it drains a backlog)."""
        elapsed = time.monotonic() - start
        if elapsed < seconds:
            return seconds - elapsed
        draining = drain_until is not None and elapsed < drain_until and self.recorder.depth > usual_depth(rate)
        return every if draining else 0.0

    async def _sample(self, phase: str, mark: tuple[float, Counts]) -> tuple[Sample, tuple[float, Counts]]:
        """The window since `mark` (when it began, the recorder's counts then), and the mark of the next one."""
        now, counts = time.monotonic(), self.recorder.counts()
        since, last = mark
        span = counts.minus(last)
        sample = Sample(
            t=now - self.began,
            phase=phase,
            latency=self.recorder.take_window(),
            finished_per_s=span.finished / (now - since),
            sent_per_s=span.sent / (now - since),
            depth=self.recorder.depth,
            lag=self.recorder.lag,
            pressure=await self.probe.pressure(),
        )
        return sample, (now, counts)

    async def drain(self, within: float) -> None:
        """Nothing offered until every job sent has finished, or `within` seconds."""
        await self.offer(0)
        await asyncio.sleep(2 * wire.PRODUCER_REPORT_EVERY)  # the producer's last enqueues reported
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.recorder.idle.wait(), within)


def seconds_of(plan: Plan, profile: Profile) -> float:
    return profile.recovery_seconds if plan.recovery else profile.phase_seconds
