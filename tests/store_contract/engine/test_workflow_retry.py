"""Re-running a workflow that ended (the HTTP contract, `POST /v1/workflows/{id}/retry`): failed, cancelled and
skipped steps go back to pending, completed ones keep their results, ready steps get new jobs."""

from __future__ import annotations

import pytest
from queueflow.core.errors import InvalidState, NotFound
from queueflow.core.types import JobStatus
from queueflow.core.workflow import CONTEXT_KEY, StepStatus, WorkflowStatus
from queueflow.engine import Engine

from tests.store_contract.workflow_helpers import CONTINUE, SKIP, Worker, dag, named, signal, statuses, step

T = "tenant-a"


async def test_a_halted_workflow_runs_again_from_its_failure_keeping_what_completed(engine: Engine) -> None:
    workflow, _ = await engine.create_workflow(T, dag(step("a"), step("b", "a"), step("c", "b"), step("d")))
    worker = Worker(engine, T)
    await worker.complete(workflow.id, "a", "A")
    old_b = await worker.job_of(workflow.id, "b")
    failed = await worker.dead_letter(workflow.id, "b")
    assert failed.status is WorkflowStatus.FAILED
    assert statuses(failed) == {"a": "completed", "b": "failed", "c": "cancelled", "d": "cancelled"}
    retried = await engine.retry_workflow(T, workflow.id)
    assert (retried.status, retried.completed_at) == (WorkflowStatus.RUNNING, None)
    assert statuses(retried) == {"a": "completed", "b": "enqueued", "c": "pending", "d": "enqueued"}
    assert retried.context == {"a": "A"}
    new_b = named(retried, "b").job_id
    assert new_b is not None
    assert new_b != old_b.id
    assert (await engine.get_job(T, old_b.id)).status is JobStatus.DEAD_LETTER  # the old job stays, for history
    assert (await worker.job_of(workflow.id, "b")).payload[CONTEXT_KEY] == {"a": "A"}
    await worker.complete(workflow.id, "b", "B")
    await worker.complete(workflow.id, "d")
    done = await worker.complete(workflow.id, "c")
    assert done.status is WorkflowStatus.COMPLETED
    assert done.context == {"a": "A", "b": "B", "c": {"by": "c"}, "d": {"by": "d"}}


async def test_a_partially_failed_workflow_reopens_skipped_and_continued_steps(engine: Engine) -> None:
    workflow, _ = await engine.create_workflow(
        T, dag(step("a", on_failure=SKIP), step("b", "a"), step("c", on_failure=CONTINUE), step("d", "c"))
    )
    worker = Worker(engine, T)
    await worker.dead_letter(workflow.id, "a")
    await worker.dead_letter(workflow.id, "c")
    ended = await worker.complete(workflow.id, "d")
    assert ended.status is WorkflowStatus.PARTIALLY_FAILED
    assert ended.context == {"c": None, "d": {"by": "d"}}
    retried = await engine.retry_workflow(T, workflow.id)
    assert statuses(retried) == {"a": "enqueued", "b": "pending", "c": "enqueued", "d": "completed"}
    assert retried.context == {"d": {"by": "d"}}
    await worker.complete(workflow.id, "a")
    await worker.complete(workflow.id, "b")
    assert (await worker.complete(workflow.id, "c")).status is WorkflowStatus.COMPLETED


async def test_a_retried_signal_step_waits_again_and_its_kept_signal_is_kept(engine: Engine) -> None:
    workflow, _ = await engine.create_workflow(T, dag(step("a"), signal("s", "go", "a"), signal("t", "other")))
    await engine.signal_workflow(T, workflow.id, "go", "early")
    await engine.cancel_workflow(T, workflow.id)
    retried = await engine.retry_workflow(T, workflow.id)
    assert statuses(retried) == {"a": "enqueued", "s": "pending", "t": "waiting"}
    after = await Worker(engine, T).complete(workflow.id, "a")
    assert named(after, "s").status is StepStatus.COMPLETED
    assert after.context["s"] == "early"


async def test_only_an_ended_workflow_can_be_retried(engine: Engine) -> None:
    workflow, _ = await engine.create_workflow(T, dag(step("a")))
    with pytest.raises(InvalidState):
        await engine.retry_workflow(T, workflow.id)  # running
    await Worker(engine, T).complete(workflow.id, "a")
    with pytest.raises(InvalidState):
        await engine.retry_workflow(T, workflow.id)  # completed
    with pytest.raises(NotFound):
        await engine.retry_workflow(T, "wf_missing")
    with pytest.raises(NotFound):
        await engine.retry_workflow("tenant-b", workflow.id)
