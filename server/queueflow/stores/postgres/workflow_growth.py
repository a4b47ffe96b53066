"""The WorkflowStore methods of workflows that grow and wait (issue 31): steps added at run time, signals, and the
due-wait sweep's reads. Ending a wait is a step finish (`workflows.workflow_step_finish`).

An addition is a change of the whole workflow: the adding job held FOR SHARE (its completion waits for the
addition to commit, so a `required_by` edge is in place before the adder's finish counts it down), the workflow
locked FOR UPDATE (as `workflow_advance`), its snapshot read, `core.growth` deciding, the new and rewired rows
written, and `advance.settle` of the grown workflow recorded. A signal takes the workflow row FOR KEY SHARE, as a
finish does, and then the signal's step row FOR UPDATE, which a finish that makes the step wait locks too.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from queueflow.core.advance import NewStepJob, record, settle
from queueflow.core.errors import StoreUnavailable, ValidationError
from queueflow.core.growth import Growth
from queueflow.core.jsonvalue import storable_text, storage_errors
from queueflow.core.types import JSON, Job
from queueflow.core.waits import DueWait, KeptSignal, SignalAction, Wait
from queueflow.core.workflow import Step, Workflow, WorkflowStatus, workflow_storage_errors
from queueflow.stores.postgres.connection import Pooled
from queueflow.stores.postgres.errors import json_text
from queueflow.stores.postgres.rows import job_from_row
from queueflow.stores.postgres.workflow_sql import (
    JOB_FOR_SHARE,
    NEXT_WAIT_DUE,
    SIGNAL_KEEP,
    SIGNAL_STEP,
    STEPS_INSERT,
    STEPS_REWIRE,
    WAITS_DUE,
    WORKFLOW_GET,
    WORKFLOW_LOCK,
)
from queueflow.stores.postgres.workflows import _Raised, _step, _step_columns, _with_steps, _write


class PostgresWorkflowGrowth(Pooled):
    async def workflow_add_steps(
        self,
        job_id: str,
        scope: str | None,
        decide: Callable[[Job | None, Workflow | None], Growth],
        new_job: NewStepJob,
        now: datetime,
    ) -> Workflow:
        if not storable_text(job_id) or (scope is not None and not storable_text(scope)):
            decide(None, None)
        try:
            async with self._connection() as db, db.transaction():
                row = await db.fetchrow(JOB_FOR_SHARE, job_id, scope)
                job = None if row is None else job_from_row(row)
                snapshot = None
                if job is not None and job.workflow_id is not None:
                    await db.fetchval(WORKFLOW_LOCK, job.workflow_id, None)
                    head = await db.fetchrow(WORKFLOW_GET, job.workflow_id, None)
                    snapshot = None if head is None else (await _with_steps(db, [head]))[0]
                try:
                    growth = decide(job, snapshot)
                    grown = growth.workflow
                    transition = settle(grown.steps)
                    recording = record(grown, transition, now, new_job)
                except Exception as exc:
                    raise _Raised(exc) from exc
                if errors := workflow_storage_errors(grown):
                    raise ValidationError.of(errors)
                if growth.added:
                    await db.execute(STEPS_INSERT, grown.id, *_step_columns(growth.added))
                if growth.rewired:
                    await db.execute(
                        STEPS_REWIRE,
                        grown.id,
                        [step.name for step in growth.rewired],
                        [json_text(list(step.depends_on), ("depends_on",)) for step in growth.rewired],
                        [json_text(list(step.dependents), ("dependents",)) for step in growth.rewired],
                        [step.remaining for step in growth.rewired],
                    )
                await _write(db, grown, transition, recording, now)
        except _Raised as raised:
            raise raised.error from None
        self._wake(job.queue_name for job in recording.jobs)
        return recording.workflow

    async def workflow_signal(
        self,
        workflow_id: str,
        tenant_id: str,
        name: str,
        payload: JSON,
        now: datetime,
        decide: Callable[[Workflow | None, Step | None], SignalAction],
    ) -> DueWait | None:
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
        signal = KeptSignal(payload=payload, received_at=now)
        return DueWait(workflow_id=workflow_id, name=step.name, wait=step.wait, due_at=kept["due_at"], signal=signal)

    async def workflow_waits_due(self, now: datetime, limit: int) -> list[DueWait]:
        async with self._connection() as db:
            rows = await db.fetch(WAITS_DUE, now, limit)
        return [
            DueWait(
                workflow_id=row["workflow_id"],
                name=row["name"],
                wait=Wait.from_json(row["wait"]),
                due_at=row["due_at"],
                signal=None
                if row["signal_received_at"] is None
                else KeptSignal(payload=row["signal_payload"], received_at=row["signal_received_at"]),
            )
            for row in rows
        ]

    async def workflow_next_wait_due(self) -> datetime | None:
        async with self._connection() as db:
            due: datetime | None = await db.fetchval(NEXT_WAIT_DUE)
            return due


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
