"""The templates' environment: where they are, and the filters that format what the engine returns."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from queueflow.core.flow import QueueSettings

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"
MAX_JSON_CHARS = 65_536

STATUS_SYMBOLS = {
    # jobs
    "pending": "○",
    "running": "▶",
    "retrying": "↻",
    "completed": "✓",
    "dead_letter": "✕",
    "cancelled": "⊘",
    # workflows and steps
    "enqueued": "◔",
    "waiting": "◷",
    "failed": "✕",
    "partially_failed": "◑",
    "skipped": "↷",
    "enabled": "●",
    "disabled": "○",
    # queues
    "paused": "⏸\ufe0e",  # text, not emoji, presentation
}


def environment() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True, undefined=StrictUndefined)
    env.filters.update(
        badge=badge, pretty_json=pretty_json, utc=utc, ago=ago, count=count, seconds=seconds, limits=limits
    )
    return env


def badge(status: object) -> Markup:
    """A status as a symbol, a label and a colour: readable without the colour."""
    name = str(status)
    label = name.replace("_", " ")
    return Markup('<span class="badge s-{0}"><span aria-hidden="true">{1}</span> {2}</span>').format(
        name, STATUS_SYMBOLS.get(name, "•"), label
    )


def pretty_json(value: Any) -> str:
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    if len(text) > MAX_JSON_CHARS:
        return text[:MAX_JSON_CHARS] + f"\n… ({len(text) - MAX_JSON_CHARS:,} more characters)"
    return text


def utc(when: datetime | None) -> str:
    return "—" if when is None else when.strftime("%Y-%m-%d %H:%M:%S UTC")


def ago(when: datetime | None, now: datetime) -> Markup:
    """`when` relative to `now` ("3 min ago", "in 2 h"), with the exact time on hover."""
    if when is None:
        return Markup("—")
    delta = (when - now).total_seconds()
    span = seconds(abs(delta))
    text = "just now" if abs(delta) < 1 else (f"in {span}" if delta > 0 else f"{span} ago")
    return Markup('<time datetime="{0}" title="{1}">{2}</time>').format(when.isoformat(), utc(when), text)


def seconds(value: float | None) -> str:
    """A duration in its two largest units: "45 s", "1 min 30 s", "2 h 5 min", "3 d 4 h"."""
    if value is None:
        return "—"
    whole = int(value)
    if whole < 60:
        return f"{whole} s"
    for size, unit, small_size, small_unit in ((86_400, "d", 3600, "h"), (3600, "h", 60, "min"), (60, "min", 1, "s")):
        if whole >= size:
            big, rest = divmod(whole, size)
            small = rest // small_size
            return f"{big} {unit} {small} {small_unit}" if small else f"{big} {unit}"
    raise AssertionError(value)  # pragma: no cover - every value ≥ 60 has a unit above


def count(value: int) -> str:
    return f"{value:,}"


def retention(settings: QueueSettings, default: timedelta | None) -> str:
    """How long a queue keeps its finished jobs, and whose setting says so ("7 d, this queue's own")."""
    if settings.retention_seconds is not None:
        return f"{seconds(settings.retention_seconds)}, this queue's own"
    if default is not None:
        return f"{seconds(default.total_seconds())}, the server's --retention-hours"
    return "kept: neither this queue nor the server sets a retention"


def limits(settings: QueueSettings) -> str:
    """A queue's limits in words ("≤ 3 running, ≤ 1 per key, 50 per 60 s"); empty when it has none."""
    rate = settings.rate_limit
    return ", ".join(
        part
        for part in (
            f"≤ {settings.concurrency_limit:,} running" if settings.concurrency_limit is not None else "",
            f"≤ {settings.key_concurrency_limit:,} per key" if settings.key_concurrency_limit is not None else "",
            f"{rate.jobs:,} per {rate.per_seconds:g} s" if rate is not None else "",
        )
        if part
    )
