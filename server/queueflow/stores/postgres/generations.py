"""The generations of the claim's index (migration 0022): which ones the claims read, and their rotation.

Why: under a held xmin horizon VACUUM may not remove a claimed job's pending version, and a scan of the claim's
index steps over every such entry in the ranges it reads (bench/results/2026-12-07-claim-under-horizon.md). Each
job still to start carries a generation (`jobs.gen`), idx_jobs_claim_gen leads with it, and the claims read the
live generations only (`claim.fair_sql.LIVE_GENERATIONS`): a retired generation's dead entries are never read
again, so what a claim walks is bounded by the writes of the few live generations, not by the hold.

The registry `queueflow.claim_generations` holds generation 0 (jobs due later than `sql.LOOKAHEAD_SECONDS` when
written, never retired) and the live ones; the highest is the current one, which writers write (the store's
inserts, `sql.generation`; every other write by the column's default and the jobs_written_ready trigger).

A pass (`rotate_generations`, every second: the store's `job_upkeep`, `runtime.upkeep`; each step its own statement,
so its own transaction):

1. **Switch**: when the current generation is older than PERIOD (by the caller's clock) and fewer than MAX_LIVE
   generations besides 0 are live, the next one opens. One process at a time (pg_try_advisory_xact_lock; a
   second process's concurrent insert of the same number does nothing).
2. **Close**: every generation below the current one gets `closed_at = clock_timestamp()`, in a statement after
   the switch committed: a writer that wrote an older generation read the registry before the switch committed,
   so its transaction began before `closed_at`.
3. **Retire** a closed generation g when (a) no backend that holds (or waits for) RowExclusiveLock on
   queueflow.jobs began its transaction at or before g's `closed_at` (a lock without a backend, a prepared
   transaction, counts as old), and then, in a later statement whose snapshot sees every such writer's commit,
   (b) no job in g is ready: one probe of idx_jobs_claim_gen, which walks at most that generation's dead entries.
   An idle-in-transaction connection holding the horizon holds no lock on jobs: rotation goes on under it.
4. **Stragglers**: when MAX_LIVE generations are live and the oldest opened STRAGGLER_AGE ago or more (a paused
   queue's jobs, a rate-limited or plain backlog that old, a delayed job another writer put in a live
   generation), the oldest one's ready jobs move to generation 0, MOVE_BATCH at a time (FOR UPDATE SKIP LOCKED:
   a job a claim holds is skipped and is then no longer ready), at most MOVE_BATCHES a pass. Into 0 and not into
   the current generation, as first designed: a job moved to the current one is a straggler again later, so a
   paused queue's backlog would be rewritten again and again for as long as it stays paused; moved to 0 it is
   rewritten once.
   The price: each moved job is one more row version (and index entries), and under a hold the jobs claimed out
   of generation 0 leave their dead entries there, where the claims of their (queue, tenant) walk them — the
   cost the claim had before, for those jobs only.
5. **Backstop** (every RESCUE_EVERY by the caller's clock, and a process's first pass): a ready job in a generation
   that is no longer in the registry moves to the current one. Step 3 leaves none, except from a writer that read
   the registry long before it locked the jobs table — a REPEATABLE READ transaction that began before a switch and
   writes a job afterwards, or a statement stalled between its snapshot and its lock; this bounds the delay of such
   a job, which no claim would otherwise see. It reads the retired generations' ranges of the index (their dead
   entries too, under a hold), not the live ones', once per RESCUE_EVERY.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from queueflow.stores.postgres.claim.fair_sql import READY
from queueflow.stores.postgres.connection import Pooled
from queueflow.stores.postgres.sql import CURRENT_GENERATION

PERIOD = timedelta(seconds=1)
"""How old the current generation must be before a pass opens the next one: with a pass every second
(`runtime.upkeep`), a generation holds about a second's writes, and a claim under a held horizon walks the claimed
entries of the two or three generations live at once."""

MAX_LIVE = 4
"""Generations besides 0 the claims read at most: each one costs every claim an index descent per queue (and per
tenant it holds), so few; more than two, so that a generation closed a pass ago and not yet retired (a writer that
was running when it closed) does not hold up the switch."""

STRAGGLER_AGE = timedelta(seconds=20)
"""How old the oldest live generation must be before its ready jobs are moved (step 4). Until then, with MAX_LIVE
live, the switch waits: a backlog being worked off is not rewritten row by row, the current generation just holds
more than a second's writes meanwhile. Counted in passes (MAX_LIVE of them), a backlog older than 4 s would have been
rewritten once rotation ran every second — a 200,000-job drain of 10 s, 20,000 row updates a pass."""

MOVE_BATCH = 1_000
MOVE_BATCHES = 20
RESCUE_EVERY = timedelta(minutes=5)

# An advisory lock's key of its own: "qfgen" in ASCII.
LOCK = "pg_try_advisory_xact_lock(7037479779181)"

SWITCH = f"""
INSERT INTO queueflow.claim_generations (gen, opened_at)
SELECT current.gen + 1, $1::timestamptz
  FROM (SELECT g.gen, g.opened_at FROM queueflow.claim_generations AS g ORDER BY g.gen DESC LIMIT 1) AS current
 WHERE (current.opened_at <= $1::timestamptz - $2::interval OR current.opened_at > $1::timestamptz)
   AND (SELECT count(*) FROM queueflow.claim_generations AS g WHERE g.gen <> 0) < $3
   AND {LOCK}
    ON CONFLICT (gen) DO NOTHING
RETURNING gen
"""

CLOSE = """
UPDATE queueflow.claim_generations AS g SET closed_at = clock_timestamp()
 WHERE g.gen <> 0 AND g.closed_at IS NULL AND g.gen < (SELECT max(c.gen) FROM queueflow.claim_generations AS c)
"""

# (a) of step 3: the closed generations no writer that began before their close may still write.
UNWRITTEN = """
SELECT array_agg(g.gen) FROM queueflow.claim_generations AS g
 WHERE g.gen <> 0 AND g.closed_at IS NOT NULL
   AND NOT EXISTS (SELECT FROM pg_locks AS l LEFT JOIN pg_stat_activity AS a ON a.pid = l.pid
                    WHERE l.locktype = 'relation' AND l.relation = 'queueflow.jobs'::regclass
                      AND l.database = (SELECT d.oid FROM pg_database AS d WHERE d.datname = current_database())
                      AND l.mode = 'RowExclusiveLock' AND l.pid IS DISTINCT FROM pg_backend_pid()
                      AND (a.xact_start IS NULL OR a.xact_start <= g.closed_at))
"""

# (b) of step 3, a later statement: one of those, if it holds no ready job. One generation a statement, named by a
# parameter, so that the probe's plan can only be one descent into that generation's range of idx_jobs_claim_gen. As
# a join over all of them (`g.gen = ANY($1) AND NOT EXISTS (… j.gen = g.gen …)`), its generic plan scanned the whole
# index and filtered `j.gen = g.gen` row by row: under a held horizon every dead entry of every generation, a pass
# reading 23,500 buffers after 4 minutes at 150 jobs/s, and growing (bench/results/2026-12-08-ten-minute-hold.md).
RETIRE = f"""
DELETE FROM queueflow.claim_generations AS g
 WHERE g.gen = $1::int
   AND NOT EXISTS (SELECT FROM queueflow.jobs AS j WHERE j.gen = $1::int AND {READY})
RETURNING g.gen
"""

# Step 4: the oldest live generation besides 0 and the current one, when MAX_LIVE are live and it opened at least
# $3 before now ($2).
OLDEST_WHEN_FULL = """
SELECT min(g.gen) FROM queueflow.claim_generations AS g
 WHERE g.gen <> 0 AND g.gen < (SELECT max(c.gen) FROM queueflow.claim_generations AS c)
HAVING (SELECT count(*) FROM queueflow.claim_generations AS c WHERE c.gen <> 0) >= $1
   AND min(g.opened_at) <= $2::timestamptz - $3::interval
"""

MOVE = f"""
UPDATE queueflow.jobs SET gen = 0
 WHERE id = ANY(ARRAY(SELECT j.id FROM queueflow.jobs AS j WHERE j.gen = $1 AND {READY}
                       LIMIT $2 FOR UPDATE SKIP LOCKED))
"""

# Step 5: the ready jobs of retired generations, read in the gaps between live ones (a range of idx_jobs_claim_gen
# each), so that the live generations' jobs — a whole backlog after the migration — are not read.
RESCUE = f"""
UPDATE queueflow.jobs SET gen = {CURRENT_GENERATION}
 WHERE id = ANY(ARRAY(
       SELECT lost.id
         FROM (SELECT g.gen AS low, lead(g.gen) OVER (ORDER BY g.gen) AS high
                 FROM queueflow.claim_generations AS g) AS gap,
              LATERAL (SELECT j.id FROM queueflow.jobs AS j
                        WHERE j.gen > gap.low AND j.gen < gap.high AND {READY}
                        LIMIT $1 FOR UPDATE SKIP LOCKED) AS lost
        WHERE gap.high > gap.low + 1
        LIMIT $1))
"""


class PostgresGenerations(Pooled):
    _rescued_at: datetime | None = None

    async def rotate_generations(
        self,
        now: datetime,
        *,
        period: timedelta = PERIOD,
        max_live: int = MAX_LIVE,
        straggler_age: timedelta = STRAGGLER_AGE,
    ) -> tuple[int | None, list[int], int]:
        """One pass of rotation (the module's docstring) as of `now`: the generation it opened (None if none),
        those it retired, and how many jobs it moved (stragglers and the backstop's)."""
        moved = 0
        async with self._connection() as db:
            opened = await db.fetchval(SWITCH, now, period, max_live)
            await db.execute(CLOSE)
            unwritten = await db.fetchval(UNWRITTEN)
            retired = [gen for gen in unwritten or () if await db.fetchval(RETIRE, gen) is not None]
            oldest = await db.fetchval(OLDEST_WHEN_FULL, max_live, now, straggler_age)
            if oldest is not None:
                for _ in range(MOVE_BATCHES):
                    count = int((await db.execute(MOVE, oldest, MOVE_BATCH)).split()[-1])
                    moved += count
                    if count < MOVE_BATCH:
                        break
            rescued_at = self._rescued_at
            if rescued_at is None or now < rescued_at or now - rescued_at >= RESCUE_EVERY:
                moved += int((await db.execute(RESCUE, MOVE_BATCH * MOVE_BATCHES)).split()[-1])
                self._rescued_at = now
        return opened, retired, moved
