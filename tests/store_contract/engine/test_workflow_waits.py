"""Steps that wait (the HTTP contract, "Workflows that grow and wait"): sleeps, signals (early ones kept),
timeouts, and the due-wait sweep ending each wait exactly once."""

from __future__ import annotations

from datetime import timedelta

import pytest
from queueflow.clocks import TestClock
from queueflow.core.errors import InvalidState, NotFound, ValidationError
from queueflow.core.finish import wait_report
from queueflow.core.workflow import CONTEXT_KEY, StepStatus, WorkflowStatus
from queueflow.engine import Engine
from queueflow.engine.workflows import Workflows

from tests.store_contract.workflow_helpers import (
    CONTINUE,
    SKIP,
    Worker,
    dag,
    named,
    signal,
    sleep,
    statuses,
    step,
)

T = "tenant-a"


def reporter(engine: Engine) -> Workflows:
    """What ends the waits a sweep read, as a process of its own over the engine's store and clock (the engine's
    own `Workflows` is private to it)."""
    return Workflows(engine.store, engine.clock, engine.ids, engine.settings)


async def test_a_sleep_waits_its_time_holding_no_job_then_its_dependents_run(engine: Engine, clock: TestClock) -> None:
    workflow, _ = await engine.create_workflow(T, dag(step("a"), sleep("nap", 30, "a"), step("b", "nap")))
    worker = Worker(engine, T)
    after_a = await worker.complete(workflow.id, "a")
    nap = named(after_a, "nap")
    assert (nap.status, nap.job_id, nap.due_at) == (StepStatus.WAITING, None, clock.now() + timedelta(seconds=30))
    assert statuses(after_a) == {"a": "completed", "nap": "waiting", "b": "pending"}
    clock.advance(29.9)
    assert await engine.end_due_waits(100) == 0
    assert await engine.next_wait_due() == nap.due_at
    clock.advance(0.1)
    assert await engine.end_due_waits(100) == 1
    woke = await engine.get_workflow(T, workflow.id)
    assert statuses(woke) == {"a": "completed", "nap": "completed", "b": "enqueued"}
    assert named(woke, "nap").due_at is None
    b = await worker.job_of(workflow.id, "b")
    assert b.payload[CONTEXT_KEY] == {"a": {"by": "a"}, "nap": None}
    assert (await worker.complete(workflow.id, "b")).status is WorkflowStatus.COMPLETED
    assert await engine.next_wait_due() is None


async def test_a_root_wait_waits_from_the_workflows_creation(engine: Engine, clock: TestClock) -> None:
    workflow, _ = await engine.create_workflow(T, dag(sleep("nap", 0.001), step("b", "nap")))
    assert named(workflow, "nap").due_at == clock.now() + timedelta(milliseconds=1)
    assert await engine.end_due_waits(100) == 0  # even the shortest sleep waits its time
    clock.advance(0.001)
    assert await engine.end_due_waits(100) == 1
    assert statuses(await engine.get_workflow(T, workflow.id)) == {"nap": "completed", "b": "enqueued"}


async def test_a_signal_completes_its_waiting_step_with_the_payload_and_advances_before_the_answer(
    engine: Engine,
) -> None:
    workflow, _ = await engine.create_workflow(T, dag(signal("approval", "approve"), step("ship", "approval")))
    assert statuses(workflow) == {"approval": "waiting", "ship": "pending"}
    assert named(workflow, "approval").due_at is None  # no timeout: nothing for the sweep
    answered = await engine.signal_workflow(T, workflow.id, "approve", {"by": "ada"})
    assert statuses(answered) == {"approval": "completed", "ship": "enqueued"}
    assert answered.context == {"approval": {"by": "ada"}}
    ship = await Worker(engine, T).job_of(workflow.id, "ship")
    assert ship.payload[CONTEXT_KEY] == {"approval": {"by": "ada"}}


async def test_an_early_signal_is_kept_and_completes_the_step_the_moment_it_would_wait(engine: Engine) -> None:
    workflow, _ = await engine.create_workflow(
        T, dag(step("a"), signal("approval", "approve", "a"), step("ship", "approval"))
    )
    kept = await engine.signal_workflow(T, workflow.id, "approve", [1, 2])
    assert statuses(kept) == {"a": "enqueued", "approval": "pending", "ship": "pending"}
    assert named(kept, "approval").signal is not None
    after = await Worker(engine, T).complete(workflow.id, "a")
    assert statuses(after) == {"a": "completed", "approval": "completed", "ship": "enqueued"}
    assert after.context["approval"] == [1, 2]


async def test_a_chain_of_kept_signals_completes_in_the_finish_that_reaches_it(engine: Engine) -> None:
    workflow, _ = await engine.create_workflow(
        T, dag(step("a"), signal("s1", "one", "a"), signal("s2", "two", "s1"), step("z", "s2"))
    )
    await engine.signal_workflow(T, workflow.id, "one", 1)
    await engine.signal_workflow(T, workflow.id, "two", 2)
    after = await Worker(engine, T).complete(workflow.id, "a")
    assert statuses(after) == {"a": "completed", "s1": "completed", "s2": "completed", "z": "enqueued"}


async def test_signal_checks_in_the_contracts_order(engine: Engine) -> None:
    workflow, _ = await engine.create_workflow(T, dag(signal("approval", "approve"), step("b", "approval")))
    with pytest.raises(NotFound):
        await engine.signal_workflow(T, "wf_missing", "approve", None)
    with pytest.raises(NotFound):
        await engine.signal_workflow("tenant-b", workflow.id, "approve", None)  # another tenant's
    with pytest.raises(NotFound):
        await engine.signal_workflow(T, workflow.id, "nobody-waits", None)
    first = await engine.signal_workflow(T, workflow.id, "approve", {"x": 1})
    assert named(first, "approval").status is StepStatus.COMPLETED
    # A repeat with an equal payload changes nothing, whatever the workflow's status; another payload is a 409.
    assert await engine.signal_workflow(T, workflow.id, "approve", {"x": 1.0}) == first
    with pytest.raises(InvalidState):
        await engine.signal_workflow(T, workflow.id, "approve", {"x": True})
    await Worker(engine, T).complete(workflow.id, "b")
    done = await engine.get_workflow(T, workflow.id)
    assert done.status is WorkflowStatus.COMPLETED
    assert await engine.signal_workflow(T, workflow.id, "approve", {"x": 1}) == done


async def test_a_signal_for_a_step_that_can_no_longer_wait_or_a_workflow_not_running_is_a_conflict(
    engine: Engine,
) -> None:
    workflow, _ = await engine.create_workflow(
        T, dag(step("a", on_failure=SKIP), signal("s", "go", "a"), signal("t", "other"))
    )
    worker = Worker(engine, T)
    skipped = await worker.dead_letter(workflow.id, "a")
    assert named(skipped, "s").status is StepStatus.SKIPPED
    with pytest.raises(InvalidState):
        await engine.signal_workflow(T, workflow.id, "go", None)
    await engine.cancel_workflow(T, workflow.id)
    with pytest.raises(InvalidState):
        await engine.signal_workflow(T, workflow.id, "other", None)
    assert named(await engine.get_workflow(T, workflow.id), "t").signal is None  # nothing kept


@pytest.mark.parametrize(
    ("policy", "workflow_status", "after"),
    [
        ("halt", WorkflowStatus.FAILED, {"s": "failed", "b": "cancelled", "c": "cancelled"}),
        ("skip", WorkflowStatus.RUNNING, {"s": "failed", "b": "skipped", "c": "enqueued"}),
        ("continue", WorkflowStatus.RUNNING, {"s": "failed", "b": "enqueued", "c": "enqueued"}),
    ],
)
async def test_a_signal_that_times_out_fails_its_step_and_its_on_failure_applies(
    engine: Engine, clock: TestClock, policy: str, workflow_status: WorkflowStatus, after: dict[str, str]
) -> None:
    from queueflow.core.workflow import OnFailure

    workflow, _ = await engine.create_workflow(
        T, dag(signal("s", "go", timeout=60, on_failure=OnFailure(policy)), step("b", "s"), step("c"))
    )
    assert named(workflow, "s").due_at == clock.now() + timedelta(seconds=60)
    clock.advance(60)
    assert await engine.end_due_waits(100) == 1
    timed_out = await engine.get_workflow(T, workflow.id)
    assert timed_out.status is workflow_status
    assert statuses(timed_out) == after
    with pytest.raises(InvalidState):  # failed by its timeout: it can no longer wait
        await engine.signal_workflow(T, workflow.id, "go", None)


async def test_a_signal_that_beat_its_timeout_to_the_row_wins_and_the_stale_timeout_records_nothing(
    engine: Engine, clock: TestClock
) -> None:
    workflow, _ = await engine.create_workflow(T, dag(signal("s", "go", timeout=5, on_failure=CONTINUE)))
    clock.advance(5)
    # Read by a sweep before the signal came.
    (stale,) = await engine.store.workflow_waits_due(limit=10, now=clock.now())
    answered = await engine.signal_workflow(T, workflow.id, "go", "yes")
    assert answered.status is WorkflowStatus.COMPLETED
    assert answered.context == {"s": "yes"}
    assert await reporter(engine).on_steps_finished([wait_report(stale)]) == ()
    assert await engine.get_workflow(T, workflow.id) == answered


async def test_a_due_wait_ends_exactly_once_however_often_it_is_reported(engine: Engine, clock: TestClock) -> None:
    await engine.create_workflow(T, dag(sleep("nap", 1), step("b", "nap")))
    clock.advance(1)
    due = await engine.store.workflow_waits_due(limit=10, now=clock.now())
    first = await reporter(engine).on_steps_finished([wait_report(wait) for wait in due])
    again = await reporter(engine).on_steps_finished([wait_report(wait) for wait in due])
    assert (len(first), again) == (1, ())
    assert await engine.end_due_waits(10) == 0
    assert len((await engine.list_jobs(T)).items) == 1  # b's job, once


async def test_a_workflow_cancel_cancels_its_waiting_steps(engine: Engine, clock: TestClock) -> None:
    workflow, _ = await engine.create_workflow(T, dag(sleep("nap", 10), signal("s", "go")))
    cancelled = await engine.cancel_workflow(T, workflow.id)
    assert statuses(cancelled) == {"nap": "cancelled", "s": "cancelled"}
    clock.advance(10)
    assert await engine.end_due_waits(10) == 0


@pytest.mark.parametrize(
    ("fields", "where"),
    [
        ({"task_name": "t"}, ("steps", 0)),
        ({"payload": {"a": 1}}, ("steps", 0, "payload")),
        ({"queue_name": "other"}, ("steps", 0, "queue_name")),
        ({"job_fields": frozenset({"priority"})}, ("steps", 0, "priority")),
    ],
)
async def test_a_wait_step_with_job_fields_is_refused(engine: Engine, fields: dict[str, object], where: tuple) -> None:
    from dataclasses import replace

    bad = replace(sleep("nap", 1), **fields)  # type: ignore[arg-type]
    with pytest.raises(ValidationError) as caught:
        await engine.create_workflow(T, dag(bad))
    assert where in [error.loc for error in caught.value.errors]
    assert (await engine.list_workflows(T)).items == []


@pytest.mark.parametrize(
    "wait",
    [
        sleep("w", 0),
        sleep("w", 31_536_001),
        signal("w", "go", timeout=0.5),
        signal("w", "bad name!"),
    ],
)
async def test_wait_ranges(engine: Engine, wait: object) -> None:
    with pytest.raises(ValidationError):
        await engine.create_workflow(T, dag(wait))  # type: ignore[arg-type]


async def test_signal_names_are_unique_within_a_workflow(engine: Engine) -> None:
    with pytest.raises(ValidationError) as caught:
        await engine.create_workflow(T, dag(signal("a", "go"), signal("b", "go")))
    assert [error.loc for error in caught.value.errors] == [("steps", 1, "wait", "signal")]
