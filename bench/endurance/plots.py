"""The figures over time, one PNG per quantity and offered rate (matplotlib, Agg: no display here), every system
on the same axes, the phases shaded and named along the top. Time runs from the start of each system's run at that
rate, so the systems' phases line up (each phase lasts as long for all; a system spared the faults stops early)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.axes import Axes

from bench.endurance.results import RunResult, Sample

QUANTITIES: dict[str, tuple[str, Callable[[Sample], float | None], bool]] = {
    "latency": ("pickup p99 (ms, log scale)", lambda s: s.latency.p99, True),
    "depth": ("jobs waiting (enqueued, not started)", lambda s: float(s.depth), False),
    "dead-tuples": ("dead tuples in the hot table (n_dead_tup)", lambda s: float(s.pressure.hot_dead), False),
    "size": ("hot table with its indexes (MB)", lambda s: s.pressure.hot_bytes / 2**20, False),
}
COLOURS = {"QueueFlow": "tab:blue", "PgQueuer": "tab:green", "Procrastinate": "tab:orange"}


def _points(run: RunResult, value: Callable[[Sample], float | None]) -> tuple[list[float], list[float]]:
    origin = run.phases[0].start if run.phases else 0.0
    xs, ys = [], []
    for phase in run.phases:
        for sample in phase.samples:
            y = value(sample)
            if y is not None:
                xs.append((sample.t - origin) / 60)
                ys.append(y)
    return xs, ys


def _shade(axes: Axes, run: RunResult) -> None:
    origin = run.phases[0].start
    for index, phase in enumerate(run.phases):
        left, right = (phase.start - origin) / 60, (phase.start - origin + phase.seconds) / 60
        if phase.name != "clean" and not phase.name.startswith("after-"):
            axes.axvspan(left, right, color="tab:red", alpha=0.08, linewidth=0)
        axes.annotate(
            phase.name,
            ((left + right) / 2, 1.0),
            xycoords=("data", "axes fraction"),
            rotation=90,
            fontsize=6,
            ha="center",
            va="top",
            alpha=0.7 if index % 2 == 0 else 0.5,
        )


def draw(runs: list[RunResult], folder: Path) -> list[Path]:
    """The PNGs written into `folder`, by rate then quantity; those of a rate no run has any more are removed."""
    written = []
    for rate in sorted({run.rate for run in runs}):
        at = [run for run in runs if run.rate == rate and run.phases]
        if not at:
            continue
        longest = max(at, key=lambda run: len(run.phases))
        for quantity, (label, value, log) in QUANTITIES.items():
            figure, axes = plt.subplots(figsize=(10, 3.6))
            for run in at:
                xs, ys = _points(run, value)
                axes.plot(xs, ys, label=run.system, color=COLOURS.get(run.system), linewidth=1)
            _shade(axes, longest)
            if log:
                axes.set_yscale("log")
            axes.set_xlabel("minutes since the run's start")
            axes.set_ylabel(label, fontsize=8)
            axes.set_title(f"{label} at {rate:g} jobs/s offered", fontsize=9)
            axes.legend(fontsize=7, loc="best")
            figure.tight_layout()
            path = folder / f"{rate:g}-{quantity}.png"
            figure.savefig(path, dpi=110)
            plt.close(figure)
            written.append(path)
    for path in folder.glob("*.png"):
        if path not in written and re.fullmatch(rf"[0-9.]+-({'|'.join(QUANTITIES)})\.png", path.name):
            path.unlink()
    return written
