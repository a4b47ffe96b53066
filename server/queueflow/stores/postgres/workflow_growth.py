"""The WorkflowStore methods of workflows that grow and wait (issue 31): steps added at run time, signals, and the
due-wait sweep's reads. Ending a wait is a step finish (`workflows.workflow_step_finish`).

An addition is a structural change that reads only what it touches: the adding job held FOR SHARE (its completion
waits for the addition to commit, so a `required_by` edge is in place before the adder's finish counts it down),
the workflow locked FOR UPDATE (as `workflow_advance`: it waits out every finish in flight), its `GrowthView` read
(`workflow_growth_sql`: the steps the request names and the dependents of its `required_by` targets, never every
step), `core.growth` deciding, the new steps inserted as its transition records them, the rewired rows written,
and the new steps counted in the workflow's row. A signal takes the workflow row FOR KEY SHARE, as a
finish does, and then the signal's step row FOR UPDATE, which a finish that makes the step wait locks too.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from queueflow.core.advance import Recording
from queueflow.core.children import record_with_children
from queueflow.core.errors import StoreUnavailable, ValidationError
from queueflow.core.growth import Growth, GrowthRequest, GrowthView, Needs
from queueflow.core.jsonvalue import job_storage_errors, storable_text, storage_errors
from queueflow.core.waits import DueWait, KeptSignal, SignalAction, Wait
from queueflow.core.workflow import (
    UNFINISHED_STEPS,
    SignalDelivery,
    StepStatus,
    Workflow,
    WorkflowStatus,
    workflow_storage_errors,
)
from queueflow.stores.postgres.connection import Db, Pooled
from queueflow.stores.postgres.errors import json_text
from queueflow.stores.postgres.rows import job_from_row, job_insert
from queueflow.stores.postgres.workflow_growth_sql import (
    GROWTH_CONTEXT,
    GROWTH_COUNT,
    GROWTH_HEAD,
    GROWTH_RECORD,
    GROWTH_REWIRE,
    GROWTH_SIGNALS,
    GROWTH_STEPS,
)
from queueflow.stores.postgres.workflow_sql import (
    JOB_FOR_SHARE,
    NEXT_WAIT_DUE,
    SIGNAL_KEEP,
    SIGNAL_STEP,
    STEPS_INSERT,
    WAITS_DUE,
)
from queueflow.stores.postgres.workflows import _Raised, _step, _step_columns, start_children


class PostgresWorkflowGrowth(Pooled):
    async def workflow_add_steps(self, request: GrowthRequest) -> Workflow:
        job_id, tenant_id, needs, decide = request.job_id, request.tenant_id, request.needs, request.decide
        if not storable_text(job_id) or (tenant_id is not None and not storable_text(tenant_id)):
            decide(None, None)
        # A name the database cannot hold names no step: left out of the reads, `decide` refuses it (unknown).
        needs = Needs(
            names=[name for name in needs.names if storable_text(name)],
            required_by=[name for name in needs.required_by if storable_text(name)],
            signals=[name for name in needs.signals if storable_text(name)],
        )
        try:
            with self._announcing() as announce:
                async with self._connection() as db, db.transaction():
                    row = await db.fetchrow(JOB_FOR_SHARE, job_id, tenant_id)
                    job = None if row is None else job_from_row(row)
                    view = None
                    if job is not None and job.workflow_id is not None:
                        view = await _view(db, job.workflow_id, needs)
                    try:
                        growth = decide(job, view)
                    except Exception as exc:
                        raise _Raised(exc) from exc
                    assert view is not None  # `decide` refuses a job of no workflow
                    grown = growth.workflow
                    if errors := workflow_storage_errors(grown):
                        raise ValidationError.of(errors)
                    if growth.transition.enqueue or growth.transition.wait:
                        # Its new jobs' `_context`, or its new child steps' `parent_context`.
                        context = await db.fetchval(GROWTH_CONTEXT, grown.id)
                        grown = replace(grown, context=context)
                    now = request.now
                    recording = record_with_children(
                        grown, growth.transition, now, self._ids.stream("job", now), self._ids.stream("wf", now)
                    )
                    await _write(db, growth, recording, now)
                    announce(new.queue_name for new in recording.jobs)
                    await start_children(db, recording.children, now, self._ids, announce)
        except _Raised as raised:
            raise raised.error from None
        return recording.workflow

    async def workflow_signal(self, signal: SignalDelivery) -> DueWait | None:
        workflow_id, tenant_id, name, payload = signal.workflow_id, signal.tenant_id, signal.name, signal.payload
        decide, now = signal.decide, signal.now
        if not (storable_text(workflow_id) and storable_text(tenant_id) and storable_text(name)):
            decide(None, None)
            return None
        if errors := storage_errors(payload, ("payload",)):
            raise ValidationError.of(errors)
        try:
            async with self._connection() as db, db.transaction():
                row = await db.fetchrow(SIGNAL_STEP, workflow_id, tenant_id, name)
                step = None
                if row is not None and row["s_name"] is not None:
                    step = _step({key[2:]: value for key, value in row.items() if key.startswith("s_")})
                head = None if row is None else _head(row["id"], tenant_id, WorkflowStatus(row["workflow_status"]))
                try:
                    action = decide(head, step)
                except Exception as exc:
                    raise _Raised(exc) from exc
                if action is not SignalAction.KEEP or step is None:
                    return None
                kept = await db.fetchrow(SIGNAL_KEEP, workflow_id, step.name, json_text(payload, ("payload",)), now)
        except _Raised as raised:
            raise raised.error from None
        if kept is None:
            raise StoreUnavailable(f"workflow {workflow_id}: the step of signal {name!r} vanished under its lock")
        if kept["status"] != "waiting" or step.wait is None:
            return None
        kept_signal = KeptSignal(payload=payload, received_at=now)
        return DueWait(
            workflow_id=workflow_id, name=step.name, wait=step.wait, due_at=kept["due_at"], signal=kept_signal
        )

    async def workflow_waits_due(self, *, limit: int, now: datetime) -> list[DueWait]:
        async with self._connection() as db:
            rows = await db.fetch(WAITS_DUE, now, limit)
        return [
            DueWait(
                workflow_id=row["workflow_id"],
                name=row["name"],
                wait=None if row["wait"] is None else Wait.from_json(row["wait"]),
                due_at=row["due_at"],
                signal=None
                if row["signal_received_at"] is None
                else KeptSignal(payload=row["signal_payload"], received_at=row["signal_received_at"]),
                child_workflow_id=row["child_workflow_id"],
            )
            for row in rows
        ]

    async def workflow_next_wait_due(self) -> datetime | None:
        async with self._connection() as db:
            due: datetime | None = await db.fetchval(NEXT_WAIT_DUE)
            return due


async def _view(db: Db, workflow_id: str, needs: Needs) -> GrowthView | None:
    """The workflow locked, and what an addition reads of it (`core.growth.GrowthView`); None if it vanished."""
    head = await db.fetchrow(GROWTH_HEAD, workflow_id)
    if head is None:
        return None
    count = head["steps"] if head["steps"] is not None else await db.fetchval(GROWTH_COUNT, workflow_id)
    steps = [_step(row) for row in await db.fetch(GROWTH_STEPS, workflow_id, needs.names, needs.required_by)]
    taken = await db.fetch(GROWTH_SIGNALS, workflow_id, needs.signals) if needs.signals else []
    workflow = Workflow(
        id=head["id"],
        tenant_id=head["tenant_id"],
        name=head["name"],
        status=WorkflowStatus(head["status"]),
        context={},
        steps=steps,
        created_at=head["created_at"],
        completed_at=head["completed_at"],
        idempotency_key=head["idempotency_key"],
        trace_context=head["trace_context"],
        depth=head["depth"],
    )
    return GrowthView(workflow=workflow, step_count=count, signals_taken=frozenset(row["signal"] for row in taken))


async def _write(db: Db, growth: Growth, recording: Recording, now: datetime) -> None:
    """The new steps inserted as recorded (pending, enqueued with their job, waiting or skipped), the rows they
    rewire, their jobs, and the workflow's counters; in the caller's transaction."""
    if errors := job_storage_errors(recording.jobs):
        raise ValidationError.of(errors)
    new = {step.name for step in growth.added}
    inserted = [step for step in recording.workflow.steps if step.name in new]
    workflow_id = recording.workflow.id
    if inserted:
        await db.execute(STEPS_INSERT, workflow_id, *_step_columns(inserted))
    if growth.rewired:
        await db.executemany(
            GROWTH_REWIRE,
            [
                (
                    workflow_id,
                    step.name,
                    json_text(list(step.depends_on), ("depends_on",)),
                    json_text(list(step.dependents), ("dependents",)),
                    step.remaining,
                )
                for step in growth.rewired
            ],
        )
    if recording.jobs:
        statement, values = job_insert(recording.jobs)
        await db.execute(statement, *values)
    unfinished = sum(step.status in UNFINISHED_STEPS for step in inserted)
    partial = any(step.status is StepStatus.SKIPPED for step in inserted)
    await db.execute(GROWTH_RECORD, workflow_id, unfinished, partial, growth.step_count, now)


def _head(workflow_id: str, tenant_id: str, status: WorkflowStatus) -> Workflow:
    """The workflow a signal's decision reads: its status (its steps and context are not read)."""
    return Workflow(
        id=workflow_id,
        tenant_id=tenant_id,
        name="",
        status=status,
        context={},
        steps=[],
        created_at=datetime.min,
    )
