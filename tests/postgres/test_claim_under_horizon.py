"""A claim's cost does not grow with dead tuples (issue 42): under a held xmin horizon, after N jobs went through
(enqueue, lease, completion), a claim and the idle poll read as many index tuples and buffers after 8,000 as after
2,000 — counts, not time (`tests/postgres/horizon.py`). Without generations both walked every dead entry the hold
pinned at the front of the claim index's range: the claim twice (the tenant probe and the share), 2 index tuples
per job pushed through; the idle poll once. With them (migration 0022, `stores.postgres.generations`) they read the
live generations only, which the janitor rotates as it sweeps (here after every batch, as every few seconds of
enqueues: a generation of 500 jobs). What they still read is bounded by the live generations' writes; the 10 jobs
enqueued for each measurement are then completed, so that they do not stay as stragglers of their generation (whose
dead entries every claim walks until rotation moves them, `generations`' step 4: bounded, and not measured here).

The rotation's own probe (`generations.RETIRE`: does a closed generation still hold a ready job?) reads that one
generation's entries, under its generic plan as the store's prepared statement runs it: written as a join over every
closed generation, that plan scanned the whole index and filtered the generation row by row, every dead entry of the
hold each pass (23,500 buffers a pass after 4 minutes at 150 jobs/s)."""

from __future__ import annotations

from datetime import timedelta

from queueflow.clocks import TestClock
from queueflow.core.types import NewJob
from queueflow.stores.postgres import PostgresJobStore
from queueflow.stores.postgres import schema as pgschema
from queueflow.stores.postgres.claim.unrestricted_sql import DUE_ANY
from queueflow.stores.postgres.generations import RETIRE

from tests import pg
from tests.moments import START, T
from tests.postgres.helpers import engine_on
from tests.postgres.horizon import Counts, claim_of, counts, holding, literal, pushed_id, pushed_through

ROUNDS = (2_000, 8_000)
GENERATION = 500


async def test_a_claim_and_the_idle_poll_read_as_much_after_8_000_jobs_as_after_2_000_under_a_held_horizon() -> None:
    read: dict[int, dict[str, Counts]] = {}
    async with (
        pg.fresh_database() as url,
        PostgresJobStore.from_url(url, pool_size=2) as store,
        pg.connect(url) as db,
    ):
        await pgschema.upgrade_async(url)
        await db.execute(f"PREPARE retire(int) AS {RETIRE}")
        async with holding(url):
            pushed = 0
            for n in ROUNDS:
                while pushed < n:
                    await pushed_through(db, GENERATION, start=START, tenant=T, numbered_from=pushed)
                    pushed += GENERATION
                    await store.rotate_generations(START, period=timedelta(0))
                await db.execute("ANALYZE queueflow.jobs, queueflow.claim_generations")  # as autovacuum would
                now = START + timedelta(seconds=pushed / 1000 + 60)
                generation = await db.fetchval("SELECT gen FROM queueflow.jobs WHERE id = $1", pushed_id(pushed - 1))
                await engine_on(store, TestClock(now), seed=n).enqueue_many(T, [NewJob(task_name="t")] * 10)
                read[n] = {
                    "claim": await counts(db, claim_of(1, now)),
                    "due_any": await counts(
                        db, DUE_ANY.replace("$1", literal(["default"])).replace("$2", literal(now))
                    ),
                    # The generation of the last batch pushed through (its 500 completed jobs' entries, dead), as
                    # the pass finds it: closed and not yet retired.
                    "retire": await counts(
                        db,
                        f"EXECUTE retire({generation})",
                        "SET LOCAL plan_cache_mode = force_generic_plan",
                        f"INSERT INTO queueflow.claim_generations (gen, opened_at, closed_at) VALUES ({generation}, "
                        f"{literal(now)}, {literal(now)}) ON CONFLICT (gen) DO NOTHING",
                    ),
                }
                await db.execute(
                    "UPDATE queueflow.jobs SET status = 'completed', completed_at = $1 WHERE status = 'pending'", now
                )
    for name in ("claim", "due_any", "retire"):
        before, after = read[ROUNDS[0]][name], read[ROUNDS[-1]][name]
        summary = {n: (read[n][name].index_tuples, read[n][name].buffers) for n in ROUNDS}
        assert after.index_tuples <= before.index_tuples * 1.5 + 100, (name, summary)
        assert after.buffers <= before.buffers * 1.5 + 100, (name, summary)
