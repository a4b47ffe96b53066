"""Engine: the job use cases (tenant side, worker side, maintenance), composing `Workflows` and `Schedules`; the
workflow use cases are mixed in from `WorkflowFacade`.

See the package docstring for how the three fit together.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import datetime

from msgspec.structs import replace

from queueflow.core import deadlines, validation
from queueflow.core.backoff import RandomSource
from queueflow.core.cursor import page, page_after
from queueflow.core.errors import FieldError, InvalidState, LeaseLost, NotFound, ValidationError
from queueflow.core.flow import QueueSettingsPatch
from queueflow.core.ids import IdSource
from queueflow.core.jsonvalue import held_progress_errors, progress_errors, result_errors
from queueflow.core.lifecycle import expiry_reason, pending_job, retry_at
from queueflow.core.pressure import Pressure
from queueflow.core.schedule import NewSchedule, Schedule, SchedulePatch
from queueflow.core.types import (
    CLAIMABLE,
    JSON,
    UNCHANGED,
    AckOutcome,
    AckResult,
    ClaimRequest,
    Completion,
    Ended,
    Enqueued,
    Failure,
    FailureRequest,
    Heartbeat,
    HeartbeatResult,
    HeldLease,
    Job,
    JobFilter,
    JobQuery,
    JobStatus,
    MaintenanceReport,
    NewJob,
    Page,
    QueueMinute,
    QueueStats,
    Unchanged,
)
from queueflow.engine.endpoints import Endpoints
from queueflow.engine.queues import Queues
from queueflow.engine.schedules import Schedules
from queueflow.engine.settings import EngineSettings
from queueflow.engine.triggers import Triggers
from queueflow.engine.workflow_facade import WorkflowFacade
from queueflow.engine.workflows import Workflows, completed_step_report, step_report
from queueflow.ports import Clock, Resolver, Store
from queueflow.resolver import SystemResolver


class Engine(WorkflowFacade):
    def __init__(
        self,
        store: Store,
        clock: Clock,
        *,
        rng: RandomSource | None = None,
        settings: EngineSettings | None = None,
        resolver: Resolver | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        # Ids need to be unique, not secret (every read is checked against its tenant; lease tokens come from
        # PostgreSQL's gen_random_uuid), and jitter needs no more: a generator seeded from the OS, not a system
        # call per id (SystemRandom was 4% of a batch enqueue's CPU).
        self.rng: RandomSource = rng or random.Random()
        # Its ids, each made after the last one it made (`IdSource`): its own, not another engine's in the process.
        self.ids = IdSource(self.rng)
        self.settings = settings or EngineSettings()
        self.queues = Queues(store, clock)
        self._workflows = Workflows(store, clock, self.ids, self.settings)
        self.schedules = Schedules(store, clock, self.ids, self.settings.sweep_limit, self._workflows.create)
        self.endpoints = Endpoints(
            store,
            clock,
            self.ids,
            resolver or SystemResolver(),
            allow_private=self.settings.allow_private_endpoints,
        )
        self.triggers = Triggers(store, clock, self.ids)

    # ---- jobs (tenant side) -------------------------------------------------------------------------

    async def enqueue(self, tenant_id: str, job: NewJob) -> Enqueued:
        """Insert one job; a known idempotency key returns the original job with `created=False`."""
        (result,) = await self.enqueue_many(tenant_id, [job])
        return result

    async def enqueue_many(self, tenant_id: str, jobs: Sequence[NewJob]) -> list[Enqueued]:
        """Insert every job or none, in one store operation."""
        validation.check_new_jobs(jobs)
        now = self.clock.now()
        ids = self.ids.new_ids("job", now, len(jobs))  # increasing in the batch's order: the claim's last tie-break
        rows = [
            pending_job(tenant_id, job, now, self.ids, job_id=job_id) for job, job_id in zip(jobs, ids, strict=True)
        ]
        if any(row.expires_at is not None for row in rows):
            validation.check(deadlines.row_errors(jobs, rows))
        rules = [job.unique for job in jobs] if any(job.unique is not None for job in jobs) else None
        return [
            Enqueued(job, created) if isinstance(created, bool) else Enqueued(job, False, created)
            for job, created in await self.store.job_insert_many(rows, rules=rules)
        ]

    async def get_job(self, tenant_id: str, job_id: str) -> Job:
        job = await self.store.job_get(job_id, tenant_id=tenant_id)
        if job is None:
            raise NotFound(f"no job {job_id}")
        return (await self._with_blockers(tenant_id, [job]))[0]

    async def _with_blockers(self, tenant_id: str, jobs: list[Job]) -> list[Job]:
        """`jobs` with `blocked_by` filled in: one store read, and only when one of them may wait behind a halt."""
        waiting = [job.id for job in jobs if job.sequence_key is not None and job.status in CLAIMABLE]
        if not waiting:
            return jobs
        blockers = await self.store.sequence_blocked_by(waiting, tenant_id=tenant_id)
        return [replace(job, blocked_by=blockers[job.id]) if job.id in blockers else job for job in jobs]

    async def resume_sequence(self, tenant_id: str, key: str) -> None:
        """Move the sequence `key` past its halt: the jobs a dead-lettered `halt` job held may run."""
        resumed = await self.store.sequence_resume(key, tenant_id=tenant_id)
        if resumed is None:
            raise NotFound(f"no job in sequence {key!r}")
        if not resumed:
            raise InvalidState(f"nothing blocks sequence {key!r}")

    async def watch_job(self, tenant_id: str, job_id: str) -> Job:
        """The job, with its finish announced to every process from now on (`JobStore.job_watch`)."""
        job = await self.store.job_watch(job_id, tenant_id=tenant_id)
        if job is None:
            raise NotFound(f"no job {job_id}")
        return job

    async def list_jobs(
        self, tenant_id: str, where: JobFilter | None = None, *, limit: int = 50, cursor: str | None = None
    ) -> Page[Job]:
        after = page_after(limit, cursor)
        if where is not None and where.metadata is not None:
            validation.check(validation.object_errors(where.metadata, ("metadata",)))
        rows = await self.store.job_list(
            JobQuery(tenant_id=tenant_id, where=where or JobFilter(), limit=limit + 1, after=after)
        )
        return page(await self._with_blockers(tenant_id, rows), limit)

    async def cancel_job(self, tenant_id: str, job_id: str) -> Job:
        """Cancel a job that has not finished; a running job's lease token stops working at once."""
        job = await self.store.job_cancel(job_id, tenant_id=tenant_id, now=self.clock.now())
        if job is None:
            current = await self.get_job(tenant_id, job_id)
            raise InvalidState(f"job {job_id} is {current.status}; only unfinished jobs can be cancelled")
        await self._workflows.on_jobs_finished([job])
        return job

    async def retry_job(self, tenant_id: str, job_id: str) -> Job:
        """Replay a dead-lettered or cancelled job now, with a fresh retry budget and no deadline.

        A workflow step's job runs again, but its step stays as it ended (see `queueflow.engine.workflows`)."""
        job = await self.store.job_retry(job_id, tenant_id=tenant_id, now=self.clock.now())
        if job is None:
            current = await self.get_job(tenant_id, job_id)
            raise InvalidState(f"job {job_id} is {current.status}; only dead_letter or cancelled jobs can be retried")
        return job

    async def queue_stats(self, tenant_id: str) -> list[QueueStats]:
        return await self.queues.stats(tenant_id)

    async def get_queue(self, tenant_id: str, name: str) -> QueueStats:
        return await self.queues.get(tenant_id, name)

    async def held_back(self) -> dict[tuple[str, str], int]:
        return await self.queues.held_back()

    async def configure_queue(self, tenant_id: str, name: str, patch: QueueSettingsPatch) -> QueueStats:
        return await self.queues.configure(tenant_id, name, patch)

    async def queue_throughput(self, tenant_id: str, minutes: int = 60) -> list[QueueMinute]:
        return await self.queues.throughput(tenant_id, minutes)

    # ---- worker side --------------------------------------------------------------------------------
    #
    # `scope`: the tenant a worker key is scoped to (None: it drains every tenant). A scoped worker leases only its
    # tenant's jobs, and another tenant's job is to it as if it did not exist: NotFound, or lease_lost with no
    # status in an ack. It could never hold such a job's token, but a leaked token must not let it through either,
    # so its calls read the job's tenant first (one more statement, for scoped keys only).

    async def lease(
        self,
        queues: Sequence[str],
        *,
        max_jobs: int = 1,
        lease_seconds: float = 30.0,
        task_names: Sequence[str] | None = None,
        scope: str | None = None,
    ) -> list[Job]:
        """Claim up to `max_jobs` due jobs across `queues` (of `task_names` only, if given: the tasks the lessee
        can run), in claim order, each with a fresh lease token."""
        validation.check(validation.lease_errors(queues, max_jobs, lease_seconds, task_names))
        # Whose turn it is (README.md, "Fairness") is the store's, one for every process on its database.
        request = ClaimRequest(
            queues=list(dict.fromkeys(queues)),
            max_jobs=max_jobs,
            now=self.clock.now(),
            lease_seconds=lease_seconds,
            task_names=task_names,
            tenant_id=scope,
        )
        return await self.store.job_claim(request)

    async def _check_scope(self, job_id: str, scope: str | None) -> None:
        if scope is not None and await self.store.job_get(job_id, tenant_id=scope) is None:
            raise NotFound(f"no job {job_id}")

    async def next_due(self, queues: Sequence[str], *, after: datetime | None = None) -> datetime | None:
        """When the next delayed job or retry of `queues` becomes claimable after `after` (default now; None:
        nothing waits), so that an idle lessee can sleep exactly until then. A lessee passes the time of its
        empty claim, so that a job that became due since is answered too (and it claims again at once)."""
        return await self.store.job_next_due(list(dict.fromkeys(queues)), now=after or self.clock.now())

    async def heartbeat(
        self,
        job_id: str,
        lease_token: str,
        *,
        lease_seconds: float = 30.0,
        scope: str | None = None,
        progress: JSON | Unchanged = UNCHANGED,
    ) -> Job:
        """Extend a held lease to now + `lease_seconds`, never past the delivery's timeout deadline, recording
        `progress` (which replaces the previous one) if given. A lost lease records nothing."""
        errors = validation.number_errors(lease_seconds, ("lease_seconds",), 1, validation.MAX_LEASE_SECONDS)
        if not isinstance(progress, Unchanged):
            errors += progress_errors(progress, ("progress",))
        validation.check(errors)
        await self._check_scope(job_id, scope)
        beat = Heartbeat(
            job_id=job_id, lease_token=lease_token, lease_seconds=lease_seconds, progress=progress, now=self.clock.now()
        )
        job = await self.store.job_heartbeat(beat)
        if job is None:
            raise await self._lease_lost(job_id)
        return job

    async def release(self, leases: Sequence[HeldLease], *, scope: str | None = None) -> list[AckResult]:
        """Give back held jobs a worker has not started (`POST /v1/worker/release`): each is claimable again at
        once, as it was before that delivery (`JobStore.job_release_many`), or `lease_lost` on its own, with the
        job's status (None if it does not exist, or, for a scoped key, belongs to another tenant). In the order
        given; of two items for one job, the second finds the lease gone."""
        if not 1 <= len(leases) <= validation.MAX_BATCH:
            raise ValidationError.of([FieldError(("jobs",), f"must hold 1–{validation.MAX_BATCH} jobs")])
        mine = [True] * len(leases)
        if scope is not None:
            jobs = await self.store.job_get_many([item.job_id for item in leases])
            mine = [item.job_id in jobs and jobs[item.job_id].tenant_id == scope for item in leases]
        ours = [item for item, own in zip(leases, mine, strict=True) if own]
        released = iter(await self.store.job_release_many(ours, now=self.clock.now()) if ours else [])
        outcomes = [(item.job_id, next(released) if own else None) for item, own in zip(leases, mine, strict=True)]
        missing = [job_id for job_id, job in outcomes if job is None]
        lost = await self.store.job_get_many(missing) if missing else {}
        return [
            AckResult(job_id, AckOutcome.OK, job.status, job.queue_name)
            if job is not None
            else AckResult(job_id, AckOutcome.LEASE_LOST, *_status_and_queue(_in_scope(lost.get(job_id), scope)))
            for job_id, job in outcomes
        ]

    async def hand_back(self, jobs: Sequence[Job]) -> int:
        """Give back leased jobs their lessee never received (its client left before the answer went out): they
        are claimable again at once, and the undelivered claim does not count as a delivery. Returns how many
        were still held by those leases."""
        leases = [HeldLease(job.id, job.lease_token) for job in jobs if job.lease_token is not None]
        if not leases:
            return 0
        return sum(job is not None for job in await self.store.job_release_many(leases, now=self.clock.now()))

    async def heartbeat_many(
        self, leases: Sequence[HeldLease], *, lease_seconds: float = 30.0, scope: str | None = None
    ) -> list[HeartbeatResult]:
        """Extend many held leases at once, each on its own (as `heartbeat`, progress included); a lost one
        answers `locked_until` None and never fails the others. For a scoped key, another tenant's job is lost."""
        errors = validation.number_errors(lease_seconds, ("lease_seconds",), 1, validation.MAX_LEASE_SECONDS)
        if not 1 <= len(leases) <= validation.MAX_BATCH:
            errors.append(FieldError(("jobs",), f"must hold 1–{validation.MAX_BATCH} jobs"))
        errors += held_progress_errors(leases)
        validation.check(errors)
        ours = leases
        if scope is not None:
            tenants = {
                job.id: job.tenant_id for job in (await self.store.job_get_many([i.job_id for i in leases])).values()
            }
            ours = [item for item in leases if tenants.get(item.job_id) == scope]
        until = dict(
            zip(
                ((item.job_id, item.lease_token) for item in ours),
                await self.store.job_heartbeat_many(ours, lease_seconds=lease_seconds, now=self.clock.now())
                if ours
                else [],
                strict=True,
            )
        )
        return [HeartbeatResult(item.job_id, until.get((item.job_id, item.lease_token))) for item in leases]

    async def complete(self, job_id: str, lease_token: str, result: object = None, *, scope: str | None = None) -> Job:
        await self._check_scope(job_id, scope)
        job = await self.store.job_complete(Completion(job_id, lease_token, result), now=self.clock.now())
        if job is None:
            raise await self._lease_lost(job_id)
        await self._workflows.on_jobs_finished([job])
        return job

    async def fail(
        self,
        job_id: str,
        lease_token: str,
        error: str,
        *,
        retryable: bool = True,
        retry_after_seconds: float | None = None,
        scope: str | None = None,
    ) -> Job:
        """Record a failed delivery: retrying with backoff while budget is left and `retryable`, else dead_letter."""
        request = FailureRequest(
            job_id=job_id,
            lease_token=lease_token,
            error=error,
            retryable=retryable,
            retry_after_seconds=retry_after_seconds,
        )
        validation.check(_failure_errors(request, ()))
        now = self.clock.now()
        current = await self.store.job_get(job_id, tenant_id=scope)
        if current is None:
            raise NotFound(f"no job {job_id}")
        (job,) = await self.store.job_fail_many([self._decide(current, request, now)], now=now)
        if job is None:
            raise await self._lease_lost(job_id)
        await self._workflows.on_jobs_finished([job])
        return job

    async def ack(
        self, complete: Sequence[Completion] = (), fail: Sequence[FailureRequest] = (), *, scope: str | None = None
    ) -> list[AckResult]:
        """Complete and fail many jobs; each item succeeds or is `lease_lost` on its own."""
        if len(complete) + len(fail) > validation.MAX_BATCH:
            raise ValidationError.of([FieldError((), f"an ack carries at most {validation.MAX_BATCH} items")])
        if not complete and not fail:
            return []  # a worker with nothing to report may still ack (POST /v1/worker/ack: 200, no results)
        # Everything is checked before anything is written, so a bad item never leaves half an ack behind.
        errors: list[FieldError] = []
        for index, item in enumerate(complete):
            errors += result_errors(item.result, ("complete", index, "result"))
        for index, request in enumerate(fail):
            errors += _failure_errors(request, ("fail", index))
        validation.check(errors)
        if scope is not None:
            return await self._scoped_ack(complete, fail, scope)
        now = self.clock.now()
        current = await self.store.job_get_many([item.job_id for item in fail]) if fail else {}
        decided = [self._decide(current[item.job_id], item, now) for item in fail if item.job_id in current]
        done = await self.store.job_complete_many(complete, now=now) if complete else []
        failed = iter(await self.store.job_fail_many(decided, now=now) if decided else [])
        outcomes: list[tuple[str, Ended | Job | None]] = list(
            zip([item.job_id for item in complete], done, strict=True)
        )
        outcomes += [(item.job_id, next(failed) if item.job_id in current else None) for item in fail]
        # A completed step's report is what the worker sent: no need to read its row back.
        reports = [
            report
            for item, ended in zip(complete, done, strict=True)
            if (report := completed_step_report(ended, item.result)) is not None
        ]
        reports += [report for _, job in outcomes if isinstance(job, Job) and (report := step_report(job))]
        await self._workflows.on_steps_finished(reports)
        missing = [job_id for job_id, job in outcomes if job is None]
        lost = await self.store.job_get_many(missing) if missing else {}
        return [
            AckResult(job_id, AckOutcome.OK, job.status, job.queue_name)
            if job is not None
            else AckResult(job_id, AckOutcome.LEASE_LOST, *_status_and_queue(lost.get(job_id)))
            for job_id, job in outcomes
        ]

    async def _scoped_ack(
        self, complete: Sequence[Completion], fail: Sequence[FailureRequest], scope: str
    ) -> list[AckResult]:
        """`ack` for a scoped key: items naming another tenant's job are lease_lost with no status, as for a job
        that does not exist; the others are acked as usual, in the order given."""
        named = [item.job_id for item in complete] + [item.job_id for item in fail]
        jobs = await self.store.job_get_many(named)

        def ours(job_id: str) -> bool:
            return job_id in jobs and jobs[job_id].tenant_id == scope

        acked = iter(
            await self.ack(
                [item for item in complete if ours(item.job_id)], [item for item in fail if ours(item.job_id)]
            )
        )
        return [next(acked) if ours(job_id) else AckResult(job_id, AckOutcome.LEASE_LOST, None) for job_id in named]

    def _decide(self, job: Job, request: FailureRequest, now: datetime) -> Failure:
        # Decided from the row as read; the store applies it only if the token still holds the lease, and a
        # token is minted per claim, so the row the decision was made on is the row it is applied to.
        when = retry_at(
            job, now, retryable=request.retryable, rng=self.rng, retry_after_seconds=request.retry_after_seconds
        )
        return deadlines.failure(job, request.lease_token, request.error, when)

    async def _lease_lost(self, job_id: str) -> Exception:
        job = await self.store.job_get(job_id)
        if job is None:
            return NotFound(f"no job {job_id}")
        if job.status is JobStatus.RUNNING:
            return LeaseLost(f"job {job_id}: this lease token is stale or its lease has expired")
        return LeaseLost(f"job {job_id} is {job.status}: this lease token no longer holds it")

    # ---- operations ---------------------------------------------------------------------------------

    async def ping(self) -> None:
        """Return when the store answers (readiness); raises `StoreUnavailable` when it does not."""
        await self.store.ping()

    async def pressure(self) -> Pressure:
        """What the database is under, every tenant's at once (for /metrics and the dashboard's warning): its
        tables' tuples and sizes, its oldest transaction, and who holds the xmin horizon (`core.pressure`)."""
        return await self.store.store_pressure()

    # ---- maintenance --------------------------------------------------------------------------------

    async def run_upkeep(self) -> None:
        """The store's claim upkeep, every second (`runtime.upkeep`): on PostgreSQL, the claim index's generations."""
        await self.store.job_upkeep(now=self.clock.now())

    async def run_maintenance(self) -> MaintenanceReport:
        """One janitor sweep: reclaim expired leases through the failure policy, advance the workflows whose
        advancement a crash lost, then apply retention (the jobs', and the day that events are kept)."""
        now = self.clock.now()
        expired = await self.store.job_lease_expired(
            limit=self.settings.sweep_limit, relock_seconds=self.settings.janitor_lease_seconds, now=now
        )
        failures = [
            deadlines.failure(
                job, job.lease_token or "", expiry_reason(job, now), retry_at(job, now, retryable=True, rng=self.rng)
            )
            for job in expired
        ]
        # The re-lease gave each row a token of the janitor's own, so these failures apply: a worker whose lease
        # expired gets 409 now, whether or not a janitor has come by (None here only if a cancel came first).
        reclaimed = (
            [job for job in await self.store.job_fail_many(failures, now=now) if job is not None] if failures else []
        )
        await self._workflows.on_jobs_finished(reclaimed)
        healed = await self._workflows.heal(self.settings.sweep_limit)
        deleted = await self._apply_retention(now)
        deleted_events = await self.triggers.forget_old_events(self.settings.sweep_limit)
        return MaintenanceReport(
            reclaimed=len(reclaimed),
            retried=sum(job.status is JobStatus.RETRYING for job in reclaimed),
            dead_lettered=sum(job.status is JobStatus.DEAD_LETTER for job in reclaimed),
            deleted=deleted,
            healed=healed,
            deleted_events=deleted_events,
        )

    async def expire_due_jobs(self, limit: int) -> list[Job]:
        """Dead-letter up to `limit` jobs not started by their deadline (`core.deadlines`); the jobs it ended. The
        wait timer's pass (`runtime.waits`), so that each ends within its interval of its time."""
        now = self.clock.now()
        due = await self.store.job_expiring(limit=limit, now=now)
        expiries = [decided for job in due if (decided := deadlines.expiry(job, now)) is not None]
        if not expiries:
            return []
        expired = await self.store.job_expire_many(expiries, now=now)
        await self._workflows.on_jobs_finished(expired)
        return expired

    async def next_expiry(self) -> datetime | None:
        """The earliest deadline of a job not started yet (None: no job has one), for the timer to sleep until."""
        return await self.store.job_next_expiry()

    async def _apply_retention(self, now: datetime) -> int:
        """Delete the expired jobs (`core.retention`) in batches, each its own short transaction, until one finds
        fewer than a full batch or the sweep's share of batches is spent; how many went."""
        deleted = 0
        for _ in range(self.settings.retention_batches):
            batch = await self.store.job_delete_finished(
                now=now, default_retention=self.settings.retention, limit=self.settings.retention_batch
            )
            deleted += batch
            if batch < self.settings.retention_batch:
                break
        return deleted

    # ---- schedules ----------------------------------------------------------------------------------

    async def create_schedule(self, tenant_id: str, new: NewSchedule) -> Schedule:
        """Create a schedule; it first fires at its first occurrence after now. A taken name is InvalidState."""
        return await self.schedules.create(tenant_id, new)

    async def get_schedule(self, tenant_id: str, name: str) -> Schedule:
        return await self.schedules.get(tenant_id, name)

    async def list_schedules(self, tenant_id: str, *, limit: int = 50, cursor: str | None = None) -> Page[Schedule]:
        return await self.schedules.list(tenant_id, limit=limit, cursor=cursor)

    async def update_schedule(self, tenant_id: str, name: str, patch: SchedulePatch) -> Schedule:
        """Apply a PATCH (see `Schedules.update` for what disabling and re-enabling do)."""
        return await self.schedules.update(tenant_id, name, patch)

    async def delete_schedule(self, tenant_id: str, name: str) -> None:
        """Delete a schedule; it fires no more. Jobs it already inserted stay."""
        await self.schedules.delete(tenant_id, name)

    async def fire_due_schedules(self) -> int:
        """One scheduler tick (see `Schedules.fire_due`); returns how many firings it recorded."""
        return await self.schedules.fire_due()


def _failure_errors(request: FailureRequest, loc: tuple[str | int, ...]) -> list[FieldError]:
    errors = validation.text_errors(request.error, (*loc, "error"), min_len=0, max_len=65_536)
    if request.retry_after_seconds is not None:
        errors += validation.number_errors(
            request.retry_after_seconds, (*loc, "retry_after_seconds"), 0, validation.MAX_DELAY_SECONDS
        )
    return errors


def _status_and_queue(job: Job | None) -> tuple[JobStatus | None, str | None]:
    return (job.status, job.queue_name) if job is not None else (None, None)


def _in_scope(job: Job | None, scope: str | None) -> Job | None:
    """`job`, unless a key scoped to another tenant asks: to it, the job does not exist."""
    return job if job is None or scope is None or job.tenant_id == scope else None
