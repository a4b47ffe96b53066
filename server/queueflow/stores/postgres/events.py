"""The PostgreSQL store's triggers and events: the `TriggerStore` and `EventStore` halves of `PostgresJobStore`.

An event first reads its matches through idx_triggers_match (MATCH: one index range per pattern of
`triggers.event_patterns`, the filter applied in the same statement with jsonb equality, as
`triggers.filter_matches` has it), then writes its row, keyed on (tenant_id, id), with what `core.events.starts`
makes of them, and those starts, atomically: an event that starts only jobs in ONE statement (the event's row in a
CTE, and the jobs' multi-row INSERT guarded on it), one that starts workflows in a transaction (its row first, then
each workflow by `workflows.insert_workflow`, then the jobs). Either way a concurrent repeat of the id waits on the
first's row, then finds it kept and writes nothing. Matching 1,000 job triggers is two statements, never a request
per trigger.

An event whose name few job triggers can match (`NARROW`) takes one round trip where that takes two: the store keeps
each (tenant, name)'s candidates (enabled triggers whose pattern matches, before filters) as it last read them, and
the event's INSERT is guarded on the candidates being exactly those (ids and `updated_at`, read in the INSERT's own
snapshot, through the same index range as MATCH), so a trigger created, edited, disabled or deleted since is never
missed nor used: the guard fails, nothing is written, and the event takes the two-statement way, which reads the
candidates afresh. The filters are applied in Python (`core.triggers.matches`) to the candidates.

Measured (PostgreSQL 15, 2 cores; 10,000 triggers of the tenant and 10,000 of another, 2–4 matching an event):
MATCH is one index scan of 3 patterns, 0.03–0.07 ms and 8–10 shared buffers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import datetime

import asyncpg
import msgspec

from queueflow.core.definitions import new_workflow_from_json, new_workflow_json
from queueflow.core.errors import InvalidState, QueueFlowError, StoreUnavailable
from queueflow.core.events import Event, Started, Starts, event_storage_errors, started_job_errors, starts
from queueflow.core.jsonvalue import storable_text
from queueflow.core.triggers import Trigger, event_patterns, matches, task_from_json, task_json, trigger_storage_errors
from queueflow.core.types import Cursor, Job
from queueflow.core.validation import check
from queueflow.stores.postgres.connection import Db, Pooled
from queueflow.stores.postgres.errors import json_text
from queueflow.stores.postgres.rows import job_insert
from queueflow.stores.postgres.workflows import insert_workflow, start_children

TRIGGER_COLUMNS = "id, tenant_id, name, event, filter, task, workflow, enabled, created_at, updated_at"

# A taken name is an answer, not an error: ON CONFLICT names only that constraint (as schedules' INSERT does).
TRIGGER_INSERT = f"""
INSERT INTO queueflow.triggers ({TRIGGER_COLUMNS})
VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb, $7::jsonb, $8, $9, $10)
ON CONFLICT ON CONSTRAINT uq_triggers_tenant_name DO NOTHING
RETURNING {TRIGGER_COLUMNS}
"""

TRIGGER_GET = f"SELECT {TRIGGER_COLUMNS} FROM queueflow.triggers WHERE tenant_id = $1 AND name = $2"

TRIGGER_LIST = f"""
SELECT {TRIGGER_COLUMNS} FROM queueflow.triggers
 WHERE tenant_id = $1 AND ($2::timestamptz IS NULL OR (created_at, id) < ($2, $3))
 ORDER BY created_at DESC, id DESC
 LIMIT $4
"""

TRIGGER_UPDATE = f"""
UPDATE queueflow.triggers
   SET event = $3, filter = $4::jsonb, task = $5::jsonb, workflow = $6::jsonb, enabled = $7, updated_at = $8
 WHERE id = $1 AND tenant_id = $2 AND updated_at = $9 AND $8 > $9
RETURNING {TRIGGER_COLUMNS}
"""

TRIGGER_DELETE = "DELETE FROM queueflow.triggers WHERE tenant_id = $1 AND name = $2"

# idx_triggers_match (tenant_id, event) WHERE enabled: one index range per pattern. A filter key absent from the
# payload gives NULL, which IS DISTINCT FROM every value (a filter's null included), as `filter_matches` has it.
MATCH = f"""
SELECT {TRIGGER_COLUMNS} FROM queueflow.triggers AS t
 WHERE t.tenant_id = $1 AND t.event = ANY($2::text[]) AND t.enabled
   AND NOT EXISTS (SELECT FROM jsonb_each(t.filter) AS f(key, value)
                    WHERE ($3::jsonb -> f.key) IS DISTINCT FROM f.value)
"""

# MATCH before filters, in id order (the guard's), and no more than NARROW + 1 rows: more is not a narrow name.
CANDIDATES = f"""
SELECT {TRIGGER_COLUMNS} FROM queueflow.triggers AS t
 WHERE t.tenant_id = $1 AND t.event = ANY($2::text[]) AND t.enabled
 ORDER BY t.id
 LIMIT $3
"""

NARROW = 16
"""Candidates a name may have for its events to take one round trip (`_guarded`): the guard sends their ids and
`updated_at`, which a name that 1,000 triggers match would send with every event."""
CANDIDATES_LIMIT = 10_000
"""(tenant, name) entries a store keeps; past it the cache starts again (a miss costs one MATCH)."""

EVENT_COLUMNS = "tenant_id, id, name, payload, started, received_at"


def _event_insert(first: int, *, guarded: bool = False) -> str:
    """The INSERT of an event's row (tenant_id, id, name, payload, started, received_at), its parameters numbered
    from `first`: nothing when the (tenant_id, id) is kept already, else `true`. `guarded`: nothing either unless
    the `guard` CTE (`_guard`) holds."""
    n = [f"${number}" for number in range(first, first + 6)]
    values = f"{n[0]}, {n[1]}, {n[2]}, {n[3]}::jsonb, {n[4]}::jsonb, {n[5]}::timestamptz"
    rows = f"SELECT {values} WHERE (SELECT same FROM guard)" if guarded else f"VALUES ({values})"
    return (
        "INSERT INTO queueflow.events (tenant_id, id, name, payload, started, received_at)\n"
        f"{rows}\n"
        "ON CONFLICT (tenant_id, id) DO NOTHING\nRETURNING true"
    )


def _guard(first: int, patterns: int) -> str:
    """A CTE `guard(same)`: whether the tenant's enabled triggers whose `event` is one of the patterns are exactly
    the ids and `updated_at` given, in id order (parameters tenant, ids, updated_at, then the `patterns` patterns
    one by one, from `first`); read as CANDIDATES reads them, through idx_triggers_match.

    The patterns are scalars, not an array: PostgreSQL estimates `= ANY($n::text[])` of a parameter as ten
    elements, which made the generic plan of the event's statement cost three times its custom plans (81 against
    26), so every event was planned afresh (0.2-0.3 ms, a quarter of PostgreSQL's CPU for the event); with the
    count in the text the generic plan costs what a custom one does and is reused."""
    tenant, ids, stamps = (f"${number}" for number in range(first, first + 3))
    listed = ", ".join(f"${number}" for number in range(first + 3, first + 3 + patterns))
    return (
        "guard AS (SELECT coalesce(array_agg(t.id ORDER BY t.id), '{}') = "
        f"{ids}::text[] AND coalesce(array_agg(t.updated_at ORDER BY t.id), '{{}}') = {stamps}::timestamptz[] "
        f"AS same FROM queueflow.triggers AS t WHERE t.tenant_id = {tenant} AND t.event IN ({listed}) "
        "AND t.enabled)"
    )


def _after_kept(statement: str) -> str:
    """The jobs' INSERT (`rows.job_insert`), written only if the `kept` CTE inserted the event's row."""
    guarded = statement.replace("\nON CONFLICT", "\nWHERE EXISTS (SELECT FROM kept)\nON CONFLICT", 1)
    if guarded == statement:  # pragma: no cover - sql.insert_sql's shape changed: this must follow it
        raise AssertionError("the jobs' INSERT has no ON CONFLICT clause to put the event's guard before")
    return guarded


EVENT_INSERT = _event_insert(1)

EVENT_GET = f"SELECT {EVENT_COLUMNS} FROM queueflow.events WHERE tenant_id = $1 AND id = $2"

EVENT_LIST = f"""
SELECT {EVENT_COLUMNS} FROM queueflow.events
 WHERE tenant_id = $1 AND ($2::timestamptz IS NULL OR (received_at, id) < ($2, $3))
 ORDER BY received_at DESC, id DESC
 LIMIT $4
"""

EVENT_DELETE_RECEIVED = """
DELETE FROM queueflow.events
 WHERE (tenant_id, id) IN (SELECT tenant_id, id FROM queueflow.events WHERE received_at < $1
                            ORDER BY received_at LIMIT $2 FOR UPDATE SKIP LOCKED)
"""


DECODED_LIMIT = 20_000
"""Triggers a store keeps decoded (`_matched`): a row is the same trigger for as long as its (id, updated_at) is."""


class PostgresEvents(Pooled):
    _decoded: dict[tuple[str, datetime], Trigger] | None = None
    _candidates: dict[tuple[str, str], tuple[Trigger, ...] | None] | None = None
    """(tenant, event name) → its candidates as last read, or None for a name that is not narrow (or starts a
    workflow): those always take MATCH."""

    def _matched(self, row: asyncpg.Record) -> Trigger:
        """The trigger of a MATCH row, decoded once per version: an event that matches 1,000 triggers would
        otherwise rebuild 1,000 tasks from their JSON (a fifth of its time)."""
        if self._decoded is None or len(self._decoded) >= DECODED_LIMIT:
            self._decoded = {}
        key = (row["id"], row["updated_at"])
        found = self._decoded.get(key)
        if found is None:
            found = self._decoded[key] = _trigger(row)
        return found

    # ---- triggers -----------------------------------------------------------------------------------------

    async def trigger_insert(self, trigger: Trigger) -> Trigger:
        check(trigger_storage_errors(trigger))
        async with self._connection() as db:
            row = await db.fetchrow(
                TRIGGER_INSERT,
                trigger.id,
                trigger.tenant_id,
                trigger.name,
                *_editable(trigger),
                trigger.created_at,
                trigger.updated_at,
            )
        if row is None:
            raise InvalidState(f"a trigger called {trigger.name!r} already exists")
        return _trigger(row)

    async def trigger_get(self, name: str, *, tenant_id: str) -> Trigger | None:
        if not (storable_text(tenant_id) and storable_text(name)):
            return None
        async with self._connection() as db:
            row = await db.fetchrow(TRIGGER_GET, tenant_id, name)
        return _trigger(row) if row is not None else None

    async def trigger_list(self, *, tenant_id: str, limit: int, after: Cursor | None) -> list[Trigger]:
        if not storable_text(tenant_id) or (after is not None and not storable_text(after.id)):
            return []
        async with self._connection() as db:
            rows = await db.fetch(
                TRIGGER_LIST, tenant_id, after.created_at if after else None, after.id if after else None, limit
            )
        return [_trigger(row) for row in rows]

    async def trigger_update(self, trigger: Trigger, *, expected_updated_at: datetime) -> Trigger | None:
        check(trigger_storage_errors(trigger))
        async with self._connection() as db:
            row = await db.fetchrow(
                TRIGGER_UPDATE,
                trigger.id,
                trigger.tenant_id,
                *_editable(trigger),
                trigger.updated_at,
                expected_updated_at,
            )
        return _trigger(row) if row is not None else None

    async def trigger_delete(self, name: str, *, tenant_id: str) -> bool:
        if not (storable_text(tenant_id) and storable_text(name)):
            return False
        async with self._connection() as db:
            return await db.execute(TRIGGER_DELETE, tenant_id, name) == "DELETE 1"

    # ---- events -------------------------------------------------------------------------------------------

    async def event_insert(self, event: Event) -> tuple[Event, bool]:
        check(event_storage_errors(event))
        payload = json_text(event.payload, ("payload",))
        try:
            with self._announcing() as announce:
                async with self._connection() as db:
                    known = await self._narrow(db, event)
                    if known is not None:
                        made = await self._guarded(db, event, payload, known, announce)
                        if made is not None:
                            return replace(event, started=made.started), True
                        # The candidates changed (or the id is kept already): read them afresh.
                        self._forget(event)
                    rows = await db.fetch(MATCH, event.tenant_id, event_patterns(event.name), payload)
                    matched = [
                        trigger for trigger in map(self._matched, rows) if matches(trigger, event.name, event.payload)
                    ]
                    made = starts(event, matched, self._ids)
                    if made.jobs:
                        # A started job is a stored trigger's task (storable as it was written) with the event under
                        # `_event`: its payload two levels down is all there is to check, once, not per job.
                        check(started_job_errors(event))
                    started = msgspec.json.encode(made.started).decode()
                    kept = (event.tenant_id, event.id, event.name, payload, started, event.received_at)
                    if made.workflows:
                        async with db.transaction():
                            if not await db.fetchval(EVENT_INSERT, *kept):
                                raise _Repeated()
                            for recording in made.workflows:
                                await insert_workflow(db, recording.workflow, recording.jobs, announce)
                                # A root child step's child, made with its parent (as `workflow_insert` makes it).
                                await start_children(db, recording.children, event.received_at, self._ids, announce)
                            if made.jobs:
                                statement, values = job_insert(made.jobs)
                                await db.execute(statement, *values)
                                announce(job.queue_name for job in made.jobs)
                    elif made.jobs:
                        await _insert_with_jobs(db, kept, made.jobs, announce)
                    elif not await db.fetchval(EVENT_INSERT, *kept):
                        raise _Repeated()
        except _Repeated:
            # Kept already (a concurrent first insert of the id, waited for, has committed): what was made for this
            # one is dropped, unwritten.
            async with self._connection() as db:
                row = await db.fetchrow(EVENT_GET, event.tenant_id, event.id)
            if row is None:
                raise StoreUnavailable("an event with a repeated id vanished during its insert") from None
            return _event(row), False
        return replace(event, started=made.started), True

    async def _narrow(self, db: Db, event: Event) -> tuple[Trigger, ...] | None:
        """The candidates of the event's (tenant, name) when it is narrow and starts only jobs (read once, then
        kept), else None."""
        if self._candidates is None or len(self._candidates) >= CANDIDATES_LIMIT:
            self._candidates = {}
        key = (event.tenant_id, event.name)
        if key in self._candidates:
            return self._candidates[key]
        rows = await db.fetch(CANDIDATES, event.tenant_id, event_patterns(event.name), NARROW + 1)
        triggers = tuple(map(self._matched, rows))
        narrow = len(triggers) <= NARROW and all(trigger.workflow is None for trigger in triggers)
        self._candidates[key] = triggers if narrow else None
        return self._candidates[key]

    def _forget(self, event: Event) -> None:
        if self._candidates is not None:
            self._candidates.pop((event.tenant_id, event.name), None)

    async def _guarded(
        self,
        db: Db,
        event: Event,
        payload: str,
        candidates: tuple[Trigger, ...],
        announce: Callable[[Iterable[str]], None],
    ) -> Starts | None:
        """The event and its jobs in one statement, written only if the name's candidates are still `candidates`;
        None when nothing was written (changed candidates, or an id kept already: the caller's MATCH way tells)."""
        matched = [trigger for trigger in candidates if matches(trigger, event.name, event.payload)]
        made = starts(event, matched, self._ids)
        if made.jobs:
            check(started_job_errors(event))
        started = msgspec.json.encode(made.started).decode()
        kept = (event.tenant_id, event.id, event.name, payload, started, event.received_at)
        patterns = event_patterns(event.name)
        guard = (
            event.tenant_id,
            [trigger.id for trigger in candidates],
            [trigger.updated_at for trigger in candidates],
            *patterns,
        )
        if not made.jobs:
            statement = f"WITH {_guard(1, len(patterns))} {_event_insert(len(guard) + 1, guarded=True)}"
            return made if await db.fetchval(statement, *guard, *kept) else None
        insert, values = job_insert(made.jobs)
        jobs = _after_kept(insert)
        keep = _event_insert(len(values) + len(guard) + 1, guarded=True)
        check_guard = _guard(len(values) + 1, len(patterns))
        status = await db.execute(f"WITH {check_guard}, kept AS ({keep}) {jobs}", *values, *guard, *kept)
        if status != f"INSERT 0 {len(made.jobs)}":
            return None
        announce(job.queue_name for job in made.jobs)
        return made

    async def event_list(self, *, tenant_id: str, limit: int, after: Cursor | None) -> list[Event]:
        if not storable_text(tenant_id) or (after is not None and not storable_text(after.id)):
            return []
        async with self._connection() as db:
            rows = await db.fetch(
                EVENT_LIST, tenant_id, after.created_at if after else None, after.id if after else None, limit
            )
        return [_event(row) for row in rows]

    async def event_delete_received(self, *, before: datetime, limit: int) -> int:
        async with self._connection() as db:
            status = await db.execute(EVENT_DELETE_RECEIVED, before, limit)
        return int(status.split()[-1])


class _Repeated(QueueFlowError):
    """The event's id is kept already: nothing of this insert was written (the queues it announced are withdrawn).
    A QueueFlowError so that the connection passes it through untranslated; it never leaves `event_insert`."""

    def __init__(self) -> None:
        super().__init__("the event's id is kept already")


async def _insert_with_jobs(
    db: Db, kept: tuple[object, ...], jobs: Sequence[Job], announce: Callable[[Iterable[str]], None]
) -> None:
    """The event's row and its jobs in one statement, atomic on its own: one round trip where a transaction takes
    four. The jobs are inserted only if the event's row is (a repeat of its id waits for the first to commit, then
    inserts neither); jobs have no idempotency key here, so every one sent is inserted or none."""
    statement, values = job_insert(jobs)
    guarded = _after_kept(statement)
    keep = _event_insert(len(values) + 1)
    announce(job.queue_name for job in jobs)
    status = await db.execute(f"WITH kept AS ({keep}) {guarded}", *values, *kept)
    if status != f"INSERT 0 {len(jobs)}":
        raise _Repeated()


def _editable(trigger: Trigger) -> tuple[object, ...]:
    """The columns an update may change, in the order INSERT and UPDATE both take them (event … enabled)."""
    return (
        trigger.event,
        json_text(trigger.filter, ("filter",)),
        None if trigger.task is None else json_text(task_json(trigger.task), ("task",)),
        None if trigger.workflow is None else json_text(new_workflow_json(trigger.workflow), ("workflow",)),
        trigger.enabled,
    )


def _trigger(row: asyncpg.Record) -> Trigger:
    return Trigger(
        id=row["id"],
        tenant_id=row["tenant_id"],
        name=row["name"],
        event=row["event"],
        filter=row["filter"],
        task=None if row["task"] is None else task_from_json(row["task"]),
        workflow=None if row["workflow"] is None else new_workflow_from_json(row["workflow"]),
        enabled=row["enabled"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def _event(row: asyncpg.Record) -> Event:
    return Event(
        tenant_id=row["tenant_id"],
        id=row["id"],
        name=row["name"],
        payload=row["payload"],
        received_at=row["received_at"],
        started=msgspec.convert(row["started"], tuple[Started, ...]),
    )
