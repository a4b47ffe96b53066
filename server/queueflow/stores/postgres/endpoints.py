"""The PostgreSQL store's push endpoints: the `EndpointStore` half of `PostgresJobStore`.

A tenant's edit is a compare-and-set on `updated_at`; the counters only a delivery's finish writes. Slots are taken
in one transaction under the endpoint's row lock: the count of the slots held is read by a statement that starts
after the lock is granted, so it sees every slot a taker before it committed (in one statement, its snapshot
would predate the wait for the lock, and two takers could both see room for the last slot).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta

import asyncpg

from queueflow.core.endpoints import (
    DeliveriesFinished,
    Endpoint,
    EndpointQuery,
    SlotRequest,
    endpoint_storage_errors,
    error_text,
)
from queueflow.core.errors import InvalidState
from queueflow.core.jsonvalue import storable_text
from queueflow.core.validation import check
from queueflow.stores.postgres.connection import Pooled

SETTINGS = (
    "url, queues, task_names, concurrency, timeout_seconds, paused, secret, previous_secret, previous_secret_until"
)
COLUMNS = f"id, tenant_id, name, {SETTINGS}, delivered, failed, last_error, last_delivery_at, created_at, updated_at"
# The slots held at $now, per endpoint row `e`.
IN_FLIGHT = "(SELECT count(*) FROM queueflow.endpoint_slots AS s WHERE s.endpoint_id = e.id AND s.held_until > {now})"

INSERT = f"""
INSERT INTO queueflow.endpoints (id, tenant_id, name, {SETTINGS}, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
ON CONFLICT ON CONSTRAINT uq_endpoints_tenant_name DO NOTHING
RETURNING {COLUMNS}, 0::bigint AS in_flight
"""

GET = f"""
SELECT {COLUMNS}, {IN_FLIGHT.format(now="$3")} AS in_flight
  FROM queueflow.endpoints AS e WHERE tenant_id = $1 AND name = $2
"""

LIST = f"""
SELECT {COLUMNS}, {IN_FLIGHT.format(now="$5")} AS in_flight
  FROM queueflow.endpoints AS e
 WHERE tenant_id = $1 AND ($2::timestamptz IS NULL OR (created_at, id) < ($2, $3))
 ORDER BY created_at DESC, id DESC
 LIMIT $4
"""

UPDATE = f"""
UPDATE queueflow.endpoints
   SET url = $3, queues = $4, task_names = $5, concurrency = $6, timeout_seconds = $7, paused = $8, secret = $9,
       previous_secret = $10, previous_secret_until = $11, updated_at = $12
 WHERE id = $1 AND tenant_id = $2 AND updated_at = $13
RETURNING {COLUMNS}, 0::bigint AS in_flight
"""

DELETE = "DELETE FROM queueflow.endpoints WHERE tenant_id = $1 AND name = $2"

DELIVERABLE = f"SELECT {COLUMNS}, 0::bigint AS in_flight FROM queueflow.endpoints WHERE NOT paused ORDER BY id"

TAKE = "SELECT queueflow.endpoint_slots_take($1, $2, $3::text[], $4)"
"""One call (migration 0019): the endpoint's row locked, then, in a new snapshot that sees every slot committed
before the lock was granted, its expired slots deleted and as many of the candidate ids ($3, in order) inserted as
its concurrency leaves beside the live ones; those inserted returned. None for a paused or deleted endpoint."""

HOLD = "UPDATE queueflow.endpoint_slots SET held_until = $2 WHERE id = ANY($1::text[]) AND held_until > $3"

RELEASE = "DELETE FROM queueflow.endpoint_slots WHERE id = ANY($1::text[])"

FINISH = """
WITH slots AS (DELETE FROM queueflow.endpoint_slots WHERE id = ANY($2::text[]))
UPDATE queueflow.endpoints
   SET delivered = delivered + $3, failed = failed + $4, last_error = coalesce($5, last_error), last_delivery_at = $6
 WHERE id = $1
"""


class PostgresEndpoints(Pooled):
    async def endpoint_insert(self, endpoint: Endpoint) -> Endpoint:
        check(endpoint_storage_errors(endpoint))
        async with self._connection() as db:
            row = await db.fetchrow(
                INSERT,
                endpoint.id,
                endpoint.tenant_id,
                endpoint.name,
                *_settings(endpoint),
                endpoint.created_at,
                endpoint.updated_at,
            )
        if row is None:
            raise InvalidState(f"an endpoint called {endpoint.name!r} already exists")
        return _endpoint(row)

    async def endpoint_get(self, name: str, *, tenant_id: str, now: datetime) -> Endpoint | None:
        if not (storable_text(tenant_id) and storable_text(name)):
            return None
        async with self._connection() as db:
            row = await db.fetchrow(GET, tenant_id, name, now)
        return _endpoint(row) if row is not None else None

    async def endpoint_list(self, query: EndpointQuery) -> list[Endpoint]:
        after = query.after
        if not storable_text(query.tenant_id) or (after is not None and not storable_text(after.id)):
            return []
        async with self._connection() as db:
            rows = await db.fetch(
                LIST,
                query.tenant_id,
                after.created_at if after else None,
                after.id if after else None,
                query.limit,
                query.now,
            )
        return [_endpoint(row) for row in rows]

    async def endpoint_update(self, endpoint: Endpoint, *, expected_updated_at: datetime) -> Endpoint | None:
        check(endpoint_storage_errors(endpoint))
        async with self._connection() as db:
            row = await db.fetchrow(
                UPDATE,
                endpoint.id,
                endpoint.tenant_id,
                *_settings(endpoint),
                endpoint.updated_at,
                expected_updated_at,
            )
        return _endpoint(row) if row is not None else None

    async def endpoint_delete(self, name: str, *, tenant_id: str) -> bool:
        if not (storable_text(tenant_id) and storable_text(name)):
            return False
        async with self._connection() as db:
            status = await db.execute(DELETE, tenant_id, name)
        return status == "DELETE 1"

    async def endpoint_deliverable(self) -> list[Endpoint]:
        async with self._connection() as db:
            return [_endpoint(row) for row in await db.fetch(DELIVERABLE)]

    async def endpoint_slots_take(self, request: SlotRequest) -> list[str]:
        if not storable_text(request.endpoint_id) or request.want < 1:
            return []
        until = request.now + timedelta(seconds=request.hold_seconds)
        candidates = [uuid.uuid4().hex for _ in range(request.want)]
        async with self._connection() as db:
            rows = await db.fetch(TAKE, request.endpoint_id, request.now, candidates, until)
        # RETURNING's order is the insert's, which is the candidates' (ordinality order), but say so explicitly.
        taken = {row[0] for row in rows}
        return [slot_id for slot_id in candidates if slot_id in taken]

    async def endpoint_slots_hold(self, slot_ids: Sequence[str], *, until: datetime, now: datetime) -> int:
        async with self._connection() as db:
            status = await db.execute(HOLD, _storable(slot_ids), until, now)
        return int(status.split()[-1])

    async def endpoint_slots_release(self, slot_ids: Sequence[str]) -> None:
        async with self._connection() as db:
            await db.execute(RELEASE, _storable(slot_ids))

    async def endpoint_deliveries_finish(self, finished: DeliveriesFinished) -> None:
        if not storable_text(finished.endpoint_id):
            return
        error = None if finished.last_error is None else error_text(finished.last_error)
        async with self._connection() as db:
            await db.execute(
                FINISH,
                finished.endpoint_id,
                _storable(finished.slot_ids),
                finished.delivered,
                finished.failed,
                error,
                finished.now,
            )


def _storable(ids: Sequence[str]) -> list[str]:
    return [slot_id for slot_id in ids if storable_text(slot_id)]


def _settings(endpoint: Endpoint) -> tuple[object, ...]:
    """The columns a tenant's edit writes, in the order INSERT and UPDATE both take them (url … secrets)."""
    return (
        endpoint.url,
        list(endpoint.queues),
        None if endpoint.task_names is None else list(endpoint.task_names),
        endpoint.concurrency,
        endpoint.timeout_seconds,
        endpoint.paused,
        endpoint.secret,
        endpoint.previous_secret,
        endpoint.previous_secret_until,
    )


def _endpoint(row: asyncpg.Record) -> Endpoint:
    fields = {name: row[name] for name in Endpoint.__dataclass_fields__}
    fields["queues"] = tuple(row["queues"])
    fields["task_names"] = None if row["task_names"] is None else tuple(row["task_names"])
    return Endpoint(**fields)
