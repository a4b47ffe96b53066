"""Each engine makes its ids from an id source of its own (`core.ids.IdSource`): the ids of one test never depend
on what an engine of an earlier test made in the same process."""

from __future__ import annotations

from datetime import UTC, datetime

from queueflow.core.types import NewJob
from queueflow.testing import TestClock, make_engine

MOMENT = datetime(2026, 3, 1, tzinfo=UTC)
JOB = NewJob(task_name="x")


async def test_two_engines_each_start_their_own_order() -> None:
    alone = (await make_engine(clock=TestClock(MOMENT), seed=2).enqueue("t", JOB)).job.id
    # Another engine makes ids at the same frozen millisecond first: the next engine's first id is still its own
    # draw, not one placed after the other's.
    await make_engine(clock=TestClock(MOMENT), seed=1).enqueue_many("t", [JOB] * 50)
    after = (await make_engine(clock=TestClock(MOMENT), seed=2).enqueue("t", JOB)).job.id
    assert after == alone


async def test_ids_increase_in_the_order_made_within_an_engine_under_a_frozen_clock() -> None:
    engine = make_engine(clock=TestClock(MOMENT), seed=3)
    made = [(await engine.enqueue("t", JOB)).job.id for _ in range(20)]
    made += [enqueued.job.id for enqueued in await engine.enqueue_many("t", [JOB] * 5)]
    made.append((await engine.enqueue("t", JOB)).job.id)
    assert made == sorted(made)
    assert len(set(made)) == len(made)
