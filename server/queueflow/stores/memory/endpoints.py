"""The endpoints part of the in-memory store: the `EndpointStore` methods, on the shared `Tables`.

Like the jobs, every method runs without awaiting, so on one event loop each call is atomic (the slot count and
the take are one step, as PostgreSQL's row lock makes them), and each validates before it changes anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from queueflow.core.endpoints import (
    DeliveriesFinished,
    Endpoint,
    EndpointQuery,
    SlotRequest,
    endpoint_storage_errors,
    slots_free,
)
from queueflow.core.errors import FieldError, InvalidState, ValidationError
from queueflow.core.jsonvalue import storable_text
from queueflow.core.validation import check
from queueflow.stores.memory.state import Tables


class MemoryEndpoints(Tables):
    async def endpoint_insert(self, endpoint: Endpoint) -> Endpoint:
        check(endpoint_storage_errors(endpoint))
        if endpoint.id in self._endpoints:
            raise ValidationError.of([FieldError(("id",), f"duplicate endpoint id {endpoint.id}")])
        if self._endpoint_named(endpoint.tenant_id, endpoint.name) is not None:
            raise InvalidState(f"an endpoint called {endpoint.name!r} already exists")
        stored = replace(endpoint, delivered=0, failed=0, last_error=None, last_delivery_at=None, in_flight=0)
        self._endpoints[endpoint.id] = stored
        return stored

    async def endpoint_get(self, name: str, *, tenant_id: str, now: datetime) -> Endpoint | None:
        found = self._endpoint_named(tenant_id, name)
        return self._endpoint_out(found, now) if found is not None else None

    async def endpoint_list(self, query: EndpointQuery) -> list[Endpoint]:
        rows = [row for row in self._endpoints.values() if row.tenant_id == query.tenant_id]
        if query.after is not None:
            after = (query.after.created_at, query.after.id)
            rows = [row for row in rows if (row.created_at, row.id) < after]
        rows.sort(key=lambda row: (row.created_at, row.id), reverse=True)
        return [self._endpoint_out(row, query.now) for row in rows[: query.limit]]

    async def endpoint_update(self, endpoint: Endpoint, *, expected_updated_at: datetime) -> Endpoint | None:
        check(endpoint_storage_errors(endpoint))
        current = self._endpoints.get(endpoint.id)
        if current is None or current.tenant_id != endpoint.tenant_id or current.updated_at != expected_updated_at:
            return None
        # The identity and the counters are the row's own: an update never moves them.
        stored = replace(
            endpoint,
            name=current.name,
            created_at=current.created_at,
            delivered=current.delivered,
            failed=current.failed,
            last_error=current.last_error,
            last_delivery_at=current.last_delivery_at,
            in_flight=0,
        )
        self._endpoints[endpoint.id] = stored
        return stored

    async def endpoint_delete(self, name: str, *, tenant_id: str) -> bool:
        found = self._endpoint_named(tenant_id, name)
        if found is None:
            return False
        del self._endpoints[found.id]
        self._slots.pop(found.id, None)
        return True

    async def endpoint_deliverable(self) -> list[Endpoint]:
        return sorted((row for row in self._endpoints.values() if not row.paused), key=lambda row: row.id)

    async def endpoint_slots_take(self, request: SlotRequest) -> list[str]:
        endpoint = self._endpoints.get(request.endpoint_id) if storable_text(request.endpoint_id) else None
        if endpoint is None or endpoint.paused:
            return []
        slots = self._slots.setdefault(endpoint.id, {})
        for slot_id in [slot_id for slot_id, until in slots.items() if until <= request.now]:
            del slots[slot_id]
        until = request.now + timedelta(seconds=request.hold_seconds)
        taken = []
        for _ in range(slots_free(endpoint.concurrency, len(slots), request.want)):
            self._slot_serial += 1
            slot_id = f"slot_{self._slot_serial}"
            slots[slot_id] = until
            taken.append(slot_id)
        return taken

    async def endpoint_slots_hold(self, slot_ids: Sequence[str], *, until: datetime, now: datetime) -> int:
        held = 0
        for slots in self._slots.values():
            for slot_id in slot_ids:
                if slots.get(slot_id, now) > now:
                    slots[slot_id] = until
                    held += 1
        return held

    async def endpoint_slots_release(self, slot_ids: Sequence[str]) -> None:
        for slots in self._slots.values():
            for slot_id in slot_ids:
                slots.pop(slot_id, None)

    async def endpoint_deliveries_finish(self, finished: DeliveriesFinished) -> None:
        check(_finished_errors(finished))
        slots = self._slots.get(finished.endpoint_id, {})
        for slot_id in finished.slot_ids:
            slots.pop(slot_id, None)
        current = self._endpoints.get(finished.endpoint_id)
        if current is None:
            return
        self._endpoints[current.id] = replace(
            current,
            delivered=current.delivered + finished.delivered,
            failed=current.failed + finished.failed,
            last_error=current.last_error if finished.last_error is None else finished.last_error,
            last_delivery_at=finished.now,
        )

    def _endpoint_named(self, tenant_id: str, name: str) -> Endpoint | None:
        if not (storable_text(tenant_id) and storable_text(name)):
            return None
        return next((row for row in self._endpoints.values() if row.tenant_id == tenant_id and row.name == name), None)

    def _endpoint_out(self, endpoint: Endpoint, now: datetime) -> Endpoint:
        live = sum(until > now for until in self._slots.get(endpoint.id, {}).values())
        return replace(endpoint, in_flight=live)


def _finished_errors(finished: DeliveriesFinished) -> list[FieldError]:
    if finished.last_error is not None and not storable_text(finished.last_error):
        return [FieldError(("last_error",), "cannot be stored")]
    return []
