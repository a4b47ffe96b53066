"""Workflow runs → the report's figures: each QueueFlow figure beside DBOS's with their paired ratio (> 1: QueueFlow
better), server CPU per step, how fan-out time grows with width, the janitor's healed steps (issue 29's targets)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from bench import stats
from bench.report import Figure, Results, Target
from bench.scenarios.workflow_growth import ADDED_TO_LARGE, Pairs
from bench.scenarios.workflows import Shape, WorkflowRun

PEER = "DBOS"
PEER_SHAPE = "DBOS 3.4.0, queue concurrency 10"
NOT_MEASURED = math.nan

RATIO_TARGETS = {
    Shape("workflows", 1000): 2.0,
    Shape("fan-out", 1000): 2.0,
    Shape("chain", 300): 1.0,
    Shape("children", 100): 2.0,
}
SLOPE_TARGET = ((100, 9_998), 1.1)
"""Fan-out time over width from 100 to 9,998 (a 10,000-step workflow) grows at most as width^1.1."""
CPU_TARGET = ((10, 9_998), 1.5)
"""Server CPU per step of a 9,998-wide fan-out (10,000 steps) at most 1.5 × a 10-wide one's."""
SLOPE_FROM = 100
"""Narrower fan-outs (run for the CPU baseline) take too little time for their slope to say anything."""

Runs = Mapping[tuple[Shape, str], Mapping[int, WorkflowRun]]
"""(shape, side) → repetition → run."""


def by_shape(runs: Sequence[WorkflowRun]) -> dict[tuple[Shape, str], dict[int, WorkflowRun]]:
    grouped: dict[tuple[Shape, str], dict[int, WorkflowRun]] = {}
    for run in runs:
        grouped.setdefault((run.shape, run.side), {})[run.repetition] = run
    return grouped


def _value(run: WorkflowRun) -> float:
    """The shape's figure: steps/s for many workflows, seconds for a fan-out, ms per step for a chain."""
    kind = run.shape.kind
    return {"workflows": run.steps_per_second, "chain": run.ms_per_step}.get(kind, run.seconds)


UNITS = {"workflows": "steps/s", "fan-out": "s", "chain": "ms", "children": "s"}


def workflows(
    results: Results, shapes: Sequence[Shape], runs: Runs, not_run: Mapping[tuple[Shape, str], str], healed: int
) -> None:
    """`healed`: the workflow steps the janitor logged as healed while the scenarios ran (and one interval after)."""
    for shape in shapes:
        _versus_peer(results, shape, runs, not_run)
    for shape in shapes:
        cpu = [run.cpu_ms_per_step for run in runs.get((shape, "QueueFlow"), {}).values()]
        if cpu and None not in cpu:
            results.add(Figure(f"server CPU per step, {shape}", stats.median([c for c in cpu if c is not None]), "ms"))
    _cpu_ratio(results, shapes, runs)
    _slopes(results, shapes, runs, not_run)
    results.add(
        Figure(
            "workflow steps healed by the janitor during the workflow scenarios",
            healed,
            "",
            target=Target("value", "<=", 0),
        )
    )


def _versus_peer(results: Results, shape: Shape, runs: Runs, not_run: Mapping[tuple[Shape, str], str]) -> None:
    unit = UNITS[shape.kind]
    what = {"workflows": "steps/s", "fan-out": "seconds", "chain": "ms per step", "children": "seconds"}[shape.kind]
    inverse = shape.kind != "workflows"
    label = f"{shape}: {what} (ratio {'DBOS ÷ QueueFlow' if inverse else 'QueueFlow ÷ DBOS'})"
    ours = {number: _value(run) for number, run in runs.get((shape, "QueueFlow"), {}).items()}
    theirs = {number: _value(run) for number, run in runs.get((shape, PEER), {}).items()}
    target = Target("ratio", ">=", RATIO_TARGETS[shape]) if shape in RATIO_TARGETS else None
    pairs = stats.paired(theirs, ours) if inverse else stats.paired(ours, theirs)
    results.add(
        Figure(
            label,
            stats.median(list(ours.values())) if ours else NOT_MEASURED,
            unit,
            stats.median(list(theirs.values())) if theirs else None,
            PEER_SHAPE if theirs else f"DBOS {not_run.get((shape, PEER), 'not run')}",
            target,
            list(ours.values()),
            note="" if ours else not_run.get((shape, "QueueFlow"), "not run"),
            paired_ratio=pairs.median,
            inverse=inverse,
        )
    )
    for side, values in (("QueueFlow", ours), (PEER, theirs)):
        if values:
            digits = 3 if unit == "s" else (2 if unit == "ms" else 0)
            results.details.append(
                f"{shape}, {side}: " + ", ".join(f"{value:,.{digits}f}" for value in values.values()) + f" {unit}"
                " (each repetition)"
            )
    if pairs.ratios:
        results.details.append(f"{label}: {pairs.listed()} (each repetition's ratio; the table shows their median)")


def _fanouts(shapes: Sequence[Shape], runs: Runs, side: str) -> dict[int, float]:
    """Fan-out width → median seconds, for the widths `side` ran."""
    return {
        shape.size: stats.median([run.seconds for run in runs[(shape, side)].values()])
        for shape in shapes
        if shape.kind == "fan-out" and runs.get((shape, side))
    }


def _slopes(results: Results, shapes: Sequence[Shape], runs: Runs, not_run: Mapping[tuple[Shape, str], str]) -> None:
    widths = [shape.size for shape in shapes if shape.kind == "fan-out"]
    wide = [width for width in widths if width >= SLOPE_FROM] or widths
    if len(wide) < 2:
        return
    ours, theirs = _fanouts(shapes, runs, "QueueFlow"), _fanouts(shapes, runs, PEER)
    # Over every width, then over the widths DBOS ran too (when it ran fewer), to compare the two.
    ranges = [wide]
    both = [width for width in wide if width in theirs]
    if len(both) >= 2 and both != wide:
        ranges.append(both)
    for span in ranges:
        reach = (span[0], span[-1])
        slope = stats.loglog_slope([(width, ours[width]) for width in span if width in ours])
        peer = stats.loglog_slope([(width, theirs[width]) for width in span if width in theirs])
        missing = [width for width in span if width not in ours]
        note = ""
        if missing:
            reasons = {not_run.get((Shape("fan-out", width), "QueueFlow"), "not run") for width in missing}
            note = f"not run ({', '.join(f'{width:,}' for width in missing)} wide: {'; '.join(sorted(reasons))})"
        results.add(
            Figure(
                f"log–log slope of fan-out time over width, {reach[0]:,} → {reach[1]:,}",
                NOT_MEASURED if missing or slope is None else slope,
                "",
                baseline_label=f"DBOS: {peer:.2f}" if peer is not None and set(span) <= theirs.keys() else "—",
                target=Target("value", "<=", SLOPE_TARGET[1]) if reach == SLOPE_TARGET[0] else None,
                note=note,
            )
        )


def _cpu_ratio(results: Results, shapes: Sequence[Shape], runs: Runs) -> None:
    widths = sorted(shape.size for shape in shapes if shape.kind == "fan-out")
    if len(widths) < 2:
        return
    narrow, wide = widths[0], widths[-1]

    def cpu(width: int) -> float | None:
        each = [run.cpu_ms_per_step for run in runs.get((Shape("fan-out", width), "QueueFlow"), {}).values()]
        measured = [value for value in each if value is not None]
        return stats.median(measured) if measured else None

    narrow_cpu, wide_cpu = cpu(narrow), cpu(wide)
    results.add(
        Figure(
            f"server CPU per step, fan-out {wide:,} wide (÷ {narrow:,} wide)",
            NOT_MEASURED if wide_cpu is None else wide_cpu,
            "ms",
            narrow_cpu,
            f"{narrow:,} wide",
            Target("ratio", "<=", CPU_TARGET[1]) if (narrow, wide) == CPU_TARGET[0] else None,
            note="" if wide_cpu is not None else f"not run ({wide:,} wide)",
        )
    )


ADD_TARGET = 2.0
"""Issue 31: adding 1,000 steps in one call costs at most 2 × creating a 1,000-step workflow."""
LARGE_TARGET = 1.5
"""Adding 10 steps to a 5,000-step workflow costs at most 1.5 × adding them to a 10-step one (what it adds, not what
the workflow holds)."""


def growth_pairs(results: Results, label: str, pairs: Pairs, baseline_label: str, target: float | None) -> None:
    """Paired A/B requests: time (ms) and the server's CPU (ms) over each, value ÷ baseline per pair, median."""
    for what, pick in (("time", lambda timed: timed.seconds), ("server CPU", lambda timed: timed.cpu)):
        ours = {number: pick(timed) * 1000 for number, timed in pairs.value.items()}
        theirs = {number: pick(timed) * 1000 for number, timed in pairs.baseline.items()}
        ratios = stats.paired(ours, theirs)
        results.add(
            Figure(
                f"{label}: {what} (ratio ÷ {baseline_label})",
                stats.median(list(ours.values())) if ours else NOT_MEASURED,
                "ms",
                stats.median(list(theirs.values())) if theirs else None,
                baseline_label,
                Target("ratio", "<=", target) if target is not None else None,
                list(ours.values()),
                paired_ratio=ratios.median,
            )
        )
        if ratios.ratios:
            results.details.append(
                f"{label}, {what}: {ratios.listed()} (each pair's ratio; the table shows their median)"
            )


def growth(results: Results, added: Pairs, size: int, large: Pairs | None, large_size: int) -> None:
    growth_pairs(
        results,
        f"adding {size:,} steps in one call",
        added,
        f"creating a {size:,}-step workflow",
        ADD_TARGET if size == 1000 else None,
    )
    if large is not None:
        growth_pairs(
            results,
            f"adding {ADDED_TO_LARGE} steps to a {large_size:,}-step workflow",
            large,
            "to a 10-step one",
            LARGE_TARGET if large_size >= 5000 else None,
        )


EVENT_WIDE_TARGET = 1.5
"""Issue 44: one event matching 1,000 triggers takes at most 1.5 × one batch enqueue of 1,000 jobs."""
EVENT_RATE_TARGET = 0.7
"""Issue 44: events/s (8 clients, each event matching 2 of 10,000 triggers) at least 0.7 × single enqueues/s."""


def events(
    results: Results, wide: Pairs, width: int, rates: tuple[Mapping[int, float], Mapping[int, float]], triggers: int
) -> None:
    growth_pairs(
        results,
        f"one event starting {width:,} triggers' jobs",
        wide,
        f"a batch enqueue of {width:,}",
        EVENT_WIDE_TARGET if width == 1000 else None,
    )
    event_rates, enqueue_rates = rates
    label = f"events/s, 8 clients, each event matching 2 of {triggers:,} triggers"
    ratios = stats.paired(event_rates, enqueue_rates)
    results.add(
        Figure(
            label,
            stats.median(list(event_rates.values())) if event_rates else NOT_MEASURED,
            "/s",
            stats.median(list(enqueue_rates.values())) if enqueue_rates else None,
            "single enqueues/s, 8 clients",
            Target("ratio", ">=", EVENT_RATE_TARGET) if triggers >= 10_000 else None,
            list(event_rates.values()),
            paired_ratio=ratios.median,
        )
    )
    if ratios.ratios:
        results.details.append(f"{label}: {ratios.listed()} (each pair's ratio; the table shows their median)")
