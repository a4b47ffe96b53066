"""Medians, percentiles (nearest-rank: a p99 of 300 samples is an observed sample, not an interpolation), ratios
of values measured in pairs, and how one quantity grows with another."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass(frozen=True, slots=True)
class Paired:
    """Values against the baselines measured beside them: `ratios` by repetition, and their median."""

    ratios: dict[int, float]

    @property
    def median(self) -> float | None:
        """The median of the repetitions' own ratios (None: no repetition measured both sides). A drift of the
        machine's speed between repetitions falls on both sides of every ratio, where a ratio of the two sides'
        medians could pair a fast repetition's value with a slow one's baseline."""
        return median(list(self.ratios.values())) if self.ratios else None

    def listed(self) -> str:
        return ", ".join(f"{ratio:.3f}" for ratio in self.ratios.values())


def paired(values: Mapping[int, float], baselines: Mapping[int, float]) -> Paired:
    """value ÷ baseline for each repetition (the keys) that measured both (and a baseline above 0), in
    repetition order."""
    keys = sorted(values.keys() & baselines.keys())
    return Paired({key: values[key] / baselines[key] for key in keys if baselines[key]})


def loglog_slope(points: Sequence[tuple[float, float]]) -> float | None:
    """The least-squares slope of log(y) over log(x): how y grows with x (1: in proportion, 2: as its square).
    None with fewer than two distinct x."""
    logs = [(math.log(x), math.log(y)) for x, y in points if x > 0 and y > 0]
    if len({x for x, _ in logs}) < 2:
        return None
    mean_x = statistics.fmean(x for x, _ in logs)
    mean_y = statistics.fmean(y for _, y in logs)
    spread = sum((x - mean_x) ** 2 for x, _ in logs)
    return sum((x - mean_x) * (y - mean_y) for x, y in logs) / spread
