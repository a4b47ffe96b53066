"""The jobs part of the in-memory store: the `JobStore` methods, on the shared `Tables`."""

from __future__ import annotations

import copy
import uuid
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta

from msgspec.structs import replace

from queueflow.core.errors import ValidationError
from queueflow.core.flow import QueueSettings, next_token_at, tokens_at
from queueflow.core.jsonvalue import (
    completion_storage_errors,
    contains,
    failure_storage_errors,
    held_progress_errors,
    progress_errors,
)
from queueflow.core.lifecycle import holds_lease, lease_until
from queueflow.core.retention import expired, retention_of
from queueflow.core.turns import in_turns, last_keys
from queueflow.core.types import (
    CANCELLABLE,
    CLAIMABLE,
    FINISHED,
    JSON,
    RETRIABLE,
    ClaimRequest,
    Completion,
    Ended,
    Failure,
    Heartbeat,
    HeldLease,
    Job,
    JobFilter,
    JobQuery,
    JobStatus,
    OnFailure,
    Unchanged,
    UniqueOutcome,
    UniqueRule,
)
from queueflow.stores.memory.sequences import MemorySequences
from queueflow.stores.memory.unique import MemoryUnique


class MemoryJobs(MemoryUnique, MemorySequences):
    async def ping(self) -> None:
        """Always answers: memory is always there."""

    async def job_insert_many(
        self, jobs: Sequence[Job], *, rules: Sequence[UniqueRule | None] | None = None
    ) -> list[tuple[Job, bool | UniqueOutcome]]:
        self._check_insert(jobs, rules)
        if rules is not None and any(rule is not None for rule in rules):
            return self._insert_unique(jobs, rules)
        return list(self._insert(jobs))

    async def job_get(self, job_id: str, *, tenant_id: str | None = None) -> Job | None:
        job = self._jobs.get(job_id)
        if job is None or (tenant_id is not None and job.tenant_id != tenant_id):
            return None
        return self._out(job)

    async def job_watch(self, job_id: str, *, tenant_id: str) -> Job | None:
        # Every finish is announced here (`_announce_finished`): nothing to record.
        return await self.job_get(job_id, tenant_id=tenant_id)

    async def job_get_many(self, job_ids: Sequence[str]) -> dict[str, Job]:
        return {job_id: self._out(self._jobs[job_id]) for job_id in job_ids if job_id in self._jobs}

    async def job_list(self, query: JobQuery) -> list[Job]:
        tenant_id, where, after = query.tenant_id, query.where, query.after
        rows = [job for job in self._jobs.values() if job.tenant_id == tenant_id and _matches(job, where)]
        if after is not None:
            rows = [job for job in rows if (job.created_at, job.id) < (after.created_at, after.id)]
        rows.sort(key=lambda job: (job.created_at, job.id), reverse=True)
        return [self._out(job) for job in rows[: query.limit]]

    async def job_claim(self, request: ClaimRequest) -> list[Job]:
        wanted, now, tenant_id = set(request.queues), request.now, request.tenant_id
        tasks = None if request.task_names is None else set(request.task_names)
        due = [
            job
            for job in self._jobs.values()
            if job.queue_name in wanted
            and job.status in CLAIMABLE
            and job.scheduled_at <= now
            and (job.expires_at is None or job.expires_at > now)
            and (tasks is None or job.task_name in tasks)
            and (tenant_id is None or job.tenant_id == tenant_id)
        ]
        # The key-limited queues' concurrency keys take turns too, each after the key last served there.
        key_turns = {
            group: self._key_turns.get(group)
            for group, settings in self._queue_settings.items()
            if settings.key_concurrency_limit is not None
        }
        # A tenant-scoped claim serves one tenant: it neither reads nor moves the turn.
        turn_of = tuple(sorted(wanted))
        after = None if tenant_id is not None else self._claim_turns.get(turn_of)
        due = in_turns(due, after, key_turns)
        busy, busy_keys = self._running_counts()
        tokens: dict[tuple[str, str], float] = {}  # the rate-limited groups met so far, tokens left now
        claimed: list[Job] = []
        for job in due:
            if len(claimed) == request.max_jobs:
                break
            # Before the limits: a job its sequence holds back takes no token. Read from the jobs as this claim
            # leaves them, so that it never takes two of one sequence.
            if not self._sequence_free(job):
                continue
            group = (job.tenant_id, job.queue_name)
            keyed = (job.tenant_id, job.queue_name, job.concurrency_key)
            settings = self._queue_settings.get(group)
            if settings is not None:
                if not _may_lease(settings, busy[group], job.concurrency_key, busy_keys[keyed]):
                    continue
                if settings.rate_limit is not None:
                    if group not in tokens:
                        held, since = self._buckets[group]
                        tokens[group] = tokens_at(settings.rate_limit, held, since, now)
                    if tokens[group] < 1:
                        continue
                    tokens[group] -= 1
            busy[group] += 1
            busy_keys[keyed] += 1
            if job.started_at is not None:
                self._started_before[job.id] = job.started_at
            running = replace(
                job,
                status=JobStatus.RUNNING,
                lease_token=str(uuid.uuid4()),
                delivery_count=job.delivery_count + 1,
                started_at=now,
            )
            running = replace(running, locked_until=lease_until(running, now, request.lease_seconds))
            self._jobs[job.id] = running
            claimed.append(self._out(running))
        for group, left in tokens.items():
            # As of the later of now and the bucket's refill time (`tokens_at` added nothing before it): written
            # back as of an earlier now, the refill time would move back and the next claim refill twice.
            self._buckets[group] = (left, max(now, self._buckets[group][1]))
        self._key_turns.update(last_keys(claimed, key_turns))
        if claimed and tenant_id is None:
            self._claim_turns[turn_of] = claimed[-1].tenant_id
        return claimed

    def _running_counts(
        self,
    ) -> tuple[defaultdict[tuple[str, str], int], defaultdict[tuple[str, str, str | None], int]]:
        """Running jobs per (tenant, queue), and per (tenant, queue, concurrency_key): what the limits count."""
        running: defaultdict[tuple[str, str], int] = defaultdict(int)
        by_key: defaultdict[tuple[str, str, str | None], int] = defaultdict(int)
        if self._queue_settings:
            for job in self._jobs.values():
                if job.status is JobStatus.RUNNING:
                    running[job.tenant_id, job.queue_name] += 1
                    by_key[job.tenant_id, job.queue_name, job.concurrency_key] += 1
        return running, by_key

    async def job_next_due(self, queues: Sequence[str], *, now: datetime) -> datetime | None:
        wanted = set(queues)
        due = [
            job.scheduled_at
            for job in self._jobs.values()
            if job.queue_name in wanted and job.status in CLAIMABLE and job.scheduled_at > now
        ]
        for (tenant, queue), (tokens, refilled_at) in self._buckets.items():
            rate = self._queue_settings[tenant, queue].rate_limit
            if queue in wanted and rate is not None:
                token = next_token_at(rate, tokens, refilled_at, now)
                if token is not None:
                    due.append(token)
        return min(due, default=None)

    async def job_heartbeat(self, beat: Heartbeat) -> Job | None:
        return self._heartbeat(beat.job_id, beat.lease_token, beat.progress, beat.lease_seconds, beat.now)

    def _heartbeat(
        self, job_id: str, lease_token: str, progress: JSON | Unchanged, lease_seconds: float, now: datetime
    ) -> Job | None:
        if not isinstance(progress, Unchanged) and (errors := progress_errors(progress, ("progress",))):
            raise ValidationError.of(errors)
        job = self._jobs.get(job_id)
        if job is None or not holds_lease(job, lease_token, now):
            return None
        if isinstance(progress, Unchanged):
            job = self._jobs[job_id] = replace(job, locked_until=lease_until(job, now, lease_seconds))
        else:
            job = self._jobs[job_id] = replace(
                job, locked_until=lease_until(job, now, lease_seconds), progress=copy.deepcopy(progress)
            )
        return self._out(job)

    async def job_heartbeat_many(
        self, leases: Sequence[HeldLease], *, lease_seconds: float, now: datetime
    ) -> list[datetime | None]:
        if errors := held_progress_errors(leases):
            raise ValidationError.of(errors)  # before anything is written
        beats = [self._heartbeat(item.job_id, item.lease_token, item.progress, lease_seconds, now) for item in leases]
        return [job.locked_until if job is not None else None for job in beats]

    async def job_release_many(self, leases: Sequence[HeldLease], *, now: datetime) -> list[Job | None]:
        released: list[Job | None] = []
        for item in leases:
            job = self._jobs.get(item.job_id)
            if job is None or not holds_lease(job, item.lease_token, now):
                released.append(None)
                continue
            job = self._jobs[job.id] = replace(
                job,
                status=JobStatus.RETRYING if job.retry_count > 0 else JobStatus.PENDING,
                delivery_count=job.delivery_count - 1,
                lease_token=None,
                locked_until=None,
                started_at=self._started_before.get(job.id, job.started_at) if job.delivery_count > 1 else None,
            )
            released.append(self._out(job))
        if self._wakeups is not None:
            for queue in {job.queue_name for job in released if job is not None}:
                self._wakeups.notify(queue)
        return released

    async def job_complete(self, completion: Completion, *, now: datetime) -> Job | None:
        if errors := completion_storage_errors([completion]):
            raise ValidationError.of(errors)
        return self._complete(completion, now)

    async def job_complete_many(self, completions: Sequence[Completion], *, now: datetime) -> list[Ended | None]:
        if errors := completion_storage_errors(completions):
            raise ValidationError.of(errors)
        done = [self._complete(item, now) for item in completions]
        return [
            Ended(job.id, job.status, job.queue_name, job.workflow_id, job.workflow_step_id) if job else None
            for job in done
        ]

    def _complete(self, item: Completion, now: datetime) -> Job | None:
        result = copy.deepcopy(item.result)
        return self._finish(
            item.job_id, item.lease_token, now, status=JobStatus.COMPLETED, result=result, completed_at=now
        )

    async def job_fail_many(self, failures: Sequence[Failure], *, now: datetime) -> list[Job | None]:
        if errors := failure_storage_errors(failures):
            raise ValidationError.of(errors)
        results: list[Job | None] = []
        for item in failures:
            job = self._jobs.get(item.job_id)
            if item.retry_at is None:
                results.append(
                    self._finish(
                        item.job_id, item.lease_token, now, status=JobStatus.DEAD_LETTER,
                        error_message=item.error, completed_at=now,
                    )
                )  # fmt: skip
            else:
                results.append(
                    self._finish(
                        item.job_id, item.lease_token, now, status=JobStatus.RETRYING, error_message=item.error,
                        retry_count=(job.retry_count + 1) if job else 0,
                        scheduled_at=item.retry_at, next_retry_at=item.retry_at,
                    )
                )  # fmt: skip
        if self._wakeups is not None:
            for queue in {job.queue_name for job in results if job is not None and job.status is JobStatus.RETRYING}:
                self._wakeups.notify(queue)
        return results

    def _finish(self, job_id: str, lease_token: str, now: datetime, **changes: JSON) -> Job | None:
        """End the delivery held by `lease_token`, applying `changes`; None when the lease is not held."""
        job = self._jobs.get(job_id)
        if job is None or not holds_lease(job, lease_token, now):
            return None
        job = self._jobs[job_id] = replace(job, lease_token=None, locked_until=None, **changes)
        if job.status in FINISHED:
            self._announce_finished([job_id])
        self._slot_freed(job)
        return self._out(job)

    async def job_cancel(self, job_id: str, *, tenant_id: str, now: datetime) -> Job | None:
        job = self._jobs.get(job_id)
        if job is None or job.tenant_id != tenant_id or job.status not in CANCELLABLE:
            return None
        job = self._jobs[job_id] = replace(
            job, status=JobStatus.CANCELLED, lease_token=None, locked_until=None, completed_at=now
        )
        self._announce_finished([job_id])
        self._slot_freed(job)
        return self._out(job)

    async def job_retry(self, job_id: str, *, tenant_id: str, now: datetime) -> Job | None:
        job = self._jobs.get(job_id)
        if job is None or job.tenant_id != tenant_id or job.status not in RETRIABLE:
            return None
        job = self._jobs[job_id] = replace(
            job,
            status=JobStatus.PENDING,
            retry_count=0,
            scheduled_at=now,
            next_retry_at=None,
            completed_at=None,
            expires_at=None,
            sequence_halt=job.sequence_on_failure is OnFailure.HALT,  # a resume moved past it, not past its replay
        )
        return self._out(job)

    async def job_lease_expired(self, *, limit: int, relock_seconds: float, now: datetime) -> list[Job]:
        expired = [
            job
            for job in self._jobs.values()
            if job.status is JobStatus.RUNNING and job.locked_until is not None and job.locked_until <= now
        ]
        expired.sort(key=lambda job: (job.locked_until or now, job.id))
        relocked = []
        for job in expired[:limit]:
            job = self._jobs[job.id] = replace(
                job, locked_until=now + timedelta(seconds=relock_seconds), lease_token=str(uuid.uuid4())
            )
            relocked.append(self._out(job))
        return relocked

    async def job_upkeep(self, *, now: datetime) -> None:
        """Nothing to keep up: the claim reads the jobs in order, with no index to maintain."""

    async def job_delete_finished(self, *, default_retention: timedelta | None, limit: int, now: datetime) -> int:
        def retention(job: Job) -> timedelta | None:
            settings = self._queue_settings.get((job.tenant_id, job.queue_name), QueueSettings())
            return retention_of(settings.retention_seconds, default_retention)

        doomed = [
            job
            for job in self._jobs.values()
            if job.status in FINISHED
            and expired(job.completed_at, retention(job), now)
            and not self._in_running_workflow(job)
        ]
        doomed.sort(key=lambda job: job.completed_at or now)
        for job in doomed[:limit]:
            del self._jobs[job.id]
            self._started_before.pop(job.id, None)
            if job.idempotency_key is not None:
                self._idempotency.pop((job.tenant_id, job.idempotency_key), None)
            if job.unique_key is not None:
                self._unique[job.tenant_id, job.unique_key].discard(job.id)
            if job.sequence_key is not None:
                self._sequences[job.tenant_id, job.sequence_key].discard(job.id)
        return len(doomed[:limit])


def _may_lease(settings: QueueSettings, running: int, key: str | None, running_with_key: int) -> bool:
    """Whether a (tenant, queue) with `settings` and `running` jobs running, `running_with_key` of them with the
    job's concurrency `key`, may have one more leased."""
    if settings.paused:
        return False
    if settings.concurrency_limit is not None and running >= settings.concurrency_limit:
        return False
    limit = settings.key_concurrency_limit
    return key is None or limit is None or running_with_key < limit


def _matches(job: Job, where: JobFilter) -> bool:
    return (
        (where.queue_name is None or job.queue_name == where.queue_name)
        and (where.status is None or job.status is where.status)
        and (where.task_name is None or job.task_name == where.task_name)
        and (where.workflow_id is None or job.workflow_id == where.workflow_id)
        and (where.unique_key is None or job.unique_key == where.unique_key)
        and (where.sequence_key is None or job.sequence_key == where.sequence_key)
        and (where.metadata is None or contains(job.metadata, where.metadata))
    )
