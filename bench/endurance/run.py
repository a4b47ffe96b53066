"""One endurance run: for each system, on a database of its own (on the run's own cluster, `cluster`, unless it is
given a shared server), first the ramp (the highest rate it sustains, whose 1.5× its overload phase offers), then
for each offered rate asked for (the profile's, or some of them) every phase of `phases.PLAN`, on tables emptied
before the rate, then a drain and the count of jobs never finished. Each rate's run, once ended, is handed on as one
part (`parts`) to be stored at once: a session that ends in the middle of the next keeps it.

A system that cannot keep up with a rate in the clean phase is reported as falling behind at that rate and is not
put under the faults at it (its figures would measure its backlog, not the fault). A step that fails is recorded
and the run goes on with the next system; the run then exits non-zero.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import time
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from bench.endurance import cluster, faults
from bench.endurance.parts import Part
from bench.endurance.phases import DRAIN_LIMIT, OVERLOAD, PLAN, Plan, Session, seconds_of
from bench.endurance.probe import Probe
from bench.endurance.processes import Driver
from bench.endurance.profiles import Profile
from bench.endurance.recorder import Recorder
from bench.endurance.results import PhaseResult, RampStep, Results, RunResult, SystemResult
from bench.endurance.systems import Deployment, System, deploy
from bench.machine import describe, revision

KEEP_UP = 0.95
"""A rate is kept up with when at least this share of it finishes (and the backlog stays small: PhaseResult)."""
GIVE_UP_SECONDS = 60
"""A clean phase ends early once this many seconds of offered work wait: the system has fallen behind."""


@asynccontextmanager
async def _session(
    deployment: Deployment, probe: Probe, logs: Path, restart: Callable[[], Awaitable[None]] | None
) -> AsyncIterator[Session]:
    """The system's producer and worker, reporting to one recorder for the ramp and every rate (started once: each
    takes seconds to import on a loaded machine)."""
    recorder, system = Recorder(), deployment.system
    stem = logs / system.name.lower()
    worker = Driver(
        f"{system.name} worker", deployment.worker, stem.with_suffix(".worker.log"), recorder.on_worker, restart=True
    )
    producer = Driver(
        f"{system.name} producer",
        deployment.producer,
        stem.with_suffix(".producer.log"),
        recorder.on_producer,
        restart=False,
    )
    try:
        await asyncio.gather(worker.start(), producer.start())
        yield Session(
            recorder,
            producer,
            worker,
            probe,
            faults.Target(deployment.database.url, system.hot, probe, worker, restart),
        )
    finally:
        await producer.stop()
        await worker.stop()


def _kept_up(phase: PhaseResult) -> bool:
    return phase.kept_up and phase.finished_per_s >= KEEP_UP * phase.offered


def _line(system: System, phase: PhaseResult) -> str:
    latency = phase.latency
    p50 = f"{latency.p50:.1f}" if latency.p50 is not None else "—"
    p99 = f"{latency.p99:.1f}" if latency.p99 is not None else "—"
    return (
        f"  {system.name} {phase.offered:.0f}/s {phase.name}: pickup p50/p99 {p50}/{p99} ms, "
        f"{phase.finished_per_s:.0f}/s finished, depth {phase.depth_end}, {phase.seconds:.0f} s"
    )


async def _ramp(session: Session, system: System, profile: Profile) -> tuple[float | None, list[RampStep]]:
    """Offered rates rising by `ramp_factor` a step until one is not kept up with; the last kept up with."""
    steps: list[RampStep] = []
    sustained, rate = None, profile.ramp_start
    await session.offer(rate)
    await asyncio.sleep(profile.warm_up_seconds)
    for _ in range(profile.ramp_steps):
        seconds = profile.ramp_step_seconds
        phase = await session.measure(Plan("ramp", f"ramp {rate:.0f}/s", None), seconds, rate, seconds, exact=False)
        kept_up = _kept_up(phase) and phase.sent_per_s >= KEEP_UP * rate
        steps.append(RampStep(rate, phase.sent_per_s, phase.finished_per_s, phase.depth_end, kept_up))
        print(_line(system, phase) + ("" if kept_up else ": not kept up"), flush=True)
        if not kept_up:
            break
        sustained, rate = rate, rate * profile.ramp_factor
    await session.drain(profile.drain_seconds)
    return sustained, steps


async def _run_rate(session: Session, system: System, profile: Profile, rate: float, overload: float) -> RunResult:
    """Every phase at `rate` (the overload's at `overload`), then the drain and what never finished."""
    result = RunResult(system.name, rate, overload)
    before = session.recorder.counts()
    for plan in PLAN:
        offered = overload if plan.overload else rate
        give_up = int(rate * GIVE_UP_SECONDS) if plan.name == "clean" and profile.judge else None
        drain_until = DRAIN_LIMIT * profile.phase_seconds if plan.drains else None
        phase = await session.measure(
            plan, seconds_of(plan, profile), offered, profile.sample_seconds, give_up=give_up, drain_until=drain_until
        )
        result.phases.append(phase)
        print(_line(system, phase), flush=True)
        if plan.name == "clean" and profile.judge and not _kept_up(phase):
            result.fell_behind = (
                f"falls behind at {rate:g} jobs/s: {phase.finished_per_s:.0f}/s finished, "
                f"{phase.depth_end} jobs waiting after {phase.seconds:.0f} s"
            )
            print(f"  {system.name}: {result.fell_behind}", flush=True)
            break
    await session.drain(profile.drain_seconds)
    result.finished = session.recorder.counts().minus(before).finished
    result.unseen = session.recorder.outstanding
    result.unfinished = await session.probe.unfinished()
    result.total_bytes = (await session.probe.pressure()).total_bytes
    return result


async def _system(
    system: System,
    found: SystemResult,
    profile: Profile,
    rates: Sequence[float],
    logs: Path,
    admin_url: str,
    own: cluster.Cluster | None,
    keep: Callable[[SystemResult, RunResult], None],
) -> None:
    """Fills `found` as it goes, and hands each rate's run to `keep` as it ends: what was measured before a failure
    is still reported."""
    async with deploy(system, logs, profile.lease_seconds, admin_url) as deployment:
        probe = await Probe(deployment.database.url, system).open()
        restart = functools.partial(cluster.restart, own) if own is not None else None
        try:
            async with _session(deployment, probe, logs, restart) as session:
                found.sustained, found.ramp = await _ramp(session, system, profile)
                overload = OVERLOAD * (found.sustained or profile.ramp_start)
                print(
                    f"  {system.name} sustains {found.sustained or 0:.0f} jobs/s: overload at {overload:.0f}",
                    flush=True,
                )
                for rate in rates:
                    session.recorder.write_off()  # whatever the drain left, the reset deletes
                    await probe.reset()
                    measured = await _run_rate(session, system, profile, rate, overload)
                    found.runs.append(measured)
                    keep(found, measured)
        finally:
            await probe.close()


async def run(
    profile: Profile,
    systems: list[System],
    logs: Path,
    admin_url: str,
    own: cluster.Cluster | None,
    *,
    rates: Sequence[float],
    keep: Callable[[Part], None],
) -> Results:
    """On the server `admin_url` names: `own`, the run's own cluster (which the restart phase restarts), or, when
    `own` is None, a server others share. `keep` stores each system's run at each rate as it ends."""
    server = {"own_cluster": own is not None, **await cluster.settings(admin_url)}
    commit, dirty = revision() or (None, False)
    results = Results(profile.name, dataclasses.asdict(await describe(admin_url)), server, commit, dirty)

    def ended(system: SystemResult, measured: RunResult) -> None:
        keep(Part.of(profile, results, system, measured))

    for system in systems:
        print(f"· {system.name}", flush=True)
        began = time.monotonic()
        found = SystemResult(system.name, system.hot)
        results.systems.append(found)
        try:
            await _system(system, found, profile, rates, logs, admin_url, own, ended)
        except Exception as exc:
            results.errors.append(f"{system.name}: {type(exc).__name__}: {exc}")
            traceback.print_exc()
        print(f"  ({time.monotonic() - began:.0f} s)", flush=True)
    return results
