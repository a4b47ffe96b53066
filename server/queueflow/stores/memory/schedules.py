"""The schedules part of the in-memory store: the `ScheduleStore` methods, on the shared `Tables`.

Like the jobs, every method runs without awaiting, so on one event loop each call is atomic, and each validates
before it changes anything.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from datetime import datetime

from queueflow.core.errors import FieldError, InvalidState, ValidationError
from queueflow.core.jsonvalue import storable_text
from queueflow.core.schedule import Schedule, ScheduleFired, schedule_storage_errors
from queueflow.core.types import Cursor
from queueflow.core.validation import check
from queueflow.stores.memory.state import Tables


class MemorySchedules(Tables):
    async def schedule_insert(self, schedule: Schedule) -> Schedule:
        check(schedule_storage_errors(schedule))
        if schedule.id in self._schedules:
            raise ValidationError.of([FieldError(("id",), f"duplicate schedule id {schedule.id}")])
        if self._named(schedule.tenant_id, schedule.name) is not None:
            raise InvalidState(f"a schedule called {schedule.name!r} already exists")
        self._schedules[schedule.id] = _copy(schedule)
        return _copy(schedule)

    async def schedule_get(self, name: str, *, tenant_id: str) -> Schedule | None:
        found = self._named(tenant_id, name)
        return _copy(found) if found is not None else None

    async def schedule_list(self, *, tenant_id: str, limit: int, after: Cursor | None) -> list[Schedule]:
        rows = [row for row in self._schedules.values() if row.tenant_id == tenant_id]
        if after is not None:
            rows = [row for row in rows if (row.created_at, row.id) < (after.created_at, after.id)]
        rows.sort(key=lambda row: (row.created_at, row.id), reverse=True)
        return [_copy(row) for row in rows[:limit]]

    async def schedule_update(
        self, schedule: Schedule, *, expected_updated_at: datetime, expected_next_run_at: datetime | None
    ) -> Schedule | None:
        check(schedule_storage_errors(schedule))
        current = self._schedules.get(schedule.id)
        if (
            current is None
            or current.tenant_id != schedule.tenant_id
            or (current.updated_at, current.next_run_at) != (expected_updated_at, expected_next_run_at)
        ):
            return None
        # The name, tenant and creation time are the row's identity, and last_run_at only a firing writes: an
        # update never moves them.
        stored = replace(schedule, name=current.name, created_at=current.created_at, last_run_at=current.last_run_at)
        self._schedules[schedule.id] = _copy(stored)
        return _copy(stored)

    async def schedule_delete(self, name: str, *, tenant_id: str) -> bool:
        found = self._named(tenant_id, name)
        if found is None:
            return False
        del self._schedules[found.id]
        return True

    async def schedule_due(self, *, limit: int, now: datetime) -> list[Schedule]:
        due = [
            row
            for row in self._schedules.values()
            if row.enabled and row.next_run_at is not None and row.next_run_at <= now
        ]
        due.sort(key=lambda row: (row.next_run_at or now, row.id))
        return [_copy(row) for row in due[:limit]]

    async def schedule_fired(self, fired: ScheduleFired) -> bool:
        current = self._schedules.get(fired.schedule_id)
        if (
            current is None
            or not current.enabled
            or (current.next_run_at, current.updated_at) != (fired.expected_next_run_at, fired.expected_updated_at)
        ):
            return False
        self._schedules[fired.schedule_id] = replace(
            current, next_run_at=fired.next_run_at, last_run_at=fired.last_run_at
        )
        return True

    def _named(self, tenant_id: str, name: str) -> Schedule | None:
        if not (storable_text(tenant_id) and storable_text(name)):
            return None
        return next((row for row in self._schedules.values() if row.tenant_id == tenant_id and row.name == name), None)


def _copy(schedule: Schedule) -> Schedule:
    # Callers get their own payload, so mutating a returned schedule never edits the store (and vice versa).
    return replace(schedule, payload=copy.deepcopy(schedule.payload))
