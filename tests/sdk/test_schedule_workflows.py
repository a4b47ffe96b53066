"""Schedules that start workflows, through the SDK against the real app in-process: `schedules.create(...,
workflow=steps.workflow(...))`, what the schedule shows, and the workflow each occurrence starts."""

from __future__ import annotations

import pytest
from queueflow.clocks import TestClock
from queueflow.engine import Engine
from queueflow_client import ArgumentError, AsyncQueueFlow, ValidationError, steps

NIGHTLY = steps.workflow(
    "nightly-etl",
    [steps.task("extract", "extract", {"full": True}), steps.signal("ok", depends_on=["extract"], timeout_seconds=60)],
    context={"run": 1},
)


async def test_a_schedule_with_a_workflow_starts_one_at_each_occurrence(
    client: AsyncQueueFlow, engine: Engine, clock: TestClock
) -> None:
    schedule = await client.schedules.create("nightly", cron="* * * * *", workflow=NIGHTLY)
    assert (schedule.task_name, schedule.queue_name, schedule.payload, schedule.priority) == (None, None, None, None)
    assert schedule.workflow is not None
    assert schedule.workflow["name"] == "nightly-etl"
    assert [step["name"] for step in schedule.workflow["steps"]] == ["extract", "ok"]
    assert (await client.schedules.get("nightly")).workflow == schedule.workflow

    clock.advance(seconds=60)
    await engine.fire_due_schedules()
    (started,) = [workflow async for workflow in client.workflows.list()]
    assert started.name == "nightly-etl"
    assert started.context["run"] == 1
    assert started.context["schedule"] == "nightly"
    assert "occurrence" in started.context
    assert [(step.name, step.status) for step in started.steps] == [("extract", "enqueued"), ("ok", "pending")]


async def test_a_schedule_takes_a_task_or_a_workflow(client: AsyncQueueFlow) -> None:
    with pytest.raises(ArgumentError, match="give one"):
        await client.schedules.create("both", cron="@daily", task_name="report", workflow=NIGHTLY)
    with pytest.raises(ArgumentError, match="give one"):
        await client.schedules.create("neither", cron="@daily")
    with pytest.raises(ValidationError):  # job fields beside a workflow: each step carries its own
        await client.schedules.create("mixed", cron="@daily", workflow=NIGHTLY, priority=5)
    raw = {"name": "raw", "steps": [{"name": "a", "task_name": "t"}]}
    assert (await client.schedules.create("raw", cron="@daily", workflow=raw)).workflow is not None
