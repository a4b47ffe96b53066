"""The results: figures with their same-run baselines and the issue's targets, as a table and as bench/RESULTS.md."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass, field

from bench.machine import Machine


@dataclass(frozen=True, slots=True)
class Target:
    """`on` the ratio (QueueFlow ÷ baseline) or on the value itself, `op` ≥ or ≤ `bound`."""

    on: str  # "ratio" | "value"
    op: str  # ">=" | "<="
    bound: float

    def __str__(self) -> str:
        sign = "≥" if self.op == ">=" else "≤"
        return f"{self.on} {sign} {self.bound:g}"

    def met(self, figure: Figure) -> bool | None:
        measured = figure.ratio if self.on == "ratio" else figure.value
        if measured is None:
            return None
        return bool((operator.ge if self.op == ">=" else operator.le)(measured, self.bound))


@dataclass(slots=True)
class Figure:
    label: str
    value: float
    unit: str
    baseline: float | None = None
    baseline_label: str = ""
    target: Target | None = None
    samples: Sequence[float] = ()
    """Every repetition's value (the figure is their median), shown so the spread is visible."""
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.baseline is None or self.baseline == 0:
            return None
        return self.value / self.baseline

    @property
    def met(self) -> bool | None:
        return None if self.target is None else self.target.met(self)


def amount(value: float, unit: str) -> str:
    if unit == "ms":
        return f"{value:,.2f} ms" if value < 10 else f"{value:,.0f} ms"
    if unit in ("", "×"):
        return f"{value:,.2f}{unit}"
    return f"{value:,.0f} {unit}" if abs(value) >= 10 else f"{value:,.2f} {unit}"


@dataclass(slots=True)
class Results:
    profile: str
    machine: Machine
    figures: list[Figure] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    """Lines beside the table: per-repetition numbers, CPU per job, what a scenario could not measure."""
    errors: list[str] = field(default_factory=list)
    elapsed_seconds: float = 0.0

    def add(self, figure: Figure) -> Figure:
        self.figures.append(figure)
        return figure

    def table(self) -> str:
        head = "| figure | QueueFlow | baseline, same run | ratio | target | met? |\n|---|---|---|---|---|---|\n"
        rows = []
        for figure in self.figures:
            baseline = f"{figure.baseline_label}: {amount(figure.baseline, figure.unit)}" if figure.baseline else "—"
            if figure.baseline is None and figure.baseline_label:
                baseline = figure.baseline_label
            ratio = f"{figure.ratio:.3f}" if figure.ratio is not None else "—"
            met = {True: "yes", False: "**no**", None: "—"}[figure.met]
            rows.append(
                f"| {figure.label} | {amount(figure.value, figure.unit)} | {baseline} | {ratio} |"
                f" {figure.target or '—'} | {met} |"
            )
        return head + "\n".join(rows) + "\n"

    def markdown(self) -> str:
        machine = self.machine
        lines = [
            "# `make bench` results",
            "",
            f"- date: {machine.date}",
            f"- machine: {machine.cores} cores, {machine.ram_gib:.1f} GiB RAM, {machine.cpu_model}",
            f"- load average at start: {machine.load_average}",
            f"- PostgreSQL: {machine.postgres_version}",
            f"- git commit: {machine.commit}",
            f"- profile: {self.profile}; each figure is the median of its repetitions; whole run "
            f"{self.elapsed_seconds / 60:.1f} min",
            "",
            "Ratios are QueueFlow ÷ its baseline measured in the same run on the same PostgreSQL.",
            "",
            self.table(),
        ]
        if self.details:
            lines += ["## Details", "", *(f"- {line}" for line in self.details), ""]
        if self.errors:
            lines += ["## Errors", "", *(f"- {line}" for line in self.errors), ""]
        return "\n".join(lines)
