"""Trigger and event use cases (`Engine.triggers`): a tenant's triggers, and the events that start them.

`core.triggers` holds the rules (names, patterns, filters, what a trigger starts) and `core.events` what one event
starts; the store records an event and its starts in one transaction (`EventStore.event_insert`). A trigger's
`task` and `workflow` are validated as `POST /v1/jobs` and `POST /v1/workflows` validate theirs, once, when the
trigger is written: an event never meets an invalid one.
"""

from __future__ import annotations

from datetime import timedelta

from queueflow.core.cursor import page, page_after
from queueflow.core.errors import InvalidState, NotFound
from queueflow.core.events import EVENT_RETENTION, Event, NewEvent, new_event_errors, received
from queueflow.core.ids import IdSource
from queueflow.core.triggers import NewTrigger, Trigger, TriggerPatch, as_new, patched, trigger_errors
from queueflow.core.types import Page
from queueflow.core.validation import check
from queueflow.ports import Clock, Store

UPDATE_ATTEMPTS = 5
"""Reads and re-applies of a PATCH that lost its compare-and-set to a concurrent edit."""
TICK = timedelta(microseconds=1)


class Triggers:
    def __init__(self, store: Store, clock: Clock, ids: IdSource) -> None:
        self.store = store
        self.clock = clock
        self.ids = ids

    # ---- triggers -----------------------------------------------------------------------------------------

    async def create(self, tenant_id: str, new: NewTrigger) -> Trigger:
        """Keep a trigger; it starts its job or workflow for every matching event from now on. A taken name is
        InvalidState."""
        check(trigger_errors(new))
        now = self.clock.now()
        fields = {name: getattr(new, name) for name in NewTrigger.__dataclass_fields__}
        trigger = Trigger(id=self.ids.new_id("trg", now), tenant_id=tenant_id, created_at=now, updated_at=now, **fields)
        return await self.store.trigger_insert(trigger)

    async def get(self, tenant_id: str, name: str) -> Trigger:
        trigger = await self.store.trigger_get(name, tenant_id=tenant_id)
        if trigger is None:
            raise NotFound(f"no trigger {name!r}")
        return trigger

    async def list(self, tenant_id: str, *, limit: int = 50, cursor: str | None = None) -> Page[Trigger]:
        after = page_after(limit, cursor)
        return page(await self.store.trigger_list(tenant_id=tenant_id, limit=limit + 1, after=after), limit)

    async def update(self, tenant_id: str, name: str, patch: TriggerPatch) -> Trigger:
        """Apply a PATCH; events from then on see the trigger as patched."""
        for _ in range(UPDATE_ATTEMPTS):
            current = await self.get(tenant_id, name)
            now = self.clock.now()
            # `updated_at` strictly increases, so it tells every edit apart even when two share a clock reading.
            updated = patched(current, patch, max(now, current.updated_at + TICK))
            check(trigger_errors(as_new(updated)))
            stored = await self.store.trigger_update(updated, expected_updated_at=current.updated_at)
            if stored is not None:
                return stored
        raise InvalidState(f"trigger {name!r} kept changing while this update was applied; try again")

    async def delete(self, tenant_id: str, name: str) -> None:
        """Delete a trigger; it starts nothing more. What it started stays."""
        if not await self.store.trigger_delete(name, tenant_id=tenant_id):
            raise NotFound(f"no trigger {name!r}")

    # ---- events -------------------------------------------------------------------------------------------

    async def send(self, tenant_id: str, new: NewEvent) -> tuple[Event, bool]:
        """Start every enabled trigger of the tenant that the event matches, in one transaction; a known event id
        starts nothing and returns the event as first recorded, with `False`."""
        check(new_event_errors(new))
        return await self.store.event_insert(received(tenant_id, new, self.clock.now(), self.ids))

    async def events(self, tenant_id: str, *, limit: int = 50, cursor: str | None = None) -> Page[Event]:
        """The tenant's last events (kept a day), newest first, each with what it started."""
        after = page_after(limit, cursor)
        return page(await self.store.event_list(tenant_id=tenant_id, limit=limit + 1, after=after), limit)

    async def forget_old_events(self, limit: int) -> int:
        """One sweep of the events kept longer than `EVENT_RETENTION` (up to `limit`); how many went."""
        return await self.store.event_delete_received(before=self.clock.now() - EVENT_RETENTION, limit=limit)
