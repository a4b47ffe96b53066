"""bench/scenarios/per_request.py and its figures: each route ÷ the one-query floor (issue 46) and ÷ /healthz."""

from __future__ import annotations

import math

import pytest

from bench import figures
from bench.machine import Machine
from bench.report import Results
from bench.scenarios import per_request
from bench.scenarios.per_request import FLOOR, HEALTHZ, ROUTES, RouteRun, both, floor_over_healthz, ratios

MACHINE = Machine("today", 2, 4.0, "cpu", "(1, 1, 1)", "15", "abc")


def round_of(**cpu_us: float) -> per_request.Round:
    """A round whose route `key` took `cpu_us[key]` µs of server CPU per request (1,000 requests in 1 s)."""
    return {key: RouteRun(1000, 1.0, cpu_us[key] * 1000 / 1e6) for key in ROUTES}


ROUND = round_of(healthz=100, floor=200, enqueue=400, get=250, lease=360, complete=300, empty_lease=220)


def test_each_route_is_divided_by_the_floor_named_and_no_floor_is_a_route() -> None:
    assert ratios(ROUND) == ratios(ROUND, FLOOR)
    assert ratios(ROUND, FLOOR) == pytest.approx(
        {"enqueue": 2.0, "get": 1.25, "lease": 1.8, "complete": 1.5, "empty_lease": 1.1}
    )
    assert ratios(ROUND, HEALTHZ)["get"] == 2.5
    assert floor_over_healthz(ROUND) == 2.0


def test_a_floor_that_took_no_clock_tick_gives_no_ratio() -> None:
    idle = {**ROUND, FLOOR: RouteRun(100, 0.1, 0.0), HEALTHZ: RouteRun(100, 0.1, 0.0)}
    assert all(math.isnan(ratio) for ratio in ratios(idle).values())
    assert math.isnan(floor_over_healthz(idle))


def test_a_floor_measured_before_and_after_is_their_sum() -> None:
    joined = both(RouteRun(100, 0.5, 0.02), RouteRun(300, 1.5, 0.06))
    assert joined == RouteRun(400, 2.0, 0.08)
    assert joined.cpu_us == 200


def test_the_report_gives_each_route_against_the_one_query_route_with_issue_46s_targets() -> None:
    results = Results("test", MACHINE)
    slow = round_of(healthz=100, floor=200, enqueue=400, get=300, lease=360, complete=300, empty_lease=220)
    figures.per_request_cpu(results, [ROUND, slow, ROUND])
    by_label = {figure.label: figure for figure in results.figures}

    get = by_label[f"server CPU per request ÷ the one-query route: {ROUTES['get']}"]
    assert (get.value, get.baseline, str(get.target), get.met) == (250, 200, "ratio ≤ 1.3", True)
    assert get.ratio == pytest.approx(1.25)
    enqueue = by_label[f"server CPU per request ÷ the one-query route: {ROUTES['enqueue']}"]
    assert (enqueue.ratio, str(enqueue.target), enqueue.met) == (pytest.approx(2.0), "ratio ≤ 1.8", False)
    empty = by_label[f"server CPU per request ÷ the one-query route: {ROUTES['empty_lease']}"]
    assert (empty.ratio, str(empty.target)) == (pytest.approx(1.1), "ratio ≤ 1.2")

    history = by_label[f"server CPU per request ÷ GET /healthz (history: issue 32's measure): {ROUTES['get']}"]
    assert (history.baseline, history.ratio, history.target) == (100, pytest.approx(2.5), None)
    floor = by_label[f"server CPU per request, {ROUTES[FLOOR]}"]
    assert (floor.value, floor.baseline_label, floor.ratio, floor.target) == (
        200,
        "GET /healthz",
        pytest.approx(2.0),
        None,
    )
    assert len(results.figures) == 2 + 2 * len(figures.PER_REQUEST_TARGETS)
