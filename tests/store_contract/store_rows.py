"""Rows for the store-level tests (store/): what the engine would hand a store, built by the pure core.

These tests call the `Store` methods themselves, as River's driver suite calls each driver method, so every
row is made here rather than by the engine, and every `now` is passed explicitly.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import TypeVar

from queueflow.core.advance import record, settle
from queueflow.core.cursor import Listed
from queueflow.core.ids import IdSource
from queueflow.core.lifecycle import pending_job
from queueflow.core.schedule import Schedule
from queueflow.core.types import (
    JSON,
    ClaimRequest,
    Completion,
    Cursor,
    Failure,
    Job,
    JobFilter,
    JobQuery,
    JobStatus,
    NewJob,
)
from queueflow.core.workflow import NewStep, Workflow, WorkflowQuery, WorkflowStatus, new_steps
from queueflow.ports import Store

from tests.moments import START, T
from tests.store_contract.workflow_helpers import dag

OTHER = "tenant-b"
LEASE = 30.0
IDS = IdSource(random.Random(3))
"""Only ids come from it; no test depends on their random part."""
PENDING, RUNNING, RETRYING = JobStatus.PENDING, JobStatus.RUNNING, JobStatus.RETRYING
COMPLETED, DEAD_LETTER, CANCELLED = JobStatus.COMPLETED, JobStatus.DEAD_LETTER, JobStatus.CANCELLED


R = TypeVar("R", bound=Listed)
Found = TypeVar("Found", Job, Workflow)


def at(seconds: float) -> datetime:
    """`seconds` after the suite's START."""
    return START + timedelta(seconds=seconds)


def nested(levels: int) -> JSON:
    """A JSON value `levels` arrays deep."""
    value: JSON = "leaf"
    for _ in range(levels):
        value = [value]
    return value


def stranger_token() -> str:
    """A well-formed lease token that no job holds."""
    return str(uuid.uuid4())


async def pages(list_after: Callable[[Cursor | None], Awaitable[Sequence[R]]]) -> list[list[str]]:
    """The ids of every page of a newest-first listing, each page resumed after the last row of the one before."""
    listed: list[list[str]] = []
    after = None
    while page := await list_after(after):
        listed.append([row.id for row in page])
        after = Cursor(page[-1].created_at, page[-1].id)
    return listed


def newest_first(rows: Sequence[R]) -> list[str]:
    """The ids of `rows` in listing order: created_at, then id, descending."""
    return [row.id for row in sorted(rows, key=lambda row: (row.created_at, row.id), reverse=True)]


async def found_only_by_its_tenant(get: Callable[[str, str | None], Awaitable[Found | None]], row: Found) -> None:
    """`get(id, tenant_id)` (job_get, workflow_get) finds `row` by its id, for its tenant or for any, and nothing
    for another tenant, a missing id, or text no row can hold."""
    assert await get(row.id, None) == row
    assert await get(row.id, row.tenant_id) == row
    assert await get(row.id, OTHER) is None
    assert await get(f"{row.id}_missing", None) is None
    assert await get(f"{row.id}\x00", None) is None
    assert await get(row.id, "nul\x00") is None


# --- jobs --------------------------------------------------------------------------------------------------


def job(now: datetime = START, tenant: str = T, **fields: JSON) -> Job:
    """A pending row, as `pending_job` makes it from a `NewJob` with `fields` (task_name defaults to "send")."""
    fields.setdefault("task_name", "send")
    return pending_job(tenant, NewJob(**fields), now, IDS)


async def inserted(store: Store, *rows: Job) -> list[Job]:
    results = await store.job_insert_many(rows)
    assert all(created for _, created in results)
    return [row for row, _ in results]


async def leased(store: Store, row: Job, now: datetime = START, lease_seconds: float = LEASE) -> Job:
    """`row` inserted and claimed at `now`: running, with a lease. Its queue must hold nothing else that is due."""
    await inserted(store, row)
    (claimed,) = await store.job_claim(
        ClaimRequest(queues=[row.queue_name], max_jobs=1, now=now, lease_seconds=lease_seconds)
    )
    assert claimed.id == row.id
    return claimed


async def in_status(store: Store, status: JobStatus, queue: str | None = None, now: datetime = START) -> Job:
    """A job of T in `status`, on queue `queue` (the status's name by default), moved there by the store at `now`.

    A retrying job is due a minute after `now`; a finished one was completed, failed or cancelled at `now`."""
    row = job(now=now, queue_name=queue or status.value)
    if status is JobStatus.PENDING:
        (stored,) = await inserted(store, row)
        return stored
    if status is JobStatus.CANCELLED:
        await inserted(store, row)
        cancelled = await store.job_cancel(row.id, tenant_id=T, now=now)
        assert cancelled is not None
        return cancelled
    held = await leased(store, row, now)
    token = held.lease_token or ""
    if status is JobStatus.RUNNING:
        return held
    if status is JobStatus.COMPLETED:
        (completed,) = await store.job_complete_many([Completion(held.id, token, "done")], now=now)
        assert completed is not None
        ended = await store.job_get(held.id)
    else:
        retry_at = now + timedelta(minutes=1) if status is JobStatus.RETRYING else None
        (ended,) = await store.job_fail_many([Failure(held.id, token, "boom", retry_at)], now=now)
    assert ended is not None
    assert ended.status is status
    return ended


async def jobs_of(store: Store, tenant: str = T) -> list[Job]:
    """Every job of `tenant`, newest first."""
    return await store.job_list(JobQuery(tenant_id=tenant, where=JobFilter(), limit=1000, after=None))


# --- workflows ---------------------------------------------------------------------------------------------


def workflow(
    *steps: NewStep,
    now: datetime = START,
    tenant: str = T,
    key: str | None = None,
    context: dict[str, JSON] | None = None,
) -> tuple[Workflow, list[Job]]:
    """A new running workflow, its roots enqueued, and their jobs: what `workflow_insert` is handed (a root child
    step is left waiting without its child: the tests of children start them with `record_with_children`)."""
    new = dag(*steps, context=context, key=key)
    workflow_id = IDS.new_id("wf", now)
    pending = Workflow(
        id=workflow_id,
        tenant_id=tenant,
        name=new.name,
        status=WorkflowStatus.RUNNING,
        context=dict(new.context),
        steps=new_steps(workflow_id, new),
        created_at=now,
        idempotency_key=key,
    )
    recording = record(pending, settle(pending.steps), now, IDS.stream("job", now))
    return recording.workflow, recording.jobs


async def stored_workflow(store: Store, *steps: NewStep, **options: JSON) -> Workflow:
    row, jobs = workflow(*steps, **options)
    stored, created = await store.workflow_insert(row, jobs)
    assert created
    return stored


async def workflows_of(store: Store, tenant: str = T) -> list[Workflow]:
    return await store.workflow_list(WorkflowQuery(tenant_id=tenant, limit=1000))


# --- schedules ---------------------------------------------------------------------------------------------


def schedule(name: str = "nightly", now: datetime = START, tenant: str = T, **fields: JSON) -> Schedule:
    """An enabled schedule row created at `now`, next due an hour later unless `fields` say otherwise."""
    values: dict[str, JSON] = {
        "cron": "0 * * * *",
        "timezone": "UTC",
        "task_name": "report",
        "queue_name": "default",
        "payload": {},
        "priority": 0,
        "max_retries": 3,
        "enabled": True,
        "next_run_at": now + timedelta(hours=1),
        "last_run_at": None,
        "created_at": now,
        "updated_at": now,
    }
    values.update(fields)
    return Schedule(id=IDS.new_id("sch", now), tenant_id=tenant, name=name, **values)


async def everything(store: Store, tenant: str = T) -> tuple[list[Job], list[Workflow], list[Schedule]]:
    """All that `tenant` has in `store`: a failed call must leave it as it was."""
    return (
        await jobs_of(store, tenant),
        await workflows_of(store, tenant),
        await store.schedule_list(tenant_id=tenant, limit=1000, after=None),
    )
