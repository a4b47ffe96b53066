"""The bench's statistics, along the path a run takes: drains measured in pairs → `stats.paired` → a figure whose
ratio is the median of the pairs' ratios (not the ratio of the two sides' medians)."""

import pytest

from bench import figures, stats
from bench.machine import Machine
from bench.report import Results
from bench.scenarios import prefork
from bench.scenarios.worker_drains import DrainRun, WorkerDrain

# The machine's speed drifts from one repetition to the next; within each, the worker drains 5 % faster than the
# peer beside it, but in one (a disturbed pair) where it is far slower.
PEER = {1: 100.0, 2: 60.0, 3: 90.0, 4: 40.0, 5: 50.0}
WORKER = {number: 1.05 * rate for number, rate in PEER.items()} | {2: 30.0}


def drain(repetition: int, rate: float, concurrency: int | None = None, processes: int = 1) -> DrainRun:
    return DrainRun("in-process", concurrency, 1000, 1000 / rate, 0.1, 0.1, 50_000_000, "0 0 0", repetition, processes)


def results() -> Results:
    return Results("test", Machine("now", 2, 1.0, "cpu", "0 0 0", "PostgreSQL 15", "abc"))


def test_each_value_is_divided_by_the_baseline_of_its_own_repetition() -> None:
    pairs = stats.paired(WORKER, PEER)
    assert pairs.median == pytest.approx(1.05)
    assert list(pairs.ratios) == [1, 2, 3, 4, 5]
    assert pairs.ratios[2] == pytest.approx(0.5)
    # The ratio of the two sides' medians would pair repetition 5's worker with repetition 2's peer.
    assert stats.median(list(WORKER.values())) / stats.median(list(PEER.values())) != pytest.approx(1.05)


def test_only_repetitions_that_measured_both_sides_count() -> None:
    assert stats.paired({1: 10.0, 2: 30.0}, {2: 20.0, 3: 5.0}).ratios == {2: 1.5}
    assert stats.paired({1: 10.0}, {2: 20.0}).median is None
    assert stats.paired({1: 10.0}, {1: 0.0}).median is None


def test_a_worker_figure_takes_the_median_of_its_repetitions_ratios() -> None:
    run = results()
    drains = {WorkerDrain("in-process"): [drain(number, rate) for number, rate in WORKER.items()]}
    figures.workers(run, drains, [], PEER)
    [figure] = [each for each in run.figures if each.label.startswith("in-process worker drain, default")]
    assert figure.ratio == pytest.approx(1.05)
    assert figure.value == pytest.approx(stats.median(list(WORKER.values())))
    assert figure.baseline == pytest.approx(stats.median(list(PEER.values())))
    [line] = [line for line in run.details if line.startswith("in-process worker drain, default settings ÷ PgQueuer")]
    assert "1.050, 0.500, 1.050, 1.050, 1.050" in line


def test_without_the_peer_a_worker_figure_has_no_ratio() -> None:
    run = results()
    figures.workers(run, {WorkerDrain("in-process"): [drain(1, 100.0)]}, [], {})
    [figure] = [each for each in run.figures if each.label.startswith("in-process worker drain, default")]
    assert figure.ratio is None


@pytest.mark.parametrize(("two", "best"), [(1.5, 2), (0.8, 1)])
def test_the_in_process_row_against_the_peer_takes_its_best_shape_and_names_it(two: float, best: int) -> None:
    run = results()
    one = [drain(number, rate) for number, rate in WORKER.items()]
    drains = {
        WorkerDrain("in-process"): one,
        WorkerDrain("in-process", processes=2): [
            drain(number, two * rate, processes=2) for number, rate in PEER.items()
        ],
        # A faster shape at another concurrency is not one of the shapes compared.
        WorkerDrain("in-process", 100): [drain(number, 9 * rate, 100) for number, rate in PEER.items()],
    }
    figures.workers(run, drains, [], PEER)
    [row] = [each for each in run.figures if each.label.startswith("in-process worker drain at its best")]
    processes = "2 processes" if best == 2 else "1 process"
    assert row.label.startswith(f"in-process worker drain at its best shape, {processes} (of 1 / 2), default settings")
    assert row.target is not None
    assert row.ratio == pytest.approx(1.05 if best == 1 else 1.5)
    [single] = [each for each in run.figures if each.label.startswith("in-process worker drain, one process")]
    assert single.ratio == pytest.approx(1.05)
    assert single.target is None
    cpu = [each.label for each in run.figures if "CPU per 1,000 jobs" in each.label]
    assert cpu == [
        "in-process worker CPU per 1,000 jobs, worker + server, 1 process, default settings",
        "in-process worker CPU per 1,000 jobs, worker + server, 2 processes, default settings",
    ]


@pytest.mark.parametrize(
    ("points", "slope"),
    [
        ([(100, 0.34), (1000, 3.4), (10_000, 34.0)], 1.0),
        ([(10, 1.0), (100, 100.0)], 2.0),
        ([(100, 5.0), (1000, 5.0)], 0.0),
    ],
)
def test_loglog_slope_says_how_time_grows_with_width(points: list[tuple[float, float]], slope: float) -> None:
    assert stats.loglog_slope(points) == pytest.approx(slope)


def test_loglog_slope_needs_two_widths() -> None:
    assert stats.loglog_slope([(100, 1.0), (100, 2.0)]) is None
    assert stats.loglog_slope([]) is None


def test_the_prefork_rows_cpu_per_request_is_the_median_of_its_repetitions_ratios() -> None:
    run = results()

    def side(processes: int, server_cpu: float) -> prefork.EnqueueRun:
        return prefork.EnqueueRun(processes, 1000, 0.5, server_cpu, 0.2, 0.05, 0.9)

    # µs per request, --workers 1 → 2: 300 → 300, 500 → 600, 200 → 208; the medians' ratio would be 300 ÷ 300.
    figures.prefork_enqueue(
        run, [{1: side(1, one), 2: side(2, two)} for one, two in ((0.3, 0.3), (0.5, 0.6), (0.2, 0.208))]
    )
    [cpu] = [each for each in run.figures if each.label.startswith("server CPU per request, single enqueue")]
    assert cpu.label == "server CPU per request, single enqueue, queueflow serve --workers 2 (÷ --workers 1)"
    assert (cpu.value, cpu.baseline, cpu.baseline_label) == (pytest.approx(300), pytest.approx(300), "--workers 1")
    assert cpu.ratio == pytest.approx(1.04)
    assert (str(cpu.target), cpu.met) == ("ratio ≤ 1.05", True)
    assert "1.000, 1.200, 1.040 (each repetition's ratio" in "\n".join(run.details)
