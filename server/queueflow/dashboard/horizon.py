"""The Queues page's warning when one backend has held the database's xmin horizon too long (`core.pressure`).

Every tenant's queues share the database, so every signed-in tenant sees it: while the horizon is held no dead row
can be vacuumed, and every claim of every queue steps over the ones it pins.
"""

from __future__ import annotations

from typing import Any

from litestar import Request

from queueflow.core.pressure import held_too_long
from queueflow.dashboard.web import dashboard_of
from queueflow.engine import Engine


async def horizon_warning(request: Request[Any, Any, Any], engine: Engine) -> dict[str, Any]:
    """The template's `horizon` (the holder, or None), how long it has held it and the threshold, in seconds."""
    threshold = dashboard_of(request).horizon_warning
    now = engine.clock.now()
    holder = held_too_long(await engine.pressure(), now=now, threshold=threshold)
    held = holder.held_for(now) if holder is not None else None
    return {
        "horizon": holder,
        "horizon_held_seconds": held.total_seconds() if held is not None else None,
        "horizon_threshold_seconds": threshold.total_seconds(),
    }
