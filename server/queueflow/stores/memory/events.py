"""The triggers and events part of the in-memory store: the `TriggerStore` and `EventStore` methods, on the shared
`Tables`.

An event finds its triggers as PostgreSQL's index does: by (tenant, pattern) for each of `triggers.event_patterns`
of its name (`_trigger_index`, enabled triggers only), never by reading every trigger. Each method validates
everything it will write before it writes any of it, so an event whose job cannot be stored starts nothing.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from datetime import datetime

from queueflow.core.errors import FieldError, InvalidState, ValidationError
from queueflow.core.events import Event, event_storage_errors, starts
from queueflow.core.jsonvalue import storable_text
from queueflow.core.triggers import Trigger, event_patterns, matches, trigger_storage_errors
from queueflow.core.types import Cursor
from queueflow.core.validation import check
from queueflow.core.workflow import workflow_storage_errors
from queueflow.stores.memory.workflows import MemoryWorkflows


class MemoryEvents(MemoryWorkflows):
    # ---- triggers -----------------------------------------------------------------------------------------

    async def trigger_insert(self, trigger: Trigger) -> Trigger:
        check(trigger_storage_errors(trigger))
        if trigger.id in self._triggers:
            raise ValidationError.of([FieldError(("id",), f"duplicate trigger id {trigger.id}")])
        if self._trigger_named(trigger.tenant_id, trigger.name) is not None:
            raise InvalidState(f"a trigger called {trigger.name!r} already exists")
        self._keep_trigger(trigger)
        return _copy(trigger)

    async def trigger_get(self, name: str, *, tenant_id: str) -> Trigger | None:
        found = self._trigger_named(tenant_id, name)
        return _copy(found) if found is not None else None

    async def trigger_list(self, *, tenant_id: str, limit: int, after: Cursor | None) -> list[Trigger]:
        rows = [row for row in self._triggers.values() if row.tenant_id == tenant_id]
        if after is not None:
            rows = [row for row in rows if (row.created_at, row.id) < (after.created_at, after.id)]
        rows.sort(key=lambda row: (row.created_at, row.id), reverse=True)
        return [_copy(row) for row in rows[:limit]]

    async def trigger_update(self, trigger: Trigger, *, expected_updated_at: datetime) -> Trigger | None:
        check(trigger_storage_errors(trigger))
        current = self._triggers.get(trigger.id)
        if (
            current is None
            or current.tenant_id != trigger.tenant_id
            or current.updated_at != expected_updated_at
            or trigger.updated_at <= expected_updated_at
        ):
            return None
        stored = replace(trigger, name=current.name, created_at=current.created_at)
        self._forget_trigger(current)
        self._keep_trigger(stored)
        return _copy(stored)

    async def trigger_delete(self, name: str, *, tenant_id: str) -> bool:
        found = self._trigger_named(tenant_id, name)
        if found is None:
            return False
        self._forget_trigger(found)
        return True

    # ---- events -------------------------------------------------------------------------------------------

    async def event_insert(self, event: Event) -> tuple[Event, bool]:
        check(event_storage_errors(event))
        key = (event.tenant_id, event.id)
        if key in self._events:
            return _copy_event(self._events[key]), False
        found = {
            trigger_id
            for pattern in event_patterns(event.name)
            for trigger_id in self._trigger_index.get((event.tenant_id, pattern), ())
        }
        matched = [self._triggers[trigger_id] for trigger_id in found]
        made = starts(event, [trigger for trigger in matched if matches(trigger, event.name, event.payload)], self._ids)
        # Everything checked before anything is written: one bad job or workflow and the event starts nothing.
        check([error for recording in made.workflows for error in workflow_storage_errors(recording.workflow)])
        self._check_insert([*made.jobs, *(job for recording in made.workflows for job in recording.jobs)])
        self._insert(made.jobs)
        for recording in made.workflows:
            self._insert_workflow(recording.workflow, recording.jobs)
            self._start_children(recording.children, event.received_at)  # a root child step's child
        recorded = replace(event, payload=copy.deepcopy(event.payload), started=made.started)
        self._events[key] = recorded
        return _copy_event(recorded), True

    async def event_list(self, *, tenant_id: str, limit: int, after: Cursor | None) -> list[Event]:
        rows = [row for row in self._events.values() if row.tenant_id == tenant_id]
        if after is not None:
            rows = [row for row in rows if (row.received_at, row.id) < (after.created_at, after.id)]
        rows.sort(key=lambda row: (row.received_at, row.id), reverse=True)
        return [_copy_event(row) for row in rows[:limit]]

    async def event_delete_received(self, *, before: datetime, limit: int) -> int:
        old = sorted(
            (row for row in self._events.values() if row.received_at < before), key=lambda row: row.received_at
        )
        for row in old[:limit]:
            del self._events[(row.tenant_id, row.id)]
        return len(old[:limit])

    # ---- the index ----------------------------------------------------------------------------------------

    def _keep_trigger(self, trigger: Trigger) -> None:
        self._triggers[trigger.id] = _copy(trigger)
        if trigger.enabled:
            self._trigger_index.setdefault((trigger.tenant_id, trigger.event), set()).add(trigger.id)

    def _forget_trigger(self, trigger: Trigger) -> None:
        del self._triggers[trigger.id]
        self._trigger_index.get((trigger.tenant_id, trigger.event), set()).discard(trigger.id)

    def _trigger_named(self, tenant_id: str, name: str) -> Trigger | None:
        if not (storable_text(tenant_id) and storable_text(name)):
            return None
        return next((row for row in self._triggers.values() if row.tenant_id == tenant_id and row.name == name), None)


def _copy(trigger: Trigger) -> Trigger:
    # Callers get their own JSON, so mutating a returned trigger never edits the store (and vice versa).
    return copy.deepcopy(trigger)


def _copy_event(event: Event) -> Event:
    return replace(event, payload=copy.deepcopy(event.payload))
