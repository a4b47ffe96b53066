"""The `WorkflowStore` methods, called directly on every store: insert, get, list, advance and stalled_jobs, each
against its docstring in `ports`. The transitions handed to `workflow_advance` are built by hand or by
`core.advance`, as the engine would hand them; what the store must do is record them, guarded, or nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import msgspec
import pytest
from queueflow.core.advance import (
    ENQUEUE_FROM,
    FINISH_FROM,
    AdvanceRequest,
    StepChange,
    StepOutcome,
    Transition,
    cancel_workflow,
    on_step_finished,
)
from queueflow.core.errors import InvalidState, ValidationError
from queueflow.core.jsonvalue import MAX_DEPTH
from queueflow.core.types import ClaimRequest, Completion, Failure, JobStatus
from queueflow.core.workflow import CONTEXT_KEY, StepStatus, Workflow, WorkflowQuery, WorkflowStatus
from queueflow.ports import Store

from tests.moments import START, T
from tests.store_contract.store_rows import (
    LEASE,
    OTHER,
    at,
    everything,
    found_only_by_its_tenant,
    job,
    nested,
    newest_first,
    pages,
    stored_workflow,
    workflow,
)
from tests.store_contract.workflow_helpers import SKIP, named, statuses, step


def recording(decide: Callable[[Workflow], Transition]) -> tuple[list[Workflow], Callable[[Workflow], Transition]]:
    """`decide`, and the list of the workflows it was called on."""
    seen: list[Workflow] = []

    def spy(workflow: Workflow) -> Transition:
        seen.append(workflow)
        return decide(workflow)

    return seen, spy


async def advance(store: Store, workflow_id: str, transition: Transition, now: float = 5) -> Workflow | None:
    return await store.workflow_advance(
        AdvanceRequest(workflow_id=workflow_id, decide=lambda _: transition, now=at(now))
    )


async def claim_step(store: Store, queue: str) -> str:
    """Claim the one due job of `queue` (a step's own queue); its lease token."""
    (held,) = await store.job_claim(ClaimRequest(queues=[queue], max_jobs=1, now=START, lease_seconds=LEASE))
    return held.lease_token or ""


# --- workflow_insert ---------------------------------------------------------------------------------------


async def test_insert_stores_the_workflow_its_steps_in_order_and_its_root_jobs(store: Store) -> None:
    row, jobs = workflow(
        step("a", payload={"x": [1]}, queue_name="etl", priority=2, max_retries=1, timeout_seconds=9.5),
        step("c", "a", "b", on_failure=SKIP),
        step("b"),
        context={"run": "nightly"},
        key="k",
    )
    assert [job.workflow_step_id for job in jobs] == ["a", "b"]
    assert await store.workflow_insert(row, jobs) == (row, True)
    assert await store.workflow_get(row.id) == row
    assert [s.name for s in row.steps] == ["a", "c", "b"]
    assert await store.job_get_many([job.id for job in jobs]) == {job.id: job for job in jobs}
    assert named(row, "a").job_id == jobs[0].id


async def test_insert_with_a_known_key_returns_the_stored_workflow_and_writes_nothing(store: Store) -> None:
    first = await stored_workflow(store, step("a"), key="k")
    cancelled = await store.workflow_advance(
        AdvanceRequest(workflow_id=first.id, decide=lambda w: cancel_workflow(w.steps), now=START)
    )
    before = await everything(store)
    repeat, repeat_jobs = workflow(step("x"), step("y"), key="k")
    assert await store.workflow_insert(repeat, repeat_jobs) == (cancelled, False)
    assert await everything(store) == before
    elsewhere, elsewhere_jobs = workflow(step("x"), key="k", tenant=OTHER)
    assert await store.workflow_insert(elsewhere, elsewhere_jobs) == (elsewhere, True)


async def test_insert_of_a_value_postgresql_cannot_store_writes_nothing(store: Store) -> None:
    keyed = await stored_workflow(store, step("a"), key="k")
    row, jobs = workflow(step("a"), step("b"))
    bad_inserts = [
        (replace(row, context={"text": "nul\x00"}), jobs),
        (replace(row, context={"deep": nested(MAX_DEPTH)}), jobs),
        (replace(row, name="nul\x00"), jobs),
        (replace(row, steps=[replace(row.steps[0], payload={"x": "nul\x00"}), row.steps[1]]), jobs),
        (row, [jobs[0], msgspec.structs.replace(jobs[1], payload={"x": "nul\x00"})]),
        (replace(row, id=keyed.id), jobs),
        # A known key does not make an unstorable workflow acceptable.
        (replace(row, idempotency_key="k", context={"text": "nul\x00"}), jobs),
    ]
    before = await everything(store)
    for bad, bad_jobs in bad_inserts:
        with pytest.raises(ValidationError):
            await store.workflow_insert(bad, bad_jobs)
    assert await everything(store) == before


# --- workflow_get, workflow_list ---------------------------------------------------------------------------


async def test_get_answers_only_for_an_existing_workflow_of_the_tenant(store: Store) -> None:
    await found_only_by_its_tenant(
        lambda workflow_id, tenant_id: store.workflow_get(workflow_id, tenant_id=tenant_id),
        await stored_workflow(store, step("a")),
    )


async def test_list_is_newest_first_filters_by_status_and_resumes_after_the_cursor(store: Store) -> None:
    rows = [await stored_workflow(store, step("a"), now=at(seconds)) for seconds in (0, 1, 1, 2, 1)]
    await stored_workflow(store, step("a"), tenant=OTHER, now=at(9))
    cancelled = {rows[1].id, rows[3].id}
    for workflow_id in cancelled:
        await advance(store, workflow_id, Transition(workflow_status=WorkflowStatus.CANCELLED))
    order = newest_first(rows)
    for status, expected in [
        (None, order),
        (WorkflowStatus.CANCELLED, [id_ for id_ in order if id_ in cancelled]),
        (WorkflowStatus.RUNNING, [id_ for id_ in order if id_ not in cancelled]),
    ]:
        listed = await pages(
            lambda after, status=status: store.workflow_list(
                WorkflowQuery(tenant_id=T, status=status, limit=2, after=after)
            )
        )
        assert [id_ for page in listed for id_ in page] == expected
        assert all(len(page) <= 2 for page in listed)
    assert (await store.workflow_list(WorkflowQuery(tenant_id=T, limit=1)))[0] == await store.workflow_get(order[0])
    assert await store.workflow_list(WorkflowQuery(tenant_id="nul\x00", limit=10)) == []


# --- workflow_advance --------------------------------------------------------------------------------------


async def test_advance_hands_decide_the_stored_workflow_and_records_its_transition(store: Store) -> None:
    row = await stored_workflow(
        store, step("a"), step("b", "a", queue_name="qb"), step("c", "a"), step("d", "b", "c"), context={"run": 1}
    )
    seen, decide = recording(lambda w: on_step_finished(w.steps, "a", StepOutcome.COMPLETED, {"rows": 3}))
    after = await store.workflow_advance(AdvanceRequest(workflow_id=row.id, decide=decide, now=at(5)))
    assert seen == [row]
    assert after is not None
    assert after == await store.workflow_get(row.id)
    assert (after.status, after.completed_at) == (WorkflowStatus.RUNNING, None)
    assert after.context == {"run": 1, "a": {"rows": 3}}
    assert statuses(after) == {"a": "completed", "b": "enqueued", "c": "enqueued", "d": "pending"}
    b = await store.job_get(named(after, "b").job_id or "")
    assert b is not None
    assert b == msgspec.structs.replace(
        job(now=at(5), queue_name="qb", task_name="do-b", payload={CONTEXT_KEY: {"run": 1, "a": {"rows": 3}}}),
        id=b.id,
        workflow_id=row.id,
        workflow_step_id="b",
    )


async def test_advance_sets_the_terminal_status_and_completed_at_only_while_running(store: Store) -> None:
    row = await stored_workflow(store, step("a"))
    failed = await advance(store, row.id, Transition(workflow_status=WorkflowStatus.FAILED), now=5)
    assert failed == replace(row, status=WorkflowStatus.FAILED, completed_at=at(5))
    late = Transition(
        finished=StepChange("a", StepStatus.COMPLETED, FINISH_FROM),
        result={"late": True},
        workflow_status=WorkflowStatus.COMPLETED,
    )
    again = await advance(store, row.id, late, now=9)
    assert again is not None
    assert (again.status, again.completed_at, again.context) == (WorkflowStatus.FAILED, at(5), {"a": {"late": True}})
    assert await store.workflow_get(row.id) == again


async def test_advance_changes_a_step_only_from_the_statuses_it_expects(store: Store) -> None:
    row = await stored_workflow(store, step("a"), step("b", "a"))
    before = await everything(store)
    unguarded = Transition(
        finished=StepChange("b", StepStatus.COMPLETED, FINISH_FROM),  # b is pending, not enqueued
        skip=("a",),  # a is enqueued, not pending
        enqueue=("a",),  # already enqueued: no second job
    )
    assert await advance(store, row.id, unguarded) == row
    assert await everything(store) == before
    finished = Transition(finished=StepChange("a", StepStatus.FAILED, FINISH_FROM), enqueue=("b",))
    after = await advance(store, row.id, finished)
    assert after is not None
    assert statuses(after) == {"a": "failed", "b": "enqueued"}
    repeat = replace(finished, finished=StepChange("a", StepStatus.COMPLETED, ENQUEUE_FROM))
    assert await advance(store, row.id, repeat) == after
    assert await store.workflow_get(row.id) == after


async def test_advance_cancels_the_unfinished_jobs_of_steps_it_cancels(store: Store) -> None:
    row = await stored_workflow(
        store, step("a", queue_name="qa"), step("b", queue_name="qb"), step("c", queue_name="qc"), step("d", "a", "c")
    )
    running_token = await claim_step(store, "qa")
    done_token = await claim_step(store, "qc")
    await store.job_complete_many([Completion(named(row, "c").job_id or "", done_token, "ok")], now=START)
    jobs_before = await store.job_get_many([s.job_id for s in row.steps if s.job_id])
    cancelled = await store.workflow_advance(
        AdvanceRequest(workflow_id=row.id, decide=lambda w: cancel_workflow(w.steps), now=at(7))
    )
    assert cancelled is not None
    assert (cancelled.status, cancelled.completed_at) == (WorkflowStatus.CANCELLED, at(7))
    assert statuses(cancelled) == {"a": "cancelled", "b": "cancelled", "c": "cancelled", "d": "cancelled"}
    jobs = await store.job_get_many(list(jobs_before))
    voided = {"status": JobStatus.CANCELLED, "lease_token": None, "locked_until": None, "completed_at": at(7)}
    for name in ("a", "b"):
        job_id = named(row, name).job_id or ""
        assert jobs[job_id] == msgspec.structs.replace(jobs_before[job_id], **voided)
    c_job = named(row, "c").job_id or ""
    assert jobs[c_job] == jobs_before[c_job]  # finished before the cancel: left as it is
    a_job = named(row, "a").job_id or ""
    assert await store.job_complete_many([Completion(a_job, running_token)], now=at(7)) == [None]


async def test_advance_writes_nothing_when_decide_raises(store: Store) -> None:
    row = await stored_workflow(store, step("a"), step("b", "a"))
    before = await everything(store)

    def refuse(workflow: Workflow) -> Transition:
        raise InvalidState(f"workflow {workflow.id} will not move")

    with pytest.raises(InvalidState):
        await store.workflow_advance(AdvanceRequest(workflow_id=row.id, decide=refuse, now=at(5)))

    def broken(workflow: Workflow) -> Transition:
        raise KeyError("no such step")

    with pytest.raises(KeyError):
        await store.workflow_advance(AdvanceRequest(workflow_id=row.id, decide=broken, now=at(5)))
    assert await everything(store) == before


async def test_advance_of_a_value_postgresql_cannot_store_writes_nothing(store: Store) -> None:
    row = await stored_workflow(store, step("a"), step("b", "a"))
    before = await everything(store)
    finished = StepChange("a", StepStatus.COMPLETED, FINISH_FROM)
    for bad in [
        Transition(finished=finished, result="nul\x00", enqueue=("b",)),  # the new job's payload too
        Transition(finished=finished, result="nul\x00"),
        Transition(finished=finished, result=nested(MAX_DEPTH)),
    ]:
        with pytest.raises(ValidationError):
            await advance(store, row.id, bad)
    assert await everything(store) == before


async def test_advance_of_a_missing_or_foreign_workflow_is_none_and_decides_nothing(store: Store) -> None:
    row = await stored_workflow(store, step("a"))
    seen, decide = recording(lambda w: cancel_workflow(w.steps))
    for workflow_id, tenant in [(row.id, OTHER), ("wf_missing", None), ("wf\x00", None), (row.id, "nul\x00")]:
        assert (
            await store.workflow_advance(
                AdvanceRequest(workflow_id=workflow_id, decide=decide, tenant_id=tenant, now=at(5))
            )
            is None
        )
    assert seen == []
    assert (
        await store.workflow_advance(AdvanceRequest(workflow_id=row.id, decide=decide, tenant_id=T, now=at(5)))
        is not None
    )
    assert seen == [row]


# --- workflow_stalled_jobs ---------------------------------------------------------------------------------


async def test_stalled_jobs_are_finished_jobs_of_enqueued_steps_of_running_workflows(store: Store) -> None:
    queues = ["done", "dead", "gone", "running", "pending"]
    row = await stored_workflow(store, *(step(queue, queue_name=queue) for queue in queues))
    job_of = {s.name: s.job_id or "" for s in row.steps}
    await store.job_complete_many([Completion(job_of["done"], await claim_step(store, "done"))], now=at(1))
    await store.job_fail_many([Failure(job_of["dead"], await claim_step(store, "dead"), "x", None)], now=at(1))
    await store.job_cancel(job_of["gone"], tenant_id=T, now=at(1))
    await claim_step(store, "running")
    # A finished job of a workflow that is no longer running is not stalled.
    ended = await stored_workflow(store, step("x", queue_name="x"))
    await store.job_cancel(named(ended, "x").job_id or "", tenant_id=T, now=at(1))
    await advance(store, ended.id, Transition(workflow_status=WorkflowStatus.FAILED))

    before = await everything(store)
    assert await store.workflow_stalled_jobs(limit=10, finished_before=at(1)) == []  # finished at 1, not before it
    stalled = await store.workflow_stalled_jobs(limit=10, finished_before=at(2))
    assert {job.id for job in stalled} == {job_of["done"], job_of["dead"], job_of["gone"]}
    assert {job.status for job in stalled} == {JobStatus.COMPLETED, JobStatus.DEAD_LETTER, JobStatus.CANCELLED}
    assert stalled == [await store.job_get(job.id) for job in stalled]
    assert len(await store.workflow_stalled_jobs(limit=2, finished_before=at(2))) == 2
    assert await everything(store) == before
    # Once the step records its job's outcome, the job is no longer stalled.
    await advance(store, row.id, Transition(finished=StepChange("done", StepStatus.COMPLETED, FINISH_FROM)))
    assert {job.id for job in await store.workflow_stalled_jobs(limit=10, finished_before=at(2))} == {
        job_of["dead"],
        job_of["gone"],
    }
