"""Medians and percentiles, nearest-rank (a p99 of 300 samples is an observed sample, not an interpolation)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def pair_ratios(values: Mapping[int, float], baselines: Mapping[int, float]) -> dict[int, float]:
    """value ÷ baseline for each repetition (the keys) that measured both, in repetition order."""
    return {key: values[key] / baselines[key] for key in sorted(values.keys() & baselines.keys()) if baselines[key]}


def paired_ratio(values: Mapping[int, float], baselines: Mapping[int, float]) -> float | None:
    """The median of `pair_ratios`: each value against the baseline measured beside it, so that a drift of the
    machine's speed between repetitions falls on both sides of every ratio (a ratio of the two medians can pair a
    fast repetition's value with a slow one's baseline)."""
    return median_of(pair_ratios(values, baselines))


def median_of(ratios: Mapping[int, float]) -> float | None:
    """The median of `pair_ratios`' answer (None: no repetition measured both sides)."""
    return median(ratios.values()) if ratios else None
