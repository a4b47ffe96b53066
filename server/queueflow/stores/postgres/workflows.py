"""The WorkflowStore half of PostgresJobStore: workflows, workflow_steps, and the jobs that run the steps.

Every change to a workflow is one transaction that first locks the workflow's row (`WORKFLOW_LOCK`), reads its
steps, has the engine's pure `decide` pick a transition on that snapshot and writes what `advance.record` makes
of it. Two workers finishing the two parents of a join therefore advance one after the other, and the second
one sees the first one's context entry and step status: the join is enqueued once, with the whole `_context`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import asyncpg

from queueflow.core.advance import NewStepJob, Recording, Transition, record
from queueflow.core.errors import QueueFlowError, StoreUnavailable, ValidationError
from queueflow.core.jsonvalue import job_storage_errors, storable_text, storage_errors
from queueflow.core.types import BackoffPolicy, Cursor, Job
from queueflow.core.workflow import OnFailure, Step, StepStatus, Workflow, WorkflowStatus, workflow_storage_errors
from queueflow.stores.postgres.connection import Db, Pooled
from queueflow.stores.postgres.errors import json_text
from queueflow.stores.postgres.rows import insert_columns, job_from_row
from queueflow.stores.postgres.sql import (
    CANCEL_STEP_JOBS,
    INSERT,
    STALLED_JOBS,
    STEPS_INSERT,
    STEPS_OF,
    STEPS_RECORD,
    WORKFLOW_AWAIT,
    WORKFLOW_BY_KEY,
    WORKFLOW_COLUMNS,
    WORKFLOW_GET,
    WORKFLOW_INSERT,
    WORKFLOW_LOCK,
    WORKFLOW_RECORD,
)


class PostgresWorkflows(Pooled):
    async def workflow_insert(self, workflow: Workflow, jobs: Sequence[Job]) -> tuple[Workflow, bool]:
        if errors := workflow_storage_errors(workflow) + job_storage_errors(jobs):
            raise ValidationError.of(errors)
        async with self._connection() as db, db.transaction():
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
                await db.execute(INSERT, *insert_columns(jobs))
        return workflow, True

    async def workflow_get(self, workflow_id: str, tenant_id: str | None = None) -> Workflow | None:
        if not storable_text(workflow_id) or (tenant_id is not None and not storable_text(tenant_id)):
            return None
        async with self._connection() as db:
            row = await db.fetchrow(WORKFLOW_GET, workflow_id, tenant_id)
            return (await _with_steps(db, [row]))[0] if row is not None else None

    async def workflow_watch(self, workflow_id: str, tenant_id: str) -> Workflow | None:
        if not (storable_text(workflow_id) and storable_text(tenant_id)):
            return None
        async with self._connection() as db:
            # As `job_watch`: the read is a statement of its own, with a snapshot taken after the mark.
            await db.execute(WORKFLOW_AWAIT, workflow_id, tenant_id)
        return await self.workflow_get(workflow_id, tenant_id)

    async def workflow_list(
        self, tenant_id: str, status: WorkflowStatus | None, limit: int, after: Cursor | None
    ) -> list[Workflow]:
        if not storable_text(tenant_id) or (after is not None and not storable_text(after.id)):
            return []
        conditions, args = ["tenant_id = $1"], [tenant_id, limit]
        if status is not None:
            args.append(status.value)
            conditions.append(f"status = ${len(args)}")
        if after is not None:
            args += [after.created_at, after.id]
            conditions.append(f"(created_at, id) < (${len(args) - 1}, ${len(args)})")
        sql = (
            f"SELECT {WORKFLOW_COLUMNS} FROM queueflow.workflows WHERE {' AND '.join(conditions)}"
            " ORDER BY created_at DESC, id DESC LIMIT $2"
        )
        async with self._connection() as db:
            return await _with_steps(db, await db.fetch(sql, *args))

    async def workflow_advance(
        self,
        workflow_id: str,
        decide: Callable[[Workflow], Transition],
        new_job: NewStepJob,
        now: datetime,
        tenant_id: str | None = None,
    ) -> Workflow | None:
        if not storable_text(workflow_id) or (tenant_id is not None and not storable_text(tenant_id)):
            return None
        try:
            async with self._connection() as db, db.transaction():
                row = await db.fetchrow(WORKFLOW_LOCK, workflow_id, tenant_id)
                if row is None:
                    return None
                (snapshot,) = await _with_steps(db, [row])
                try:
                    transition = decide(snapshot)
                    recording = record(snapshot, transition, now, new_job)
                except Exception as exc:
                    raise _Raised(exc) from exc
                await _write(db, snapshot, transition, recording, now)
        except _Raised as raised:
            raise raised.error from None  # and the transaction rolled back
        return recording.workflow

    async def workflow_stalled_jobs(self, limit: int) -> list[Job]:
        async with self._connection() as db:
            return [job_from_row(row) for row in await db.fetch(STALLED_JOBS, limit)]


class _Raised(QueueFlowError):
    """An error of the caller's `decide` or `new_job`, carried through `_connection` (which would translate it
    into StoreUnavailable, as every error it does not know) so that it reaches the caller as it was raised."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


async def _write(db: Db, snapshot: Workflow, transition: Transition, recording: Recording, now: datetime) -> None:
    """Write `recording` of `transition` on the locked `snapshot`, in the caller's transaction."""
    # What the transition merges into the context, and its new jobs, are all it writes that nobody checked.
    if errors := storage_errors(transition.context, ("context",)) + job_storage_errors(recording.jobs):
        raise ValidationError.of(errors)
    after = recording.workflow
    merged = {name: value for name, value in after.context.items() if snapshot.context.get(name, ...) != value}
    if merged or after.status is not snapshot.status:
        await db.execute(
            WORKFLOW_RECORD, snapshot.id, json_text(merged, ("context",)), after.status.value, after.completed_at, now
        )
    if recording.changed:
        written = await db.execute(
            STEPS_RECORD,
            snapshot.id,
            [new.name for _, new in recording.changed],
            [old.status.value for old, _ in recording.changed],
            [new.status.value for _, new in recording.changed],
            [new.job_id for _, new in recording.changed],
        )
        if int(written.split()[-1]) != len(recording.changed):
            raise StoreUnavailable(f"workflow {snapshot.id}: a step changed outside the workflow's lock")
    if recording.jobs:
        await db.execute(INSERT, *insert_columns(recording.jobs))
    if recording.cancel_jobs:
        await db.execute(CANCEL_STEP_JOBS, recording.cancel_jobs, now)


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
        )
        for row in rows
    ]


# Every advance reads all of its workflow's steps: their enums are looked up, not called (StepStatus(...) and
# OnFailure(...) were an eighth of a 1,000-step workflow's CPU, py-spy).
_STEP_STATUSES = {status.value: status for status in StepStatus}
_ON_FAILURE = {choice.value: choice for choice in OnFailure}


def _step(row: asyncpg.Record) -> Step:
    return Step(
        workflow_id=row["workflow_id"],
        name=row["name"],
        idx=row["idx"],
        task_name=row["task_name"],
        status=_STEP_STATUSES[row["status"]],
        depends_on=list(row["depends_on"]),
        on_failure=_ON_FAILURE[row["on_failure"]],
        payload=row["payload"],
        queue_name=row["queue_name"],
        priority=row["priority"],
        max_retries=row["max_retries"],
        backoff=BackoffPolicy.from_json(row["config"]["backoff"]),
        timeout_seconds=row["timeout_seconds"],
        job_id=row["job_id"],
        concurrency_key=row["config"].get("concurrency_key"),
    )


def _step_config(step: Step) -> dict[str, Any]:
    """As a job's `config` (`rows._config`): the step's backoff, and its concurrency_key when it has one."""
    config: dict[str, Any] = {"backoff": step.backoff.to_json()}
    if step.concurrency_key is not None:
        config["concurrency_key"] = step.concurrency_key
    return config


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
        [json_text(_step_config(step), ("steps", step.idx, "backoff")) for step in steps],
        [step.timeout_seconds for step in steps],
    ]
