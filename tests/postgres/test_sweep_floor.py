"""The janitor's lease-expiry sweep starts at its floor (`sweep_floor`): under a held xmin horizon it reads the
leases that ran out since its last sweep, not the dead versions of every lease ever ended — and still takes every
expired lease."""

from __future__ import annotations

from datetime import timedelta

from queueflow.clocks import TestClock
from queueflow.core.types import NewJob
from queueflow.stores.postgres import PostgresJobStore
from queueflow.stores.postgres.sql import LEASE_EXPIRED
from queueflow.stores.postgres.sweep_floor import BOTTOM_EVERY, MARGIN, SweepFloor

from tests import pg
from tests.moments import START, T
from tests.postgres.helpers import engine_on, statistics_frozen
from tests.postgres.horizon import counts, holding, literal, pushed_through


def test_a_floor_starts_at_the_bottom_then_follows_complete_sweeps() -> None:
    floor = SweepFloor()
    assert floor.start(START) is None  # a process's first sweep
    floor.swept(START, None, complete=True)
    at = START + timedelta(seconds=5)
    assert floor.start(at) == START - MARGIN
    floor.swept(at, START - MARGIN, complete=False)  # cut by its limit: the floor stays
    later = START + timedelta(seconds=10)
    assert floor.start(later) == START - MARGIN
    floor.swept(later, START - MARGIN, complete=True)
    assert floor.start(later + timedelta(seconds=5)) == later - MARGIN
    assert floor.start(START + timedelta(seconds=1)) is None  # the clock went back
    floor.swept(START + timedelta(seconds=1), None, complete=True)
    assert floor.start(START + BOTTOM_EVERY) == START + timedelta(seconds=1) - MARGIN
    assert floor.start(START + timedelta(seconds=1) + BOTTOM_EVERY) is None  # the backstop


async def test_a_lease_written_after_a_sweep_by_a_clock_behind_is_still_reclaimed(
    postgres_store: PostgresJobStore,
) -> None:
    clock = TestClock(START)
    janitor = engine_on(postgres_store, clock)
    # Another server, its clock almost MARGIN behind, leases a job for a second just after this janitor's sweep.
    behind = engine_on(postgres_store, TestClock(START - MARGIN + timedelta(seconds=1)), seed=12)
    await behind.enqueue(T, NewJob(task_name="t"))
    assert (await janitor.run_maintenance()).reclaimed == 0  # the floor: START - MARGIN
    assert len(await behind.lease(["default"], max_jobs=1, lease_seconds=1)) == 1
    clock.advance(5)
    assert (await janitor.run_maintenance()).reclaimed == 1


async def test_the_sweep_reads_what_ran_out_since_its_floor_not_every_lease_ended_under_a_hold(
    postgres_url: str,
) -> None:
    """Under a held horizon, N jobs went through before the janitor's last sweep: its next sweep reads as many index
    tuples after 20,000 as after 2,000 (from the bottom it reads every one of their dead running versions)."""
    read = {}
    plans = {}
    async with pg.connect(postgres_url) as db, holding(postgres_url), statistics_frozen(db):
        await pg.empty(postgres_url)
        await db.execute(f"PREPARE sweep(timestamptz, int, interval, timestamptz) AS {LEASE_EXPIRED}")
        pushed = 0
        for n in (2_000, 20_000):
            await pushed_through(db, n - pushed, start=START, tenant=T, numbered_from=pushed)
            pushed = n
            # Statistics of the rows as they are: the plan must not depend on what an earlier test of this
            # database left in pg_statistic, nor on when autovacuum last analyzed (the assertion shows the plans).
            await db.execute("ANALYZE queueflow.jobs")
            swept_at = START + timedelta(seconds=n / 1000 + 60)  # every pushed lease has run out
            floor = SweepFloor()
            floor.swept(swept_at, None, complete=True)
            now = swept_at + timedelta(seconds=5)
            args = [now, 100, timedelta(seconds=5), floor.start(now)]
            measured = await counts(
                db,
                f"EXECUTE sweep({', '.join(literal(a) for a in args)})",
                "SET LOCAL plan_cache_mode = force_generic_plan",
            )
            read[n] = measured.index_tuples
            plans[n] = measured.plan
    await pg.empty(postgres_url)
    assert read[20_000] <= read[2_000] + 10, (read, plans)
