"""The PostgreSQL store's schedules: the `ScheduleStore` half of `PostgresJobStore`, one statement per method.

Both ways a row changes are compare-and-sets in the WHERE clause (see `ScheduleStore`), so any number of
schedulers and API processes can work on one schedule without a lock held across statements.
"""

from __future__ import annotations

from datetime import datetime

import asyncpg

from queueflow.core.definitions import new_workflow_from_json, new_workflow_json
from queueflow.core.errors import InvalidState
from queueflow.core.jsonvalue import storable_text
from queueflow.core.schedule import JOB_DEFAULTS, Schedule, ScheduleFired, schedule_storage_errors
from queueflow.core.types import Cursor
from queueflow.core.validation import check
from queueflow.stores.postgres.connection import Pooled
from queueflow.stores.postgres.errors import json_text

COLUMNS = (
    "id, tenant_id, name, cron, timezone, task_name, queue_name, payload, priority, max_retries, enabled,"
    " next_run_at, last_run_at, created_at, updated_at, workflow"
)

# A taken name is an answer, not an error: ON CONFLICT names only that constraint, so a duplicate id still
# raises (and becomes a ValidationError in pgerrors).
INSERT = f"""
INSERT INTO queueflow.schedules ({COLUMNS})
VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11, $12, $13, $14, $15, $16::jsonb)
ON CONFLICT ON CONSTRAINT uq_schedules_tenant_name DO NOTHING
RETURNING {COLUMNS}
"""

GET = f"SELECT {COLUMNS} FROM queueflow.schedules WHERE tenant_id = $1 AND name = $2"

LIST = f"""
SELECT {COLUMNS} FROM queueflow.schedules
 WHERE tenant_id = $1 AND ($2::timestamptz IS NULL OR (created_at, id) < ($2, $3))
 ORDER BY created_at DESC, id DESC
 LIMIT $4
"""

# The name, tenant and creation time are the row's identity and are never updated; neither is last_run_at,
# which only a firing writes (and a firing in between would have failed the compare-and-set).
UPDATE = f"""
UPDATE queueflow.schedules
   SET cron = $3, timezone = $4, task_name = $5, queue_name = $6, payload = $7::jsonb, priority = $8,
       max_retries = $9, enabled = $10, next_run_at = $11, updated_at = $12, workflow = $15::jsonb
 WHERE id = $1 AND tenant_id = $2 AND updated_at = $13 AND next_run_at IS NOT DISTINCT FROM $14
RETURNING {COLUMNS}
"""

DELETE = "DELETE FROM queueflow.schedules WHERE tenant_id = $1 AND name = $2"

# Reads idx_schedules_due (next_run_at WHERE enabled).
DUE = f"""
SELECT {COLUMNS} FROM queueflow.schedules
 WHERE enabled AND next_run_at <= $1
 ORDER BY next_run_at, id
 LIMIT $2
"""

FIRED = """
UPDATE queueflow.schedules
   SET next_run_at = $4, last_run_at = $5
 WHERE id = $1 AND enabled AND next_run_at = $2 AND updated_at = $3
"""


class PostgresSchedules(Pooled):
    async def schedule_insert(self, schedule: Schedule) -> Schedule:
        check(schedule_storage_errors(schedule))
        async with self._connection() as db:
            row = await db.fetchrow(
                INSERT,
                schedule.id,
                schedule.tenant_id,
                schedule.name,
                *_fields(schedule),
                schedule.last_run_at,
                schedule.created_at,
                schedule.updated_at,
                _workflow(schedule),
            )
        if row is None:
            raise InvalidState(f"a schedule called {schedule.name!r} already exists")
        return _schedule(row)

    async def schedule_get(self, name: str, *, tenant_id: str) -> Schedule | None:
        if not (storable_text(tenant_id) and storable_text(name)):
            return None
        async with self._connection() as db:
            row = await db.fetchrow(GET, tenant_id, name)
        return _schedule(row) if row is not None else None

    async def schedule_list(self, *, tenant_id: str, limit: int, after: Cursor | None) -> list[Schedule]:
        if not storable_text(tenant_id) or (after is not None and not storable_text(after.id)):
            return []
        async with self._connection() as db:
            rows = await db.fetch(
                LIST, tenant_id, after.created_at if after else None, after.id if after else None, limit
            )
        return [_schedule(row) for row in rows]

    async def schedule_update(
        self, schedule: Schedule, *, expected_updated_at: datetime, expected_next_run_at: datetime | None
    ) -> Schedule | None:
        check(schedule_storage_errors(schedule))
        async with self._connection() as db:
            row = await db.fetchrow(
                UPDATE,
                schedule.id,
                schedule.tenant_id,
                *_fields(schedule),
                schedule.updated_at,
                expected_updated_at,
                expected_next_run_at,
                _workflow(schedule),
            )
        return _schedule(row) if row is not None else None

    async def schedule_delete(self, name: str, *, tenant_id: str) -> bool:
        if not (storable_text(tenant_id) and storable_text(name)):
            return False
        async with self._connection() as db:
            status = await db.execute(DELETE, tenant_id, name)
        return status == "DELETE 1"

    async def schedule_due(self, *, limit: int, now: datetime) -> list[Schedule]:
        async with self._connection() as db:
            return [_schedule(row) for row in await db.fetch(DUE, now, limit)]

    async def schedule_fired(self, fired: ScheduleFired) -> bool:
        if not storable_text(fired.schedule_id):
            return False
        async with self._connection() as db:
            status = await db.execute(
                FIRED,
                fired.schedule_id,
                fired.expected_next_run_at,
                fired.expected_updated_at,
                fired.next_run_at,
                fired.last_run_at,
            )
        return status == "UPDATE 1"


def _fields(schedule: Schedule) -> tuple[object, ...]:
    """The editable columns, in the order INSERT and UPDATE both take them (cron … next_run_at). A workflow
    schedule has no job fields: their columns (NOT NULL since 0001) keep the defaults, and read back as None."""
    job = schedule.workflow is None
    return (
        schedule.cron,
        schedule.timezone,
        schedule.task_name,
        schedule.queue_name if job else JOB_DEFAULTS["queue_name"],
        json_text(schedule.payload if job else {}, ("payload",)),
        schedule.priority if job else JOB_DEFAULTS["priority"],
        schedule.max_retries if job else JOB_DEFAULTS["max_retries"],
        schedule.enabled,
        schedule.next_run_at,
    )


def _workflow(schedule: Schedule) -> str | None:
    return None if schedule.workflow is None else json_text(new_workflow_json(schedule.workflow), ("workflow",))


def _schedule(row: asyncpg.Record) -> Schedule:
    fields = {name: row[name] for name in Schedule.__dataclass_fields__ if name != "workflow"}
    if row["workflow"] is None:
        return Schedule(**fields)
    return Schedule(**(fields | dict.fromkeys(JOB_DEFAULTS)), workflow=new_workflow_from_json(row["workflow"]))
