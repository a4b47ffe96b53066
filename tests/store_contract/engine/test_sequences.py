"""Sequences (README.md, "Sequences") through the Engine, on every store, on the test clock: one job of a key at a
time in id order across queues, a retry keeping its place, priority only across sequences, `halt` holding the later
jobs (`blocked_by`) until a replay or a resume, `continue` and a cancel never holding, the list filter, and the
combination with flow control and `unique`."""

from __future__ import annotations

import pytest
from queueflow.clocks import TestClock
from queueflow.core.errors import InvalidState, NotFound, ValidationError
from queueflow.core.flow import QueueSettingsPatch
from queueflow.core.types import JobFilter, JobStatus, NewJob, OnFailure, SequenceRule, UniqueRule
from queueflow.engine import Engine

from tests.moments import T


def step(key: str = "acct-1", queue: str = "q", on_failure: OnFailure = OnFailure.CONTINUE, **fields: object) -> NewJob:
    return NewJob(
        task_name="post",
        queue_name=queue,
        sequence=SequenceRule(key=key, on_failure=on_failure),
        **fields,  # type: ignore[arg-type]
    )


async def leased_ids(engine: Engine, queues: list[str], max_jobs: int = 10) -> list[str]:
    return [job.id for job in await engine.lease(queues, max_jobs=max_jobs)]


async def test_one_job_of_a_sequence_runs_at_a_time_in_id_order_across_queues(engine: Engine) -> None:
    first = (await engine.enqueue(T, step(queue="a"))).job
    second = (await engine.enqueue(T, step(queue="b", priority=100))).job  # priority never overtakes within one
    third = (await engine.enqueue(T, step(queue="a"))).job
    other = (await engine.enqueue(T, step(key="acct-2", queue="b"))).job
    plain = (await engine.enqueue(T, NewJob(task_name="post", queue_name="a"))).job
    assert first.sequence_key == "acct-1"
    assert plain.sequence_key is None
    assert sorted(await leased_ids(engine, ["a", "b"])) == sorted([first.id, other.id, plain.id])
    assert await leased_ids(engine, ["a", "b"]) == []  # the first runs: nothing behind it starts
    held = await engine.get_job(T, first.id)
    assert held.lease_token is not None
    await engine.complete(first.id, held.lease_token)
    assert await leased_ids(engine, ["a", "b"]) == [second.id]
    assert await leased_ids(engine, ["a"]) == []
    running = await engine.get_job(T, second.id)
    assert running.lease_token is not None
    await engine.complete(second.id, running.lease_token)
    assert await leased_ids(engine, ["a"]) == [third.id]


async def test_one_claim_takes_only_the_head_of_each_sequence(engine: Engine) -> None:
    jobs = [(await engine.enqueue(T, step(key=f"k{i % 3}"))).job for i in range(9)]
    assert sorted(await leased_ids(engine, ["q"], max_jobs=9)) == sorted(job.id for job in jobs[:3])


async def test_a_retry_keeps_its_place(engine: Engine, clock: TestClock) -> None:
    first = (await engine.enqueue(T, step(max_retries=2))).job
    second = (await engine.enqueue(T, step())).job
    [leased] = await engine.lease(["q"])
    assert leased.lease_token is not None
    retrying = await engine.fail(first.id, leased.lease_token, "boom")
    assert retrying.status is JobStatus.RETRYING
    assert await leased_ids(engine, ["q"]) == []  # not due yet, and the second waits behind it
    clock.advance(3600)
    assert await leased_ids(engine, ["q"]) == [first.id]
    again = await engine.get_job(T, first.id)
    assert again.lease_token is not None
    await engine.complete(first.id, again.lease_token)
    assert await leased_ids(engine, ["q"]) == [second.id]


async def dead(engine: Engine, job_id: str) -> None:
    [leased] = await engine.lease(["q"])
    assert leased.id == job_id
    assert leased.lease_token is not None
    assert (await engine.fail(job_id, leased.lease_token, "bad", retryable=False)).status is JobStatus.DEAD_LETTER


async def test_continue_lets_the_next_job_run_after_a_dead_one(engine: Engine) -> None:
    first = (await engine.enqueue(T, step(max_retries=0))).job
    second = (await engine.enqueue(T, step())).job
    await dead(engine, first.id)
    assert (await engine.get_job(T, second.id)).blocked_by is None
    assert await leased_ids(engine, ["q"]) == [second.id]


async def test_halt_holds_every_later_job_until_the_sequence_is_resumed(engine: Engine) -> None:
    first = (await engine.enqueue(T, step(on_failure=OnFailure.HALT, max_retries=0))).job
    second = (await engine.enqueue(T, step())).job
    third = (await engine.enqueue(T, step(queue="other"))).job
    other = (await engine.enqueue(T, step(key="acct-2"))).job
    await dead(engine, first.id)
    assert await leased_ids(engine, ["q", "other"]) == [other.id]
    assert [(await engine.get_job(T, job.id)).blocked_by for job in (second, third)] == [first.id, first.id]
    listed = {job.id: job.blocked_by for job in (await engine.list_jobs(T, JobFilter(sequence_key="acct-1"))).items}
    assert listed == {first.id: None, second.id: first.id, third.id: first.id}
    with pytest.raises(NotFound):
        await engine.resume_sequence(T, "no-such-key")
    with pytest.raises(InvalidState):
        await engine.resume_sequence(T, "acct-2")  # nothing blocks it
    with pytest.raises(NotFound):
        await engine.resume_sequence("another-tenant", "acct-1")
    await engine.resume_sequence(T, "acct-1")
    assert (await engine.get_job(T, second.id)).blocked_by is None
    assert await leased_ids(engine, ["q", "other"]) == [second.id]
    with pytest.raises(InvalidState):
        await engine.resume_sequence(T, "acct-1")  # resumed already
    assert (await engine.get_job(T, first.id)).status is JobStatus.DEAD_LETTER


async def test_a_replayed_halting_job_runs_again_first_in_its_place(engine: Engine) -> None:
    first = (await engine.enqueue(T, step(on_failure=OnFailure.HALT, max_retries=0))).job
    second = (await engine.enqueue(T, step())).job
    await dead(engine, first.id)
    assert await leased_ids(engine, ["q"]) == []
    await engine.retry_job(T, first.id)
    assert (await engine.get_job(T, second.id)).blocked_by is None  # waits behind a pending job, not a halt
    assert await leased_ids(engine, ["q"]) == [first.id]
    assert await leased_ids(engine, ["q"]) == []
    # It dies again: it halts again (its own on_failure), even after an earlier resume would have freed it.
    replayed = await engine.get_job(T, first.id)
    assert replayed.lease_token is not None
    await engine.fail(first.id, replayed.lease_token, "bad again", retryable=False)
    assert (await engine.get_job(T, second.id)).blocked_by == first.id
    assert await leased_ids(engine, ["q"]) == []


async def test_a_replayed_earlier_job_never_overlaps_a_later_one_running(engine: Engine) -> None:
    first = (await engine.enqueue(T, step(max_retries=0))).job
    second = (await engine.enqueue(T, step())).job
    await dead(engine, first.id)
    assert await leased_ids(engine, ["q"]) == [second.id]
    await engine.retry_job(T, first.id)
    assert await leased_ids(engine, ["q"]) == []  # the second still runs
    running = await engine.get_job(T, second.id)
    assert running.lease_token is not None
    await engine.complete(second.id, running.lease_token)
    assert await leased_ids(engine, ["q"]) == [first.id]


async def test_a_cancelled_job_never_holds_its_sequence(engine: Engine) -> None:
    first = (await engine.enqueue(T, step(on_failure=OnFailure.HALT))).job
    second = (await engine.enqueue(T, step())).job
    await engine.cancel_job(T, first.id)
    assert await leased_ids(engine, ["q"]) == [second.id]


async def test_a_sequence_waits_for_its_queue_limits_and_combines_with_unique(engine: Engine) -> None:
    await engine.configure_queue(T, "q", QueueSettingsPatch(paused=True))
    first = (await engine.enqueue(T, step())).job
    second = (await engine.enqueue(T, step(queue="free"))).job
    assert await leased_ids(engine, ["q", "free"]) == []  # the head is paused: the next one waits behind it
    await engine.configure_queue(T, "q", QueueSettingsPatch(paused=False))
    assert await leased_ids(engine, ["q", "free"]) == [first.id]
    # unique decides which jobs exist; the sequence, when the one that exists runs.
    rule = UniqueRule(key="u")
    kept = (await engine.enqueue(T, step(key="s", queue="free", unique=rule))).job
    repeat = await engine.enqueue(T, step(key="s", queue="free", unique=rule))
    assert not repeat.created
    assert repeat.job.id == kept.id
    assert sorted(await leased_ids(engine, ["free"])) == [kept.id]
    assert second.id not in await leased_ids(engine, ["free"])


async def test_a_key_of_1_to_255_characters(engine: Engine) -> None:
    for key in ("", "k" * 256):
        with pytest.raises(ValidationError) as raised:
            await engine.enqueue(T, step(key=key))
        assert [error.loc for error in raised.value.errors] == [("sequence", "key")]
    with pytest.raises(ValidationError) as batch:
        await engine.enqueue_many(T, [step(), step(key="")])
    assert [error.loc for error in batch.value.errors] == [("jobs", 1, "sequence", "key")]
    assert (await engine.enqueue(T, step(key="k" * 255))).job.sequence_key == "k" * 255
