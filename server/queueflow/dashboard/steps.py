"""A workflow's steps as its page shows them at any size: depth levels with counts by status, and the step table
filtered and paged.

Up to `SMALL` steps the page draws every step (charts.dag_chart); past that, one box per depth level (a step sits
one level below its deepest dependency), so a fan-out of 10,000 is three boxes and its shape still shows. A chain
of 10,000 steps has 10,000 levels: past `MAX_BANDS` of them, consecutive levels share a box. The table shows
`PAGE_SIZE` steps a page, of one status or level if asked (`?status=`, `?level=`, `?page=`), and every link keeps
the others. Pure functions of the workflow (no I/O): the whole page is one read of it, through the engine.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlencode

from queueflow.core.workflow import Step

SMALL = 50
"""At most this many steps: the DAG is drawn step by step."""
PAGE_SIZE = 100
MAX_BANDS = 16
"""At most this many level boxes; a deeper DAG groups consecutive levels into one box."""
STATUSES = ["completed", "enqueued", "waiting", "pending", "failed", "skipped", "cancelled"]
"""Every step status, in the order the page shows them: done first, then what runs, what waits, and what ended
otherwise."""


def step_levels(steps: Sequence[Step]) -> dict[str, int]:
    """Each step's depth: 0 for a root, else one more than its deepest dependency. Iterative, so that a chain of
    10,000 steps does not exhaust Python's recursion limit; linear in steps and edges."""
    by_name = {step.name: step for step in steps}
    level: dict[str, int] = {}
    for step in steps:
        stack = [step.name]
        while stack:
            name = stack[-1]
            if name in level:
                stack.pop()
                continue
            parents = [p for p in by_name[name].depends_on if p in by_name]
            waiting = [p for p in parents if p not in level]
            if waiting:
                stack.extend(waiting)  # a DAG (validated on create): no cycle brings a name back here
                continue
            level[name] = 1 + max((level[p] for p in parents), default=-1)
            stack.pop()
    return level


@dataclass(frozen=True, slots=True)
class Band:
    """One box of the level drawing: a depth level, or consecutive levels of a deep DAG."""

    first: int
    last: int
    counts: Counter[str]

    @property
    def steps(self) -> int:
        return sum(self.counts.values())

    @property
    def label(self) -> str:
        if self.first == self.last:
            return f"Level {self.first + 1:,}"
        return f"Levels {self.first + 1:,}–{self.last + 1:,}"

    @property
    def key(self) -> str:
        """The `?level=` value that selects this box's steps (1-based, as labelled)."""
        return str(self.first + 1) if self.first == self.last else f"{self.first + 1}-{self.last + 1}"


def bands(steps: Sequence[Step], levels: Mapping[str, int], most: int = MAX_BANDS) -> list[Band]:
    """The level boxes, top to bottom: one per level, or per run of `ceil(depth / most)` levels."""
    depth = 1 + max(levels.values(), default=-1)
    size = max(1, -(-depth // most))
    counts: list[Counter[str]] = [Counter() for _ in range(-(-depth // size))]
    for step in steps:
        counts[levels[step.name] // size][str(step.status)] += 1
    return [Band(i * size, min((i + 1) * size, depth) - 1, box) for i, box in enumerate(counts)]


@dataclass(frozen=True, slots=True)
class StepQuery:
    """What the table shows: a status, a level range (0-based, inclusive), a page (1-based)."""

    status: str | None = None
    levels: tuple[int, int] | None = None
    page: int = 1
    errors: list[str] = field(default_factory=list, compare=False)

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> StepQuery:
        """The query from the page's parameters; what does not parse is left out, and said in `errors`."""
        errors = []
        status = params.get("status") or None
        if status is not None and status not in STATUSES:
            errors.append(f"There is no step status {status!r}.")
            status = None
        levels = None
        if wanted := params.get("level"):
            first, _, last = wanted.partition("-")
            if first.isdigit() and (last or first).isdigit() and 1 <= int(first) <= int(last or first):
                levels = (int(first) - 1, int(last or first) - 1)
            else:
                errors.append(f"There is no level {wanted!r}: a level is a number from 1, or a range like 3-7.")
        page = params.get("page", "1")
        if not page.isdigit() or int(page) < 1:
            errors.append(f"There is no page {page!r}.")
            page = "1"
        return cls(status, levels, int(page), errors)

    def matches(self, step: Step, level: int) -> bool:
        if self.status is not None and str(step.status) != self.status:
            return False
        return self.levels is None or self.levels[0] <= level <= self.levels[1]

    @property
    def level(self) -> str:
        if self.levels is None:
            return ""
        first, last = self.levels
        return str(first + 1) if first == last else f"{first + 1}-{last + 1}"

    def query(self, **changes: str | int) -> str:
        """This query as a link's query string, with `changes` (`status`, `level`, `page`); a change of filter
        starts again at page 1. Empty values and page 1 are left out."""
        values: dict[str, str | int] = {"status": self.status or "", "level": self.level, "page": self.page}
        if changes.keys() - {"page"}:
            values["page"] = 1
        values.update(changes)
        return urlencode({k: v for k, v in values.items() if v and not (k == "page" and v == 1)})


@dataclass(frozen=True, slots=True)
class StepPage:
    rows: list[tuple[Step, int]]
    """The page's steps, each with its level (0-based)."""
    matching: int
    page: int
    pages: int

    @property
    def first_row(self) -> int:
        return (self.page - 1) * PAGE_SIZE + 1 if self.rows else 0


def step_page(steps: Sequence[Step], levels: Mapping[str, int], query: StepQuery) -> StepPage:
    matching = [(step, levels[step.name]) for step in steps if query.matches(step, levels[step.name])]
    pages = max(1, -(-len(matching) // PAGE_SIZE))
    start = (query.page - 1) * PAGE_SIZE
    return StepPage(matching[start : start + PAGE_SIZE], len(matching), query.page, pages)
