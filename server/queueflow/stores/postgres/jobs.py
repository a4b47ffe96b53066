"""The jobs part of the PostgreSQL store: the `JobStore` methods but the claim (`claim.py`), on the shared pool
(`connection.Pooled`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, cast

from queueflow.core.errors import FieldError, StoreUnavailable, ValidationError
from queueflow.core.jsonvalue import (
    completion_storage_errors,
    failure_storage_errors,
    held_progress_errors,
    job_storage_errors,
    progress_errors,
    storable_text,
    storage_errors,
)
from queueflow.core.types import (
    Completion,
    Ended,
    Failure,
    Heartbeat,
    HeldLease,
    Job,
    JobQuery,
    JobStatus,
    Unchanged,
    UniqueOutcome,
    UniqueRule,
)
from queueflow.core.unique import rule_mismatch_errors
from queueflow.stores.postgres.errors import json_text
from queueflow.stores.postgres.generations import PostgresGenerations
from queueflow.stores.postgres.retention_sql import DELETE_EXPIRED, DELETE_EXPIRED_OWN
from queueflow.stores.postgres.rows import job_from_row, job_insert
from queueflow.stores.postgres.sequences import EVERY_STATUS
from queueflow.stores.postgres.sql import (
    CANCEL,
    COLUMNS,
    COMPLETE,
    COMPLETE_ONE,
    FAIL,
    HEARTBEAT,
    HEARTBEAT_MANY,
    HEARTBEAT_WITH_PROGRESS,
    JOB_AWAIT,
    LEASE_EXPIRED,
    RELEASE,
    RETRY,
    SELECT_BY_KEYS,
)
from queueflow.stores.postgres.sweep_floor import SweepFloor
from queueflow.stores.postgres.unique import insert_unique

_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class PostgresJobs(PostgresGenerations):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._sweep_floor = SweepFloor()
        """Where this process's next lease-expiry sweep starts (`sweep_floor`)."""

    async def job_insert_many(
        self, jobs: Sequence[Job], *, rules: Sequence[UniqueRule | None] | None = None
    ) -> list[tuple[Job, bool | UniqueOutcome]]:
        errors = rule_mismatch_errors(jobs, rules) + job_storage_errors(jobs)
        ids = [job.id for job in jobs]
        if len(set(ids)) < len(ids):
            errors.append(FieldError(("jobs",), "duplicate job ids in one batch"))
        if errors:
            raise ValidationError.of(errors)
        if rules is not None and any(rule is not None for rule in rules):
            with self._announcing() as announce:
                async with self._connection() as db, db.transaction():
                    return await insert_unique(db, jobs, rules, announce)
        # A key repeated inside the batch resolves to its first occurrence, which is the only one sent.
        first: dict[tuple[str, str], Job] = {}
        sent: list[Job] = []
        for job in jobs:
            if job.idempotency_key is None:
                sent.append(job)
            elif (job.tenant_id, job.idempotency_key) not in first:
                first[(job.tenant_id, job.idempotency_key)] = job
                sent.append(job)
        if not sent:
            return []
        existing: dict[tuple[str, str], Job] = {}
        with self._announcing() as announce:
            async with self._connection() as db:
                if not first:
                    # No idempotency key: the one INSERT is the whole operation, atomic on its own. Without BEGIN
                    # and COMMIT around it a single enqueue is one round trip instead of three. Every job sent is
                    # inserted (no key to conflict on), so its queues are announced before the statement commits,
                    # and no id needs to come back.
                    announce({job.queue_name for job in sent})
                    statement, values = job_insert(sent)
                    await db.execute(statement, *values)
                    return [(job, True) for job in jobs]
                async with db.transaction():
                    statement, values = job_insert(sent, returning=True)
                    new_ids = {row["id"] for row in await db.fetch(statement, *values)}
                    inserted = {job.id: job for job in sent if job.id in new_ids}
                    keys = [key for key, job in first.items() if job.id not in inserted]
                    if keys:
                        rows = await db.fetch(SELECT_BY_KEYS, [tenant for tenant, _ in keys], [key for _, key in keys])
                        existing = {(row["tenant_id"], row["idempotency_key"]): job_from_row(row) for row in rows}
                        if len(existing) < len(keys):
                            # A conflicting row was deleted (retention) between the two statements. Too rare
                            # for a retry loop: raising here rolls the insert back, and the caller may simply
                            # try again.
                            raise StoreUnavailable("a job with a repeated idempotency key vanished during the insert")
                    announce(job.queue_name for job in inserted.values())
        results: list[tuple[Job, bool | UniqueOutcome]] = []
        for job in jobs:
            if job.idempotency_key is None:
                results.append((inserted[job.id], True))
                continue
            key = (job.tenant_id, job.idempotency_key)
            original = first[key]
            if original is job and job.id in inserted:
                results.append((inserted[job.id], True))
            elif original.id in inserted:
                results.append((inserted[original.id], False))
            else:
                results.append((existing[key], False))
        return results

    async def job_get(self, job_id: str, *, tenant_id: str | None = None) -> Job | None:
        if not storable_text(job_id) or (tenant_id is not None and not storable_text(tenant_id)):
            return None
        async with self._connection() as db:
            row = await db.fetchrow(
                f"SELECT {COLUMNS} FROM queueflow.jobs WHERE id = $1 AND ($2::text IS NULL OR tenant_id = $2)",
                job_id,
                tenant_id,
            )
        return job_from_row(row) if row is not None else None

    async def job_watch(self, job_id: str, *, tenant_id: str) -> Job | None:
        if not (storable_text(job_id) and storable_text(tenant_id)):
            return None
        async with self._connection() as db:
            # Two statements, not one: the read needs a snapshot taken after the mark (and after any finish the
            # mark waited for), which a statement's own CTE would not see.
            await db.execute(JOB_AWAIT, job_id, tenant_id)
        return await self.job_get(job_id, tenant_id=tenant_id)

    async def job_get_many(self, job_ids: Sequence[str]) -> dict[str, Job]:
        wanted = [job_id for job_id in job_ids if storable_text(job_id)]
        if not wanted:
            return {}
        async with self._connection() as db:
            rows = await db.fetch(f"SELECT {COLUMNS} FROM queueflow.jobs WHERE id = ANY($1::text[])", wanted)
        return {row["id"]: job_from_row(row) for row in rows}

    async def job_list(self, query: JobQuery) -> list[Job]:
        tenant_id, where, after = query.tenant_id, query.where, query.after
        texts = [tenant_id, where.queue_name, where.task_name, where.workflow_id, where.unique_key, where.sequence_key]
        texts.append(after.id if after else None)
        if not all(text is None or storable_text(text) for text in texts):
            return []
        if where.metadata is not None and storage_errors(where.metadata, ("metadata",)):
            return []  # no stored metadata contains what could not be stored
        conditions, args = ["tenant_id = $1"], [cast(object, tenant_id)]
        for column, value in (
            ("queue_name", where.queue_name),
            ("status", where.status.value if where.status is not None else None),
            ("task_name", where.task_name),
            ("workflow_id", where.workflow_id),
            ("unique_key", where.unique_key),  # idx_jobs_unique_key
            ("sequence_key", where.sequence_key),  # EVERY_STATUS below
        ):
            if value is not None:
                args.append(value)
                conditions.append(f"{column} = ${len(args)}")
        if where.sequence_key is not None:
            conditions.append(EVERY_STATUS.replace("j.", ""))
        if where.metadata is not None:
            args.append(json_text(where.metadata, ("metadata",)))
            conditions.append(f"metadata @> ${len(args)}::jsonb")
            if where.metadata:
                # Implied by a non-empty containment, and stated so the planner may use the partial GIN index.
                conditions.append("metadata <> '{}'")
        if after is not None:
            args += [after.created_at, after.id]
            conditions.append(f"(created_at, id) < (${len(args) - 1}, ${len(args)})")
        args.append(query.limit)
        sql = (
            f"SELECT {COLUMNS} FROM queueflow.jobs WHERE {' AND '.join(conditions)}"
            f" ORDER BY created_at DESC, id DESC LIMIT ${len(args)}"
        )
        async with self._connection() as db:
            return [job_from_row(row) for row in await db.fetch(sql, *args)]

    async def job_heartbeat(self, beat: Heartbeat) -> Job | None:
        job_id, progress, now = beat.job_id, beat.progress, beat.now
        reported = None
        if not isinstance(progress, Unchanged):
            if errors := progress_errors(progress, ("progress",)):
                raise ValidationError.of(errors)
            reported = None if progress is None else json_text(progress, ("progress",))
        token = _token(beat.lease_token)
        if token is None or not storable_text(job_id):
            return None
        lease = timedelta(seconds=beat.lease_seconds)
        async with self._connection() as db:
            if isinstance(progress, Unchanged):
                row = await db.fetchrow(HEARTBEAT, job_id, token, now, lease)
            else:
                row = await db.fetchrow(HEARTBEAT_WITH_PROGRESS, job_id, token, now, lease, reported)
        return job_from_row(row) if row is not None else None

    async def job_heartbeat_many(
        self, leases: Sequence[HeldLease], *, lease_seconds: float, now: datetime
    ) -> list[datetime | None]:
        if errors := held_progress_errors(leases):
            raise ValidationError.of(errors)
        sent = _held_items(leases)
        if not sent:
            return [None] * len(leases)
        # Rows are sent in id order, so two batches over the same jobs (a heartbeat and an ack) lock them in
        # the same order instead of deadlocking.
        order = sorted(sent, key=lambda i: leases[i].job_id)
        several = len(leases) > 1
        reported = [not isinstance(leases[i].progress, Unchanged) for i in order]
        progress = [
            None
            if isinstance(leases[i].progress, Unchanged) or leases[i].progress is None
            else json_text(leases[i].progress, ("jobs", i, "progress") if several else ("progress",))
            for i in order
        ]
        async with self._connection() as db:
            rows = await db.fetch(
                HEARTBEAT_MANY,
                [leases[i].job_id for i in order],
                [sent[i] for i in order],
                now,
                timedelta(seconds=lease_seconds),
                reported,
                progress,
            )
        until = {(row["id"], row["held_token"]): row["locked_until"] for row in rows}
        # A repeated (id, token) item was sent once; it answers as its first occurrence did.
        return [until.get((item.job_id, _token(item.lease_token))) for item in leases]

    async def job_release_many(self, leases: Sequence[HeldLease], *, now: datetime) -> list[Job | None]:
        sent = _held_items(leases)
        if not sent:
            return [None] * len(leases)
        order = sorted(sent, key=lambda i: leases[i].job_id)  # one lock order for every batch (see heartbeat)
        async with self._connection() as db:
            rows = await db.fetch(RELEASE, [leases[i].job_id for i in order], [sent[i] for i in order], now)
        if self._wakeups is not None:
            # As for an insert: this process's lessees hear at once, the others through RELEASE's NOTIFY.
            for queue in {row["queue_name"] for row in rows}:
                self._wakeups.notify(queue)
        done = {(row["id"], row["held_token"]): job_from_row(row) for row in rows}
        return [done.get((leases[i].job_id, sent[i])) if i in sent else None for i in range(len(leases))]

    async def job_complete(self, completion: Completion, *, now: datetime) -> Job | None:
        if errors := completion_storage_errors([completion]):
            raise ValidationError.of(errors)
        token = _token(completion.lease_token)
        if token is None or not storable_text(completion.job_id):
            return None
        result = json_text(completion.result, ("result",))
        async with self._connection() as db:
            row = await db.fetchrow(COMPLETE_ONE, completion.job_id, token, result, now)
        return job_from_row(row) if row is not None else None

    async def job_complete_many(self, completions: Sequence[Completion], *, now: datetime) -> list[Ended | None]:
        if errors := completion_storage_errors(completions):
            raise ValidationError.of(errors)
        several = len(completions) > 1
        sent = _held_items(completions)
        if not sent:
            return [None] * len(completions)
        order = sorted(sent, key=lambda i: completions[i].job_id)  # one lock order for every batch (see heartbeat)
        results = [
            json_text(completions[i].result, ("complete", i, "result") if several else ("result",)) for i in order
        ]
        async with self._connection() as db:
            rows = await db.fetch(
                COMPLETE, [completions[i].job_id for i in order], [sent[i] for i in order], results, now
            )
        done = {
            (row["id"], row["held_token"]): Ended(
                row["id"], JobStatus.COMPLETED, row["queue_name"], row["workflow_id"], row["workflow_step_id"]
            )
            for row in rows
        }
        return [done.get((completions[i].job_id, sent[i])) if i in sent else None for i in range(len(completions))]

    async def job_fail_many(self, failures: Sequence[Failure], *, now: datetime) -> list[Job | None]:
        if errors := failure_storage_errors(failures):
            raise ValidationError.of(errors)
        sent = _held_items(failures)
        if not sent:
            return [None] * len(failures)
        errors_, retry_ats = [failures[i].error for i in sent], [failures[i].retry_at for i in sent]
        async with self._connection() as db:
            rows = await db.fetch(
                FAIL, [failures[i].job_id for i in sent], list(sent.values()), errors_, retry_ats, now
            )
        # Of several items for one job, only the one with its current token matched: (id, token) finds it.
        done = {(row["id"], row["held_token"]): job_from_row(row) for row in rows}
        return [done.get((failures[i].job_id, sent[i])) if i in sent else None for i in range(len(failures))]

    async def job_cancel(self, job_id: str, *, tenant_id: str, now: datetime) -> Job | None:
        return await self._tenant_job_update(CANCEL, tenant_id, job_id, now)

    async def job_retry(self, job_id: str, *, tenant_id: str, now: datetime) -> Job | None:
        return await self._tenant_job_update(RETRY, tenant_id, job_id, now)

    async def _tenant_job_update(self, sql: str, tenant_id: str, job_id: str, now: datetime) -> Job | None:
        if not (storable_text(tenant_id) and storable_text(job_id)):
            return None
        async with self._connection() as db:
            row = await db.fetchrow(sql, tenant_id, job_id, now)
        return job_from_row(row) if row is not None else None

    async def job_lease_expired(self, *, limit: int, relock_seconds: float, now: datetime) -> list[Job]:
        floor = self._sweep_floor.start(now)
        async with self._connection() as db:
            rows = await db.fetch(LEASE_EXPIRED, now, limit, timedelta(seconds=relock_seconds), floor)
        self._sweep_floor.swept(now, floor, complete=len(rows) < limit)
        rows.sort(key=lambda row: (row["expired_at"], row["id"]))
        return [job_from_row(row) for row in rows]

    async def job_upkeep(self, *, now: datetime) -> None:
        await self.rotate_generations(now)

    async def job_delete_finished(self, *, default_retention: timedelta | None, limit: int, now: datetime) -> int:
        async with self._connection() as db:
            if default_retention is None:
                status = await db.execute(DELETE_EXPIRED_OWN, now, limit)
            else:
                status = await db.execute(DELETE_EXPIRED, now, limit, default_retention.total_seconds())
        return int(status.split()[-1])  # "DELETE <n>"


def _held_items(items: Sequence[Completion | Failure | HeldLease]) -> dict[int, str]:
    """The items that could hold a lease, by index, with their tokens, in input order.

    A token that is not a canonical UUID can hold nothing. Of items repeating an (id, token) pair only the
    first is sent, as in the in-memory store, where the first one ends the lease and the later ones find it
    gone.
    """
    sent: dict[int, str] = {}
    seen: set[tuple[str, str]] = set()
    for index, item in enumerate(items):
        token = _token(item.lease_token)
        if token is None or not storable_text(item.job_id) or (item.job_id, token) in seen:
            continue
        seen.add((item.job_id, token))
        sent[index] = token
    return sent


def _token(lease_token: str) -> str | None:
    """The token, if it is a UUID written the way this store writes them (else it matches no row). Checked by
    pattern, not parsed: the driver encodes the text itself, and parsing each token was 7% of a batched ack."""
    return lease_token if isinstance(lease_token, str) and _CANONICAL_UUID.fullmatch(lease_token) else None
