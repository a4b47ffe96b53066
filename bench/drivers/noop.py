"""The bench's task registry: one no-op task, so a drain times the worker and the queue, not the work."""

from __future__ import annotations

from typing import Any

from queueflow_client import JobContext, TaskRegistry

tasks = TaskRegistry()


@tasks.task("noop")
async def noop(payload: dict[str, Any], ctx: JobContext) -> None:
    return None
