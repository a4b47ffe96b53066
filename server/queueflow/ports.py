"""The engine's ports, protocols only: where jobs, queues, workflows and schedules are kept (`JobStore`,
`QueueStore`, `WorkflowStore`, `ScheduleStore`: `Store`), what time it is (`Clock`; implementations in
`queueflow.clocks`), and who hears of new work (`WorkSignal`, which every store takes as `wakeups`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from queueflow.core.advance import AdvanceRequest, ChildStart
from queueflow.core.finish import StepReport
from queueflow.core.flow import Backlog, ConfigureRequest, QueueSettings
from queueflow.core.growth import GrowthRequest
from queueflow.core.pressure import Pressure
from queueflow.core.schedule import Schedule, ScheduleFired
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
)
from queueflow.core.waits import DueWait
from queueflow.core.workflow import SignalDelivery, Workflow, WorkflowQuery


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, an aware UTC datetime."""
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
    The jobs a store makes for steps are `core.advance.new_step_job`s, their ids from the store's own `rng`. A
    workflow's `context`, as read, is its initial context plus every satisfied step's result.
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

    async def job_insert_many(self, jobs: Sequence[Job]) -> list[tuple[Job, bool]]:
        """∅ → pending, for every row or none. A row whose (tenant_id, idempotency_key) already exists is
        not inserted and resolves to the existing job: `(existing, False)`; otherwise `(row, True)`."""
        ...

    async def job_cancel(self, job_id: str, *, tenant_id: str, now: datetime) -> Job | None:
        """pending | retrying | running → cancelled at now (completed_at), lease token voided. None if missing
        (for the tenant) or finished."""
        ...

    async def job_retry(self, job_id: str, *, tenant_id: str, now: datetime) -> Job | None:
        """dead_letter | cancelled → pending at now (scheduled_at), retry_count = 0, next_retry_at and completed_at
        cleared, error kept. None if missing (for the tenant) or other."""
        ...

    # --- the worker's lease lifecycle: claim, heartbeat, release, complete, fail ----------------------------------

    async def job_claim(self, request: ClaimRequest) -> list[Job]:
        """pending | retrying, due (scheduled_at ≤ now) → running, for up to `max_jobs` jobs of `queues` (and, when
        `task_names` is given, of those tasks only; of `tenant_id` only, if given: a tenant-scoped worker key), in
        turns (`core.turns.in_turns`): the tenants with due jobs served round by round, each round starting with the
        first tenant after the turn of `queues` (the set, in any order) — the tenant the previous claim of them
        served last, whoever made it: the store keeps the turn, one for every engine and process on it, and moves
        it to the last tenant this claim serves (a tenant-scoped claim neither reads nor moves it) — and each
        tenant's jobs in claim order (priority desc, scheduled_at, created_at), so that one tenant's backlog never
        holds another's jobs back. Returned in that order. Each gets
        a fresh lease_token, delivery_count + 1, started_at = now and locked_until = now + lease_seconds, capped at
        its timeout.
        Concurrent claimers never claim the same row. Flow control (`QueueStore`) holds jobs back: none of a
        paused (tenant, queue)'s, never so many that more than its `concurrency_limit` run at once (nor more than
        its `key_concurrency_limit` of one `concurrency_key`), and never more than its rate limit's token bucket
        holds at `now` (each claimed job spends a token), however many claims run concurrently. A job held back
        is skipped, never waited for: the claim takes what lies behind it. The task and tenant filters hold on a
        flow-controlled queue too.
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

    async def job_delete_finished(self, *, before: datetime, limit: int) -> int:
        """Delete up to `limit` completed | dead_letter | cancelled jobs finished (completed_at) before `before`,
        the longest finished first, except those of a running workflow (its self-heal reads them); how many."""
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


class Store(JobStore, QueueStore, WorkflowStore, ScheduleStore, PressureStore, Protocol):
    """Everything the engine keeps."""
