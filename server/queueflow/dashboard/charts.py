"""Server-rendered SVG: a queue's last hour as a bar sparkline, and a workflow's DAG coloured by step status (step by
step, or by depth level for a large one).

Pure functions of domain objects (no I/O); the page's stylesheet colours the `s-<status>` classes, and every
status also has a symbol and a label, so no colour carries meaning alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from markupsafe import Markup, escape

from queueflow.core.types import QueueMinute
from queueflow.core.workflow import Step, Workflow
from queueflow.dashboard.look import seconds
from queueflow.dashboard.steps import STATUSES, Band

SPAN_MINUTES = 60
BAR, GAP, HEIGHT = 2, 1, 32

STEP_SYMBOLS = {
    "pending": "○",
    "enqueued": "◔",
    "waiting": "⧗",
    "completed": "✓",
    "failed": "✕",
    "skipped": "↷",
    "cancelled": "⊘",
}


def throughput_chart(minutes: Sequence[QueueMinute], now: datetime, span: int = SPAN_MINUTES) -> Markup:
    """Stacked bars, one per minute of the last `span` (oldest left): completed below, dead-lettered above."""
    start = now.replace(second=0, microsecond=0) - timedelta(minutes=span - 1)
    buckets = [(0, 0)] * span
    for minute in minutes:
        index = int((minute.minute - start).total_seconds() // 60)
        if 0 <= index < span:
            buckets[index] = (minute.completed, minute.dead_lettered)
    peak = max((done + dead for done, dead in buckets), default=0) or 1
    width = span * (BAR + GAP)
    total_done = sum(done for done, _ in buckets)
    total_dead = sum(dead for _, dead in buckets)
    label = f"Last hour: {total_done} completed, {total_dead} dead-lettered"
    parts = [
        f'<svg class="spark" viewBox="0 0 {width} {HEIGHT}" width="{width}" height="{HEIGHT}" role="img" '
        f'aria-label="{escape(label)}"><line class="spark-base" x1="0" y1="{HEIGHT - 0.5}" x2="{width}" '
        f'y2="{HEIGHT - 0.5}"/>'
    ]
    for index, (done, dead) in enumerate(buckets):
        if not done and not dead:
            continue
        x = index * (BAR + GAP)
        done_h = _bar_height(done, peak)
        dead_h = _bar_height(dead, peak)
        when = (start + timedelta(minutes=index)).strftime("%H:%M")
        parts.append(f"<g><title>{when} UTC: {done} completed, {dead} dead-lettered</title>")
        if done_h:
            parts.append(f'<rect class="bar-done" x="{x}" y="{HEIGHT - done_h}" width="{BAR}" height="{done_h}"/>')
        if dead_h:
            y = HEIGHT - done_h - dead_h
            parts.append(f'<rect class="bar-dead" x="{x}" y="{y}" width="{BAR}" height="{dead_h}"/>')
        parts.append("</g>")
    parts.append("</svg>")
    return Markup("".join(parts))


def _bar_height(count: int, peak: int) -> int:
    return 0 if count == 0 else max(2, round(count / peak * (HEIGHT - 2)))


NODE_W, NODE_H, COL_GAP, ROW_GAP, PAD = 180, 52, 64, 20, 12


def dag_layers(steps: Sequence[Step]) -> list[list[Step]]:
    """Columns of the drawing: a step sits one column right of its deepest dependency. Within a column, steps
    are ordered by where their dependencies sit (fewer crossing edges), then as submitted."""
    by_name = {step.name: step for step in steps}
    depth: dict[str, int] = {}

    def depth_of(name: str) -> int:
        if name not in depth:
            parents = [p for p in by_name[name].depends_on if p in by_name]
            depth[name] = 1 + max(map(depth_of, parents)) if parents else 0
        return depth[name]

    columns: list[list[Step]] = []
    for step in steps:
        level = depth_of(step.name)
        while len(columns) <= level:
            columns.append([])
        columns[level].append(step)
    row: dict[str, float] = {}
    for column in columns:

        def weight(step: Step) -> tuple[float, int]:
            parents = [row[p] for p in step.depends_on if p in row]
            return (sum(parents) / len(parents) if parents else 0.0, step.idx)

        column.sort(key=weight)
        for index, step in enumerate(column):
            row[step.name] = float(index)
    return columns


def dag_chart(workflow: Workflow, job_url: str = "/ui/jobs/", workflow_url: str = "/ui/workflows/") -> Markup:
    """The workflow's steps as boxes in dependency columns, edges as arrows, each box linked to its job (a child
    step's to its child workflow)."""
    columns = dag_layers(workflow.steps)
    tallest = max((len(column) for column in columns), default=1)
    width = PAD * 2 + len(columns) * NODE_W + max(len(columns) - 1, 0) * COL_GAP
    height = PAD * 2 + tallest * NODE_H + (tallest - 1) * ROW_GAP
    where: dict[str, tuple[float, float]] = {}
    for level, column in enumerate(columns):
        offset = (tallest - len(column)) * (NODE_H + ROW_GAP) / 2
        for index, step in enumerate(column):
            where[step.name] = (PAD + level * (NODE_W + COL_GAP), PAD + offset + index * (NODE_H + ROW_GAP))
    parts = [
        f'<svg class="dag" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(_dag_label(workflow))}">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="dag-arrow"/></marker></defs>',
    ]
    for step in workflow.steps:
        for parent in step.depends_on:
            if parent not in where:
                continue
            px, py = where[parent]
            cx, cy = where[step.name]
            x1, y1, x2, y2 = px + NODE_W, py + NODE_H / 2, cx - 2, cy + NODE_H / 2
            bend = COL_GAP / 2
            parts.append(
                f'<path class="dag-edge" d="M{x1:g},{y1:g} C{x1 + bend:g},{y1:g} {x2 - bend:g},{y2:g} {x2:g},{y2:g}" '
                'marker-end="url(#arrow)"/>'
            )
    for step in workflow.steps:
        x, y = where[step.name]
        status = str(step.status)
        name = step.name if len(step.name) <= 22 else step.name[:21] + "…"
        added = f" added by {step.added_by}" if step.added_by else ""
        node = (
            f'<g class="dag-node s-{status}{" added" if added else ""}" data-step="{escape(step.name)}" '
            f'data-status="{status}">'
            f"<title>{escape(step.name)} · {escape(what_step_does(step))} · {status}{escape(added)}</title>"
            f'<rect x="{x:g}" y="{y:g}" width="{NODE_W}" height="{NODE_H}" rx="8"/>'
            f'<text class="dag-name" x="{x + 12:g}" y="{y + 21:g}">{escape(name)}</text>'
            f'<text class="dag-status" x="{x + 12:g}" y="{y + 40:g}">{STEP_SYMBOLS.get(status, "")} {status}</text>'
            "</g>"
        )
        if step.job_id is not None:
            node = f'<a href="{escape(job_url + step.job_id)}">{node}</a>'
        elif step.child_workflow_id is not None:
            node = f'<a class="dag-child" href="{escape(workflow_url + step.child_workflow_id)}">{node}</a>'
        parts.append(node)
    parts.append("</svg>")
    return Markup("".join(parts))


def what_step_does(step: Step) -> str:
    """ "task send_email", "waits for signal approval", "sleeps 3 d": what a step is, in a few words."""
    if step.child is not None:
        return f"runs workflow {step.child.name}"
    if step.wait is None:
        return f"task {step.task_name}"
    if step.wait.signal is not None:
        return f"waits for signal {step.wait.signal}"
    return f"sleeps {seconds(step.wait.seconds)}"


def _dag_label(workflow: Workflow) -> str:
    steps = ", ".join(f"{step.name} {step.status}" for step in workflow.steps)
    return f"Workflow {workflow.name}: {steps}"


LABEL_W, BAR_W, BAR_H, LEVEL_H, LEVEL_GAP = 190, 600, 16, 46, 12


def level_chart(bands: Sequence[Band], link: Callable[[Band], str]) -> Markup:
    """A large workflow's DAG by depth level, top to bottom: each level a box whose bar's length is its share of
    the widest level (the DAG's shape) and whose segments are its steps by status, counted beside it; each box
    links to `link(band)` (the table filtered to it), and arrows lead from each level to the next."""
    widest = max((band.steps for band in bands), default=1) or 1
    width = PAD * 3 + LABEL_W + BAR_W
    height = PAD * 2 + len(bands) * LEVEL_H + max(len(bands) - 1, 0) * LEVEL_GAP
    total = sum(band.steps for band in bands)
    parts = [
        f'<svg class="dag levels" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-label="{total:,} steps in {len(bands)} level boxes">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="dag-arrow"/></marker></defs>',
    ]
    for index, band in enumerate(bands):
        y = PAD + index * (LEVEL_H + LEVEL_GAP)
        if index:
            parts.append(
                f'<path class="dag-edge" d="M{PAD + 20},{y - LEVEL_GAP + 1} L{PAD + 20},{y - 2}" '
                'marker-end="url(#arrow)"/>'
            )
        counts = " · ".join(
            f"{STEP_SYMBOLS[status]} {band.counts[status]:,} {status}" for status in STATUSES if band.counts[status]
        )
        data = " ".join(f"{status}={band.counts[status]}" for status in STATUSES if band.counts[status])
        box = [
            f'<g class="dag-level" data-level="{band.key}" data-steps="{band.steps}" data-counts="{data}">'
            f"<title>{band.label}: {band.steps:,} steps: {counts}</title>"
            f'<rect class="level-box" x="{PAD}" y="{y}" width="{width - 2 * PAD}" height="{LEVEL_H}" rx="8"/>'
            f'<text class="dag-name" x="{PAD + 12}" y="{y + 19}">{band.label}</text>'
            f'<text class="level-total" x="{PAD + 12}" y="{y + 37}">{band.steps:,} '
            f"step{'s' if band.steps != 1 else ''}</text>"
        ]
        x, bar = float(PAD + LABEL_W), max(4.0, BAR_W * band.steps / widest)
        for status in STATUSES:
            if band.counts[status]:
                share = bar * band.counts[status] / band.steps
                box.append(
                    f'<rect class="level-seg s-{status}" x="{x:g}" y="{y + 8}" width="{max(share, 1.5):g}" '
                    f'height="{BAR_H}"/>'
                )
                x += share
        box.append(f'<text class="level-counts" x="{PAD + LABEL_W}" y="{y + 39}">{escape(counts)}</text></g>')
        parts.append(f'<a href="{escape(link(band))}">{"".join(box)}</a>')
    parts.append("</svg>")
    return Markup("".join(parts))
