"""Workflow runs → figures: which way each ratio points, what a shape that did not run shows, and the figures
built across shapes (slope, CPU ratio, healed steps)."""

import math

import pytest

from bench.machine import Machine
from bench.report import Figure, Results
from bench.scenarios.workflow_growth import Pairs, Timed
from bench.scenarios.workflows import Shape, WorkflowRun
from bench.workflow_figures import by_shape, events, workflows

SMALL, NARROW, WIDE, WIDEST, CHAIN = (
    Shape("workflows", 1000),
    Shape("fan-out", 100),
    Shape("fan-out", 1000),
    Shape("fan-out", 9_998),
    Shape("chain", 300),
)
SHAPES = [SMALL, NARROW, WIDE, WIDEST, CHAIN]


def run(shape: Shape, side: str, seconds: float, repetition: int, cpu: float | None = None) -> WorkflowRun:
    return WorkflowRun(shape, side, seconds, repetition, server_cpu=cpu)


def report(runs: list[WorkflowRun], not_run: dict[tuple[Shape, str], str] | None = None) -> Results:
    results = Results("test", Machine("now", 2, 1.0, "cpu", "0 0 0", "PostgreSQL 15", "abc"))
    workflows(results, SHAPES, by_shape(runs), not_run or {}, healed=3)
    return results


def figures(runs: list[WorkflowRun], not_run: dict[tuple[Shape, str], str] | None = None) -> dict[str, Figure]:
    return {figure.label.split(":")[0]: figure for figure in report(runs, not_run).figures}


def test_a_ratio_above_one_means_queueflow_is_better_whichever_the_unit() -> None:
    runs = [
        # QueueFlow twice as fast as DBOS on every shape, in both repetitions.
        *(
            run(shape, "QueueFlow", 1.0 * shape.steps / 1000, n, 0.002 * shape.steps)
            for shape in SHAPES
            for n in (1, 2)
        ),
        *(run(shape, "DBOS", 2.0 * shape.steps / 1000, n) for shape in (SMALL, NARROW, WIDE, CHAIN) for n in (1, 2)),
    ]
    table = figures(runs, {(WIDEST, "DBOS"): "not run (DBOS's fan-outs stop at 1,000 wide)"})
    for label in ("1,000 workflows × a 3-step chain", "fan-out 1 → 1,000 → 1", "300-step chain"):
        assert table[label].ratio == pytest.approx(2.0), label
    assert table["1,000 workflows × a 3-step chain"].met
    assert table["1,000 workflows × a 3-step chain"].value == pytest.approx(1000.0)  # steps/s
    assert table["300-step chain"].value == pytest.approx(1.0)  # ms per step
    assert table["fan-out 1 → 9,998 → 1"].ratio is None
    assert "DBOS's fan-outs stop at 1,000 wide" in table["fan-out 1 → 9,998 → 1"].baseline_label
    # Time in proportion to width: slope 1 over every width, and over the widths both sides ran.
    assert table["log–log slope of fan-out time over width, 100 → 9,998"].value == pytest.approx(1.0, abs=0.01)
    assert table["log–log slope of fan-out time over width, 100 → 9,998"].met
    assert table["log–log slope of fan-out time over width, 100 → 1,000"].baseline_label == "DBOS: 0.99"  # W + 2 steps
    cpu = table["server CPU per step, fan-out 9,998 wide (÷ 100 wide)"]
    assert cpu.value == pytest.approx(2.0)
    assert cpu.ratio == pytest.approx(1.0)
    assert table["workflow steps healed by the janitor during the workflow scenarios"].value == 3


def test_a_shape_queueflow_could_not_run_says_why_and_meets_nothing() -> None:
    reason = "not run (refused: 400 steps must hold 1–1000 steps)"
    runs = [run(NARROW, "QueueFlow", 0.5, 1, 0.1), run(NARROW, "DBOS", 1.0, 1), run(WIDE, "DBOS", 10.0, 1)]
    table = figures(runs, {(WIDE, "QueueFlow"): reason, (WIDEST, "QueueFlow"): reason})
    wide = table["fan-out 1 → 1,000 → 1"]
    assert math.isnan(wide.value)
    assert wide.note == reason
    assert wide.met is None
    assert wide.ratio is None
    slope = table["log–log slope of fan-out time over width, 100 → 9,998"]
    assert slope.note.startswith("not run (1,000, 9,998 wide")
    assert slope.met is None
    [row] = [line for line in report(runs, {(WIDE, "QueueFlow"): reason}).table().splitlines() if "→ 1,000 → 1" in line]
    assert f"| {reason} | DBOS 3.4.0, queue concurrency 10: 10 s | — |" in row


def test_the_child_workflows_figure_is_seconds_with_dbos_over_queueflow_against_two() -> None:
    children = Shape("children", 100)
    assert children.steps == 1000
    assert len(children.workflows()) == 1
    assert all("workflow" in step for step in children.workflows()[0])
    runs = [run(children, "QueueFlow", 1.0, n) for n in (1, 2)] + [run(children, "DBOS", 2.5, n) for n in (1, 2)]
    results = Results("test", Machine("now", 2, 1.0, "cpu", "0 0 0", "PostgreSQL 15", "abc"))
    workflows(results, [children], by_shape(runs), {}, healed=0)
    table = {figure.label.split(":")[0]: figure for figure in results.figures}
    figure = table["a parent of 100 child workflows × a 10-step chain"]
    assert figure.value == pytest.approx(1.0)  # seconds
    assert figure.ratio == pytest.approx(2.5)
    assert figure.met


def test_the_events_rate_is_the_median_of_its_pairs_ratios_not_the_ratio_of_medians() -> None:
    # The machine's speed drifts between pairs: each rate is compared with the one measured beside it.
    event_rates = {0: 400.0, 1: 800.0, 2: 1600.0}
    enqueue_rates = {0: 500.0, 1: 2000.0, 2: 1800.0}  # pairs' ratios 0.8, 0.4, 0.889; medians' ratio 0.444
    wide = Pairs(value={0: Timed(0.03, 0.01)}, baseline={0: Timed(0.02, 0.01)})
    results = Results("test", Machine("now", 2, 1.0, "cpu", "0 0 0", "PostgreSQL 15", "abc"))
    events(results, wide, 1000, (event_rates, enqueue_rates), 10_000)
    [rate] = [figure for figure in results.figures if figure.label.startswith("events/s")]
    assert (rate.value, rate.baseline) == (pytest.approx(800.0), pytest.approx(1800.0))
    assert rate.ratio == pytest.approx(0.8)
    assert rate.met
    assert "0.800, 0.400, 0.889 (each pair's ratio" in "\n".join(results.details)
