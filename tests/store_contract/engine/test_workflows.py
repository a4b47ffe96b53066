"""Workflows on every store: creation, fan-out and fan-in, idempotency, tenants, listing (README, "Workflows")."""

from __future__ import annotations

from dataclasses import replace

import pytest
from queueflow.clocks import TestClock
from queueflow.core.errors import NotFound, ValidationError
from queueflow.core.jsonvalue import MAX_RESULT_DEPTH
from queueflow.core.types import BackoffPolicy, JobFilter, JobStatus
from queueflow.core.workflow import CONTEXT_KEY, StepStatus, WorkflowStatus
from queueflow.engine import Engine
from queueflow.ports import JobStore

from tests.moments import T
from tests.store_contract.workflow_helpers import Worker, dag, named, statuses, step


async def test_create_rejects_a_cycle_with_its_path_and_stores_nothing(engine: Engine) -> None:
    with pytest.raises(ValidationError) as raised:
        await engine.create_workflow(T, dag(step("a", "c"), step("b", "a"), step("c", "b"), step("d", "nope")))
    fields = {error.field: error.message for error in raised.value.errors}
    assert fields["steps.0.depends_on"] == "cycle: a → c → b → a"  # a depends on c, c on b, b on a
    assert fields["steps.3.depends_on.0"] == "unknown step 'nope'"
    assert (await engine.list_workflows(T)).items == []
    assert (await engine.list_jobs(T)).items == []


async def test_create_enqueues_every_root_at_once_on_its_queue_with_the_context(engine: Engine) -> None:
    new = dag(
        step("a", payload={"x": 1}, queue_name="etl", priority=5, max_retries=7),
        step("b"),
        step("c", "a", "b"),
        context={"run": "nightly"},
    )
    workflow, created = await engine.create_workflow(T, new)
    assert created
    assert workflow.id.startswith("wf_")
    assert (workflow.status, workflow.completed_at) == (WorkflowStatus.RUNNING, None)
    assert statuses(workflow) == {"a": "enqueued", "b": "enqueued", "c": "pending"}
    assert named(workflow, "c").job_id is None
    a = await engine.get_job(T, named(workflow, "a").job_id or "")
    assert (a.queue_name, a.task_name, a.priority, a.max_retries) == ("etl", "do-a", 5, 7)
    assert a.payload == {"x": 1, CONTEXT_KEY: {"run": "nightly"}}
    assert (a.workflow_id, a.workflow_step_id, a.status) == (workflow.id, "a", JobStatus.PENDING)
    listed = (await engine.list_jobs(T, JobFilter(workflow_id=workflow.id))).items
    assert {job.workflow_step_id for job in listed} == {"a", "b"}
    assert await engine.get_workflow(T, workflow.id) == workflow


async def test_a_linear_chain_runs_step_by_step_and_completes(engine: Engine, clock: TestClock) -> None:
    workflow, _ = await engine.create_workflow(T, dag(step("a"), step("b", "a"), step("c", "b")))
    worker = Worker(engine)
    after_a = await worker.complete(workflow.id, "a", {"rows": 3})
    assert statuses(after_a) == {"a": "completed", "b": "enqueued", "c": "pending"}
    b = await engine.get_job(T, named(after_a, "b").job_id or "")
    assert b.payload == {CONTEXT_KEY: {"a": {"rows": 3}}}
    await worker.complete(workflow.id, "b", "bee")
    clock.advance(seconds=5)
    done = await worker.complete(workflow.id, "c", None)
    assert done.status is WorkflowStatus.COMPLETED
    assert done.completed_at == clock.now()
    assert done.context == {"a": {"rows": 3}, "b": "bee", "c": {"by": "c"}}
    assert all(s.status is StepStatus.COMPLETED for s in done.steps)


async def test_a_fan_in_step_sees_every_upstream_result(engine: Engine) -> None:
    workflow, _ = await engine.create_workflow(
        T, dag(step("a"), step("b", "a"), step("c", "a"), step("d", "a"), step("e", "b", "c", "d"))
    )
    worker = Worker(engine)
    fanned = await worker.complete(workflow.id, "a", 1)
    assert statuses(fanned) == {"a": "completed", "b": "enqueued", "c": "enqueued", "d": "enqueued", "e": "pending"}
    await worker.complete(workflow.id, "c", 3)
    await worker.complete(workflow.id, "b", 2)
    assert named(await engine.get_workflow(T, workflow.id), "e").status is StepStatus.PENDING
    joined = await worker.complete(workflow.id, "d", 4)
    e = await engine.get_job(T, named(joined, "e").job_id or "")
    assert e.payload[CONTEXT_KEY] == {"a": 1, "b": 2, "c": 3, "d": 4}
    assert (await worker.complete(workflow.id, "e", 5)).status is WorkflowStatus.COMPLETED


async def test_a_step_keeps_its_own_retry_policy(engine: Engine, clock: TestClock) -> None:
    backoff = BackoffPolicy(base_seconds=10, jitter=False)
    workflow, _ = await engine.create_workflow(T, dag(step("a", max_retries=1, backoff=backoff), step("b", "a")))
    (job,) = await engine.lease(["default"])
    retrying = await engine.fail(job.id, job.lease_token or "", "flaky")
    assert retrying.status is JobStatus.RETRYING
    assert statuses(await engine.get_workflow(T, workflow.id))["a"] == "enqueued"  # a retry is not an ending
    clock.advance(seconds=10)
    done = await Worker(engine).complete(workflow.id, "a")
    assert statuses(done) == {"a": "completed", "b": "enqueued"}


async def test_an_idempotent_create_returns_the_original(engine: Engine) -> None:
    first, created = await engine.create_workflow(T, dag(step("a"), key="etl-2026-03-01"))
    again, created_again = await engine.create_workflow(T, dag(step("other"), step("x"), key="etl-2026-03-01"))
    assert (created, created_again) == (True, False)
    assert again == first
    assert len((await engine.list_jobs(T)).items) == 1  # the repeat enqueued nothing
    elsewhere, created_elsewhere = await engine.create_workflow("tenant-b", dag(step("a"), key="etl-2026-03-01"))
    assert created_elsewhere
    assert elsewhere.id != first.id


async def test_another_tenants_workflow_is_not_found(engine: Engine) -> None:
    workflow, _ = await engine.create_workflow(T, dag(step("a")))
    with pytest.raises(NotFound):
        await engine.get_workflow("tenant-b", workflow.id)
    with pytest.raises(NotFound):
        await engine.cancel_workflow("tenant-b", workflow.id)
    with pytest.raises(NotFound):
        await engine.get_workflow(T, "wf_missing")
    assert (await engine.list_workflows("tenant-b")).items == []
    assert (await engine.get_workflow(T, workflow.id)).status is WorkflowStatus.RUNNING


async def test_list_is_newest_first_filters_by_status_and_pages(engine: Engine, clock: TestClock) -> None:
    ids = []
    for index in range(5):
        ids.append((await engine.create_workflow(T, dag(step("a"), name=f"wf{index}")))[0].id)
        clock.advance(seconds=1)
    await engine.cancel_workflow(T, ids[1])
    await engine.cancel_workflow(T, ids[3])
    await engine.create_workflow("tenant-b", dag(step("a")))

    first = await engine.list_workflows(T, limit=2)
    assert [w.id for w in first.items] == [ids[4], ids[3]]
    assert first.next_cursor is not None
    second = await engine.list_workflows(T, limit=2, cursor=first.next_cursor)
    assert [w.id for w in second.items] == [ids[2], ids[1]]
    third = await engine.list_workflows(T, limit=2, cursor=second.next_cursor)
    assert ([w.id for w in third.items], third.next_cursor) == ([ids[0]], None)
    assert third.items[0].steps[0].name == "a"  # listed workflows carry their steps

    cancelled = await engine.list_workflows(T, WorkflowStatus.CANCELLED, limit=1)
    assert [w.id for w in cancelled.items] == [ids[3]]
    rest = await engine.list_workflows(T, WorkflowStatus.CANCELLED, cursor=cancelled.next_cursor)
    assert ([w.id for w in rest.items], rest.next_cursor) == ([ids[1]], None)
    running = await engine.list_workflows(T, WorkflowStatus.RUNNING)
    assert [w.id for w in running.items] == [ids[4], ids[2], ids[0]]
    with pytest.raises(ValidationError):
        await engine.list_workflows(T, limit=0)
    with pytest.raises(ValidationError):
        await engine.list_workflows(T, cursor="not-a-cursor")


async def test_a_rejected_workflow_leaves_no_trace_in_the_store(store: JobStore, engine: Engine) -> None:
    workflow, _ = await engine.create_workflow(T, dag(step("a")))
    bad = replace(workflow, id="wf_bad", idempotency_key=None, context={"k": "nul\x00"})
    with pytest.raises(ValidationError):
        await store.workflow_insert(bad, [])
    assert await store.workflow_get("wf_bad") is None


async def test_the_deepest_result_a_job_may_have_still_reaches_its_dependents(engine: Engine) -> None:
    deep: object = "leaf"
    for _ in range(MAX_RESULT_DEPTH):
        deep = [deep]
    workflow, _ = await engine.create_workflow(T, dag(step("a"), step("b", "a")))
    worker = Worker(engine)
    after_a = await worker.complete(workflow.id, "a", deep)
    assert statuses(after_a) == {"a": "completed", "b": "enqueued"}
    b = await engine.get_job(T, named(after_a, "b").job_id or "")
    assert b.payload[CONTEXT_KEY] == {"a": deep}
    assert (await worker.complete(workflow.id, "b", None)).status is WorkflowStatus.COMPLETED
