"""The bench's statistics: a ratio of drains measured in pairs is the median of the pairs' ratios."""

import pytest

from bench.stats import paired_ratio


def test_each_value_is_divided_by_the_baseline_of_its_own_repetition() -> None:
    # The machine's speed drifts from one repetition to the next; within each, the value is 5 % above its baseline
    # but in one (a disturbed pair) where it is far below.
    baselines = {1: 100.0, 2: 60.0, 3: 90.0, 4: 40.0, 5: 50.0}
    values = {number: 1.05 * rate for number, rate in baselines.items()}
    values[2] = 30.0
    assert paired_ratio(values, baselines) == pytest.approx(1.05)


def test_only_repetitions_that_measured_both_sides_count() -> None:
    assert paired_ratio({1: 10.0, 2: 30.0}, {2: 20.0, 3: 5.0}) == 1.5
    assert paired_ratio({1: 10.0}, {2: 20.0}) is None
    assert paired_ratio({1: 10.0}, {1: 0.0}) is None
