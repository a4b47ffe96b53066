"""The sequences part of the PostgreSQL store (`core.sequences`): which halted job a job waits behind, and a resume.
The claim's own test is `claim.fair_sql.SEQUENCE_FREE`.

Both read a key's jobs through idx_jobs_sequence_key and idx_jobs_sequence (migration 0021: only jobs of a sequence
are in them; the first leaves out running jobs, the second holds only the jobs that hold their sequence).
"""

from __future__ import annotations

from collections.abc import Sequence

from queueflow.core.jsonvalue import storable_text
from queueflow.stores.postgres.connection import Pooled

# Every job of a key, as a condition the planner can answer from the two partial indexes of sequences (a BitmapOr):
# idx_jobs_sequence_key leaves out the running jobs, which idx_jobs_sequence holds.
EVERY_STATUS = "(j.status <> 'running' OR j.status = 'running')"

# For each of the given jobs still to start, the earliest halting dead job of its sequence before it.
BLOCKED_BY = """
SELECT j.id, (SELECT min(d.id) FROM queueflow.jobs AS d
               WHERE d.tenant_id = j.tenant_id AND d.sequence_key = j.sequence_key AND d.id < j.id
                 AND d.status = 'dead_letter' AND d.sequence_halt) AS blocker
  FROM queueflow.jobs AS j
 WHERE j.id = ANY($1::text[]) AND j.tenant_id = $2 AND j.sequence_key IS NOT NULL
   AND j.status IN ('pending', 'retrying')
"""

# A key with no jobs answers no row; otherwise `halted` counts the dead jobs that no longer hold it. The queues of
# the key's unstarted jobs are woken: what the halt held back may be claimed now.
RESUME = f"""
WITH resumed AS (
    UPDATE queueflow.jobs AS j SET sequence_halt = false
     WHERE j.tenant_id = $1 AND j.sequence_key = $2 AND j.status = 'dead_letter' AND j.sequence_halt
    RETURNING j.id),
woken AS (
    SELECT pg_notify('queueflow_work', q.queue_name)
      FROM (SELECT DISTINCT j.queue_name FROM queueflow.jobs AS j
             WHERE j.tenant_id = $1 AND j.sequence_key = $2 AND j.status IN ('pending', 'retrying')) AS q
     WHERE EXISTS (SELECT FROM resumed))
SELECT (SELECT count(*) FROM resumed) AS halted, (SELECT count(*) FROM woken) AS woken
 WHERE EXISTS (SELECT FROM queueflow.jobs AS j WHERE j.tenant_id = $1 AND j.sequence_key = $2 AND {EVERY_STATUS})
"""


class PostgresSequences(Pooled):
    async def sequence_blocked_by(self, job_ids: Sequence[str], *, tenant_id: str) -> dict[str, str]:
        wanted = [job_id for job_id in job_ids if storable_text(job_id)]
        if not wanted or not storable_text(tenant_id):
            return {}
        async with self._connection() as db:
            rows = await db.fetch(BLOCKED_BY, wanted, tenant_id)
        return {row["id"]: row["blocker"] for row in rows if row["blocker"] is not None}

    async def sequence_resume(self, key: str, *, tenant_id: str) -> bool | None:
        if not (storable_text(key) and storable_text(tenant_id)):
            return None
        async with self._connection() as db:
            row = await db.fetchrow(RESUME, tenant_id, key)
        return None if row is None else row["halted"] > 0
