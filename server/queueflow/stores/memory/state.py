"""What every part of the in-memory store shares: its tables, and the helpers that write jobs into them.

`InMemoryJobStore` is `MemoryJobs`, `MemoryQueues`, `MemoryWorkflows`, `MemorySchedules` and `MemoryEvents` on one
`Tables`, as `PostgresJobStore` is its parts on one pool. Nothing here awaits, so on one event loop every call of
the store is atomic, and each validates what it is given before it changes anything.
"""

from __future__ import annotations

import copy
import dataclasses
import random
from collections.abc import Iterable, Sequence
from datetime import datetime

from msgspec.structs import replace

from queueflow.core.advance import Counters
from queueflow.core.backoff import RandomSource
from queueflow.core.endpoints import Endpoint
from queueflow.core.errors import FieldError, ValidationError
from queueflow.core.events import Event
from queueflow.core.flow import QueueSettings
from queueflow.core.ids import IdSource
from queueflow.core.jsonvalue import job_storage_errors
from queueflow.core.schedule import Schedule
from queueflow.core.triggers import Trigger
from queueflow.core.types import CLAIMABLE, Job, JobStatus, UniqueRule
from queueflow.core.unique import rule_mismatch_errors
from queueflow.core.workflow import Workflow, WorkflowStatus
from queueflow.ports import WorkSignal


class Tables:
    def __init__(self, wakeups: WorkSignal | None = None, *, rng: RandomSource | None = None) -> None:
        self._jobs: dict[str, Job] = {}
        self._idempotency: dict[tuple[str, str], str] = {}
        self._unique: dict[tuple[str, str], set[str]] = {}  # (tenant_id, unique_key) → its jobs' ids
        self._sequences: dict[tuple[str, str], set[str]] = {}  # (tenant_id, sequence_key) → its jobs' ids
        self._workflows: dict[str, Workflow] = {}
        self._workflow_keys: dict[tuple[str, str], str] = {}
        # Per workflow: each step's position in its steps (a finish finds its rows by name, as PostgreSQL's key
        # does), and its counters (`core.advance.Counters`).
        self._step_positions: dict[str, dict[str, int]] = {}
        self._workflow_counters: dict[str, Counters] = {}
        self._schedules: dict[str, Schedule] = {}  # by id
        self._endpoints: dict[str, Endpoint] = {}  # by id
        # Per endpoint id, its delivery slots: slot id → held until.
        self._slots: dict[str, dict[str, datetime]] = {}
        self._slot_serial = 0
        self._triggers: dict[str, Trigger] = {}  # by id
        # The enabled triggers' ids by (tenant_id, event): PostgreSQL's idx_triggers_match, what an event looks up.
        self._trigger_index: dict[tuple[str, str], set[str]] = {}
        self._events: dict[tuple[str, str], Event] = {}  # by (tenant_id, id), in the order received
        self._queue_settings: dict[tuple[str, str], QueueSettings] = {}  # by (tenant_id, queue_name)
        # Each rate limit's token bucket, by (tenant_id, queue_name): its tokens as of a time.
        self._buckets: dict[tuple[str, str], tuple[float, datetime]] = {}
        # Where each key-limited (tenant_id, queue_name)'s key turn goes on: the key it served last (`core.turns`).
        self._key_turns: dict[tuple[str, str], str] = {}
        # Per set of queues leased together (sorted), the tenant the last claim of them served last: where the next
        # claim's turn starts, whoever claims (PostgreSQL: queueflow.claim_turns).
        self._claim_turns: dict[tuple[str, ...], str] = {}
        # Per running job redelivered, the started_at its claim overwrote (an earlier delivery's), which a release
        # puts back; PostgreSQL keeps it in the job's config (`postgres.sql.STARTED_BEFORE`).
        self._started_before: dict[str, datetime] = {}
        self._wakeups = wakeups
        # The ids of the jobs that run steps, which the store makes as it records a workflow's advance.
        self._ids = IdSource(rng or random.Random())

    def reset(self) -> None:
        """Forget every job, workflow, schedule, endpoint, trigger, event and queue setting."""
        self._jobs.clear()
        self._idempotency.clear()
        self._unique.clear()
        self._workflows.clear()
        self._workflow_keys.clear()
        self._step_positions.clear()
        self._workflow_counters.clear()
        self._schedules.clear()
        self._endpoints.clear()
        self._slots.clear()
        self._triggers.clear()
        self._trigger_index.clear()
        self._events.clear()
        self._queue_settings.clear()
        self._key_turns.clear()
        self._claim_turns.clear()
        self._buckets.clear()
        self._started_before.clear()

    def _check_insert(self, jobs: Sequence[Job], rules: Sequence[UniqueRule | None] | None = None) -> None:
        errors = rule_mismatch_errors(jobs, rules)
        seen: set[str] = set()  # a batch's own ids so far (a scan of the earlier items was quadratic)
        for index, job in enumerate(jobs):
            if job.id in self._jobs or job.id in seen:
                loc = ("jobs", index) if len(jobs) > 1 else ()
                errors.append(FieldError((*loc, "id"), f"duplicate job id {job.id}"))
            seen.add(job.id)
        errors += job_storage_errors(jobs)
        if errors:
            raise ValidationError.of(errors)

    def _insert(self, jobs: Sequence[Job]) -> list[tuple[Job, bool]]:
        """Insert checked `jobs` (see `_check_insert`)."""
        results: list[tuple[Job, bool]] = []
        for job in jobs:
            key = (job.tenant_id, job.idempotency_key) if job.idempotency_key is not None else None
            if key is not None and key in self._idempotency:
                results.append((self._out(self._jobs[self._idempotency[key]]), False))
                continue
            results.append((self._out(self._store_new(job)), True))
        if self._wakeups is not None:
            # As PostgreSQL's AFTER INSERT trigger does: one wake-up per queue that received rows.
            for queue in {job.queue_name for job, created in results if created}:
                self._wakeups.notify(queue)
        return results

    def _store_new(self, job: Job) -> Job:
        """Store a new pending row (checked, its idempotency key free), indexed by its keys."""
        stored = replace(
            job, payload=copy.deepcopy(job.payload), metadata=copy.deepcopy(job.metadata), status=JobStatus.PENDING
        )
        self._jobs[job.id] = stored
        if job.idempotency_key is not None:
            self._idempotency[job.tenant_id, job.idempotency_key] = job.id
        if job.unique_key is not None:
            self._unique.setdefault((job.tenant_id, job.unique_key), set()).add(job.id)
        if job.sequence_key is not None:
            self._sequences.setdefault((job.tenant_id, job.sequence_key), set()).add(job.id)
        return stored

    def _slot_freed(self, job: Job) -> None:
        """`job` has just ended. If its tenant caps how many of its jobs run in its queue, a slot came free: the
        queue is announced, so a lease the cap held back takes the next job at once (as the PostgreSQL store's
        NOTIFY does; a cancelled job may not have been running, and a spare wake-up is harmless). Otherwise a job of
        a sequence announces the queue of its sequence's next unstarted job (its own if none)."""
        settings = self._queue_settings.get((job.tenant_id, job.queue_name))
        capped = settings is not None and (
            settings.concurrency_limit is not None or settings.key_concurrency_limit is not None
        )
        if self._wakeups is None:
            return
        if capped or job.sequence_key is None:
            if capped:
                self._wakeups.notify(job.queue_name)
            return
        ids = self._sequences.get((job.tenant_id, job.sequence_key), set())
        waiting = [self._jobs[i] for i in ids if i > job.id and i in self._jobs and self._jobs[i].status in CLAIMABLE]
        self._wakeups.notify(min(waiting, key=lambda other: other.id).queue_name if waiting else job.queue_name)

    def _announce_finished(self, object_ids: Iterable[str]) -> None:
        """As PostgreSQL's `queueflow_done` trigger does for awaited rows (here every finish costs nothing)."""
        if self._wakeups is not None:
            for object_id in object_ids:
                self._wakeups.finished(object_id)

    def _in_running_workflow(self, job: Job) -> bool:
        workflow = self._workflows.get(job.workflow_id) if job.workflow_id is not None else None
        return workflow is not None and workflow.status is WorkflowStatus.RUNNING

    @staticmethod
    def _workflow_out(workflow: Workflow) -> Workflow:
        # Callers get their own copy of the JSON and lists; the frozen parts are shared (a deepcopy of a
        # 10,000-step workflow took most of a second).
        steps = [
            dataclasses.replace(step, payload=copy.deepcopy(step.payload), depends_on=list(step.depends_on))
            for step in workflow.steps
        ]
        return dataclasses.replace(workflow, context=copy.deepcopy(workflow.context), steps=steps)

    def _tenant_jobs(self, tenant_id: str) -> Iterable[Job]:
        return (job for job in self._jobs.values() if job.tenant_id == tenant_id)

    @staticmethod
    def _out(job: Job) -> Job:
        # Callers get their own copy of the JSON, so mutating a returned job never edits the store.
        return replace(
            job,
            payload=copy.deepcopy(job.payload),
            metadata=copy.deepcopy(job.metadata),
            result=copy.deepcopy(job.result),
            progress=copy.deepcopy(job.progress),
        )
