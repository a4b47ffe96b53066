"""The deadlines part of the PostgreSQL store (`core.deadlines`): the jobs past their `expires_at`, read off
`idx_jobs_expiry` (migration 0016: only the unstarted jobs that have a deadline, so the read is bounded by what is
due however large the table) and dead-lettered as the engine decided.

No claim ever waits for an expiry: a claim's lock is FOR UPDATE SKIP LOCKED, and it never takes (so never locks) a
row whose deadline has passed (`claim.fair_sql.claimable`). An expiry in turn skips what another transaction holds
— a claim that took the job just before its deadline, a cancel, a unique replace, another process's timer —, and
re-checks the status and the deadline on the row it locks: a job is expired once, and never once started.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from queueflow.core.deadlines import Expiry
from queueflow.core.types import Job
from queueflow.stores.postgres.connection import Pooled
from queueflow.stores.postgres.rows import job_from_row
from queueflow.stores.postgres.sql import COLUMNS, J_COLUMNS

# `expires_at <= $1` implies idx_jobs_expiry's `expires_at IS NOT NULL` (<= is strict), and the status list is its
# predicate's: the plan is a range of that index, earliest deadline first, stopped at the limit.
EXPIRING = f"""
SELECT {COLUMNS} FROM queueflow.jobs
 WHERE expires_at <= $1 AND status IN ('pending', 'retrying')
 ORDER BY expires_at
 LIMIT $2
"""

# Rows locked in id order (as a batched ack locks them), skipping those another transaction holds.
EXPIRE_MANY = f"""
WITH due AS (
    SELECT j.id, e.error FROM queueflow.jobs AS j
      JOIN unnest($1::text[], $2::text[]) AS e(id, error) ON e.id = j.id
     WHERE j.id = ANY($1::text[]) AND j.status IN ('pending', 'retrying') AND j.expires_at <= $3
     ORDER BY j.id
       FOR UPDATE OF j SKIP LOCKED)
UPDATE queueflow.jobs AS j
   SET status = 'dead_letter', error_message = due.error, completed_at = $3
  FROM due
 WHERE j.id = due.id
RETURNING {J_COLUMNS}
"""

NEXT_EXPIRY = """
SELECT min(expires_at) FROM queueflow.jobs WHERE expires_at IS NOT NULL AND status IN ('pending', 'retrying')
"""


class PostgresDeadlines(Pooled):
    async def job_expiring(self, *, limit: int, now: datetime) -> list[Job]:
        async with self._connection() as db:
            rows = await db.fetch(EXPIRING, now, limit)
        return [job_from_row(row) for row in rows]

    async def job_expire_many(self, expiries: Sequence[Expiry], *, now: datetime) -> list[Job]:
        if not expiries:
            return []
        async with self._connection() as db:
            rows = await db.fetch(
                EXPIRE_MANY, [item.job_id for item in expiries], [item.error for item in expiries], now
            )
        rows.sort(key=lambda row: (row["expires_at"], row["id"]))
        return [job_from_row(row) for row in rows]

    async def job_next_expiry(self) -> datetime | None:
        async with self._connection() as db:
            moment: datetime | None = await db.fetchval(NEXT_EXPIRY)
        return moment
