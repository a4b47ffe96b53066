"""The wait timer (`runtime.waits.WaitTimer`): each pass ends the waits that are due, and it sleeps until the next
due time, an interval at most."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from queueflow.clocks import TestClock
from queueflow.core.types import JobStatus, NewJob
from queueflow.core.waits import Wait
from queueflow.core.workflow import NewStep, NewWorkflow, StepStatus
from queueflow.engine import Engine
from queueflow.runtime.waits import MIN_PAUSE, WaitTimer, pause_until

from tests.inprocess import WatchedWakeups
from tests.moments import START, T

SLEEPY = NewWorkflow(
    name="reminder",
    steps=[NewStep(name="nap", wait=Wait(seconds=30)), NewStep(name="remind", task_name="remind", depends_on=["nap"])],
)


def test_it_sleeps_until_the_next_due_time_an_interval_at_most() -> None:
    assert pause_until(None, START, 1.0) == 1.0
    assert pause_until(START + timedelta(seconds=0.25), START, 1.0) == 0.25
    assert pause_until(START + timedelta(seconds=30), START, 1.0) == 1.0
    assert pause_until(START - timedelta(seconds=3), START, 1.0) == MIN_PAUSE


async def test_a_pass_ends_the_due_waits_and_the_pause_counts_to_the_next(engine: Engine, clock: TestClock) -> None:
    workflow, _ = await engine.create_workflow(T, SLEEPY)
    timer = WaitTimer(engine)
    assert await timer.tick() == 0
    clock.advance(29.5)
    assert await timer.pause(0) == 0.5
    clock.advance(0.5)
    assert await timer.tick() == 1
    steps = {step.name: step.status for step in (await engine.get_workflow(T, workflow.id)).steps}
    assert steps == {"nap": StepStatus.COMPLETED, "remind": StepStatus.ENQUEUED}
    assert await timer.pause(1) == 1.0  # nothing waits: an interval


async def test_the_running_loop_ends_a_wait_that_came_due(
    engine: Engine, clock: TestClock, wakeups: WatchedWakeups
) -> None:
    await engine.create_workflow(T, SLEEPY)
    clock.advance(30)
    with wakeups.watching(["default"]) as watch:
        async with WaitTimer(engine, interval=0.05):
            async with asyncio.timeout(5):
                assert await watch.wait(5)  # remind's job arrived
    assert [job.workflow_step_id for job in (await engine.list_jobs(T)).items] == ["remind"]


async def test_a_pass_ends_a_workflow_past_its_deadline_and_the_pause_counts_to_it(
    engine: Engine, clock: TestClock
) -> None:
    """A workflow's deadline is a due time like a wait's (issue 44): the same timer ends it, within an interval."""
    slow = NewWorkflow(name="slow", steps=[NewStep(name="a", task_name="a")], timeout_seconds=60)
    workflow, _ = await engine.create_workflow(T, slow)
    timer = WaitTimer(engine)
    clock.advance(59.75)
    assert await timer.pause(0) == 0.25
    assert await timer.tick() == 0
    clock.advance(0.25)
    assert await timer.tick() == 1
    ended = await engine.get_workflow(T, workflow.id)
    assert (ended.status.value, ended.error) == ("failed", "timed out after 60 s")
    assert await timer.pause(1) == 1.0


async def test_a_pass_expires_jobs_past_their_deadline_and_the_pause_counts_to_the_next(
    engine: Engine, clock: TestClock
) -> None:
    """A job's deadline is a due time too (`core.deadlines`): the same timer dead-letters it, within an interval,
    and tells its listener."""
    heard: list[list[str]] = []
    timer = WaitTimer(engine, expired=lambda jobs: heard.append([job.id for job in jobs]))
    soon = (await engine.enqueue(T, NewJob(task_name="send", expires_in_seconds=0.5))).job
    await engine.enqueue(T, NewJob(task_name="send", expires_in_seconds=30))
    assert await timer.pause(0) == 0.5
    clock.advance(0.5)
    assert await timer.tick() == 1
    assert heard == [[soon.id]]
    assert (await engine.get_job(T, soon.id)).status is JobStatus.DEAD_LETTER
    assert await timer.pause(1) == 1.0  # the next deadline is 29.5 s away: an interval
    assert await timer.tick() == 0
    assert heard == [[soon.id]]
