from __future__ import annotations

from datetime import timedelta

import pytest
from queueflow.clocks import TestClock
from queueflow.core.errors import ValidationError
from queueflow.core.types import JobFilter, JobStatus, NewJob, QueueStats
from queueflow.engine import Engine

from tests.moments import T


async def test_list_is_newest_first_and_pages_with_a_cursor(engine: Engine, clock: TestClock) -> None:
    ids = []
    for i in range(7):
        ids.append((await engine.enqueue(T, NewJob(task_name=f"t{i}"))).job.id)
        if i % 2:
            clock.advance(seconds=1)  # some rows share a created_at; the id breaks the tie
    seen, cursor = [], None
    while True:
        page = await engine.list_jobs(T, limit=3, cursor=cursor)
        seen += [job.id for job in page.items]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    expected = [job.id for job in sorted([await engine.get_job(T, i) for i in ids], key=lambda j: (j.created_at, j.id))]
    assert seen == expected[::-1]


async def test_exactly_full_last_page_has_no_cursor(engine: Engine) -> None:
    await engine.enqueue_many(T, [NewJob(task_name="t")] * 4)
    first = await engine.list_jobs(T, limit=2)
    second = await engine.list_jobs(T, limit=2, cursor=first.next_cursor)
    assert len(second.items) == 2
    assert second.next_cursor is None


async def test_list_filters(engine: Engine, clock: TestClock) -> None:
    a = (await engine.enqueue(T, NewJob(task_name="email", queue_name="mail", metadata={"c": {"id": 1, "x": 2}}))).job
    b = (await engine.enqueue(T, NewJob(task_name="resize", metadata={"c": {"id": 2}, "tags": ["a", "b"]}))).job
    await engine.enqueue("other", NewJob(task_name="email", queue_name="mail", metadata={"c": {"id": 1}}))
    (running,) = await engine.lease(["default"])

    async def ids(**where: object) -> set[str]:
        return {job.id for job in (await engine.list_jobs(T, JobFilter(**where))).items}  # type: ignore[arg-type]

    assert await ids() == {a.id, b.id}
    assert await ids(queue_name="mail") == {a.id}
    assert await ids(task_name="resize") == {b.id}
    assert await ids(status=JobStatus.RUNNING) == {running.id} == {b.id}
    assert await ids(status=JobStatus.PENDING) == {a.id}
    assert await ids(metadata={"c": {"id": 1}}) == {a.id}
    assert await ids(metadata={"tags": ["b"]}) == {b.id}
    assert await ids(metadata={"c": {"id": 3}}) == set()
    assert await ids(metadata={}) == {a.id, b.id}
    assert await ids(workflow_id="wf_nope") == set()


@pytest.mark.parametrize("limit", [0, 501])
async def test_list_limit_is_bounded(engine: Engine, limit: int) -> None:
    with pytest.raises(ValidationError):
        await engine.list_jobs(T, limit=limit)


@pytest.mark.parametrize("cursor", ["garbage", "", "!!!", "bm90LWEtY3Vyc29y"])
async def test_a_foreign_cursor_is_a_validation_error(engine: Engine, cursor: str) -> None:
    with pytest.raises(ValidationError):
        await engine.list_jobs(T, cursor=cursor)


async def test_queue_stats_are_disjoint_by_state(engine: Engine, clock: TestClock) -> None:
    await engine.enqueue_many(T, [NewJob(task_name=f"t{i}") for i in range(6)])
    await engine.enqueue(T, NewJob(task_name="later", delay_seconds=600))
    await engine.enqueue(T, NewJob(task_name="elsewhere", queue_name="other"))
    clock.advance(seconds=10)
    leased = await engine.lease(["default"], max_jobs=6)
    await engine.enqueue("someone-else", NewJob(task_name="not-mine"))
    await engine.complete(leased[0].id, leased[0].lease_token or "", None)
    await engine.fail(leased[1].id, leased[1].lease_token or "", "x", retryable=False)
    await engine.fail(leased[2].id, leased[2].lease_token or "", "x", retry_after_seconds=60)
    await engine.fail(leased[3].id, leased[3].lease_token or "", "x", retry_after_seconds=0)
    await engine.cancel_job(T, leased[4].id)
    clock.advance(seconds=2)  # leased[5] stays running; leased[3]'s retry is due, leased[2]'s is not
    stats = await engine.queue_stats(T)
    assert stats == [
        QueueStats(
            name="default",
            pending=1,
            scheduled=2,
            running=1,
            retrying=2,
            completed=1,
            dead_letter=1,
            cancelled=1,
            oldest_pending_age_seconds=2.0,
        ),
        QueueStats(
            name="other",
            pending=1,
            scheduled=0,
            running=0,
            retrying=0,
            completed=0,
            dead_letter=0,
            cancelled=0,
            oldest_pending_age_seconds=12.0,
        ),
    ]
    clock.advance(timedelta(minutes=10).total_seconds())
    (default, _) = await engine.queue_stats(T)
    assert (default.pending, default.scheduled, default.retrying) == (3, 0, 2)


async def test_queue_stats_with_nothing_claimable(engine: Engine) -> None:
    await engine.enqueue(T, NewJob(task_name="t", delay_seconds=5))
    (stats,) = await engine.queue_stats(T)
    assert stats.oldest_pending_age_seconds is None
    assert (stats.pending, stats.scheduled) == (0, 1)
    assert await engine.queue_stats("nobody") == []
