"""A task registry for `queueflow serve --tasks tests.sdk.sample_tasks:tasks` and the in-process tests."""

from __future__ import annotations

from typing import Any

from queueflow_client import Fatal, JobContext, TaskRegistry

tasks = TaskRegistry()


@tasks.task("add")
async def add(payload: dict[str, Any], ctx: JobContext) -> dict[str, Any]:
    return {"sum": payload["a"] + payload["b"], "job": ctx.job_id}


@tasks.task("shout")
def shout(payload: dict[str, Any], ctx: JobContext) -> str:
    return str(payload["text"]).upper()


@tasks.task("refuse")
def refuse(payload: dict[str, Any], ctx: JobContext) -> None:
    raise Fatal("refused")
