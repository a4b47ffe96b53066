"""The PostgreSQL store's queues: the `QueueStore` part of `PostgresJobStore` — flow-control settings (which the
claim obeys: `claim`), and what is known of each queue's jobs (counts, backlogs, throughput)."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Annotated, NamedTuple

import asyncpg

from queueflow.core.errors import FieldError, ValidationError
from queueflow.core.flow import KEEP, Backlog, ConfigureRequest, QueueSettings, RateLimit, tokens_at
from queueflow.core.jsonvalue import storable_text
from queueflow.core.types import QueueCounts, QueueMinute
from queueflow.stores.postgres.claim.fair_sql import RESTRICTING
from queueflow.stores.postgres.claim.restricted_sql import RESTRICTION_ROWS
from queueflow.stores.postgres.connection import Pooled
from queueflow.stores.postgres.params import Placeholders, values
from queueflow.stores.postgres.retention_sql import FINISHED

# Every restricting settings row, with its bucket (`flow.held_back`, for /metrics).
RESTRICTIONS = f"""
{RESTRICTION_ROWS}
 WHERE {RESTRICTING}
"""

# Due (as of $1) and running jobs per concurrency_key of every restricted (tenant, queue).
RESTRICTED_BACKLOGS = f"""
SELECT s.tenant_id, s.queue_name, j.config->>'concurrency_key' AS key,
       count(*) FILTER (WHERE j.status <> 'running') AS due,
       count(*) FILTER (WHERE j.status = 'running') AS running
  FROM queueflow.queue_settings AS s
  JOIN queueflow.jobs AS j ON j.tenant_id = s.tenant_id AND j.queue_name = s.queue_name
 WHERE {RESTRICTING}
   AND (j.status = 'running' OR (j.status IN ('pending', 'retrying') AND j.scheduled_at <= $1))
 GROUP BY 1, 2, 3
"""

SETTINGS_COLUMNS = (
    "queue_name, paused, concurrency_limit, key_concurrency_limit, rate_jobs, rate_per_seconds, retention_seconds"
)

QUEUE_SETTINGS = f"""
SELECT {SETTINGS_COLUMNS} FROM queueflow.queue_settings
 WHERE tenant_id = $1 AND ($2::text IS NULL OR queue_name = $2)
"""


class ConfigureArgs(NamedTuple):
    """QUEUE_CONFIGURE's parameters: each setting with whether the patch sets it (`set_*`)."""

    tenant: Annotated[str, "text"]
    queue: Annotated[str, "text"]
    set_paused: Annotated[bool, "bool"]
    paused: Annotated[bool | None, "bool"]
    set_concurrency_limit: Annotated[bool, "bool"]
    concurrency_limit: Annotated[int | None, "int"]
    set_key_concurrency_limit: Annotated[bool, "bool"]
    key_concurrency_limit: Annotated[int | None, "int"]
    set_rate: Annotated[bool, "bool"]
    rate_jobs: Annotated[int | None, "int"]
    rate_per_seconds: Annotated[float | None, "float8"]
    set_retention: Annotated[bool, "bool"]
    retention_seconds: Annotated[int | None, "int"]
    now: Annotated[datetime, "timestamptz"]


_c = Placeholders(ConfigureArgs)  # short: QUEUE_CONFIGURE names every parameter several times

# A PATCH in one statement: each field is replaced only when its `set_*` flag says it was sent, so two patches of
# different fields never undo each other. A new rate limit starts with a full bucket. An UPDATE fires no insert
# trigger, so the queue is announced here: lessees parked on a paused or full queue look again.
QUEUE_CONFIGURE = f"""
WITH saved AS (
    INSERT INTO queueflow.queue_settings AS s
           (tenant_id, queue_name, paused, concurrency_limit, key_concurrency_limit, rate_jobs, rate_per_seconds,
            rate_tokens, rate_refilled_at, retention_seconds, updated_at)
    VALUES ({_c.tenant}, {_c.queue}, {_c.set_paused} AND {_c.paused},
            CASE WHEN {_c.set_concurrency_limit} THEN {_c.concurrency_limit} END,
            CASE WHEN {_c.set_key_concurrency_limit} THEN {_c.key_concurrency_limit} END,
            CASE WHEN {_c.set_rate} THEN {_c.rate_jobs} END, CASE WHEN {_c.set_rate} THEN {_c.rate_per_seconds} END,
            CASE WHEN {_c.set_rate} THEN {_c.rate_jobs}::float8 END,
            CASE WHEN {_c.set_rate} AND {_c.rate_jobs} IS NOT NULL THEN {_c.now} END,
            CASE WHEN {_c.set_retention} THEN {_c.retention_seconds} END, {_c.now})
    ON CONFLICT (tenant_id, queue_name) DO UPDATE
       SET paused = CASE WHEN {_c.set_paused} THEN {_c.paused} ELSE s.paused END,
           concurrency_limit = CASE WHEN {_c.set_concurrency_limit} THEN {_c.concurrency_limit}
                                    ELSE s.concurrency_limit END,
           key_concurrency_limit = CASE WHEN {_c.set_key_concurrency_limit} THEN {_c.key_concurrency_limit}
                                        ELSE s.key_concurrency_limit END,
           rate_jobs = CASE WHEN {_c.set_rate} THEN {_c.rate_jobs} ELSE s.rate_jobs END,
           rate_per_seconds = CASE WHEN {_c.set_rate} THEN {_c.rate_per_seconds} ELSE s.rate_per_seconds END,
           rate_tokens = CASE WHEN {_c.set_rate} THEN {_c.rate_jobs}::float8 ELSE s.rate_tokens END,
           rate_refilled_at = CASE WHEN {_c.set_rate} THEN CASE WHEN {_c.rate_jobs} IS NOT NULL THEN {_c.now} END
                                   ELSE s.rate_refilled_at END,
           retention_seconds = CASE WHEN {_c.set_retention} THEN {_c.retention_seconds} ELSE s.retention_seconds END,
           updated_at = {_c.now}
    RETURNING {SETTINGS_COLUMNS})
SELECT saved.*, pg_notify('queueflow_work', queue_name) FROM saved
"""

QUEUE_COUNTS = """
SELECT queue_name AS name,
       count(*) FILTER (WHERE status IN ('pending', 'retrying') AND scheduled_at <= $2) AS pending,
       count(*) FILTER (WHERE status IN ('pending', 'retrying') AND scheduled_at > $2) AS scheduled,
       count(*) FILTER (WHERE status = 'running') AS running,
       count(*) FILTER (WHERE status = 'retrying') AS retrying,
       count(*) FILTER (WHERE status = 'completed') AS completed,
       count(*) FILTER (WHERE status = 'dead_letter') AS dead_letter,
       count(*) FILTER (WHERE status = 'cancelled') AS cancelled,
       min(scheduled_at) FILTER (WHERE status IN ('pending', 'retrying') AND scheduled_at <= $2) AS oldest_due_at
  FROM queueflow.jobs
 WHERE tenant_id = $1
 GROUP BY queue_name
"""

# Per queue, off idx_jobs_finished (tenant_id, queue_name, completed_at): the tenant's queues with finished jobs by a
# skip scan (one index descent each), then each queue's range since $2. One range over the tenant's part of the
# index would read every finished job the tenant keeps, since completed_at is its third column.
QUEUE_THROUGHPUT = f"""
WITH RECURSIVE finished_queues AS (
    (SELECT queue_name FROM queueflow.jobs WHERE tenant_id = $1 AND {FINISHED} ORDER BY queue_name LIMIT 1)
    UNION ALL
    SELECT (SELECT j.queue_name FROM queueflow.jobs AS j
             WHERE j.tenant_id = $1 AND j.{FINISHED} AND j.queue_name > previous.queue_name
             ORDER BY j.queue_name LIMIT 1)
      FROM finished_queues AS previous WHERE previous.queue_name IS NOT NULL)
SELECT q.queue_name AS name, m.minute, m.completed, m.dead_lettered
  FROM finished_queues AS q
 CROSS JOIN LATERAL (
       SELECT date_trunc('minute', j.completed_at, 'UTC') AS minute,
              count(*) FILTER (WHERE j.status = 'completed') AS completed,
              count(*) FILTER (WHERE j.status = 'dead_letter') AS dead_lettered
         FROM queueflow.jobs AS j
        WHERE j.tenant_id = $1 AND j.queue_name = q.queue_name AND j.status IN ('completed', 'dead_letter')
          AND j.completed_at >= $2
        GROUP BY 1) AS m
"""


class PostgresQueues(Pooled):
    async def queue_overview(
        self, *, tenant_id: str, queue_name: str | None = None, now: datetime
    ) -> tuple[dict[str, QueueSettings], list[QueueCounts]]:
        if not storable_text(tenant_id) or (queue_name is not None and not storable_text(queue_name)):
            return {}, []
        async with self._connection() as db:
            settings = await db.fetch(QUEUE_SETTINGS, tenant_id, queue_name)
            counts = await db.fetch(QUEUE_COUNTS, tenant_id, now)
        # Sorted here, by code point as the in-memory store does, whatever the database's collation.
        return (
            {row["queue_name"]: _settings_from_row(row) for row in sorted(settings, key=lambda r: r["queue_name"])},
            sorted(
                (QueueCounts(**dict(row.items())) for row in counts if queue_name in (None, row["name"])),
                key=lambda queue: queue.name,
            ),
        )

    async def queue_backlogs(self, *, now: datetime) -> list[Backlog]:
        async with self._connection() as db:
            settings = await db.fetch(RESTRICTIONS)
            counts = await db.fetch(RESTRICTED_BACKLOGS, now)
        due_by_key: dict[tuple[str, str], dict[str | None, int]] = {}
        running_by_key: dict[tuple[str, str], dict[str, int]] = {}
        running: Counter[tuple[str, str]] = Counter()
        for row in counts:
            pair = (row["tenant_id"], row["queue_name"])
            if row["due"]:
                due_by_key.setdefault(pair, {})[row["key"]] = row["due"]
            running[pair] += row["running"]
            if row["key"] is not None and row["running"]:
                running_by_key.setdefault(pair, {})[row["key"]] = row["running"]
        backlogs = []
        for row in sorted(settings, key=lambda row: (row["tenant_id"], row["queue_name"])):
            pair = (row["tenant_id"], row["queue_name"])
            queue = _settings_from_row(row)
            tokens = None
            if queue.rate_limit is not None:
                tokens = tokens_at(queue.rate_limit, row["rate_tokens"], row["rate_refilled_at"], now)
            backlogs.append(
                Backlog(
                    queue_name=row["queue_name"],
                    settings=queue,
                    tokens=tokens,
                    running=running[pair],
                    due_by_key=due_by_key.get(pair, {}),
                    running_by_key=running_by_key.get(pair, {}),
                )
            )
        return backlogs

    async def queue_configure(self, request: ConfigureRequest) -> QueueSettings:
        tenant_id, queue_name, patch, now = request.tenant_id, request.queue_name, request.patch, request.now
        if not (storable_text(tenant_id) and storable_text(queue_name)):
            raise ValidationError.of([FieldError(("name",), "holds text that cannot be stored")])
        rate = patch.rate_limit
        args = ConfigureArgs(
            tenant=tenant_id,
            queue=queue_name,
            set_paused=patch.paused is not KEEP,
            paused=patch.paused if patch.paused is not KEEP else None,
            set_concurrency_limit=patch.concurrency_limit is not KEEP,
            concurrency_limit=patch.concurrency_limit if patch.concurrency_limit is not KEEP else None,
            set_key_concurrency_limit=patch.key_concurrency_limit is not KEEP,
            key_concurrency_limit=patch.key_concurrency_limit if patch.key_concurrency_limit is not KEEP else None,
            set_rate=rate is not KEEP,
            rate_jobs=rate.jobs if isinstance(rate, RateLimit) else None,
            rate_per_seconds=rate.per_seconds if isinstance(rate, RateLimit) else None,
            set_retention=patch.retention_seconds is not KEEP,
            retention_seconds=patch.retention_seconds if patch.retention_seconds is not KEEP else None,
            now=now,
        )
        with self._announcing() as announce:
            announce([queue_name])  # the upsert always notifies (SAVED)
            async with self._connection() as db:
                row = await db.fetchrow(QUEUE_CONFIGURE, *values(args))
        self._restrictions_changed()
        assert row is not None  # an upsert always answers its row
        return _settings_from_row(row)

    async def queue_throughput(self, *, tenant_id: str, since: datetime) -> list[QueueMinute]:
        if not storable_text(tenant_id):
            return []
        async with self._connection() as db:
            rows = await db.fetch(QUEUE_THROUGHPUT, tenant_id, since)
        return sorted(
            (QueueMinute(**dict(row.items())) for row in rows), key=lambda minute: (minute.name, minute.minute)
        )


def _settings_from_row(row: asyncpg.Record) -> QueueSettings:
    return QueueSettings(
        paused=row["paused"],
        concurrency_limit=row["concurrency_limit"],
        key_concurrency_limit=row["key_concurrency_limit"],
        rate_limit=RateLimit(row["rate_jobs"], row["rate_per_seconds"]) if row["rate_jobs"] is not None else None,
        # RESTRICTION_ROWS (a backlog's settings, for flow control alone) leave retention out.
        retention_seconds=row.get("retention_seconds"),
    )
