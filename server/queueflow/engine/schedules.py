"""Schedule use cases (`Engine.schedules`): a tenant's cron schedules, and the scheduler's tick that fires them.

`core.schedule` decides every occurrence (time zones, DST, the missed-firing rule); this module reads the clock
and has the store record it.

A firing is an ordinary pending job, validated and inserted as `Engine.enqueue` does it, with the idempotency key
``cron:<schedule id>:<occurrence>`` — or, for a workflow schedule, a workflow created as `Workflows.create` does
it, with the same key — and only then is the schedule advanced (a compare-and-set on the row as
read). So any number of schedulers may tick at once: they insert one job per occurrence between them, and one of
them advances the schedule. A scheduler that dies between the two writes leaves the schedule due; the next tick
re-inserts the same key, which resolves to the job already there, and advances it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import timedelta

from queueflow.core.cursor import page, page_after
from queueflow.core.errors import InvalidState, NotFound, ValidationError
from queueflow.core.ids import IdSource
from queueflow.core.lifecycle import pending_job
from queueflow.core.schedule import (
    NewSchedule,
    Schedule,
    ScheduleFired,
    SchedulePatch,
    due_firing,
    firing_job,
    firing_workflow,
    initial_next_run_at,
    patched,
    schedule_errors,
    schedule_patch_errors,
    utc_text,
)
from queueflow.core.types import Page
from queueflow.core.validation import check, check_new_jobs
from queueflow.core.workflow import NewWorkflow, Workflow
from queueflow.ports import Clock, Store

StartWorkflow = Callable[[str, NewWorkflow], Awaitable[tuple[Workflow, bool]]]
"""Creates a tenant's workflow (`Workflows.create`); a known idempotency key returns the original."""

log = logging.getLogger("queueflow.scheduler")

UPDATE_ATTEMPTS = 5
"""Reads and re-applies of a PATCH that lost its compare-and-set to a concurrent edit or firing."""
TICK = timedelta(microseconds=1)


class Schedules:
    def __init__(
        self, store: Store, clock: Clock, ids: IdSource, tick_limit: int, start_workflow: StartWorkflow
    ) -> None:
        self.store = store
        self.start_workflow = start_workflow
        self.clock = clock
        self.ids = ids
        self.tick_limit = tick_limit
        """Due schedules one tick fires at most."""

    async def create(self, tenant_id: str, new: NewSchedule) -> Schedule:
        """Create a schedule; it first fires at its first occurrence after now. A taken name is InvalidState."""
        check(schedule_errors(new))
        new = new.with_defaults()
        now = self.clock.now()
        fields = {name: getattr(new, name) for name in NewSchedule.__dataclass_fields__}
        schedule = Schedule(
            id=self.ids.new_id("sch", now),
            tenant_id=tenant_id,
            next_run_at=initial_next_run_at(new, now),
            last_run_at=None,
            created_at=now,
            updated_at=now,
            **fields,
        )
        return await self.store.schedule_insert(schedule)

    async def get(self, tenant_id: str, name: str) -> Schedule:
        schedule = await self.store.schedule_get(name, tenant_id=tenant_id)
        if schedule is None:
            raise NotFound(f"no schedule {name!r}")
        return schedule

    async def list(self, tenant_id: str, *, limit: int = 50, cursor: str | None = None) -> Page[Schedule]:
        after = page_after(limit, cursor)
        return page(await self.store.schedule_list(tenant_id=tenant_id, limit=limit + 1, after=after), limit)

    async def update(self, tenant_id: str, name: str, patch: SchedulePatch) -> Schedule:
        """Apply a PATCH. Disabling stops the firings; re-enabling, or a new cron or time zone, starts from now
        (occurrences missed meanwhile never fire)."""
        for _ in range(UPDATE_ATTEMPTS):
            current = await self.get(tenant_id, name)
            check(schedule_patch_errors(current, patch))
            now = self.clock.now()
            # `updated_at` strictly increases, so it tells every edit apart even when two share a clock reading.
            updated = replace(patched(current, patch, now), updated_at=max(now, current.updated_at + TICK))
            stored = await self.store.schedule_update(
                updated, expected_updated_at=current.updated_at, expected_next_run_at=current.next_run_at
            )
            if stored is not None:
                return stored
        raise InvalidState(f"schedule {name!r} kept changing while this update was applied; try again")

    async def delete(self, tenant_id: str, name: str) -> None:
        """Delete a schedule; it fires no more. Jobs it already inserted stay."""
        if not await self.store.schedule_delete(name, tenant_id=tenant_id):
            raise NotFound(f"no schedule {name!r}")

    async def fire_due(self) -> int:
        """One scheduler tick: every due schedule (up to `tick_limit`) fires its latest due occurrence
        once and moves on to its next one. Returns how many firings this call recorded."""
        now = self.clock.now()
        recorded = 0
        for schedule in await self.store.schedule_due(limit=self.tick_limit, now=now):
            firing = due_firing(schedule, now)
            if firing is None or schedule.next_run_at is None:
                continue
            try:
                if schedule.workflow is not None:
                    workflow = firing_workflow(schedule, schedule.workflow, firing.occurrence)
                    await self.start_workflow(schedule.tenant_id, workflow)
                else:
                    job = firing_job(schedule, firing.occurrence)
                    check_new_jobs([job])
                    await self.store.job_insert_many([pending_job(schedule.tenant_id, job, now, self.ids)])
            except ValidationError as exc:
                # Not expected (the schedule was validated), but one bad row must not wedge every later tick.
                log.error(
                    "schedule %s: its firing at %s cannot be enqueued and is skipped: %s",
                    schedule.id, utc_text(firing.occurrence), exc,
                )  # fmt: skip
            recorded += await self.store.schedule_fired(
                ScheduleFired(
                    schedule_id=schedule.id,
                    expected_next_run_at=schedule.next_run_at,
                    expected_updated_at=schedule.updated_at,
                    next_run_at=firing.next_run_at,
                    last_run_at=firing.occurrence,
                )
            )
        return recorded
