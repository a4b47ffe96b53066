"""What the drivers report, kept as counts and HDR histograms (bounded memory however long the run: `hdrhistogram`,
3 significant figures), read out by window (the figures over time) and by phase.

Every job has a sequence number; a byte per job remembers whether it started and whether it finished, so a job
delivered twice (a killed worker's, or one a peer enqueued twice after a cut connection) is counted once in the
pickup latency (its first start) and once as a second delivery, and a job never finished is found at the end.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from hdrh.histogram import HdrHistogram  # type: ignore[import-untyped]

STARTED, FINISHED = 1, 2
LOWEST_US, HIGHEST_US = 1, 3_600_000_000


def _histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, 3)


@dataclass(frozen=True, slots=True)
class Latency:
    """Pickup latency percentiles in ms over some span (None: no job started in it)."""

    count: int
    p50: float | None
    p95: float | None
    p99: float | None
    max: float | None

    @classmethod
    def of(cls, histogram: HdrHistogram) -> Latency:
        count = histogram.get_total_count()
        if not count:
            return cls(0, None, None, None, None)
        at = histogram.get_value_at_percentile
        return cls(count, at(50) / 1000, at(95) / 1000, at(99) / 1000, histogram.get_max_value() / 1000)


@dataclass(frozen=True, slots=True)
class Counts:
    """Running totals at one moment; two of them subtract into a span's figures."""

    sent: int
    first_starts: int
    redeliveries: int
    finished: int
    errors: int

    def minus(self, other: Counts) -> Counts:
        return Counts(*(a - b for a, b in zip(self.tuple(), other.tuple(), strict=True)))

    def tuple(self) -> tuple[int, ...]:
        return (self.sent, self.first_starts, self.redeliveries, self.finished, self.errors)


class Recorder:
    """One run's reports (a run: one system at one offered rate, or its ramp)."""

    def __init__(self) -> None:
        self._jobs = bytearray()
        self._sent = self._first = self._again = self._finished = self._errors = 0
        self.lag = 0.0
        """The producer's latest: seconds behind its schedule."""
        self.window = _histogram()
        self.phase = _histogram()
        self.idle = asyncio.Event()
        """Set while every job enqueued has finished."""

    def _update_idle(self) -> None:
        if self.outstanding:
            self.idle.clear()
        else:
            self.idle.set()

    def _grow(self, n: int) -> None:
        if n >= len(self._jobs):
            self._jobs.extend(bytes(max(n + 1 - len(self._jobs), len(self._jobs) // 2, 1024)))

    def on_producer(self, message: dict[str, Any]) -> None:
        self._sent, self._errors, self.lag = message["sent"], message["errors"], message["lag"]
        self._update_idle()

    def on_worker(self, message: dict[str, Any]) -> None:
        jobs = self._jobs
        for n, latency_us in message["s"]:
            self._grow(n)
            if jobs[n] & STARTED:
                self._again += 1
                continue
            jobs[n] |= STARTED
            self._first += 1
            value = min(max(latency_us, LOWEST_US), HIGHEST_US)
            self.window.record_value(value)
        for n in message["d"]:
            self._grow(n)
            if not jobs[n] & FINISHED:
                jobs[n] |= FINISHED
                self._finished += 1
        self._update_idle()

    def write_off(self) -> int:
        """Count every job enqueued so far as settled (how many were not): their tables are about to be emptied for
        the next run, which must neither wait for them nor count them. Nothing may be offered or in flight (jobs are
        numbered in the order they are sent, so those sent so far are the first `sent`)."""
        unsettled = self.outstanding
        self._grow(self._sent)
        self._jobs[: self._sent] = bytes([STARTED | FINISHED]) * self._sent
        self._first = self._finished = self._sent
        self._update_idle()
        return unsettled

    def counts(self) -> Counts:
        return Counts(self._sent, self._first, self._again, self._finished, self._errors)

    @property
    def depth(self) -> int:
        """Jobs enqueued and not yet started (a start may be reported before its enqueue's answer: never below 0)."""
        return max(0, self._sent - self._first)

    @property
    def outstanding(self) -> int:
        """Jobs enqueued and not yet finished."""
        return max(0, self._sent - self._finished)

    def take_window(self) -> Latency:
        """The window since the last one; its values move into the phase's histogram (recording each start once)."""
        latency = Latency.of(self.window)
        self.phase.add(self.window)
        self.window.reset()
        return latency

    def take_phase(self) -> Latency:
        """The phase so far (its last window included), and a new phase from now."""
        self.phase.add(self.window)
        self.window.reset()
        latency = Latency.of(self.phase)
        self.phase.reset()
        return latency
