"""Schedules that start workflows (the HTTP contract, "Schedules that start workflows"), on every store."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from queueflow.clocks import TestClock
from queueflow.core.errors import ValidationError
from queueflow.core.schedule import NewSchedule, SchedulePatch, firing_workflow
from queueflow.core.waits import Wait
from queueflow.core.workflow import NewStep, NewWorkflow, OnFailure, WorkflowStatus
from queueflow.engine import Engine
from queueflow.ports import Store

from tests.moments import START, T
from tests.store_contract.engine.test_schedules import run

NIGHTLY = NewWorkflow(
    name="nightly-etl",
    context={"region": "eu"},
    steps=[
        NewStep(name="extract", task_name="extract", payload={"full": True}, priority=3, on_failure=OnFailure.SKIP),
        NewStep(name="cool-off", wait=Wait(seconds=60), depends_on=["extract"]),
        NewStep(name="load", task_name="load", depends_on=["cool-off"], queue_name="loads"),
    ],
)


def workflow_schedule(**fields: object) -> NewSchedule:
    return NewSchedule(name="nightly", cron="0 3 * * *", workflow=fields.pop("workflow", NIGHTLY), **fields)  # type: ignore[arg-type]


async def test_a_workflow_schedule_shows_its_workflow_and_no_job_fields(engine: Engine) -> None:
    created = await engine.create_schedule(T, workflow_schedule())
    assert created.workflow == NIGHTLY
    assert (created.task_name, created.queue_name, created.payload, created.priority, created.max_retries) == (
        None, None, None, None, None
    )  # fmt: skip
    assert await engine.get_schedule(T, "nightly") == created


async def test_each_occurrence_starts_one_workflow_keyed_by_it_with_the_occurrence_in_its_context(
    engine: Engine, store: Store, clock: TestClock
) -> None:
    schedule = await engine.create_schedule(T, workflow_schedule())
    second = Engine(store, clock, rng=random.Random(99))  # another scheduler process
    clock.set(START + timedelta(hours=15))  # 2026-03-02 03:00
    # A scheduler that died after starting the occurrence's workflow, before advancing the schedule: the next
    # tick (another process's) starts nothing twice, and advances it.
    (due,) = await store.schedule_due(limit=10, now=clock.now())
    await second.create_workflow(T, firing_workflow(due, NIGHTLY, clock.now()))
    first_tick, second_tick = await engine.fire_due_schedules(), await second.schedules.fire_due()
    assert first_tick + second_tick == 1
    assert await run(engine, clock, START + timedelta(hours=40), timedelta(minutes=30)) == 1  # 03-03 03:00
    page = await engine.list_workflows(T, WorkflowStatus.RUNNING)
    started = sorted(page.items, key=lambda w: w.created_at)
    assert [w.idempotency_key for w in started] == [
        f"cron:{schedule.id}:2026-03-02T03:00:00Z", f"cron:{schedule.id}:2026-03-03T03:00:00Z"
    ]  # fmt: skip
    assert started[0].context == {"region": "eu", "schedule": "nightly", "occurrence": "2026-03-02T03:00:00Z"}
    assert [(s.name, s.status.value) for s in started[0].steps] == [
        ("extract", "enqueued"), ("cool-off", "pending"), ("load", "pending")
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("fields", "loc"),
    [
        ({"task_name": "report"}, ()),  # both forms
        ({"workflow": None}, ()),  # neither
        ({"payload": {}}, ("payload",)),
        ({"queue_name": "default"}, ("queue_name",)),
        ({"priority": 0}, ("priority",)),
        ({"max_retries": 3}, ("max_retries",)),
        ({"workflow": NewWorkflow(name="w", steps=[NewStep(name="a", task_name="t", depends_on=["b"])])},
         ("workflow", "steps", 0, "depends_on", 0)),
    ],
)  # fmt: skip
async def test_a_schedule_has_a_task_or_a_workflow_and_a_workflow_brings_its_own_job_fields(
    engine: Engine, fields: dict[str, object], loc: tuple[object, ...]
) -> None:
    with pytest.raises(ValidationError) as caught:
        await engine.create_schedule(T, workflow_schedule(**fields))
    assert loc in [error.loc for error in caught.value.errors]
    assert (await engine.list_schedules(T)).items == []


async def test_a_patch_may_change_what_a_schedule_fires_but_never_to_both(engine: Engine) -> None:
    await engine.create_schedule(T, workflow_schedule())
    with pytest.raises(ValidationError):  # a workflow schedule has no job fields
        await engine.update_schedule(T, "nightly", SchedulePatch(queue_name="other"))
    smaller = NewWorkflow(name="small", steps=[NewStep(name="only", task_name="t")])
    with pytest.raises(ValidationError):
        await engine.update_schedule(T, "nightly", SchedulePatch(task_name="report", workflow=smaller))
    patched = await engine.update_schedule(T, "nightly", SchedulePatch(workflow=smaller))
    assert patched.workflow == smaller
    as_job = await engine.update_schedule(T, "nightly", SchedulePatch(task_name="report", priority=5))
    assert (as_job.workflow, as_job.task_name, as_job.queue_name, as_job.payload, as_job.priority) == (
        None, "report", "default", {}, 5
    )  # fmt: skip
    as_workflow = await engine.update_schedule(T, "nightly", SchedulePatch(workflow=smaller))
    assert (as_workflow.task_name, as_workflow.queue_name, as_workflow.max_retries) == (None, None, None)
    assert await engine.get_schedule(T, "nightly") == as_workflow
