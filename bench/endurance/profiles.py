"""How long each phase and step of an endurance run lasts: `full` (the figures issue 42 asks for, 10-minute holds;
about six hours on a quiet machine, measured in parts where a session is shorter: `parts`), `short` (2-minute holds),
`smoke` (seconds a phase, QueueFlow alone: the test suite's proof that the harness runs end to end, no figure
asserted). Parts measured with one profile are combined only with parts of the same profile with the same settings."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    rates: tuple[int, ...]
    """Offered jobs/s: each rate is one run of every phase, on tables emptied before it."""
    phase_seconds: float
    """The clean phase, and each sustained fault: the held horizon, the readers, the overload, the cut connections."""
    recovery_seconds: float
    """After each sustained fault, and after each instant one (a PostgreSQL restart, the worker killed)."""
    sample_seconds: float
    """One window of the figures over time: pickup percentiles, completions/s, depth, dead tuples, size."""
    ramp_start: float
    """The ramp that finds the highest rate a system sustains (its overload phase offers 1.5× that): from this rate,"""
    ramp_factor: float
    """× this a step,"""
    ramp_steps: int
    """at most this many steps,"""
    ramp_step_seconds: float
    """each this long; it stops at the first step the system does not keep up with."""
    warm_up_seconds: float
    """Before the ramp, the ramp's first rate offered unmeasured: a worker's first lease, connections, caches."""
    peers: bool
    """PgQueuer and Procrastinate beside QueueFlow."""
    lease_seconds: float
    """The QueueFlow worker's lease (the SDK's default, 30 s, but in the smoke profile): how long jobs held by a
    killed worker wait before they are delivered again."""
    drain_seconds: float
    """After the last phase, how long the harness waits for every job sent to finish before it counts the rest
    lost (longer than a lease, so jobs of the killed worker are back)."""
    judge: bool = True
    """Whether a system that falls behind in the clean phase is spared the faults at that rate. The smoke profile's
    phases are too short to judge (a report's 0.1-0.2 s delay is 10% of them), and it must run every phase."""


FULL = Profile(
    name="full",
    rates=(150, 1000),
    phase_seconds=600,
    recovery_seconds=120,
    sample_seconds=5,
    ramp_start=150,
    ramp_factor=1.25,
    ramp_steps=20,
    ramp_step_seconds=30,
    warm_up_seconds=10,
    peers=True,
    lease_seconds=30,
    drain_seconds=90,
)

SHORT = Profile(
    name="short",
    rates=(150, 1000),
    phase_seconds=120,
    recovery_seconds=60,
    sample_seconds=5,
    ramp_start=150,
    ramp_factor=1.25,
    ramp_steps=20,
    ramp_step_seconds=15,
    warm_up_seconds=10,
    peers=True,
    lease_seconds=30,
    drain_seconds=60,
)

SMOKE = Profile(
    name="smoke",
    rates=(150,),
    phase_seconds=1,
    recovery_seconds=1,
    sample_seconds=1,
    ramp_start=150,
    ramp_factor=2,
    ramp_steps=1,
    ramp_step_seconds=1,
    warm_up_seconds=1,
    peers=False,
    lease_seconds=3,
    drain_seconds=10,
    judge=False,
)

PROFILES = {profile.name: profile for profile in (FULL, SHORT, SMOKE)}
