"""Failure policies, workflow cancel, DLQ replay of a step's job, the janitor's reclaim and self-heal, retention."""

from __future__ import annotations

import logging
import random
from datetime import timedelta

import pytest
from queueflow.clocks import TestClock
from queueflow.core.errors import InvalidState, LeaseLost
from queueflow.core.types import Completion, FailureRequest, JobStatus
from queueflow.core.workflow import CONTEXT_KEY, WorkflowStatus
from queueflow.engine import Engine, EngineSettings
from queueflow.ports import JobStore

from tests.moments import T
from tests.store_contract.workflow_helpers import CONTINUE, SKIP, Worker, dag, named, statuses, step

FAILURES = ["dead_letter", "cancelled"]
STEP_STATUS = {"dead_letter": "failed", "cancelled": "cancelled"}


@pytest.mark.parametrize("outcome", FAILURES)
async def test_halt_fails_the_workflow_at_once_and_cancels_running_siblings(engine: Engine, outcome: str) -> None:
    workflow, _ = await engine.create_workflow(T, dag(step("x"), step("y"), step("z", "x"), step("w", "y")))
    worker = Worker(engine)
    y = await worker.job_of(workflow.id, "y")  # y is running when x fails
    halted = await worker.end(workflow.id, "x", outcome)
    assert halted.status is WorkflowStatus.FAILED
    assert halted.completed_at is not None
    assert statuses(halted) == {"x": STEP_STATUS[outcome], "y": "cancelled", "z": "cancelled", "w": "cancelled"}
    cancelled = await engine.get_job(T, y.id)
    assert (cancelled.status, cancelled.lease_token) == (JobStatus.CANCELLED, None)
    with pytest.raises(LeaseLost):
        await engine.complete(y.id, y.lease_token or "", "too late")
    assert await engine.get_workflow(T, workflow.id) == halted  # the cancelled sibling re-triggers nothing
    assert len((await engine.list_jobs(T)).items) == 2


@pytest.mark.parametrize("outcome", FAILURES)
async def test_skip_skips_everything_downstream_and_other_branches_go_on(engine: Engine, outcome: str) -> None:
    workflow, _ = await engine.create_workflow(
        T, dag(step("x", on_failure=SKIP), step("y"), step("z", "x"), step("w", "z"), step("v", "y"))
    )
    worker = Worker(engine)
    skipped = await worker.end(workflow.id, "x", outcome)
    assert statuses(skipped) == {
        "x": STEP_STATUS[outcome], "y": "enqueued", "z": "skipped", "w": "skipped", "v": "pending",
    }  # fmt: skip
    assert skipped.status is WorkflowStatus.RUNNING
    assert "x" not in skipped.context
    await worker.complete(workflow.id, "y")
    done = await worker.complete(workflow.id, "v")
    assert (done.status, done.completed_at is not None) == (WorkflowStatus.PARTIALLY_FAILED, True)


@pytest.mark.parametrize("outcome", FAILURES)
async def test_continue_runs_dependents_with_a_null_entry(engine: Engine, outcome: str) -> None:
    workflow, _ = await engine.create_workflow(T, dag(step("x", on_failure=CONTINUE), step("z", "x")))
    worker = Worker(engine)
    went_on = await worker.end(workflow.id, "x", outcome)
    assert statuses(went_on) == {"x": STEP_STATUS[outcome], "z": "enqueued"}
    z = await engine.get_job(T, named(went_on, "z").job_id or "")
    assert z.payload[CONTEXT_KEY] == {"x": None}
    done = await worker.complete(workflow.id, "z", "ok")
    assert done.status is WorkflowStatus.PARTIALLY_FAILED
    assert done.context == {"x": None, "z": "ok"}


async def test_cancel_cancels_every_unfinished_step_and_its_job(engine: Engine, clock: TestClock) -> None:
    workflow, _ = await engine.create_workflow(T, dag(step("a"), step("b"), step("c", "a"), step("d", "b")))
    worker = Worker(engine)
    await worker.complete(workflow.id, "a", 1)
    b = await worker.job_of(workflow.id, "b")  # running
    c_job = named(await engine.get_workflow(T, workflow.id), "c").job_id or ""
    clock.advance(seconds=3)
    cancelled = await engine.cancel_workflow(T, workflow.id)
    assert (cancelled.status, cancelled.completed_at) == (WorkflowStatus.CANCELLED, clock.now())
    assert statuses(cancelled) == {"a": "completed", "b": "cancelled", "c": "cancelled", "d": "cancelled"}
    assert await engine.get_workflow(T, workflow.id) == cancelled
    jobs = {job.workflow_step_id: job.status for job in (await engine.list_jobs(T)).items}
    assert jobs == {"a": JobStatus.COMPLETED, "b": JobStatus.CANCELLED, "c": JobStatus.CANCELLED}
    assert (await engine.get_job(T, c_job)).status is JobStatus.CANCELLED  # a pending job, never claimed
    with pytest.raises(LeaseLost):
        await engine.heartbeat(b.id, b.lease_token or "")
    with pytest.raises(InvalidState):
        await engine.cancel_workflow(T, workflow.id)


async def test_a_finished_workflow_cannot_be_cancelled(engine: Engine) -> None:
    workflow, _ = await engine.create_workflow(T, dag(step("a")))
    done = await Worker(engine).complete(workflow.id, "a")
    assert done.status is WorkflowStatus.COMPLETED
    with pytest.raises(InvalidState, match="completed"):
        await engine.cancel_workflow(T, workflow.id)
    assert await engine.get_workflow(T, workflow.id) == done


async def test_a_dlq_replay_of_a_steps_job_leaves_the_step_as_it_ended(engine: Engine) -> None:
    workflow, _ = await engine.create_workflow(T, dag(step("x", on_failure=SKIP), step("y"), step("z", "x")))
    worker = Worker(engine)
    failed = await worker.dead_letter(workflow.id, "x")
    x_job = named(failed, "x").job_id or ""
    replayed = await engine.retry_job(T, x_job)
    assert replayed.status is JobStatus.PENDING
    await worker.complete(workflow.id, "x", "second try")  # the replay runs like any job …
    after = await engine.get_workflow(T, workflow.id)
    assert (await engine.get_job(T, x_job)).status is JobStatus.COMPLETED
    assert statuses(after) == {"x": "failed", "y": "enqueued", "z": "skipped"}  # … and reopens nothing
    assert after.context == {}
    assert (await worker.complete(workflow.id, "y")).status is WorkflowStatus.PARTIALLY_FAILED


async def test_ack_advances_the_workflows_of_its_items(engine: Engine) -> None:
    workflow, _ = await engine.create_workflow(T, dag(step("a"), step("b", on_failure=CONTINUE), step("c", "a", "b")))
    worker = Worker(engine)
    a, b = await worker.job_of(workflow.id, "a"), await worker.job_of(workflow.id, "b")
    results = await engine.ack(
        complete=[Completion(a.id, a.lease_token or "", "A")],
        fail=[FailureRequest(job_id=b.id, lease_token=b.lease_token or "", error="x", retryable=False)],
    )
    assert [r.status for r in results] == [JobStatus.COMPLETED, JobStatus.DEAD_LETTER]
    after = await engine.get_workflow(T, workflow.id)
    assert statuses(after) == {"a": "completed", "b": "failed", "c": "enqueued"}
    c = await engine.get_job(T, named(after, "c").job_id or "")
    assert c.payload[CONTEXT_KEY] == {"a": "A", "b": None}


async def test_a_step_job_the_janitor_dead_letters_advances_its_workflow(engine: Engine, clock: TestClock) -> None:
    workflow, _ = await engine.create_workflow(T, dag(step("a", max_retries=0), step("b", "a")))
    await engine.lease(["default"], lease_seconds=10)
    clock.advance(seconds=10)
    report = await engine.run_maintenance()
    assert (report.dead_lettered, report.healed) == (1, 0)
    after = await engine.get_workflow(T, workflow.id)
    assert (after.status, statuses(after)) == (WorkflowStatus.FAILED, {"a": "failed", "b": "cancelled"})


async def test_the_janitor_advances_a_workflow_whose_advance_was_missed_for_longer_than_the_bound(
    store: JobStore, engine: Engine, clock: TestClock, caplog: pytest.LogCaptureFixture
) -> None:
    workflow, _ = await engine.create_workflow(T, dag(step("a"), step("b"), step("c", "a", "b")))
    worker = Worker(engine)
    await worker.complete(workflow.id, "a", "A")
    b = await worker.job_of(workflow.id, "b")
    # The job's write lands; the process dies before the engine advances the workflow.
    (done,) = await store.job_complete_many([Completion(b.id, b.lease_token or "", "B")], now=engine.clock.now())
    assert done is not None
    assert statuses(await engine.get_workflow(T, workflow.id))["b"] == "enqueued"
    # Until the bound has passed the advance may still be in flight: the janitor leaves it alone.
    bound = engine.settings.heal_after.total_seconds()
    clock.advance(seconds=bound - 0.001)
    assert (await engine.run_maintenance()).healed == 0
    assert statuses(await engine.get_workflow(T, workflow.id))["b"] == "enqueued"
    clock.advance(seconds=0.002)
    with caplog.at_level(logging.WARNING, logger="queueflow.workflows"):
        report = await engine.run_maintenance()
    assert report.healed == 1
    assert f"healed workflow {workflow.id}: advanced after its steps b " in caplog.text
    healed = await engine.get_workflow(T, workflow.id)
    assert statuses(healed) == {"a": "completed", "b": "completed", "c": "enqueued"}
    c = await engine.get_job(T, named(healed, "c").job_id or "")
    assert c.payload[CONTEXT_KEY] == {"a": "A", "b": "B"}
    assert (await engine.run_maintenance()).healed == 0  # nothing left to heal, and the join is not enqueued twice
    assert len((await engine.list_jobs(T)).items) == 3


async def test_self_heal_is_bounded_per_sweep(store: JobStore, clock: TestClock) -> None:
    engine = Engine(store, clock, rng=random.Random(5), settings=EngineSettings(sweep_limit=2))
    ids = [(await engine.create_workflow(T, dag(step("a"), name=f"wf{i}")))[0].id for i in range(3)]
    leased = await engine.lease(["default"], max_jobs=10)
    await store.job_complete_many([Completion(job.id, job.lease_token or "") for job in leased], now=clock.now())
    clock.advance(seconds=engine.settings.heal_after.total_seconds() + 1)
    assert (await engine.run_maintenance()).healed == 2
    assert (await engine.run_maintenance()).healed == 1
    assert {(await engine.get_workflow(T, i)).status for i in ids} == {WorkflowStatus.COMPLETED}


async def test_retention_keeps_the_jobs_of_a_running_workflow(store: JobStore, clock: TestClock) -> None:
    engine = Engine(store, clock, rng=random.Random(5), settings=EngineSettings(retention=timedelta(hours=1)))
    workflow, _ = await engine.create_workflow(T, dag(step("a"), step("b", "a")))
    worker = Worker(engine)
    await worker.complete(workflow.id, "a")
    clock.advance(hours=2)
    assert (await engine.run_maintenance()).deleted == 0
    await worker.complete(workflow.id, "b")
    clock.advance(hours=2)
    assert (await engine.run_maintenance()).deleted == 2
    finished = await engine.get_workflow(T, workflow.id)  # the workflow itself, with its job ids, stays
    assert finished.status is WorkflowStatus.COMPLETED
