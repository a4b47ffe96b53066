"""docs/endurance.md, built from the parts present (`parts`): how it was measured, which parts it holds (their
revisions, machines and servers) and which of the profile's systems and rates have none yet, the ramps, issue 42's
target figures side by side, then per offered rate and system the phases, the storage at each phase's end, and the
plots."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.endurance.cluster import SETTINGS
from bench.endurance.faults import READERS
from bench.endurance.parts import Combined, Part, label
from bench.endurance.phases import DRAIN_LIMIT, OVERLOAD
from bench.endurance.results import BACK_FACTOR, KEPT_UP_DEPTH_SECONDS, PhaseResult, RampStep, RunResult, SystemResult
from bench.endurance.systems import CONCURRENCY
from bench.endurance.wire import JOB_SECONDS, PAYLOAD_BYTES, SENDERS, TICK

MB = 2**20


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f}"


def _ratio(value: float | None, base: float | None) -> float | None:
    return None if value is None or not base else value / base


def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "—" if value is None else format(value, spec)


def _server(server: dict[str, Any], whose: str) -> str:
    """`whose`: the parts that ran on it, where they did not all run on one kind of server."""
    settings = ", ".join(f"`{name} = {server[name]}`" for name in SETTINGS if name in server)
    if server.get("own_cluster"):
        return (
            f"PostgreSQL{whose}: a cluster of the run's own (initdb, removed after the run) with PostgreSQL's "
            f"defaults, as in production ({settings}): autovacuum vacuums and analyses the tables as it would "
            "there, and the restart phase restarts it (`pg_ctl restart -m fast`)."
        )
    off = (
        " With autovacuum off nothing vacuums or analyses the tables, unlike production: a recovery after the hold "
        "cannot recover, and a plan made on an empty table is kept."
        if server.get("autovacuum") == "off"
        else ""
    )
    return (
        f"PostgreSQL{whose}: a server shared with others (`--shared-server`; {settings}).{off} It may not be "
        "restarted: its effect on the system, every connection of its database cut at once "
        "(`pg_terminate_backend`), stands in for the restart."
    )


def _header(combined: Combined) -> list[str]:
    profile = combined.profile
    dates = sorted({part.machine["date"] for part in combined.parts})
    when = " to ".join(sorted({dates[0], dates[-1]})) if dates else "never"
    return [
        "# Endurance: QueueFlow and its peers under pressure",
        "",
        f"`make endurance` (bench/endurance, issue 42), **{profile.name} profile**, measured in parts (one system at "
        f"one offered rate each; the parts, below) by runs begun {when}.",
        "",
        f"Each system runs on a database of its own: a producer offers jobs at a fixed rate paced on wall-clock time "
        f"(every {TICK * 1000:g} ms at most, all that is due in one enqueue, up to {SENDERS} in flight; "
        f"{PAYLOAD_BYTES}-byte payloads; QueueFlow's through "
        f"`POST /v1/jobs/batch` with an idempotency key per job, as the SDK sends them), one worker with {CONCURRENCY} "
        f"slots runs {JOB_SECONDS * 1000:g} ms jobs (QueueFlow: the Python SDK's `Worker`). **Pickup latency** is "
        "from the producer's clock just before the enqueue is sent to the worker's task starting (a job's first "
        "delivery; HDR histogram). Depth: jobs enqueued and not yet started. Phases: "
        f"{profile.phase_seconds:g} s for the clean phase and each sustained fault, {profile.recovery_seconds:g} s "
        f"for each recovery and each instant fault; figures over time in {profile.sample_seconds:g} s windows. "
        f"The overload offers {OVERLOAD}× the highest rate the system kept up with in its ramp; the recovery after it "
        f"goes on until its backlog is worked off (at most {DRAIN_LIMIT} phases), so that the faults after it are "
        "measured without it. The harness's own statistics connection is never one the faults cut (a restart ends "
        "it too, and it opens another). "
        "*Oldest transaction*: the longest open among the database's client backends, and in brackets the oldest "
        "XID or snapshot's age, which a writing transaction in another database of the server also holds back.",
        "",
        f"A phase *kept up* when fewer jobs waited at its end than {KEPT_UP_DEPTH_SECONDS:g} s of the offered rate. "
        f"*Back*: seconds from a phase's start to the window from which every window's pickup p99 stayed within "
        f"{BACK_FACTOR}× the clean phase's. A system that does not keep up with a rate in its clean phase falls "
        "behind at that rate, which is reported, and is not put under the faults at it.",
        "",
    ]


def _revision(part: Part) -> str:
    return f"`{part.revision or 'unknown'}`" + (" + uncommitted changes" if part.dirty else "")


def _part_row(part: Part) -> str:
    machine = part.machine
    cells = [
        f"`{part.file_name}`",
        part.system.system,
        f"{part.run.rate:g}",
        machine["date"],
        _revision(part),
        f"{machine['postgres_version']}, {'its own cluster' if part.server.get('own_cluster') else 'a shared server'}",
        f"{machine['cores']} cores ({machine['cpu_model']}), {machine['ram_gib']:.1f} GiB, "
        f"load average {machine['load_average']}",
    ]
    return "| " + " | ".join(cells) + " |"


def _parts(combined: Combined, store: str) -> list[str]:
    """Which parts the report holds, what each ran on, and which pairs of the profile have none yet."""
    parts, profile = combined.parts, combined.profile
    lines = [
        "## The parts",
        "",
        f"Each part is one system at one offered rate, stored in `{store}/` by the run that measured it (a later run "
        "of the same system and rate replaces it); this report is built from every part there, whichever run "
        "measured it (`python -m bench.endurance --report-only` builds it again). A run measures a system's ramp "
        "once, before its rates: parts of different runs have ramps of their own. The load average is the "
        "machine's when the run began.",
        "",
        "| part | system | offered/s | run began | revision | PostgreSQL | machine |",
        "|---" * 7 + "|",
        *(_part_row(part) for part in parts),
        "",
    ]
    if combined.missing:
        system, rate = combined.missing[0]
        make = "make endurance" + (f" ENDURANCE_PROFILE={profile.name}" if profile.name != "full" else "")
        lines += [
            f"**Not measured yet** (no part): {', '.join(label(*pair) for pair in combined.missing)}. "
            f'`{make} ENDURANCE_ARGS="--system {system.lower()} --rate {rate:g}"` measures the first.',
            "",
        ]
    else:
        lines += [f"Every system at every rate of the {profile.name} profile has its part.", ""]
    revisions = {(part.revision, part.dirty) for part in parts}
    if len(revisions) > 1:
        lines += [
            f"**The parts come from {len(revisions)} revisions** (each part's in its row): two parts' figures may "
            "differ by the code between their revisions as well as by what was measured.",
            "",
        ]
    if any(part.dirty for part in parts):
        lines += [
            "*+ uncommitted changes*: the tree had changes not in that commit, so the code measured was not quite "
            "the revision's.",
            "",
        ]
    servers: list[dict[str, Any]] = []
    for part in parts:
        if part.server not in servers:
            servers.append(part.server)
    for server in servers:
        whose = [part.label for part in parts if part.server == server]
        lines += [_server(server, "" if len(servers) == 1 else f" of {', '.join(whose)}"), ""]
    return lines


def _ramp(combined: Combined) -> list[str]:
    lines = ["## The highest rate each system sustains (the ramp)", ""]
    lines += [
        "| system | for its runs at | kept up with | overload offered | steps: offered → finished/s (depth) |",
        "|---|---|---|---|---|",
    ]
    ramps: dict[tuple[str, float | None, tuple[RampStep, ...]], list[Part]] = {}
    for system in combined.systems:
        for rate in combined.rates:
            if part := combined.part(system, rate):
                ramps.setdefault((system, part.system.sustained, tuple(part.system.ramp)), []).append(part)
    for (system, sustained, ramp), parts in ramps.items():
        steps = ", ".join(
            f"{step.rate:.0f} → {step.finished_per_s:.0f}{'' if step.kept_up else ' ✗'} ({step.depth})" for step in ramp
        )
        rates = ", ".join(f"{part.run.rate:g}" for part in parts)
        overload = _fmt(parts[0].run.overload, ",.0f")
        lines.append(f"| {system} | {rates} jobs/s | {_fmt(sustained, ',.0f')} jobs/s | {overload} | {steps} |")
    return [*lines, ""]


Figure = Callable[[RunResult, SystemResult], Any]


def _hold_back(run: RunResult, system: SystemResult) -> float | None:
    clean, after = run.phase("clean"), run.phase("after-hold")
    return after.back_after(clean.latency.p99) if clean and after else None


def _p99_ratio(name: str) -> Figure:
    def figure(run: RunResult, system: SystemResult) -> float | None:
        clean, phase = run.phase("clean"), run.phase(name)
        return _ratio(phase.latency.p99, clean.latency.p99) if clean and phase else None

    return figure


def _hold_throughput(run: RunResult, system: SystemResult) -> float | None:
    hold = run.phase("hold")
    return _ratio(hold.finished_per_s, hold.offered) if hold else None


def _hold_growth(run: RunResult, system: SystemResult) -> float | None:
    clean, hold = run.phase("clean"), run.phase("hold")
    return _ratio(hold.hot_bytes(system.hot), clean.hot_bytes(system.hot)) if clean and hold else None


TARGETS: list[tuple[str, Figure, str, str]] = [
    ("pickup p99 during the hold ÷ clean p99", _p99_ratio("hold"), ".2f", "≤ 1.5"),
    ("completions/s during the hold ÷ offered", _hold_throughput, ".3f", "≥ 0.99"),
    (f"pickup p99 with {READERS} REPEATABLE READ readers ÷ clean", _p99_ratio("readers"), ".2f", "≤ 1.5"),
    ("seconds back to the clean p99 after the hold", _hold_back, ".0f", "≤ 10 s"),
    ("hot table + indexes at the hold's end ÷ at the clean phase's end", _hold_growth, ".2f", "≤ 2"),
    ("pickup p99 in the recovery after the hold ÷ clean", _p99_ratio("after-hold"), ".2f", "≤ 1.5"),
    ("bytes on disk per finished job (every table and index)", lambda run, system: run.bytes_per_job, ",.0f", ""),
]


def _targets(combined: Combined) -> list[str]:
    systems = combined.systems
    lines = ["## Issue 42's figures", ""]
    lines += [
        f"| figure | rate | {' | '.join(systems)} | target |",
        "|---" * (len(systems) + 3) + "|",
    ]
    for name, figure, spec, target in TARGETS:
        for rate in combined.rates:
            cells = []
            for system in systems:
                part = combined.part(system, rate)
                if part is None:
                    cells.append("no part")
                elif part.run.fell_behind and name != TARGETS[-1][0]:
                    cells.append("falls behind")
                else:
                    cells.append(_fmt(figure(part.run, part.system), spec))
            lines.append(f"| {name} | {rate:g}/s | {' | '.join(cells)} | {target} |")
    # Compared at one rate, the lowest with a part of Procrastinate's (the parts come by rate).
    procrastinate = next((part for part in combined.parts if part.system.system == "Procrastinate"), None)
    base = procrastinate.run.bytes_per_job if procrastinate else None
    if procrastinate and base:
        at = [part for part in combined.parts if part.run.rate == procrastinate.run.rate]
        ratios = ", ".join(f"{part.system.system} {_fmt(_ratio(part.run.bytes_per_job, base))}" for part in at)
        lines += [
            "",
            f"Bytes per finished job ÷ Procrastinate's, at {procrastinate.run.rate:g} jobs/s (target ≤ 1.0 for "
            f"QueueFlow): {ratios}.",
        ]
    return [*lines, ""]


def _phase_row(phase: PhaseResult, clean_p99: float | None, hot: tuple[str, ...]) -> str:
    latency = phase.latency
    back = phase.back_after(clean_p99) if phase.name != "clean" else None
    dead, size = phase.hot_dead(hot), phase.hot_bytes(hot)
    cells = [
        phase.title,
        f"{phase.seconds:.0f}",
        f"{phase.offered:,.0f}",
        f"{phase.sent_per_s:,.0f}",
        f"{phase.finished_per_s:,.0f}",
        " / ".join(_ms(v) for v in (latency.p50, latency.p95, latency.p99, latency.max)),
        f"{phase.depth_end:,} ({phase.depth_max:,}){'' if phase.kept_up else ' ✗'}",
        "—" if back is None else f"{back:.0f}",
        f"{phase.redeliveries:,} / {phase.enqueue_errors:,} / {phase.worker_crashes}",
        f"{phase.xact_seconds_max:,.0f} s ({phase.xid_age_max:,})",
        _fmt(dead, ","),
        _fmt(size / MB if size is not None else None, ",.1f"),
    ]
    return "| " + " | ".join(cells) + " |"


def _run(run: RunResult, hot: tuple[str, ...], drain: float) -> list[str]:
    lines = [f"### {run.system} at {run.rate:g} jobs/s", ""]
    if run.fell_behind:
        lines += [f"**{run.system} {run.fell_behind}**: not put under the faults at this rate.", ""]
    lines += [
        "| phase | s | offered/s | enqueued/s | finished/s | pickup p50 / p95 / p99 / max ms | depth at end (max) "
        "| back (s) | 2nd deliveries / enqueue errors / worker crashes | oldest transaction (xid age) "
        "| hot table dead tuples | hot table + indexes MB |",
        "|---" * 12 + "|",
    ]
    clean = run.phase("clean")
    lines += [_phase_row(phase, clean.latency.p99 if clean else None, hot) for phase in run.phases]
    lines += [
        "",
        f"Nothing offered after the last phase, for up to {drain:g} s (the drain): {run.finished:,} jobs finished "
        f"in this run; **{_fmt(run.unfinished, ',')} left unfinished in the system's tables** (stuck, lost to a "
        f"fault, or a backlog not yet worked off); {_fmt(run.unseen, ',')} whose finish no worker reported (those, "
        "and a few whose report died with the killed worker); every relation "
        f"of the system: {run.total_bytes / MB:,.1f} MB ({_fmt(run.bytes_per_job, ',.0f')} bytes per finished job).",
        "",
    ]
    return lines + _storage(run)


def _storage(run: RunResult) -> list[str]:
    """Every table and index at each phase's end: size and dead tuples (a GIN index: size only)."""
    phases = [phase for phase in run.phases if phase.storage]
    if not phases:
        return []
    names = [relation.name for relation in phases[0].storage]
    lines = [
        "<details><summary>every table and index at each phase's end: MB / dead tuples (tables: "
        "pgstattuple_approx; indexes: pgstattuple, entries marked dead)</summary>",
        "",
        f"| relation | {' | '.join(phase.name for phase in phases)} |",
        "|---" * (len(phases) + 1) + "|",
    ]
    for name in names:
        cells = []
        for phase in phases:
            relation = next((r for r in phase.storage if r.name == name), None)
            cells.append("—" if relation is None else f"{relation.bytes / MB:,.2f} / {_fmt(relation.dead_tuples, ',')}")
        lines.append(f"| `{name}` | {' | '.join(cells)} |")
    return [*lines, "", "</details>", ""]


def markdown(combined: Combined, images: list[Path], base: Path, store: Path) -> str:
    """The report of every part in `store`; it and `images` are named relative to `base`, the report's folder."""
    lines = _header(combined) + _parts(combined, os.path.relpath(store, base)) + _ramp(combined) + _targets(combined)
    for rate in combined.rates:
        lines += [f"## {rate:g} jobs/s offered", ""]
        lines += [
            f"![{path.stem}]({os.path.relpath(path, base)})" for path in images if path.stem.startswith(f"{rate:g}-")
        ]
        lines.append("")
        for system in combined.systems:
            if part := combined.part(system, rate):
                lines += _run(part.run, part.system.hot, combined.profile.drain_seconds)
        if unmeasured := [label(*pair) for pair in combined.missing if pair[1] == rate]:
            lines += [f"No part yet of {', '.join(unmeasured)}.", ""]
    if combined.errors:
        lines += ["## Errors of the run that built this report", "", *(f"- {error}" for error in combined.errors), ""]
    return "\n".join(lines)
