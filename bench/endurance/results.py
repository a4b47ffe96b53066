"""What an endurance run found, as plain data: the run stores it a system and rate at a time (`parts`), and the report,
the plots and results.json are built from those parts, so a report can be written again without running again."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.endurance.probe import Pressure, Relation
from bench.endurance.recorder import Latency

KEPT_UP_DEPTH_SECONDS = 2.0
"""A phase kept up when, at its end, fewer jobs wait than the offered rate brings in this many seconds."""


def usual_depth(offered: float) -> float:
    """The most jobs waiting that a phase keeping up with `offered` jobs/s may end with."""
    return max(offered * KEPT_UP_DEPTH_SECONDS, 10)


BACK_FACTOR = 1.5
"""Back to baseline: every later window's pickup p99 within this factor of the clean phase's (the issue's target
ratios are 1.5)."""


@dataclass(frozen=True, slots=True)
class Sample:
    """One window."""

    t: float
    """Seconds since the run's start (its end of window)."""
    phase: str
    latency: Latency
    finished_per_s: float
    sent_per_s: float
    depth: int
    lag: float
    pressure: Pressure


@dataclass(slots=True)
class PhaseResult:
    name: str
    title: str
    start: float
    seconds: float
    offered: float
    sent_per_s: float
    finished_per_s: float
    latency: Latency
    depth_end: int
    depth_max: int
    redeliveries: int
    enqueue_errors: int
    worker_crashes: int
    xid_age_max: int
    xact_seconds_max: float
    storage: list[Relation]
    samples: list[Sample]

    @property
    def kept_up(self) -> bool:
        return self.depth_end <= usual_depth(self.offered)

    def back_after(self, clean_p99: float | None) -> float | None:
        """Seconds from the phase's start to the end of the first window from which every window's p99 stays within
        BACK_FACTOR of the clean p99 (None: not within the phase). A window in which nothing started while jobs
        waited is not back."""
        if clean_p99 is None:
            return None
        limit = clean_p99 * BACK_FACTOR
        back: float | None = None
        for sample in self.samples:
            p99 = sample.latency.p99
            fine = p99 <= limit if p99 is not None else sample.depth == 0
            if not fine:
                back = None
            elif back is None:
                back = sample.t - self.start
        return back

    def hot_bytes(self, hot: tuple[str, ...]) -> int | None:
        """The hot tables with their indexes, at the phase's end (None: not read, as in the ramp)."""
        return sum(r.bytes for r in self.storage if r.table in hot) if self.storage else None

    def hot_dead(self, hot: tuple[str, ...]) -> int | None:
        """pgstattuple's dead tuples of the hot tables at the phase's end."""
        return sum(r.dead_tuples or 0 for r in self.storage if r.name in hot) if self.storage else None


@dataclass(slots=True)
class RunResult:
    """One system at one offered rate."""

    system: str
    rate: float
    overload: float
    phases: list[PhaseResult] = field(default_factory=list)
    fell_behind: str | None = None
    finished: int = 0
    unseen: int | None = None
    """Jobs enqueued whose finish no worker reported by the drain's end: a backlog not yet worked off, or jobs the
    system lost, or a few whose reports died with the killed worker (it prints them every 0.1 s)."""
    unfinished: int | None = None
    """Jobs the system itself still holds unfinished after the drain (stuck, or not yet run): what it lost."""
    total_bytes: int = 0
    errors: list[str] = field(default_factory=list)

    def phase(self, name: str) -> PhaseResult | None:
        return next((phase for phase in self.phases if phase.name == name), None)

    @property
    def bytes_per_job(self) -> float | None:
        return self.total_bytes / self.finished if self.finished else None


@dataclass(frozen=True, slots=True)
class RampStep:
    rate: float
    sent_per_s: float
    finished_per_s: float
    depth: int
    kept_up: bool


@dataclass(slots=True)
class SystemResult:
    system: str
    hot: tuple[str, ...]
    sustained: float | None = None
    ramp: list[RampStep] = field(default_factory=list)
    runs: list[RunResult] = field(default_factory=list)


@dataclass(slots=True)
class Results:
    """One invocation's."""

    profile: str
    machine: dict[str, Any]
    server: dict[str, Any]
    """The PostgreSQL server: whether it was the run's own cluster, and `cluster.SETTINGS` as it reported them."""
    revision: str | None
    """The commit measured, when the run began (None: not a git checkout)."""
    dirty: bool
    """Whether tracked files differed from that commit: the code measured was then not quite the revision's."""
    systems: list[SystemResult] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
