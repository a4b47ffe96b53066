"""The jobs half of the PostgreSQL store: the `JobStore` methods, on the shared pool (`connection.Pooled`)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from datetime import datetime, timedelta
from typing import Any, cast

import asyncpg

from queueflow.core.errors import FieldError, StoreUnavailable, ValidationError
from queueflow.core.flow import (
    KEEP,
    Backlog,
    QueueSettings,
    QueueSettingsPatch,
    RateLimit,
    next_token_at,
    tokens_at,
)
from queueflow.core.jsonvalue import (
    completion_storage_errors,
    failure_storage_errors,
    held_progress_errors,
    job_storage_errors,
    progress_errors,
    storable_text,
    storage_errors,
)
from queueflow.core.turns import KeyTurns, in_turns, last_keys
from queueflow.core.types import (
    JSON,
    UNCHANGED,
    Completion,
    Cursor,
    Ended,
    Failure,
    HeldLease,
    Job,
    JobFilter,
    JobStatus,
    QueueCounts,
    QueueMinute,
    Unchanged,
)
from queueflow.stores.postgres.connection import Db, Pooled
from queueflow.stores.postgres.errors import json_text
from queueflow.stores.postgres.rows import insert_columns, job_from_row
from queueflow.stores.postgres.sql import (
    BEGIN_CLAIM,
    CANCEL,
    CLAIM,
    CLAIM_FOR_TENANT,
    CLAIM_RESTRICTED,
    CLAIM_RESTRICTED_FOR_TENANT,
    COLUMNS,
    COMPLETE,
    COMPLETE_BRIEF,
    DELETE_FINISHED,
    FAIL,
    HEARTBEAT,
    HEARTBEAT_MANY,
    HEARTBEAT_WITH_PROGRESS,
    INSERT,
    JOB_AWAIT,
    LEASE_EXPIRED,
    NEXT_DUE,
    QUEUE_CONFIGURE,
    QUEUE_COUNTS,
    QUEUE_SETTINGS,
    QUEUE_THROUGHPUT,
    RATE_BUCKETS,
    RELEASE,
    RESTRICTED_BACKLOGS,
    RESTRICTED_QUEUES,
    RESTRICTIONS,
    RESTRICTIONS_LOCK,
    RETRY,
    RUNNING_COUNTS,
    RUNNING_KEY_COUNTS,
    SAVE_KEY_TURNS,
    SELECT_BY_KEYS,
    SPEND_TOKENS,
)

_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class PostgresJobs(Pooled):
    async def job_insert_many(self, jobs: Sequence[Job]) -> list[tuple[Job, bool]]:
        errors = job_storage_errors(jobs)
        ids = [job.id for job in jobs]
        if len(set(ids)) < len(ids):
            errors.append(FieldError(("jobs",), "duplicate job ids in one batch"))
        if errors:
            raise ValidationError.of(errors)
        # A key repeated inside the batch resolves to its first occurrence, which is the only one sent.
        first: dict[tuple[str, str], Job] = {}
        sent: list[Job] = []
        for job in jobs:
            if job.idempotency_key is None:
                sent.append(job)
            elif (job.tenant_id, job.idempotency_key) not in first:
                first[(job.tenant_id, job.idempotency_key)] = job
                sent.append(job)
        columns = insert_columns(sent)
        async with self._connection() as db, db.transaction():
            new_ids = {row["id"] for row in await db.fetch(INSERT, *columns)}
            inserted = {job.id: job for job in sent if job.id in new_ids}
            existing: dict[tuple[str, str], Job] = {}
            keys = [key for key, job in first.items() if job.id not in inserted]
            if keys:
                rows = await db.fetch(SELECT_BY_KEYS, [tenant for tenant, _ in keys], [key for _, key in keys])
                existing = {(row["tenant_id"], row["idempotency_key"]): job_from_row(row) for row in rows}
                if len(existing) < len(keys):
                    # A conflicting row was deleted (retention) between the two statements. Too rare for a
                    # retry loop: raising here rolls the insert back, and the caller may simply try again.
                    raise StoreUnavailable("a job with a repeated idempotency key vanished during the insert")
        if self._signal is not None:
            for queue in {job.queue_name for job in inserted.values()}:
                self._signal.notify(queue)
        results: list[tuple[Job, bool]] = []
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

    async def job_get(self, job_id: str, tenant_id: str | None = None) -> Job | None:
        if not storable_text(job_id) or (tenant_id is not None and not storable_text(tenant_id)):
            return None
        async with self._connection() as db:
            row = await db.fetchrow(
                f"SELECT {COLUMNS} FROM queueflow.jobs WHERE id = $1 AND ($2::text IS NULL OR tenant_id = $2)",
                job_id,
                tenant_id,
            )
        return job_from_row(row) if row is not None else None

    async def job_watch(self, job_id: str, tenant_id: str) -> Job | None:
        if not (storable_text(job_id) and storable_text(tenant_id)):
            return None
        async with self._connection() as db:
            # Two statements, not one: the read needs a snapshot taken after the mark (and after any finish the
            # mark waited for), which a statement's own CTE would not see.
            await db.execute(JOB_AWAIT, job_id, tenant_id)
        return await self.job_get(job_id, tenant_id)

    async def job_get_many(self, job_ids: Sequence[str]) -> dict[str, Job]:
        wanted = [job_id for job_id in job_ids if storable_text(job_id)]
        if not wanted:
            return {}
        async with self._connection() as db:
            rows = await db.fetch(f"SELECT {COLUMNS} FROM queueflow.jobs WHERE id = ANY($1::text[])", wanted)
        return {row["id"]: job_from_row(row) for row in rows}

    async def job_list(self, tenant_id: str, where: JobFilter, limit: int, after: Cursor | None) -> list[Job]:
        texts = [tenant_id, where.queue_name, where.task_name, where.workflow_id, after.id if after else None]
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
        ):
            if value is not None:
                args.append(value)
                conditions.append(f"{column} = ${len(args)}")
        if where.metadata is not None:
            args.append(json_text(where.metadata, ("metadata",)))
            conditions.append(f"metadata @> ${len(args)}::jsonb")
            if where.metadata:
                # Implied by a non-empty containment, and stated so the planner may use the partial GIN index.
                conditions.append("metadata <> '{}'")
        if after is not None:
            args += [after.created_at, after.id]
            conditions.append(f"(created_at, id) < (${len(args) - 1}, ${len(args)})")
        args.append(limit)
        sql = (
            f"SELECT {COLUMNS} FROM queueflow.jobs WHERE {' AND '.join(conditions)}"
            f" ORDER BY created_at DESC, id DESC LIMIT ${len(args)}"
        )
        async with self._connection() as db:
            return [job_from_row(row) for row in await db.fetch(sql, *args)]

    async def job_claim(
        self,
        queues: Sequence[str],
        limit: int,
        now: datetime,
        lease_seconds: float,
        task_names: Sequence[str] | None = None,
        tenant_id: str | None = None,
        after_tenant: str | None = None,
    ) -> list[Job]:
        wanted = _queue_names(queues)
        tasks = None if task_names is None else [name for name in dict.fromkeys(task_names) if storable_text(name)]
        if not wanted or tasks == [] or (tenant_id is not None and not storable_text(tenant_id)):
            return []
        lease = timedelta(seconds=lease_seconds)
        # A tenant name PostgreSQL cannot store is nobody's: every tenant comes after it.
        after = after_tenant if after_tenant is not None and storable_text(after_tenant) else None
        key_turns: KeyTurns = {}
        async with self._connection() as db:
            async with _claim_transaction(db):
                if tenant_id is None:
                    rows = await _claim_in_turns(db, wanted, limit, now, lease, tasks, after)
                else:
                    rows = await db.fetch(CLAIM_FOR_TENANT, wanted, limit, now, lease, tasks, tenant_id)
            jobs = [job_from_row(row) for row in rows]
            # CLAIM left out the queues some tenant restricts. Only a claim that came back short may have
            # missed jobs there, so a full one (a worker draining a backlog) costs nothing more.
            if len(jobs) < limit:
                restricted = await db.fetch(RESTRICTED_QUEUES, wanted)
                if restricted:
                    queues_left = [row["queue_name"] for row in restricted]
                    more, key_turns = await self._claim_restricted(
                        db, queues_left, limit - len(jobs), now, lease, tasks, tenant_id, after
                    )
                    jobs += more
        # RETURNING comes in no particular order; a multi-job lease answers in the order it took the jobs.
        return in_turns(jobs, after, key_turns)

    async def _claim_restricted(
        self,
        db: Db,
        queues: list[str],
        limit: int,
        now: datetime,
        lease: timedelta,
        tasks: list[str] | None,
        tenant_id: str | None,
        after_tenant: str | None,
    ) -> tuple[list[Job], KeyTurns]:
        """CLAIM for queues on which some tenant restricts leasing, exact under any number of concurrent claims,
        with the same task (`tasks`) and tenant (`tenant_id`) filters as CLAIM and CLAIM_FOR_TENANT.

        Why no limit is ever exceeded: every claim of a restricted queue locks all of that queue's restricting
        settings rows (RESTRICTIONS_LOCK) before it counts or claims, and holds them until it commits, so the
        claims of one limited (tenant, queue) run one after another. Each counts the running jobs in a statement
        of its own, after its lock was granted, so it sees every job the claims before it leased (they committed
        before releasing the lock), and claims at most `limit - running` more; the same holds per concurrency_key
        under a key_concurrency_limit (RUNNING_KEY_COUNTS, after the lock too), and for the rate limit, whose token
        bucket lives in the locked row itself: refilled to `now`, spent, and written back (SPEND_TOKENS) before the
        lock is released; so is each key-limited pair's key turn (SAVE_KEY_TURNS), which makes it one turn for all
        processes. Running only goes down outside that lock (complete, fail, cancel, the janitor), which can
        only leave more room than was counted.
        CLAIM (unrestricted queues) never touches these queues' jobs: it skips a queue as soon as one restricting
        row is committed; a claim that read the settings before that commit is ordered before the change, as is a
        job that was already running when a limit was set. Queues nobody restricts take none of these locks.

        The price: claims of a restricted queue run one at a time (every restricting row of the queue is locked,
        a paused tenant's too), and take 3–5 statements instead of one.
        """
        async with db.transaction():
            settings = await db.fetch(RESTRICTIONS_LOCK, queues)
            paused = [(row["tenant_id"], row["queue_name"]) for row in settings if row["paused"]]
            limit_of = {
                (row["tenant_id"], row["queue_name"]): row["concurrency_limit"]
                for row in settings
                if not row["paused"] and row["concurrency_limit"] is not None
            }
            key_limit_of = {
                (row["tenant_id"], row["queue_name"]): row["key_concurrency_limit"]
                for row in settings
                if not row["paused"] and row["key_concurrency_limit"] is not None
            }
            key_turns = {
                (row["tenant_id"], row["queue_name"]): row["key_turn"]
                for row in settings
                if (row["tenant_id"], row["queue_name"]) in key_limit_of
            }
            # Each rate limit's bucket, refilled to now: the pair may take floor(tokens) jobs in this claim.
            tokens = {
                (row["tenant_id"], row["queue_name"]): tokens_at(
                    RateLimit(row["rate_jobs"], row["rate_per_seconds"]),
                    row["rate_tokens"],
                    row["rate_refilled_at"],
                    now,
                )
                for row in settings
                if not row["paused"] and row["rate_jobs"] is not None
            }
            running: dict[tuple[str, str], int] = {}
            if limit_of:
                pairs = list(limit_of)
                rows = await db.fetch(RUNNING_COUNTS, [t for t, _ in pairs], [q for _, q in pairs])
                running = {(row["tenant_id"], row["queue_name"]): row["running"] for row in rows}
            running_keys: dict[tuple[str, str, str], int] = {}
            if key_limit_of:
                pairs = list(key_limit_of)
                rows = await db.fetch(RUNNING_KEY_COUNTS, [t for t, _ in pairs], [q for _, q in pairs])
                running_keys = {(row["tenant_id"], row["queue_name"], row["key"]): row["running"] for row in rows}
            # Rounds: a round's candidates are the first `limit` rows the scan finds, and the caps may cut some;
            # the next round leaves out every group a round filled, so it finds what lay behind them. Each round
            # claims at least one job while any may be claimed (the first candidate is never cut), so there are at
            # most `limit` rounds, and almost always one.
            claimed: list[asyncpg.Record] = []
            # The tenant is a parameter of the scoped statement only: asyncpg wants exactly the ones it names.
            sql, scope = (CLAIM_RESTRICTED, ()) if tenant_id is None else (CLAIM_RESTRICTED_FOR_TENANT, (tenant_id,))
            turns_after = list(key_turns.values())  # aligned with key_limit_of, as `_restrictions` sends it
            while len(claimed) < limit:
                rows = await db.fetch(
                    sql,
                    queues,
                    limit - len(claimed),
                    now,
                    lease,
                    *_restrictions(paused, limit_of, running, tokens, key_limit_of, running_keys),
                    tasks,
                    after_tenant,
                    turns_after,
                    *scope,
                )
                if not rows:
                    break
                claimed += rows
                for row in rows:
                    pair = (row["tenant_id"], row["queue_name"])
                    if pair in limit_of:
                        running[pair] = running.get(pair, 0) + 1
                    if pair in tokens:
                        tokens[pair] -= 1
                    key = row["config"].get("concurrency_key")
                    if pair in key_limit_of and key is not None:
                        running_keys[(*pair, key)] = running_keys.get((*pair, key), 0) + 1
            if tokens:
                pairs = list(tokens)
                await db.execute(SPEND_TOKENS, [t for t, _ in pairs], [q for _, q in pairs], list(tokens.values()), now)
            jobs = in_turns((job_from_row(row) for row in claimed), after_tenant, key_turns)
            if served := last_keys(jobs, key_turns):
                pairs = list(served)
                await db.execute(SAVE_KEY_TURNS, [t for t, _ in pairs], [q for _, q in pairs], list(served.values()))
            return jobs, key_turns

    async def queue_backlogs(self, now: datetime) -> list[Backlog]:
        async with self._connection() as db:
            settings = await db.fetch(RESTRICTIONS)
            counts = await db.fetch(RESTRICTED_BACKLOGS, now)
        due_by_key: dict[tuple[str, str], dict[str | None, int]] = {}
        running_by_key: dict[tuple[str, str], dict[str, int]] = {}
        running: Counter[tuple[str, str]] = Counter()
        for row in counts:
            pair = (row["tenant_id"], row["queue_name"])
            if row["due"]:
                due_by_key.setdefault(pair, {})[row["key"]] = row["due"]
            running[pair] += row["running"]
            if row["key"] is not None and row["running"]:
                running_by_key.setdefault(pair, {})[row["key"]] = row["running"]
        backlogs = []
        for row in sorted(settings, key=lambda row: (row["tenant_id"], row["queue_name"])):
            pair = (row["tenant_id"], row["queue_name"])
            queue = _settings_from_row(row)
            tokens = None
            if queue.rate_limit is not None:
                tokens = tokens_at(queue.rate_limit, row["rate_tokens"], row["rate_refilled_at"], now)
            backlogs.append(
                Backlog(
                    queue_name=row["queue_name"],
                    settings=queue,
                    tokens=tokens,
                    running=running[pair],
                    due_by_key=due_by_key.get(pair, {}),
                    running_by_key=running_by_key.get(pair, {}),
                )
            )
        return backlogs

    async def job_next_due(self, queues: Sequence[str], now: datetime) -> datetime | None:
        wanted = _queue_names(queues)
        if not wanted:
            return None
        async with self._connection() as db:
            due: datetime | None = await db.fetchval(NEXT_DUE, wanted, now)
            buckets = await db.fetch(RATE_BUCKETS, wanted)
        for row in buckets:
            rate = RateLimit(row["rate_jobs"], row["rate_per_seconds"])
            token = next_token_at(rate, row["rate_tokens"], row["rate_refilled_at"], now)
            if token is not None and (due is None or token < due):
                due = token
        return due

    async def job_heartbeat(
        self,
        job_id: str,
        lease_token: str,
        now: datetime,
        lease_seconds: float,
        progress: JSON | Unchanged = UNCHANGED,
    ) -> Job | None:
        reported = None
        if not isinstance(progress, Unchanged):
            if errors := progress_errors(progress, ("progress",)):
                raise ValidationError.of(errors)
            reported = None if progress is None else json_text(progress, ("progress",))
        token = _token(lease_token)
        if token is None or not storable_text(job_id):
            return None
        lease = timedelta(seconds=lease_seconds)
        async with self._connection() as db:
            if isinstance(progress, Unchanged):
                row = await db.fetchrow(HEARTBEAT, job_id, token, now, lease)
            else:
                row = await db.fetchrow(HEARTBEAT_WITH_PROGRESS, job_id, token, now, lease, reported)
        return job_from_row(row) if row is not None else None

    async def job_heartbeat_many(
        self, leases: Sequence[HeldLease], now: datetime, lease_seconds: float
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

    async def job_complete_many(self, completions: Sequence[Completion], now: datetime) -> list[Job | None]:
        if errors := completion_storage_errors(completions):
            raise ValidationError.of(errors)
        several = len(completions) > 1
        sent = _held_items(completions)
        results = [
            json_text(completions[index].result, ("complete", index, "result") if several else ("result",))
            for index in sent
        ]
        return await self._finish(COMPLETE, completions, sent, results, now)

    async def job_release_many(self, leases: Sequence[HeldLease], now: datetime) -> list[Job | None]:
        sent = _held_items(leases)
        if not sent:
            return [None] * len(leases)
        order = sorted(sent, key=lambda i: leases[i].job_id)  # one lock order for every batch (see heartbeat)
        async with self._connection() as db:
            rows = await db.fetch(RELEASE, [leases[i].job_id for i in order], [sent[i] for i in order], now)
        done = {(row["id"], row["held_token"]): job_from_row(row) for row in rows}
        return [done.get((leases[i].job_id, sent[i])) if i in sent else None for i in range(len(leases))]

    async def job_complete_brief(self, completions: Sequence[Completion], now: datetime) -> list[Ended | None]:
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
                COMPLETE_BRIEF, [completions[i].job_id for i in order], [sent[i] for i in order], results, now
            )
        done = {
            (row["id"], row["held_token"]): Ended(row["id"], JobStatus.COMPLETED, row["queue_name"], row["workflow_id"])
            for row in rows
        }
        return [done.get((completions[i].job_id, sent[i])) if i in sent else None for i in range(len(completions))]

    async def job_fail_many(self, failures: Sequence[Failure], now: datetime) -> list[Job | None]:
        if errors := failure_storage_errors(failures):
            raise ValidationError.of(errors)
        sent = _held_items(failures)
        errors_, retry_ats = [failures[i].error for i in sent], [failures[i].retry_at for i in sent]
        return await self._finish(FAIL, failures, sent, errors_, retry_ats, now)

    async def _finish(
        self, sql: str, items: Sequence[Completion | Failure], sent: dict[int, str], *args: Any
    ) -> list[Job | None]:
        """Run a batch finish over the `sent` items (index → token); the rest answer None."""
        if not sent:
            return [None] * len(items)
        async with self._connection() as db:
            rows = await db.fetch(sql, [items[i].job_id for i in sent], list(sent.values()), *args)
        # Of several items for one job, only the one with its current token matched: (id, token) finds it.
        done = {(row["id"], row["held_token"]): job_from_row(row) for row in rows}
        return [done.get((items[i].job_id, sent[i])) if i in sent else None for i in range(len(items))]

    async def job_cancel(self, tenant_id: str, job_id: str, now: datetime) -> Job | None:
        return await self._tenant_job_update(CANCEL, tenant_id, job_id, now)

    async def job_retry(self, tenant_id: str, job_id: str, now: datetime) -> Job | None:
        return await self._tenant_job_update(RETRY, tenant_id, job_id, now)

    async def _tenant_job_update(self, sql: str, tenant_id: str, job_id: str, now: datetime) -> Job | None:
        if not (storable_text(tenant_id) and storable_text(job_id)):
            return None
        async with self._connection() as db:
            row = await db.fetchrow(sql, tenant_id, job_id, now)
        return job_from_row(row) if row is not None else None

    async def job_lease_expired(self, now: datetime, limit: int, relock_seconds: float) -> list[Job]:
        async with self._connection() as db:
            rows = await db.fetch(LEASE_EXPIRED, now, limit, timedelta(seconds=relock_seconds))
        rows.sort(key=lambda row: (row["expired_at"], row["id"]))
        return [job_from_row(row) for row in rows]

    async def job_delete_finished(self, before: datetime, limit: int) -> int:
        async with self._connection() as db:
            status = await db.execute(DELETE_FINISHED, before, limit)
        return int(status.split()[-1])  # "DELETE <n>"

    async def queue_counts(self, tenant_id: str, now: datetime) -> list[QueueCounts]:
        if not storable_text(tenant_id):
            return []
        async with self._connection() as db:
            return await _queue_counts(db, tenant_id, now)

    async def queue_settings(self, tenant_id: str, queue_name: str | None = None) -> dict[str, QueueSettings]:
        if not storable_text(tenant_id) or (queue_name is not None and not storable_text(queue_name)):
            return {}
        async with self._connection() as db:
            return await _queue_settings(db, tenant_id, queue_name)

    async def queue_overview(
        self, tenant_id: str, now: datetime, queue_name: str | None = None
    ) -> tuple[dict[str, QueueSettings], list[QueueCounts]]:
        if not storable_text(tenant_id) or (queue_name is not None and not storable_text(queue_name)):
            return {}, []
        async with self._connection() as db:
            settings, counts = await _queue_settings(db, tenant_id, queue_name), await _queue_counts(db, tenant_id, now)
        if queue_name is not None:
            counts = [queue for queue in counts if queue.name == queue_name]
        return settings, counts

    async def queue_configure(
        self, tenant_id: str, queue_name: str, patch: QueueSettingsPatch, now: datetime
    ) -> QueueSettings:
        if not (storable_text(tenant_id) and storable_text(queue_name)):
            raise ValidationError.of([FieldError(("name",), "holds text that cannot be stored")])
        rate = patch.rate_limit
        async with self._connection() as db:
            row = await db.fetchrow(
                QUEUE_CONFIGURE,
                tenant_id,
                queue_name,
                patch.paused is not KEEP,
                patch.paused if patch.paused is not KEEP else None,
                patch.concurrency_limit is not KEEP,
                patch.concurrency_limit if patch.concurrency_limit is not KEEP else None,
                patch.key_concurrency_limit is not KEEP,
                patch.key_concurrency_limit if patch.key_concurrency_limit is not KEEP else None,
                rate is not KEEP,
                rate.jobs if isinstance(rate, RateLimit) else None,
                rate.per_seconds if isinstance(rate, RateLimit) else None,
                now,
            )
        assert row is not None  # an upsert always answers its row
        if self._signal is not None:
            self._signal.notify(queue_name)
        return _settings_from_row(row)

    async def queue_throughput(self, tenant_id: str, since: datetime) -> list[QueueMinute]:
        if not storable_text(tenant_id):
            return []
        async with self._connection() as db:
            rows = await db.fetch(QUEUE_THROUGHPUT, tenant_id, since)
        return sorted(
            (QueueMinute(**dict(row.items())) for row in rows), key=lambda minute: (minute.name, minute.minute)
        )


@asynccontextmanager
async def _claim_transaction(db: Db) -> AsyncIterator[None]:
    """A claim's transaction: generic plans, an asynchronous commit (sql.BEGIN_CLAIM), begun in one round trip."""
    await db.execute(BEGIN_CLAIM)
    try:
        yield
    except BaseException:
        # As asyncpg's transaction() does; a connection that cannot roll back now (a statement cut short by a
        # cancellation) is reset or closed by the pool when it is released.
        if not db.is_closed():
            with suppress(Exception):
                await db.execute("ROLLBACK")
        raise
    await db.execute("COMMIT")


async def _claim_in_turns(
    db: Db,
    queues: list[str],
    limit: int,
    now: datetime,
    lease: timedelta,
    tasks: list[str] | None,
    after_tenant: str | None,
) -> list[asyncpg.Record]:
    """CLAIM, again while it comes back short and some tenant took its whole share (`fair_share`): that tenant may
    have more, which the tenants with fewer jobs than their share left room for. Each round claims at least one
    job or ends the claim, and a round's tenants that ran short have no claimable job left, so rounds are few
    (with one tenant, never more than one)."""
    rows = await db.fetch(CLAIM, queues, limit, now, lease, tasks, after_tenant)
    last = rows
    while last and len(rows) < limit:
        taken = Counter(row["tenant_id"] for row in last)
        if max(taken.values()) < last[0]["fair_share"]:
            break
        last = await db.fetch(CLAIM, queues, limit - len(rows), now, lease, tasks, after_tenant)
        rows += last
    return rows


def _restrictions(
    paused: list[tuple[str, str]],
    limit_of: dict[tuple[str, str], int],
    running: dict[tuple[str, str], int],
    tokens: dict[tuple[str, str], float],
    key_limit_of: dict[tuple[str, str], int],
    running_keys: dict[tuple[str, str, str], int],
) -> list[list[Any]]:
    """CLAIM_RESTRICTED's parameters $5–$19 (see there) from the limits and what runs now."""
    blocked = list(paused)
    caps: list[tuple[str, str, int]] = []
    for pair in limit_of.keys() | tokens.keys():
        room = [limit_of[pair] - running.get(pair, 0)] if pair in limit_of else []
        room += [math.floor(tokens[pair])] if pair in tokens else []
        slots = min(room)
        if slots > 0:
            caps.append((*pair, slots))
        else:
            blocked.append(pair)
    key_slots: list[tuple[str, str, str, int]] = []
    blocked_keys: list[tuple[str, str, str]] = []
    for (tenant, queue, key), count in running_keys.items():
        slots = key_limit_of[tenant, queue] - count
        if slots > 0:
            key_slots.append((tenant, queue, key, slots))
        else:
            blocked_keys.append((tenant, queue, key))
    return [
        [t for t, _ in blocked],
        [q for _, q in blocked],
        [t for t, _, _ in caps],
        [q for _, q, _ in caps],
        [n for _, _, n in caps],
        [t for t, _ in key_limit_of],
        [q for _, q in key_limit_of],
        list(key_limit_of.values()),
        [t for t, _, _, _ in key_slots],
        [q for _, q, _, _ in key_slots],
        [k for _, _, k, _ in key_slots],
        [n for _, _, _, n in key_slots],
        [t for t, _, _ in blocked_keys],
        [q for _, q, _ in blocked_keys],
        [k for _, _, k in blocked_keys],
    ]


def _settings_from_row(row: asyncpg.Record) -> QueueSettings:
    return QueueSettings(
        paused=row["paused"],
        concurrency_limit=row["concurrency_limit"],
        key_concurrency_limit=row["key_concurrency_limit"],
        rate_limit=RateLimit(row["rate_jobs"], row["rate_per_seconds"]) if row["rate_jobs"] is not None else None,
    )


def _queue_names(queues: Sequence[str]) -> list[str]:
    """`queues` once each, in order, without names no row can hold (text PostgreSQL cannot store)."""
    return [queue for queue in dict.fromkeys(queues) if storable_text(queue)]


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


async def _queue_counts(db: Db, tenant_id: str, now: datetime) -> list[QueueCounts]:
    rows = await db.fetch(QUEUE_COUNTS, tenant_id, now)
    # Sorted here, by code point as the in-memory store does, whatever the database's collation.
    return sorted((QueueCounts(**dict(row.items())) for row in rows), key=lambda queue: queue.name)


async def _queue_settings(db: Db, tenant_id: str, queue_name: str | None) -> dict[str, QueueSettings]:
    rows = await db.fetch(QUEUE_SETTINGS, tenant_id, queue_name)
    return {row["queue_name"]: _settings_from_row(row) for row in sorted(rows, key=lambda r: r["queue_name"])}
