"""The engine's ports, protocols only: where jobs, queues, workflows, schedules, push endpoints, triggers and events
are kept (`JobStore`, `QueueStore`, `WorkflowStore`, `ScheduleStore`, `EndpointStore`, `TriggerStore`, `EventStore`,
and what the database is under, `PressureStore`: `Store`), what time it is (`Clock`; implementations in
`queueflow.clocks`), who hears of new work (`WorkSignal`, which every store takes as `wakeups`), and what a host name
resolves to (`Resolver`, for push deliveries; `queueflow.runtime.resolver`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Protocol, runtime_checkable

from queueflow.core.advance import AdvanceRequest, ChildStart
from queueflow.core.deadlines import Expiry
from queueflow.core.endpoints import DeliveriesFinished, Endpoint, EndpointQuery, SlotRequest
from queueflow.core.events import Event
from queueflow.core.finish import StepReport
from queueflow.core.flow import Backlog, ConfigureRequest, QueueSettings
from queueflow.core.growth import GrowthRequest
from queueflow.core.pressure import Pressure
from queueflow.core.schedule import Schedule, ScheduleFired
from queueflow.core.triggers import Trigger
from queueflow.core.types import (
    ClaimRequest,
    Completion,
    Cursor,
    Ended,
    Failure,
    Heartbeat,
    HeldLease,
    Job,
    JobQuery,
    QueueCounts,
    QueueMinute,
    UniqueOutcome,
    UniqueRule,
)
from queueflow.core.waits import DueWait
from queueflow.core.workflow import SignalDelivery, Workflow, WorkflowQuery


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, an aware UTC datetime."""
        ...


class Resolver(Protocol):
    async def resolve(self, host: str, port: int) -> list[str]:
        """Every IP address (as text) `host` resolves to for a TCP connection to `port`; [] when it resolves to
        none. A literal address resolves to itself."""
        ...


class WorkSignal(Protocol):
    """Who is told that a queue received due work, so that waiting lessees wake (`runtime.wakeups.Wakeups`).

    PostgreSQL tells every process through its NOTIFY trigger; a store without one (the in-memory store) calls
    this, and the PostgreSQL store calls it too for what its own process inserts (no trip through the database)."""

    def notify(self, queue: str) -> None:
        """Work arrived on `queue`."""
        ...

    def finished(self, object_id: str) -> None:
        """The job or workflow `object_id` finished (PostgreSQL tells through `queueflow_done`)."""
        ...


@runtime_checkable
class EchoSignal(WorkSignal, Protocol):
    """A `WorkSignal` that knows the NOTIFYs of this process's own commits when they come back (the server's hub,
    `runtime.wakeups.Wakeups`): the PostgreSQL store says which queues a commit announces before it commits, and
    keeps the backend pids of its sessions, so that those echoes wake nobody a second time."""

    own_backends: set[int]

    def expect_echoes(self, queues: Iterable[str]) -> None:
        """A commit about to be made announces `queues`."""
        ...

    def withdraw_echoes(self, queues: Iterable[str]) -> None:
        """That commit failed."""
        ...


class WorkflowStore(Protocol):
    """Where workflows live: a workflows row (with its counters, `core.advance.Counters`), one workflow_steps row
    per step (keyed on (workflow_id, name), with its result, `remaining` and `dependents`), and the jobs that run
    the steps (`workflow_id`, and the step's name as `workflow_step_id`).

    `core` decides, the store records. A step's finish (`workflow_step_finish`) touches only its own row, its
    dependents and the workflow's counters, and records what `core.finish.on_finish` decides on them; a change of
    the whole workflow (`workflow_advance`, `workflow_add_steps`) holds its exclusive row lock and records
    `core.advance.record` of what the caller's `decide` (a pure `core` function) picks on what it read under it.
    The jobs a store makes for steps are `core.advance.new_step_job`s, their ids from the store's own `IdSource` (on
    the `rng` it is built with). A workflow's `context`, as read, is its initial context plus every satisfied step's
    result.
    """

    # ---- reads: a tenant's workflows (and the dashboard's) --------------------------------------------------

    async def workflow_get(self, workflow_id: str, *, tenant_id: str | None = None) -> Workflow | None:
        """The workflow with its steps in submitted order, if it exists (and belongs to `tenant_id`, if given)."""
        ...

    async def workflow_list(self, query: WorkflowQuery) -> list[Workflow]:
        """Up to `query.limit` of the tenant's workflows (with `query.status`, if given), newest first (created_at,
        id descending), strictly after `query.after`."""
        ...

    async def workflow_watch(self, workflow_id: str, *, tenant_id: str) -> Workflow | None:
        """Ask that the workflow's finish (running → any other status) be announced to every process's
        `WorkSignal.finished`, then read it: as it is once the request is recorded, so a finish recorded before
        the request is seen here, and one after it is announced. None if it does not exist for `tenant_id`."""
        ...

    # ---- a tenant's writes: a new workflow, and changes of the whole of one --------------------------------

    async def workflow_insert(
        self, workflow: Workflow, jobs: Sequence[Job], *, children: Sequence[ChildStart] = ()
    ) -> tuple[Workflow, bool]:
        """∅ → the workflow, its steps as given and `jobs` (its root steps' jobs, pending), and the child workflows
        its root child steps start (`core.children`, each a `ChildStart.recording` inserted the same way, its own
        children too), all or nothing. When (tenant_id, idempotency_key) already exists nothing is written:
        `(existing, False)` (a workflow or job it cannot store is a `ValidationError` all the same)."""
        ...

    async def workflow_advance(self, request: AdvanceRequest) -> Workflow | None:
        """Lock the workflow exclusively (waiting out the finishes in flight), call `request.decide` on it as it is
        now, and record the transition (`advance.record`), in one transaction: the finished step's result kept,
        changed step rows written guarded by their previous status, the jobs of steps moved enqueued → cancelled
        cancelled (pending | retrying | running → cancelled, lease voided), a new pending job per step moved to
        enqueued, the counters recomputed, the terminal status and completed_at = now only while the workflow is
        running. Child workflows too, in the same transaction (locked after their parent, never before): the
        children of child steps moved waiting → cancelled are cancelled if running (`children.cancel_child`, and
        theirs, down the tree), those of child steps moved pending → waiting inserted or retried in place
        (`Recording.children`, `children.retry_child`). An error raised by `decide` propagates as it was raised,
        and a result or new job it cannot store is a `ValidationError`; either way nothing is written. Returns the
        workflow as recorded; None if it does not exist (for `request.tenant_id`), without calling `decide`."""
        ...

    async def workflow_signal(self, signal: SignalDelivery) -> DueWait | None:
        """A signal `signal.name` for the tenant's workflow, in one transaction: the workflow row held FOR KEY
        SHARE (a change of the whole workflow waits), the step whose wait names the signal locked FOR UPDATE (so a
        finish that makes it wait waits for this, or this for it), and `signal.decide` called on them as they are
        (the workflow without its steps, or None; the step, or None). KEEP: the step keeps the signal (payload,
        received_at = now), and a `waiting` step is due now (due_at = now), returned for the caller to end;
        REPEAT: nothing. An error raised by `decide` propagates, nothing written. A payload it cannot store is a
        `ValidationError`."""
        ...

    # ---- the worker side: a step's end, and the steps a running step adds ----------------------------------

    async def workflow_step_finish(self, report: StepReport, *, now: datetime) -> tuple[DueWait, ...] | None:
        """The step's job ended, or (no `job_id`) its wait: record it, if the workflow is running and the step is
        as reported (`core.advance.is_reported`: `enqueued` with `report.job_id` as its job, or `waiting` as
        `report.wait_end` read it; otherwise — a repeat, a late report, a step a halt or cancel got to first, a
        timeout a signal got to first — nothing is written: None). A completion or a `continue` failure
        (`core.finish.finishes_alone`) is recorded on the touched rows alone: the store locks the step's pending
        dependents and records what `core.finish.on_finish` decides on them — enqueued | waiting → completed |
        failed | cancelled with its result (due_at cleared), each `Finish.dependents` row written (counted down,
        or at 0 pending → enqueued with its new job, or → waiting with its due time), the workflow's unfinished
        count decremented, and the terminal status (`counted_status`) with completed_at = now when it reaches 0;
        a new job's payload gets its `_context` as the context is when the job is inserted (every result written
        before, this step's included); the child steps it made wait start their children as `workflow_advance`
        starts them. Returns the waits it made that are due at once (a signal kept, a child step too deep), and,
        when it ended a child workflow, its parent's step (`children.child_ended`): the caller ends them. A `halt`
        or `skip` failure is recorded as `workflow_advance` records what `core.finish.on_report` decides on the
        snapshot. A result or job it cannot store is a `ValidationError`,
        and nothing is written."""
        ...

    async def workflow_add_steps(self, request: GrowthRequest) -> Workflow:
        """A running step's job adds steps to its workflow, in one transaction: the job read (of
        `request.tenant_id`, if given) and held FOR SHARE (its completion waits for this to commit), its workflow
        locked exclusively, the `GrowthView` of it that `request.needs` names read (what the addition touches, not
        every step: its cost is what it adds), `request.decide` called on them (None where missing), then
        `growth.added` inserted, `growth.rewired` rows' depends_on, dependents and remaining written,
        `growth.transition` recorded on them as `advance.record` records it (ready new steps enqueued with a job,
        waiting, or skipped), and the new steps counted in the workflow's counters. An error raised by `decide`
        propagates as raised, and nothing is written. Returns the workflow as recorded, with the steps of its view
        (all of them, for a store that holds them anyway)."""
        ...

    # ---- the janitor's sweeps: reads only ----------------------------------------------------------------

    async def workflow_waits_due(self, *, limit: int, now: datetime) -> list[DueWait]:
        """Up to `limit` `waiting` steps of running workflows whose due_at ≤ now, earliest first, as they are:
        for the caller to end, each by a guarded `workflow_step_finish`."""
        ...

    async def workflow_next_wait_due(self) -> datetime | None:
        """The earliest due_at of a `waiting` step, or None."""
        ...

    async def workflow_stalled_jobs(self, *, limit: int, finished_before: datetime) -> list[Job]:
        """Up to `limit` jobs that finished (completed | dead_letter | cancelled) before `finished_before` and
        whose step is still `enqueued` in a running workflow: advances lost to a crash between a job's write and
        its workflow's."""
        ...

    async def workflow_children_ended(self, *, limit: int, ended_before: datetime) -> list[DueWait]:
        """Up to `limit` child steps still `waiting` in a running workflow whose child workflow ended (completed_at)
        before `ended_before`: parents' advances lost to a crash after their child's end (`children.parent_wait`)."""
        ...

    async def workflow_deadlines_due(self, *, limit: int, now: datetime) -> list[str]:
        """Up to `limit` ids of running workflows whose deadline ≤ now, earliest first."""
        ...

    async def workflow_next_deadline(self) -> datetime | None:
        """The earliest deadline of a running workflow, or None."""
        ...


class JobStore(Protocol):
    """Where jobs live. Every method is one atomic operation; the adapter owns its transaction.

    The store records what the engine decided. Methods that act for a tenant take `tenant_id` and never
    see another tenant's rows; worker-side methods drain every tenant. Methods that return `None` (or a
    `None` per item) leave it to the engine to say why: the row is missing, or not in the required state.
    Every adapter raises only `QueueFlowError`s (a value it cannot store is a `ValidationError`).

    Every store method has one shape: positional, only its subject (an id, a value, a sequence of items);
    `tenant_id` and `now` keyword-only, `now` last; more than three inputs one frozen value of `core` named for
    the operation (`ClaimRequest`, `Heartbeat`, `JobQuery`), which then carries `now` and the tenant.
    """

    # --- health ---------------------------------------------------------------------------------------------------

    async def ping(self) -> None:
        """Nothing when the store answers; `StoreUnavailable` when it cannot be reached (readiness checks)."""
        ...

    # --- reads ----------------------------------------------------------------------------------------------------

    async def job_get(self, job_id: str, *, tenant_id: str | None = None) -> Job | None:
        """The job, if it exists (and, with a `tenant_id`, belongs to that tenant)."""
        ...

    async def job_get_many(self, job_ids: Sequence[str]) -> dict[str, Job]:
        """The jobs that exist among `job_ids`, by id (any tenant)."""
        ...

    async def job_list(self, query: JobQuery) -> list[Job]:
        """Up to `query.limit` of the tenant's jobs matching `query.where`, newest first (created_at, id
        descending), strictly after `query.after`."""
        ...

    async def job_watch(self, job_id: str, *, tenant_id: str) -> Job | None:
        """Ask that the job's finish (→ completed | dead_letter | cancelled) be announced to every process's
        `WorkSignal.finished`, then read it: as it is once the request is recorded, so a finish recorded before
        the request is seen here, and one after it is announced. None if it does not exist for `tenant_id`."""
        ...

    # --- writes by the tenant -------------------------------------------------------------------------------------

    async def job_insert_many(
        self, jobs: Sequence[Job], *, rules: Sequence[UniqueRule | None] | None = None
    ) -> list[tuple[Job, bool | UniqueOutcome]]:
        """∅ → pending, for every row or none. A row whose (tenant_id, idempotency_key) already exists is
        not inserted and resolves to the existing job: `(existing, False)`; otherwise `(row, True)`.

        `rules[i]`, if given, is row i's `unique` rule (its key is the row's `unique_key`), checked after the
        idempotency key: the store locks the batch's keys (every enqueue of a key, from any process or the SQL
        function, waits for the one before it), reads each item's existing job under the lock and records what
        `core.unique.resolve` decided, in the batch's order — `(row, True)` for a new job, `(existing, SKIPPED)`,
        `(replaced, REPLACED)` (pending | retrying: payload, priority, metadata and scheduled_at rewritten), or
        `core.unique.Duplicate` raised and nothing written."""
        ...

    async def job_cancel(self, job_id: str, *, tenant_id: str, now: datetime) -> Job | None:
        """pending | retrying | running → cancelled at now (completed_at), lease token voided. None if missing
        (for the tenant) or finished."""
        ...

    async def job_retry(self, job_id: str, *, tenant_id: str, now: datetime) -> Job | None:
        """dead_letter | cancelled → pending at now (scheduled_at), retry_count = 0, next_retry_at, completed_at and
        expires_at cleared (a replay has no deadline), `sequence_halt` as its `sequence_on_failure` says (a replayed
        halting job halts again if it dies again), error kept. None if missing (for the tenant) or other."""
        ...

    async def sequence_blocked_by(self, job_ids: Sequence[str], *, tenant_id: str) -> dict[str, str]:
        """For each of `job_ids` (the tenant's) that is pending or retrying behind a halt of its sequence, the id of
        the job it waits behind: the earliest dead-lettered job before it whose `sequence_halt` holds
        (`core.sequences.blocked_by`). The others are left out. Reads only."""
        ...

    async def sequence_resume(self, key: str, *, tenant_id: str) -> bool | None:
        """Move the tenant's sequence `key` past its halt: every dead-lettered job of it whose `sequence_halt`
        holds no longer does. True if one did; False if none did (nothing blocked it); None if the key has no jobs."""
        ...

    # --- the worker's lease lifecycle: claim, heartbeat, release, complete, fail ----------------------------------

    async def job_claim(self, request: ClaimRequest) -> list[Job]:
        """pending | retrying, due (scheduled_at ≤ now) and not expired (expires_at null or > now) → running,
        for up to `max_jobs` jobs of `queues` (and, when `task_names` is given, of those tasks only; of
        `tenant_id` only, if given: a tenant-scoped worker key), in turns (`core.turns.in_turns`): the tenants
        with due jobs served round by round, each round starting with the first tenant after the turn of
        `queues` (the set, in any order) — the tenant the previous claim of them served last, whoever made it:
        the store keeps the turn, one for every engine and process on it, and moves it to the last tenant this
        claim serves (a tenant-scoped claim neither reads nor moves it) — and each tenant's jobs in claim order
        (priority desc, scheduled_at, created_at), so that one tenant's backlog never holds another's jobs back.
        Returned in that order. Each gets a fresh lease_token, delivery_count + 1, started_at = now and
        locked_until = now + lease_seconds, capped at its timeout.
        Concurrent claimers never claim the same row. Flow control (`QueueStore`) holds jobs back: none of a
        paused (tenant, queue)'s, never so many that more than its `concurrency_limit` run at once (nor more than
        its `key_concurrency_limit` of one `concurrency_key`), and never more than its rate limit's token bucket
        holds at `now` (each claimed job spends a token), however many claims run concurrently. A job held back
        is skipped, never waited for: the claim takes what lies behind it. The task and tenant filters hold on a
        flow-controlled queue too. A job of a sequence is held back while its sequence holds it
        (`core.sequences.free_to_start`: an earlier job of it pending, retrying, running or halting, or any of it
        running), exactly under any number of concurrent claims: no two jobs of a sequence ever run at once.
        All or nothing, as every method here: a claim that fails leaves every job as it was."""
        ...

    async def job_next_due(self, queues: Sequence[str], *, now: datetime) -> datetime | None:
        """The earliest `scheduled_at` after `now` of a pending | retrying job of `queues`: when the next delayed
        job or retry becomes claimable — or, if sooner, when an empty rate-limit bucket of one of `queues` gets its
        next token, so that a lease throttled by the rate wakes as soon as it may take a job. None when neither
        waits. Reads only."""
        ...

    async def job_heartbeat(self, beat: Heartbeat) -> Job | None:
        """running (token matches, locked_until > now) → running with locked_until = now + lease_seconds,
        capped at started_at + timeout_seconds, and progress = `beat.progress` unless UNCHANGED. None (and nothing
        written) when the lease is not held. A progress it cannot store is a `ValidationError`."""
        ...

    async def job_heartbeat_many(
        self, leases: Sequence[HeldLease], *, lease_seconds: float, now: datetime
    ) -> list[datetime | None]:
        """`job_heartbeat` for each item on its own, in one operation: running (token matches, locked_until > now)
        → locked_until = now + lease_seconds, capped at started_at + timeout_seconds, and progress = the item's
        `progress` unless UNCHANGED. Per item, in input order, the new locked_until, or None (and nothing written)
        where the lease is not held (an item repeated in the batch answers alike). A progress it cannot store is
        a `ValidationError`, and then nothing is written."""
        ...

    async def job_release_many(self, leases: Sequence[HeldLease], *, now: datetime) -> list[Job | None]:
        """running (token matches, locked_until > now) → claimable again exactly as before this claim: pending
        (retrying when retry_count > 0, as a claimable job is exactly when a retry was counted), delivery_count - 1,
        scheduled_at and retry_count untouched, lease cleared, and started_at what it was before the claim (None
        when no delivery is left, else the earlier delivery's start, which the claim keeps for this). For jobs a
        worker holds and has not started, and for a claim whose jobs never reached their worker. Each item on its
        own, in order: None where the lease is not held (a second item for a job released by an earlier one
        too). Announces the queues (as an insert does), so parked lessees take the jobs now."""
        ...

    async def job_complete(self, completion: Completion, *, now: datetime) -> Job | None:
        """running (token matches, locked_until > now) → completed with its result and completed_at = now, lease
        cleared; the job as completed, or None where the lease is not held."""
        ...

    async def job_complete_many(self, completions: Sequence[Completion], *, now: datetime) -> list[Ended | None]:
        """running (token matches, locked_until > now) → completed with its result and completed_at = now, lease
        cleared. Each item on its own: the job's id, status, queue and workflow, or None where the lease is not
        held (the whole row costs more to read than a batched ack needs; `job_get` reads it)."""
        ...

    async def job_fail_many(self, failures: Sequence[Failure], *, now: datetime) -> list[Job | None]:
        """running (token matches, locked_until > now) → retrying (retry_count + 1,
        scheduled_at = next_retry_at = retry_at) or, when retry_at is None, dead_letter (completed_at = now); lease
        cleared, error_message recorded. Each item on its own: None where the lease is not held. A job that goes
        retrying announces its queue (as an insert does), so parked lessees learn its new due time."""
        ...

    # --- the janitor's sweeps -------------------------------------------------------------------------------------

    async def job_lease_expired(self, *, limit: int, relock_seconds: float, now: datetime) -> list[Job]:
        """For up to `limit` running jobs whose locked_until ≤ now: locked_until = now + relock_seconds and a
        new lease token, so that no other janitor takes them while this one decides, and the worker whose lease
        expired can no longer finish them (409 lease_lost, as for any expired lease; with its old token it could,
        for as long as the janitor held the row). Returns them as re-leased to the janitor."""
        ...

    async def job_upkeep(self, *, now: datetime) -> None:
        """What the store keeps up for its claims, every second (`runtime.upkeep`), as of `now`: PostgreSQL rotates its
        claim index's generations (`stores.postgres.generations`); a store with nothing to keep does nothing."""
        ...

    async def job_expiring(self, *, limit: int, now: datetime) -> list[Job]:
        """Up to `limit` pending | retrying jobs whose expires_at ≤ now, the earliest deadline first (a bounded read
        of the jobs with a deadline only). Reads only: `job_expire_many` records their end."""
        ...

    async def job_expire_many(self, expiries: Sequence[Expiry], *, now: datetime) -> list[Job]:
        """pending | retrying with expires_at ≤ now → dead_letter (completed_at = now, error_message = the item's
        error), each item on its own; a job that has since left those states, or that another transaction holds
        (a cancel, a unique replace, another timer's expiry), is left alone and not returned — no claim ever waits
        for this, nor this for anything. The jobs it dead-lettered, announced as finished."""
        ...

    async def job_next_expiry(self) -> datetime | None:
        """The earliest expires_at of a pending | retrying job (passed or not), or None. Reads only."""
        ...

    async def job_delete_finished(self, *, default_retention: timedelta | None, limit: int, now: datetime) -> int:
        """Delete up to `limit` expired jobs (`core.retention.expired` at `now`): completed | dead_letter | cancelled
        jobs whose completed_at is older than their queue's retention (the tenant's `retention_seconds` for the
        queue, else `default_retention`; neither: kept), except those of a running workflow (its self-heal reads
        them); how many. One batch, in a short transaction of its own that skips rows others hold: it never holds
        a lock that a claim, an enqueue or an ack waits for. Which expired jobs go first is the store's (within a
        queue, the longest finished first)."""
        ...


class QueueStore(Protocol):
    """Where queues' flow-control settings live (pause, concurrency and rate limits, keyed on (tenant, queue)), and
    what is known of each queue's jobs: counts, backlogs, throughput. Each method is one atomic operation, as in
    `JobStore`, whose claim obeys these settings."""

    # --- reads for the tenant -------------------------------------------------------------------------------------

    async def queue_overview(
        self, *, tenant_id: str, queue_name: str | None = None, now: datetime
    ) -> tuple[dict[str, QueueSettings], list[QueueCounts]]:
        """The tenant's configured queues (every one, or only `queue_name`) with their settings, by queue name (a
        queue never configured is absent: its settings are the defaults), and per queue with any of the tenant's
        jobs (only `queue_name`, if given), by queue name, its counts at `now`: due (pending) and not yet due
        (scheduled) pending | retrying jobs, each other status, and `retrying`, which is part of the first two.
        Read through one connection (`GET /v1/queues`): a request that waits for a pooled connection waits once.
        Reads only."""
        ...

    async def queue_throughput(self, *, tenant_id: str, since: datetime) -> list[QueueMinute]:
        """Per queue and UTC minute, the tenant's jobs that became completed or dead_letter at or after `since`
        (by completed_at); only minutes with any, by queue name then minute. Reads only."""
        ...

    # --- writes by the tenant -------------------------------------------------------------------------------------

    async def queue_configure(self, request: ConfigureRequest) -> QueueSettings:
        """∅ | stored → stored with `request.patch` applied, atomically (two patches of different fields both
        stick). A new or changed rate limit starts with a full bucket. Announces the queue (as an insert does), so
        that a lessee parked on a queue that was paused or full takes its jobs now. Returns the settings as
        stored."""
        ...

    # --- every tenant's, for the server's gauges ------------------------------------------------------------------

    async def queue_backlogs(self, *, now: datetime) -> list[Backlog]:
        """Every (tenant, queue) whose settings restrict leasing, with its rate bucket's tokens at `now` and its
        due (scheduled_at ≤ now) and running jobs, per concurrency_key, for `flow.held_back`. Reads only."""
        ...


class ScheduleStore(Protocol):
    """Where cron schedules live. Each method is one atomic operation, as in `JobStore`.

    A schedule row changes in two ways, each a compare-and-set on what the caller read, so neither can undo the
    other: a tenant's edit (`schedule_update`, which also moves `updated_at` forward) and a scheduler's firing
    (`schedule_fired`, which moves `next_run_at` forward and leaves `updated_at` alone).
    """

    # --- reads for the tenant -------------------------------------------------------------------------------------

    async def schedule_get(self, name: str, *, tenant_id: str) -> Schedule | None:
        """The tenant's schedule called `name`, if there is one."""
        ...

    async def schedule_list(self, *, tenant_id: str, limit: int, after: Cursor | None) -> list[Schedule]:
        """Up to `limit` of the tenant's schedules, newest first (created_at, id descending), strictly after `after`."""
        ...

    # --- writes by the tenant -------------------------------------------------------------------------------------

    async def schedule_insert(self, schedule: Schedule) -> Schedule:
        """∅ → stored. `InvalidState` when the tenant already has a schedule with this name."""
        ...

    async def schedule_update(
        self, schedule: Schedule, *, expected_updated_at: datetime, expected_next_run_at: datetime | None
    ) -> Schedule | None:
        """stored → `schedule`'s fields (the row with its id and tenant_id), only while the row's `updated_at` and
        `next_run_at` are still the expected ones; its name, created_at and last_run_at (a firing's) stay as they
        are. None when the row is gone or has changed since it was read."""
        ...

    async def schedule_delete(self, name: str, *, tenant_id: str) -> bool:
        """stored → ∅. False when the tenant has no schedule called `name`."""
        ...

    # --- the scheduler's firings ----------------------------------------------------------------------------------

    async def schedule_due(self, *, limit: int, now: datetime) -> list[Schedule]:
        """Up to `limit` enabled schedules of every tenant with next_run_at ≤ now, earliest next_run_at first."""
        ...

    async def schedule_fired(self, fired: ScheduleFired) -> bool:
        """enabled, next_run_at = expected → next_run_at, last_run_at, only while `updated_at` is also the expected
        one (no edit came in between). False when another scheduler recorded this firing first, or the schedule
        was edited, disabled or deleted since it was read: the row is left as it is."""
        ...


class EndpointStore(Protocol):
    """Where push endpoints live (`core.endpoints`): one row per endpoint, keyed on (tenant, name), with its
    secrets and counters, and its delivery slots: a slot is held by one delivery in flight until its hold ends,
    so a holder that died frees its slot when the hold passes. Each method is one atomic operation, as in
    `JobStore`."""

    # --- reads for the tenant -------------------------------------------------------------------------------------

    async def endpoint_get(self, name: str, *, tenant_id: str, now: datetime) -> Endpoint | None:
        """The tenant's endpoint called `name`, if there is one, with its slots held at `now` as `in_flight`."""
        ...

    async def endpoint_list(self, query: EndpointQuery) -> list[Endpoint]:
        """Up to `query.limit` of the tenant's endpoints, newest first (created_at, id descending), strictly after
        `query.after`, each with its slots held at `query.now` as `in_flight`."""
        ...

    # --- writes by the tenant -------------------------------------------------------------------------------------

    async def endpoint_insert(self, endpoint: Endpoint) -> Endpoint:
        """∅ → stored, with zero counters. `InvalidState` when the tenant already has an endpoint with this name."""
        ...

    async def endpoint_update(self, endpoint: Endpoint, *, expected_updated_at: datetime) -> Endpoint | None:
        """stored → `endpoint`'s settings and secrets, only while the row's `updated_at` is the expected one; its
        id, tenant, name, created_at and counters stay as they are. None when the row is gone or has changed."""
        ...

    async def endpoint_delete(self, name: str, *, tenant_id: str) -> bool:
        """stored → ∅, with its slots (deliveries in flight finish or expire on their own). False when the tenant
        has no endpoint called `name`."""
        ...

    # --- the delivery loop's ---------------------------------------------------------------------------------------

    async def endpoint_deliverable(self) -> list[Endpoint]:
        """Every endpoint of every tenant that is not paused, by id (counters as stored, `in_flight` 0). Reads
        only."""
        ...

    async def endpoint_slots_take(self, request: SlotRequest) -> list[str]:
        """Under the endpoint's row lock: up to `request.want` new slots, held until now + hold_seconds, as many
        as its `concurrency` leaves beside the slots held at now, whoever holds them (`core.endpoints.slots_free`);
        their ids. [] when the endpoint is gone or paused."""
        ...

    async def endpoint_slots_hold(self, slot_ids: Sequence[str], *, until: datetime, now: datetime) -> int:
        """Slots still held at `now` → held until `until`; how many (a slot already expired is not revived)."""
        ...

    async def endpoint_slots_release(self, slot_ids: Sequence[str]) -> None:
        """Slots taken and not used → ∅ (no counter moves)."""
        ...

    async def endpoint_deliveries_finish(self, finished: DeliveriesFinished) -> None:
        """Deliveries of one endpoint ended: their slots → ∅, and the endpoint's `delivered` and `failed` + the
        counts given, `last_error` = the one given (if any), `last_delivery_at` = now. Only the slots when the
        endpoint is gone."""
        ...


class TriggerStore(Protocol):
    """Where a tenant's triggers live, keyed on (tenant, name), and indexed on (tenant, event) of the enabled ones:
    what `EventStore.event_insert` looks its matches up in. Each method is one atomic operation, as in `JobStore`."""

    # --- reads for the tenant -------------------------------------------------------------------------------------

    async def trigger_get(self, name: str, *, tenant_id: str) -> Trigger | None:
        """The tenant's trigger called `name`, if there is one."""
        ...

    async def trigger_list(self, *, tenant_id: str, limit: int, after: Cursor | None) -> list[Trigger]:
        """Up to `limit` of the tenant's triggers, newest first (created_at, id descending), strictly after `after`."""
        ...

    # --- writes by the tenant -------------------------------------------------------------------------------------

    async def trigger_insert(self, trigger: Trigger) -> Trigger:
        """∅ → stored. `InvalidState` when the tenant already has a trigger with this name."""
        ...

    async def trigger_update(self, trigger: Trigger, *, expected_updated_at: datetime) -> Trigger | None:
        """stored → `trigger`'s fields (the row with its id and tenant_id), only while the row's `updated_at` is
        still the expected one, and `trigger.updated_at` later than it (a version of a trigger is its (id,
        updated_at): a store may keep it decoded); its name and created_at stay as they are. None when the row is
        gone or has changed since it was read (or the new updated_at is not later)."""
        ...

    async def trigger_delete(self, name: str, *, tenant_id: str) -> bool:
        """stored → ∅. False when the tenant has no trigger called `name`."""
        ...


class EventStore(Protocol):
    """Where the events a tenant sent are kept (keyed on (tenant, id), for a day: `core.events`), with what each
    started."""

    # --- a tenant's event: the triggers it starts -----------------------------------------------------------------

    async def event_insert(self, event: Event) -> tuple[Event, bool]:
        """∅ → the event, and in the same transaction every enabled trigger of `event.tenant_id` whose `event` is one
        of `triggers.event_patterns(event.name)` (looked up in the index, never a read of every trigger) and that
        `triggers.matches` started as `core.events.starts` makes it: its pending job, or its running workflow with its
        root steps' jobs (their queues announced, as an insert does); the event recorded with what it started. All
        or nothing: a job or workflow it cannot store is a `ValidationError`, and nothing is written. When
        (tenant_id, id) is already kept nothing is written: `(existing, False)`, whatever its name and payload —
        a concurrent repeat waits for the first to commit and answers alike. Otherwise `(event as recorded, True)`."""
        ...

    # --- reads for the tenant (the dashboard's last events) -------------------------------------------------------

    async def event_list(self, *, tenant_id: str, limit: int, after: Cursor | None) -> list[Event]:
        """Up to `limit` of the tenant's kept events, newest first (received_at, id descending), strictly after
        `after`, each with what it started."""
        ...

    # --- the janitor's sweep --------------------------------------------------------------------------------------

    async def event_delete_received(self, *, before: datetime, limit: int) -> int:
        """Delete up to `limit` events of any tenant received before `before`, the oldest first; how many. Their ids
        are free again (a repeat then starts its triggers anew)."""
        ...


# ---- what the database is under (operators: /metrics, the dashboard's warning) ------------------------------


class PressureStore(Protocol):
    """What the store's database is under, for operators. Tenant-less, as the worker side is: the tables and the
    horizon are every tenant's at once, so nothing here takes a `tenant_id`; `/metrics` reads it, and the
    dashboard's Queues page, whose warning every signed-in tenant sees (all their queues suffer it alike)."""

    async def store_pressure(self) -> Pressure:
        """Per table of the store its live and dead tuples and its size with indexes and TOAST, the start of the
        oldest open transaction in the database and the backend with the oldest xmin (this read's own session
        excluded), from the statistics and activity views only: it scans no table, so a scrape every 15 s costs
        nothing a claim would notice. The database's own timestamps, no `now`: ages are `core.pressure`'s, at the
        caller's. A store without a database answers `Pressure()`. Reads only."""
        ...


class Store(
    JobStore, QueueStore, WorkflowStore, ScheduleStore, EndpointStore, TriggerStore, EventStore, PressureStore, Protocol
):
    """Everything the engine keeps."""
