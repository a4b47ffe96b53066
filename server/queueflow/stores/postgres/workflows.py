"""The WorkflowStore half of PostgresJobStore: workflows, workflow_steps, and the jobs that run the steps.

A step's finish (`workflow_step_finish`) is one transaction over the rows it touches, locked as `core.finish`
describes: the workflow row FOR KEY SHARE, the step's own row, its pending dependents in name order, the
workflow's counter last. A change of the whole workflow (`workflow_advance`: a cancel, a `halt` or `skip`
failure) is one transaction that first locks the workflow's row FOR UPDATE (waiting out the finishes in flight),
reads its steps, has the pure `decide` pick a transition on that snapshot and writes what `advance.record` makes
of it. Results stay on the step rows; a workflow's context, and a new step job's `_context`, are assembled by SQL
(`workflow_sql.CONTEXT`), so no finish decodes or rewrites the results of the others.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import Any

import asyncpg

from queueflow.core.advance import (
    AdvanceRequest,
    ChildStart,
    Recording,
    Transition,
    counters,
    due_waits,
    finished_status,
)
from queueflow.core.backoff import RandomSource
from queueflow.core.children import (
    cancel_child,
    child_ended,
    finish_children,
    parent_wait,
    record_with_children,
    retry_child,
)
from queueflow.core.definitions import new_workflow_from_json, new_workflow_json
from queueflow.core.errors import QueueFlowError, StoreUnavailable, ValidationError
from queueflow.core.finish import (
    StepReport,
    counted_status,
    finishes_alone,
    on_finish,
    on_report,
    result_errors,
)
from queueflow.core.ids import id_stream
from queueflow.core.jsonvalue import job_storage_errors, storable_text
from queueflow.core.types import Job
from queueflow.core.waits import DueWait, KeptSignal, Wait
from queueflow.core.workflow import (
    OnFailure,
    ParentRef,
    Step,
    StepStatus,
    Workflow,
    WorkflowQuery,
    WorkflowStatus,
    workflow_storage_errors,
)
from queueflow.stores.postgres.connection import Db, Pooled, begun
from queueflow.stores.postgres.errors import json_text
from queueflow.stores.postgres.rows import backoff_of, insert_columns, job_config, job_from_row, job_insert
from queueflow.stores.postgres.workflow_sql import (
    BEGIN_FINISH,
    CANCEL_STEP_JOBS,
    COUNT,
    CUSTOM_PLAN,
    FINISH,
    STALLED_JOBS,
    STEP_ON_FAILURE,
    STEPS_INSERT,
    STEPS_OF,
    STEPS_RECORD,
    WIDE_FINISH,
    WORKFLOW_AWAIT,
    WORKFLOW_BY_KEY,
    WORKFLOW_COLUMNS,
    WORKFLOW_CONTEXT,
    WORKFLOW_END,
    WORKFLOW_GET,
    WORKFLOW_INSERT,
    WORKFLOW_LOCK,
    WORKFLOW_RECORD,
)


class PostgresWorkflows(Pooled):
    async def workflow_insert(
        self, workflow: Workflow, jobs: Sequence[Job], *, children: Sequence[ChildStart] = ()
    ) -> tuple[Workflow, bool]:
        with self._announcing() as announce:
            async with self._connection() as db, db.transaction():
                inserted, created = await insert_workflow(db, workflow, jobs, announce)
                if created:
                    await start_children(db, children, workflow.created_at, self._rng, announce)
                return inserted, created

    async def workflow_get(self, workflow_id: str, *, tenant_id: str | None = None) -> Workflow | None:
        if not storable_text(workflow_id) or (tenant_id is not None and not storable_text(tenant_id)):
            return None
        async with self._connection() as db:
            row = await db.fetchrow(WORKFLOW_GET, workflow_id, tenant_id)
            return (await _with_steps(db, [row]))[0] if row is not None else None

    async def workflow_watch(self, workflow_id: str, *, tenant_id: str) -> Workflow | None:
        if not (storable_text(workflow_id) and storable_text(tenant_id)):
            return None
        async with self._connection() as db:
            # As `job_watch`: the read is a statement of its own, with a snapshot taken after the mark.
            await db.execute(WORKFLOW_AWAIT, workflow_id, tenant_id)
        return await self.workflow_get(workflow_id, tenant_id=tenant_id)

    async def workflow_list(self, query: WorkflowQuery) -> list[Workflow]:
        tenant_id, status, limit, after = query.tenant_id, query.status, query.limit, query.after
        if not storable_text(tenant_id) or (after is not None and not storable_text(after.id)):
            return []
        conditions, args = ["w.tenant_id = $1"], [tenant_id, limit]
        if status is not None:
            args.append(status.value)
            conditions.append(f"w.status = ${len(args)}")
        if query.parent_id is not None:
            if not storable_text(query.parent_id):
                return []
            args.append(query.parent_id)
            conditions.append(f"w.parent_id = ${len(args)}")
        if after is not None:
            args += [after.created_at, after.id]
            conditions.append(f"(w.created_at, w.id) < (${len(args) - 1}, ${len(args)})")
        sql = (
            f"SELECT {WORKFLOW_COLUMNS} FROM queueflow.workflows AS w WHERE {' AND '.join(conditions)}"
            " ORDER BY w.created_at DESC, w.id DESC LIMIT $2"
        )
        async with self._connection() as db:
            return await _with_steps(db, await db.fetch(sql, *args))

    async def workflow_advance(self, request: AdvanceRequest) -> Workflow | None:
        workflow_id, tenant_id = request.workflow_id, request.tenant_id
        if not storable_text(workflow_id) or (tenant_id is not None and not storable_text(tenant_id)):
            return None
        try:
            with self._announcing() as announce:
                async with self._connection() as db, db.transaction():
                    workflow, _ = await _advance(
                        db, workflow_id, tenant_id, request.decide, request.now, self._rng, announce
                    )
        except _Raised as raised:
            raise raised.error from None  # and the transaction rolled back
        return workflow

    async def workflow_step_finish(self, report: StepReport, *, now: datetime) -> tuple[DueWait, ...] | None:
        texts = (report.workflow_id, report.step, report.job_id or "")
        if not all(storable_text(text) for text in texts):
            return None
        if errors := result_errors(report.result):
            raise ValidationError.of(errors)
        result = json_text(report.result, ("result",))
        jobs: Sequence[Job] | None
        due: tuple[DueWait, ...] = ()
        try:
            with self._announcing() as announce:
                async with self._connection() as db:
                    alone = True
                    if not finishes_alone(report.outcome, OnFailure.HALT):
                        on_failure = await db.fetchval(STEP_ON_FAILURE, report.workflow_id, report.step)
                        alone = on_failure is not None and finishes_alone(report.outcome, _ON_FAILURE[on_failure])
                    async with begun(db, BEGIN_FINISH):
                        if alone:
                            finished = await _finish(db, report, result, now, self._rng, announce)
                            jobs, due = finished if finished is not None else (None, ())
                            announce(job.queue_name for job in jobs or ())
                        else:
                            decide = partial(on_report, report=report)
                            after, enqueued = await _advance(
                                db, report.workflow_id, None, decide, now, self._rng, announce, report
                            )
                            jobs = enqueued if after is not None else None
                            due = () if after is None else tuple(due_waits(after, now))
                            # Recorded, so the workflow was running: if it ended here, its parent's step ends next.
                            if after is not None and (parent := child_ended(after)) is not None:
                                due = (*due, parent)
        except _Raised as raised:
            raise raised.error from None
        if jobs is None:
            return None
        return due

    async def workflow_stalled_jobs(self, *, limit: int, finished_before: datetime) -> list[Job]:
        async with self._connection() as db:
            return [job_from_row(row) for row in await db.fetch(STALLED_JOBS, limit, finished_before)]


async def _advance(
    db: Db,
    workflow_id: str,
    tenant_id: str | None,
    decide: Callable[[Workflow], Transition],
    now: datetime,
    rng: RandomSource,
    announce: Announce,
    report: StepReport | None = None,
    cancelling: list[str] | None = None,
) -> tuple[Workflow | None, Sequence[Job]]:
    """`workflow_advance` in the caller's transaction, and the jobs it enqueued (announced): no workflow if it does
    not exist (for `tenant_id`), or, for a `report`, if its step was not recorded. Down the tree after it (each
    child locked after its parent): the children of the child steps it cancelled are cancelled, those of the child
    steps it made wait started (`core.children`). The jobs the whole tree cancels are cancelled last, in one
    statement (`CANCEL_STEP_JOBS`); `cancelling` collects them for the `_advance` at the top of the tree."""
    if await db.fetchval(WORKFLOW_LOCK, workflow_id, tenant_id) is None:
        return None, ()
    row = await db.fetchrow(WORKFLOW_GET, workflow_id, tenant_id)
    if row is None:
        raise StoreUnavailable(f"workflow {workflow_id} vanished under its lock")
    (snapshot,) = await _with_steps(db, [row])
    try:
        transition = decide(snapshot)
    except Exception as exc:
        raise _Raised(exc) from exc
    recording = record_with_children(snapshot, transition, now, id_stream("job", now, rng), id_stream("wf", now, rng))
    await _write(db, snapshot, transition, recording, now)
    announce(job.queue_name for job in recording.jobs)
    top = cancelling is None
    cancelling = [] if cancelling is None else cancelling
    cancelling.extend(recording.cancel_jobs)  # the top's list: the children below add theirs to it
    for child_id in recording.cancel_children:
        await _advance(db, child_id, None, cancel_child, now, rng, announce, None, cancelling)
    await start_children(db, recording.children, now, rng, announce)
    if top and cancelling:
        await db.execute(CANCEL_STEP_JOBS, sorted(set(cancelling)), now)
    if report is not None and transition.finished is None:
        return None, recording.jobs
    return recording.workflow, recording.jobs


async def _finish(
    db: Db, report: StepReport, result: str, now: datetime, rng: RandomSource, announce: Announce
) -> tuple[Sequence[Job], tuple[DueWait, ...]] | None:
    """`workflow_step_finish` of a finish that `core.finish` decides on the touched rows, in the caller's
    transaction, in `core.finish`'s lock order (FINISH, then COUNT): the jobs it enqueued and the waits due at once
    (and the parent's step, if it ended a child workflow), or None if it recorded nothing (a repeat, a late report,
    a stale wait end, a workflow no longer running). A dependent child step starts its child between the two
    (after the workflow's context is read for it: only then, so an ordinary finish stays two statements)."""
    status = finished_status(report.outcome).value
    end = report.wait_end
    rows = await db.fetch(
        FINISH,
        report.workflow_id,
        report.step,
        report.job_id,
        status,
        result,
        None if end is None else end.due_at,
        end is not None and end.signalled,
    )
    if not rows or not rows[0]["finished"]:
        return None
    head = rows[0]
    dependents = [row for row in rows if row["d_name"] is not None]
    locked = [_step(_dependent_columns(row), edges=False) for row in dependents]
    ctid = {row["d_name"]: row["dependent_ctid"] for row in dependents}
    # COUNT assembles the new jobs' `_context` as it inserts them.
    job_ids = id_stream("job", now, rng)
    finish = on_finish(report, _head(head), locked, now, job_ids, with_context=False)
    if errors := job_storage_errors(finish.jobs):
        raise ValidationError.of(errors)
    if finish.children:
        context = await db.fetchval(WORKFLOW_CONTEXT, report.workflow_id)
        finish, starts = finish_children(finish, _head(head), context, now, job_ids, id_stream("wf", now, rng))
        await start_children(db, starts, now, rng, announce)
    if len(finish.dependents) > WIDE_FINISH:
        await db.execute(CUSTOM_PLAN)
    counted = await db.fetchrow(
        COUNT,
        *insert_columns(finish.jobs),
        report.workflow_id,
        [ctid[row.name] for row in finish.dependents],
        [row.remaining for row in finish.dependents],
        [row.status.value for row in finish.dependents],
        [row.job_id for row in finish.dependents],
        finish.unfinished,
        finish.partial,
        [row.due_at for row in finish.dependents],
        [row.child_workflow_id for row in finish.dependents],
        [row.error for row in finish.dependents],
    )
    if counted is not None and (ended := counted_status(counted["unfinished"], counted["partial"])) is not None:
        parent = await db.fetchrow(WORKFLOW_END, report.workflow_id, ended.value, now)
        if parent is not None and parent["parent_id"] is not None:
            ref = ParentRef(workflow_id=parent["parent_id"], step=parent["parent_step"])
            return finish.jobs, (*finish.due, parent_wait(ref, report.workflow_id))
    return finish.jobs, finish.due


def _dependent_columns(row: asyncpg.Record) -> dict[str, Any]:
    """A FINISH row's dependent (its `d_` columns), by column name."""
    return {name[2:]: value for name, value in row.items() if name.startswith("d_")}


def _head(row: asyncpg.Record) -> Workflow:
    """The workflow of a FINISH row, without its steps or context: what a finish's new jobs are made from (their
    `_context` is COUNT's)."""
    return Workflow(
        id=row["id"],
        tenant_id=row["tenant_id"],
        name=row["name"],
        status=WorkflowStatus(row["status"]),
        context={},
        steps=[],
        created_at=row["created_at"],
        idempotency_key=row["idempotency_key"],
        trace_context=row["trace_context"],
        depth=row["depth"],
    )


class _Raised(QueueFlowError):
    """An error of the caller's `decide`, carried through `_connection` (which would translate it
    into StoreUnavailable, as every error it does not know) so that it reaches the caller as it was raised."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


async def _write(db: Db, snapshot: Workflow, transition: Transition, recording: Recording, now: datetime) -> None:
    """Write `recording` of `transition` on the locked `snapshot`, in the caller's transaction."""
    # The finished step's result, and the new jobs, are all it writes that nobody checked.
    if errors := result_errors(transition.result) + job_storage_errors(recording.jobs):
        raise ValidationError.of(errors)
    after = recording.workflow
    await db.execute(
        WORKFLOW_RECORD,
        snapshot.id,
        after.status.value,
        after.completed_at,
        now,
        recording.counters.unfinished,
        recording.counters.partial,
        after.deadline,
        after.error,
    )
    if recording.changed:
        finished = transition.finished.name if transition.finished is not None else None
        results: list[str | None] = [
            json_text(transition.result, ("result",)) if new.name == finished else None for _, new in recording.changed
        ]
        written = await db.execute(
            STEPS_RECORD,
            snapshot.id,
            [new.name for _, new in recording.changed],
            [old.status.value for old, _ in recording.changed],
            [new.status.value for _, new in recording.changed],
            [new.job_id for _, new in recording.changed],
            [new.remaining for _, new in recording.changed],
            results,
            [new.due_at for _, new in recording.changed],
            [new.child_workflow_id for _, new in recording.changed],
            [new.error for _, new in recording.changed],
        )
        if int(written.split()[-1]) != len(recording.changed):
            raise StoreUnavailable(f"workflow {snapshot.id}: a step changed outside the workflow's lock")
    if recording.jobs:
        statement, values = job_insert(recording.jobs)
        await db.execute(statement, *values)


async def _with_steps(db: Db, rows: Sequence[asyncpg.Record]) -> list[Workflow]:
    """The workflows of `rows`, each with its steps (one query for all of them)."""
    steps: dict[str, list[Step]] = {row["id"]: [] for row in rows}
    if steps:
        for step in await db.fetch(STEPS_OF, list(steps)):
            steps[step["workflow_id"]].append(_step(step))
    return [
        Workflow(
            id=row["id"],
            tenant_id=row["tenant_id"],
            name=row["name"],
            status=WorkflowStatus(row["status"]),
            context=row["context"],
            steps=steps[row["id"]],
            created_at=row["created_at"],
            completed_at=row["completed_at"],
            idempotency_key=row["idempotency_key"],
            trace_context=row["trace_context"],
            parent=None
            if row["parent_id"] is None
            else ParentRef(workflow_id=row["parent_id"], step=row["parent_step"]),
            depth=row["depth"],
            timeout_seconds=row["timeout_seconds"],
            deadline=row["deadline"],
            error=row["error"],
        )
        for row in rows
    ]


# A read of a workflow reads all of its steps: their enums are looked up, not called (StepStatus(...) and
# OnFailure(...) were an eighth of a 1,000-step workflow's CPU, py-spy).
_STEP_STATUSES = {status.value: status for status in StepStatus}
_ON_FAILURE = {choice.value: choice for choice in OnFailure}


def _step(row: asyncpg.Record | Mapping[str, Any], *, edges: bool = True) -> Step:
    """A step of its row; `edges=False` for a row read without `depends_on` and `dependents` (DEPENDENT_COLUMNS),
    which are then empty."""
    return Step(
        workflow_id=row["workflow_id"],
        name=row["name"],
        idx=row["idx"],
        task_name=row["task_name"],
        status=_STEP_STATUSES[row["status"]],
        depends_on=list(row["depends_on"]) if edges else [],
        on_failure=_ON_FAILURE[row["on_failure"]],
        payload=row["payload"],
        queue_name=row["queue_name"],
        priority=row["priority"],
        max_retries=row["max_retries"],
        backoff=backoff_of(row["config"]),
        timeout_seconds=row["timeout_seconds"],
        job_id=row["job_id"],
        concurrency_key=row["config"].get("concurrency_key"),
        dependents=tuple(row["dependents"]) if edges else (),
        remaining=row["remaining"],
        wait=None if row["wait"] is None else Wait.from_json(row["wait"]),
        due_at=row["due_at"],
        signal=None
        if row["signal_received_at"] is None
        else KeptSignal(payload=row["signal_payload"], received_at=row["signal_received_at"]),
        added_by=row["added_by"] if edges else None,
        added_as=row["added_as"] if edges else None,
        child=None if row["child"] is None else new_workflow_from_json(row["child"]),
        child_workflow_id=row["child_workflow_id"],
        error=row["error"],
    )


def _step_columns(steps: Sequence[Step]) -> list[list[Any]]:
    return [
        [step.name for step in steps],
        [step.idx for step in steps],
        [step.task_name for step in steps],
        [json_text(step.payload, ("steps", step.idx, "payload")) for step in steps],
        [json_text(list(step.depends_on), ("steps", step.idx, "depends_on")) for step in steps],
        [step.on_failure.value for step in steps],
        [step.status.value for step in steps],
        [step.job_id for step in steps],
        [step.queue_name for step in steps],
        [step.priority for step in steps],
        [step.max_retries for step in steps],
        [json_text(job_config(step.backoff, step.concurrency_key), ("steps", step.idx, "backoff")) for step in steps],
        [step.timeout_seconds for step in steps],
        [step.remaining for step in steps],
        [json_text(list(step.dependents), ("steps", step.idx, "dependents")) for step in steps],
        [None if step.wait is None else json_text(step.wait.to_json(), ("steps", step.idx, "wait")) for step in steps],
        [step.due_at for step in steps],
        [step.added_by for step in steps],
        [None if step.added_as is None else json_text(step.added_as, ("steps", step.idx)) for step in steps],
        [
            None if step.child is None else json_text(new_workflow_json(step.child), ("steps", step.idx, "workflow"))
            for step in steps
        ],
        [step.child_workflow_id for step in steps],
        [step.error for step in steps],
    ]


Announce = Callable[[Iterable[str]], None]


async def insert_workflow(db: Db, workflow: Workflow, jobs: Sequence[Job], announce: Announce) -> tuple[Workflow, bool]:
    """`WorkflowStore.workflow_insert` inside the caller's transaction `db`, so that whatever creates workflows as
    part of something larger (a parent's step, an event's triggers) creates them atomically with it; `announce`
    takes the queues of the jobs it inserts."""
    if errors := workflow_storage_errors(workflow) + job_storage_errors(jobs):
        raise ValidationError.of(errors)
    start = counters(workflow.steps)
    inserted = await db.fetchval(
        WORKFLOW_INSERT,
        workflow.id,
        workflow.tenant_id,
        workflow.name,
        workflow.status.value,
        json_text(workflow.context, ("context",)),
        workflow.idempotency_key,
        workflow.created_at,
        None if workflow.trace_context is None else json_text(workflow.trace_context, ("trace_context",)),
        start.unfinished,
        start.partial,
        len(workflow.steps),
        None if workflow.parent is None else workflow.parent.workflow_id,
        None if workflow.parent is None else workflow.parent.step,
        workflow.depth,
        workflow.timeout_seconds,
        workflow.deadline,
    )
    if inserted is None:
        # The key's first create won (a concurrent one's insert waited for it to commit): return that.
        row = await db.fetchrow(WORKFLOW_BY_KEY, workflow.tenant_id, workflow.idempotency_key)
        if row is None:
            raise StoreUnavailable("a workflow with a repeated idempotency key vanished during the insert")
        (existing,) = await _with_steps(db, [row])
        return existing, False
    await db.execute(STEPS_INSERT, workflow.id, *_step_columns(workflow.steps))
    if jobs:
        statement, values = job_insert(jobs)
        await db.execute(statement, *values)
        announce(job.queue_name for job in jobs)
    return workflow, True


async def start_children(
    db: Db, starts: Sequence[ChildStart], now: datetime, rng: RandomSource, announce: Announce
) -> None:
    """What child steps that went waiting start, in the caller's transaction (their parent's, locked first): each
    new child inserted with its jobs and its own children (keyed `child:<parent>:<step>`, so a replay finds it), or
    the child a step made before retried in place."""
    for start in starts:
        if start.recording is not None:
            recording = start.recording
            _, created = await insert_workflow(db, recording.workflow, recording.jobs, announce)
            if created:
                await start_children(db, recording.children, now, rng, announce)
        elif start.retry is not None:
            await _advance(db, start.retry, None, retry_child, now, rng, announce)
