"""The generations of the claim's index (migration 0022, `stores.postgres.generations`): a generation is retired only
when no writer can still add a ready job to it and none is left in it, and a job that becomes ready again after its
generation was retired is written into the current one (the jobs_written_ready trigger), whichever path made it
ready — the store's, or a writer's that does not know the column (release 0.2.0's)."""

from __future__ import annotations

from datetime import timedelta

import asyncpg
import pytest
from queueflow.clocks import TestClock
from queueflow.core.types import HeldLease, NewJob, SequenceRule
from queueflow.engine import Engine
from queueflow.stores.postgres import PostgresJobStore
from queueflow.stores.postgres.generations import MAX_LIVE, STRAGGLER_AGE

from tests import pg
from tests.moments import START, T
from tests.postgres.helpers import engine_on
from tests.postgres.horizon import holding

NOW = timedelta(0)


async def live(db: asyncpg.Connection) -> set[int]:
    return {row["gen"] for row in await db.fetch("SELECT gen FROM queueflow.claim_generations")}


async def gen_of(db: asyncpg.Connection, job_id: str) -> int:
    gen: int = await db.fetchval("SELECT gen FROM queueflow.jobs WHERE id = $1", job_id)
    return gen


async def rotated(store: PostgresJobStore, times: int = 2) -> None:
    """Passes of the janitor's rotation, each opening a generation (a period of 0)."""
    for _ in range(times):
        await store.rotate_generations(START, period=NOW)


async def test_a_generation_lives_while_a_writer_that_began_before_its_close_is_open_and_while_it_holds_a_ready_job(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    """The writer is release 0.2.0's insert (no gen: the column's default), on a connection of its own, its
    transaction open across rotations; an idle-in-transaction connection holds the xmin horizon meanwhile and holds
    up nothing."""
    async with pg.connect(postgres_url) as db, pg.connect(postgres_url) as writer, holding(postgres_url):
        await writer.execute("BEGIN")
        await writer.execute(
            """INSERT INTO queueflow.jobs (id, tenant_id, queue_name, task_name, config, scheduled_at, created_at)
               VALUES ('job_old_writer', $1, 'default', 't', '{}', $2, $2)""",
            T,
            START,
        )
        written = max(await live(db))
        await rotated(postgres_store, 3)
        assert written in await live(db)  # its writer began before the close and is still open
        await writer.execute("COMMIT")
        await rotated(postgres_store)
        assert written in await live(db)  # it holds a ready job
        assert await gen_of(db, "job_old_writer") == written
        (leased,) = await engine_on(postgres_store, TestClock(START)).lease(["default"])
        assert leased.id == "job_old_writer"
        await rotated(postgres_store)
        assert written not in await live(db)


async def test_a_0_2_0_update_back_to_pending_is_written_into_the_current_generation(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    """Release 0.2.0 releases and reclaims with UPDATEs that do not know `gen`: the trigger writes it."""
    engine = engine_on(postgres_store, TestClock(START))
    (job,) = await engine.enqueue_many(T, [NewJob(task_name="t")])
    (leased,) = await engine.lease(["default"])
    async with pg.connect(postgres_url) as db:
        first = await gen_of(db, leased.id)
        await rotated(postgres_store)
        assert first not in await live(db)
        await db.execute("UPDATE queueflow.jobs SET status = 'pending', lease_token = NULL WHERE id = $1", leased.id)
        assert await gen_of(db, leased.id) == max(await live(db))
    assert [again.id for again in await engine.lease(["default"])] == [job.job.id]


async def made_ready_again(path: str, engine: Engine, clock: TestClock, store: PostgresJobStore) -> str:
    """A job leased (or held behind its sequence) while its generation is retired, then made ready again by `path`;
    its id."""
    if path == "sequence wake":
        first, waiting = await engine.enqueue_many(
            T, [NewJob(task_name="t", sequence=SequenceRule(key="k")) for _ in range(2)]
        )
        (leased,) = await engine.lease(["default"])
        assert leased.id == first.job.id
        await rotated(store)
        await engine.complete(leased.id, leased.lease_token or "")
        return waiting.job.id
    await engine.enqueue_many(T, [NewJob(task_name="t", max_retries=3)])
    (job,) = await engine.lease(["default"], lease_seconds=1)
    token = job.lease_token or ""
    await rotated(store)
    if path == "release":
        await engine.release([HeldLease(job.id, token)])
    elif path == "retry":
        await engine.fail(job.id, token, "boom", retry_after_seconds=30)
    elif path == "expiry reclaim":
        clock.advance(5)
        await engine.run_maintenance()
    elif path == "replay":
        await engine.fail(job.id, token, "boom", retryable=False)
        await engine.retry_job(T, job.id)
    return job.id


@pytest.mark.parametrize("path", ["release", "retry", "expiry reclaim", "replay", "sequence wake"])
async def test_a_job_made_ready_again_after_its_generation_was_retired_is_claimed(
    postgres_url: str, postgres_store: PostgresJobStore, path: str
) -> None:
    clock = TestClock(START)
    engine = engine_on(postgres_store, clock)
    async with pg.connect(postgres_url) as db:
        before = max(await live(db))
        job_id = await made_ready_again(path, engine, clock, postgres_store)
        assert before not in await live(db)  # retired while the job was running or waiting
        assert await gen_of(db, job_id) in await live(db)
    clock.advance(3600)  # past any backoff
    assert [job.id for job in await engine.lease(["default"])] == [job_id]


async def test_a_ready_job_left_in_a_retired_generation_is_moved_to_the_current_one_by_the_backstop(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    """A REPEATABLE READ transaction that took its snapshot before a switch and inserts a job after the generation
    it sees as current was retired (it held no lock on the jobs table meanwhile) writes that retired generation: no
    claim reads it, until the backstop of a process's first rotation moves it."""
    engine = engine_on(postgres_store, TestClock(START))
    async with pg.connect(postgres_url) as db, pg.connect(postgres_url) as writer:
        await writer.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        seen = await writer.fetchval("SELECT max(gen) FROM queueflow.claim_generations")
        await rotated(postgres_store, 3)
        assert seen not in await live(db)
        await writer.execute(
            """INSERT INTO queueflow.jobs (id, tenant_id, queue_name, task_name, config, scheduled_at, created_at)
               VALUES ('job_late_writer', $1, 'default', 't', '{}', $2, $2)""",
            T,
            START,
        )
        await writer.execute("COMMIT")
        assert await gen_of(db, "job_late_writer") == seen
        assert await engine.lease(["default"]) == []  # no claim reads a retired generation
        async with PostgresJobStore.from_url(postgres_url, pool_size=1) as starting:
            await starting.rotate_generations(START)
        assert await gen_of(db, "job_late_writer") in await live(db)
    assert [leased.id for leased in await engine.lease(["default"])] == ["job_late_writer"]


async def test_the_sql_enqueue_parks_a_delayed_job_in_generation_0_and_writes_a_due_one_into_the_current_one(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    async with pg.connect(postgres_url) as db:
        due = await db.fetchval("SELECT queueflow.enqueue(tenant_id => $1, task_name => 't')", T)
        later = await db.fetchval("SELECT queueflow.enqueue(tenant_id => $1, task_name => 't', delay_seconds => 60)", T)
        assert (await gen_of(db, due), await gen_of(db, later)) == (max(await live(db)), 0)


async def test_the_oldest_generation_s_ready_jobs_move_to_generation_0_once_every_live_one_holds_some_and_it_is_old(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    """Stragglers (`generations` step 4): with MAX_LIVE generations live, each holding a ready job, the switch waits
    and nothing moves while the oldest is younger than STRAGGLER_AGE (a backlog being worked off is not rewritten);
    from that age on its ready jobs move to generation 0, where the claims still find them."""
    engine = engine_on(postgres_store, TestClock(START))
    first: str | None = None
    async with pg.connect(postgres_url) as db:
        for _ in range(MAX_LIVE):
            await rotated(postgres_store, 1)  # a generation opened at START, then a job written into it
            (job,) = await engine.enqueue_many(T, [NewJob(task_name="t")])
            first = first or job.job.id
        assert first is not None
        oldest = await gen_of(db, first)
        full = await live(db)
        assert len(full - {0}) == MAX_LIVE
        assert oldest in full
        almost = START + STRAGGLER_AGE - timedelta(milliseconds=1)
        assert await postgres_store.rotate_generations(almost, period=NOW) == (None, [], 0)
        assert await gen_of(db, first) == oldest
        assert await live(db) == full
        opened, _, moved = await postgres_store.rotate_generations(START + STRAGGLER_AGE, period=NOW)
        assert (opened, moved) == (None, 1)
        assert await gen_of(db, first) == 0
    leased = await engine.lease(["default"], max_jobs=MAX_LIVE)
    assert first in {job.id for job in leased}
    assert len(leased) == MAX_LIVE
