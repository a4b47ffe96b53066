"""Sequences on PostgreSQL (README.md, "Sequences"): concurrent claimers over several queues never run two jobs of
one sequence at once and run each sequence in id order, a retry keeping its place; `queueflow.enqueue(...
sequence => ...)` as the HTTP route checks it; and the claim's probe of a job's sequence is an index probe.

How the concurrency test was checked to fail: with `claim.fair_sql.SEQUENCE_FREE` made `true` and the store claiming
in its transaction from the code's CLAIM (CLAIM_FUNCTION renamed to a function that does not exist), it saw
overlaps and jobs out of order in every run."""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest
from queueflow.clocks import TestClock
from queueflow.core.types import JobStatus, NewJob, OnFailure, SequenceRule
from queueflow.stores.postgres import PostgresJobStore
from queueflow.stores.postgres.claim.function import CLAIM_FUNCTION
from queueflow.stores.postgres.claim.unrestricted_sql import CLAIM

from tests import pg
from tests.moments import START, T
from tests.postgres.helpers import engine_on

QUEUES = ["q0", "q1", "q2"]


async def test_concurrent_claimers_run_each_sequence_one_job_at_a_time_in_id_order(
    postgres_store: PostgresJobStore,
) -> None:
    """6 sequences of 25 jobs spread over 3 queues (each job's priority at random, to tempt the claim to overtake),
    with 50 jobs of no sequence, drained by 6 concurrent claimers taking up to 4 jobs a claim; every fifth job fails
    once and is retried at once. No sequence ever has two jobs running, each runs its jobs in id order (the retried
    one again before the next), and every job completes."""
    clock = TestClock(START)
    enqueuer = engine_on(postgres_store, clock)
    jobs = [
        NewJob(task_name="t", queue_name=QUEUES[n % 3], priority=(n * 7) % 5,
               sequence=SequenceRule(key=f"acct-{n % 6}"), max_retries=1)
        for n in range(150)
    ] + [NewJob(task_name="t", queue_name=QUEUES[n % 3], priority=3) for n in range(50)]  # fmt: skip
    made = []
    for start in range(0, len(jobs), 20):  # several batches, several milliseconds of ids
        made += [result.job for result in await enqueuer.enqueue_many(T, jobs[start : start + 20])]
        clock.advance(seconds=0.001)
    expected: dict[str, list[str]] = defaultdict(list)
    for job in sorted(made, key=lambda job: job.id):
        if job.sequence_key is not None:
            expected[job.sequence_key].append(job.id)
    running: dict[str, str] = {}
    started: dict[str, list[str]] = defaultdict(list)
    failed_once: set[str] = set()
    problems: list[str] = []
    lessees = [engine_on(postgres_store, clock, seed=30 + n) for n in range(6)]

    async def work(engine_index: int) -> None:
        engine = lessees[engine_index]
        idle = 0
        while idle < 3:
            batch = await engine.lease(QUEUES, max_jobs=4)
            idle = 0 if batch else idle + 1
            for job in batch:
                key = job.sequence_key
                if key is not None:
                    if key in running:
                        problems.append(f"{job.id} started while {running[key]} of {key} ran")
                    running[key] = job.id
                    started[key].append(job.id)
            await asyncio.sleep(0)  # let the other claimers claim while these run
            for job in batch:
                assert job.lease_token is not None
                key = job.sequence_key
                if key is not None:
                    running.pop(key, None)
                position = expected[key].index(job.id) if key is not None else 0
                if key is not None and position % 5 == 0 and job.id not in failed_once:
                    failed_once.add(job.id)
                    await engine.fail(job.id, job.lease_token, "once", retry_after_seconds=0)
                else:
                    await engine.complete(job.id, job.lease_token)
            await asyncio.sleep(0)

    await asyncio.gather(*(work(n) for n in range(6)))
    assert problems == []
    for key, ids in expected.items():
        # In id order; a job that failed once runs twice in a row, in its place.
        assert [job_id for n, job_id in enumerate(started[key]) if n == 0 or started[key][n - 1] != job_id] == ids
    everything = await postgres_store.job_get_many([job.id for job in made])
    assert len(everything) == 200
    assert {job.status for job in everything.values()} == {JobStatus.COMPLETED}


async def test_the_sql_function_takes_a_sequence_and_checks_it(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    async with pg.connect(postgres_url) as connection:
        first = await connection.fetchval(
            """SELECT queueflow.enqueue(tenant_id => $1, task_name => 't',
                                        sequence => '{"key": "acct-1", "on_failure": "halt"}')""",
            T,
        )
        second = await connection.fetchval(
            """SELECT queueflow.enqueue(tenant_id => $1, task_name => 't', sequence => '{"key": "acct-1"}')""", T
        )
        # A call of the signature before it still works, without a sequence.
        plain = await connection.fetchval("SELECT queueflow.enqueue($1, 't', '{}', 'default', 0)", T)
        for sequence, column in (
            ('{"key": ""}', "sequence.key"),
            ('{"key": 5}', "sequence.key"),
            ('{"on_failure": "halt"}', "sequence.key"),
            ('{"key": "k", "on_failure": "stop"}', "sequence.on_failure"),
            ('{"key": "k", "order": 1}', "sequence.order"),
            ('"k"', "sequence"),
        ):
            with pytest.raises(asyncpg.InvalidParameterValueError) as raised:
                await connection.fetchval(
                    "SELECT queueflow.enqueue(tenant_id => $1, task_name => 't', sequence => $2::jsonb)",
                    T,
                    sequence,
                )
            assert (raised.value.sqlstate, raised.value.column_name) == ("22023", column)
    rows = await postgres_store.job_get_many([first, second, plain])
    assert [(rows[i].sequence_key, rows[i].sequence_on_failure, rows[i].sequence_halt) for i in (first, second, plain)]\
        == [("acct-1", "halt", True), ("acct-1", "continue", False), (None, None, False)]  # fmt: skip
    assert first < second
    # The function's ids and times are the database's: claimed as of a minute after them.
    claimed = await engine_on(postgres_store, TestClock(datetime.now(UTC) + timedelta(minutes=1))).lease(
        ["default"], max_jobs=10
    )
    assert sorted(job.id for job in claimed) == sorted([first, plain])


async def test_the_claims_probe_of_a_sequence_is_an_index_probe(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    """20,000 jobs in 200 sequences: the claim's test of a job's sequence reads idx_jobs_sequence, never the table
    by a scan."""
    await engine_on(postgres_store, TestClock(START)).enqueue_many(
        T, [NewJob(task_name="t", sequence=SequenceRule(key=f"k{n % 200}")) for n in range(1000)]
    )
    async with pg.connect(postgres_url) as connection:
        await connection.execute(
            """
            INSERT INTO queueflow.jobs (id, tenant_id, queue_name, task_name, config, scheduled_at, created_at,
                                        sequence_key, sequence_halt)
            SELECT 'job_bulk_' || lpad(i::text, 7, '0'), 'tenant-a', 'default', 't',
                   '{"backoff": {"strategy": "fixed", "base_seconds": 1, "max_seconds": 1, "jitter": false}}',
                   $1::timestamptz, $1::timestamptz, 'k' || (i % 200), false
              FROM generate_series(1, 19000) AS i
            """,
            START,
        )
        await connection.execute("ANALYZE queueflow.jobs")
        claimed = await connection.fetch(
            f"SELECT id FROM {CLAIM_FUNCTION}('{{default}}', 100, $1, '30 s', NULL, '{{default}}')", START
        )
    assert len(claimed) == 100
    # The function's plan is opaque to EXPLAIN: its statement's, prepared as the function plans it, is read.
    async with pg.connect(postgres_url) as connection:
        await connection.execute("SET plan_cache_mode = force_generic_plan")
        await connection.execute(f"PREPARE c(text[], int, timestamptz, interval, text[], text[]) AS {CLAIM}")
        explained = await connection.fetchval(
            f"EXPLAIN (FORMAT JSON) EXECUTE c('{{default}}', 100, '{START.isoformat()}', '30 s', NULL, '{{default}}')"
        )
    plan = json.loads(explained)[0]["Plan"]
    names = {node.get("Index Name") for node in _nodes(plan)}
    assert {"idx_jobs_sequence", "idx_jobs_claim_gen"} <= names, [
        (n.get("Index Name"), n.get("Index Cond"), n.get("Filter")) for n in _nodes(plan) if "Index Name" in n
    ]
    assert not [
        node for node in _nodes(plan) if node["Node Type"] == "Seq Scan" and node.get("Relation Name") == "jobs"
    ]


def _nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [plan, *(node for child in plan.get("Plans", []) for node in _nodes(child))]


async def test_a_finished_job_wakes_the_queue_of_its_sequences_next_job(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    """The next job of a sequence may wait in another queue: a lease parked there learns at once (NOTIFY
    queueflow_work with that queue's name), not on the safety poll."""
    engine = engine_on(postgres_store, TestClock(START))
    first = (await engine.enqueue(T, NewJob(task_name="t", queue_name="a", sequence=SequenceRule(key="k")))).job
    await engine.enqueue(T, NewJob(task_name="t", queue_name="b", sequence=SequenceRule(key="k")))
    heard: asyncio.Queue[str] = asyncio.Queue()
    async with pg.connect(postgres_url) as listener:
        await listener.add_listener("queueflow_work", lambda *args: heard.put_nowait(args[-1]))
        [leased] = await engine.lease(["a", "b"])
        assert leased.id == first.id
        await engine.complete(first.id, leased.lease_token or "")
        assert await asyncio.wait_for(heard.get(), 5.0) == "b"
    assert [job.queue_name for job in await engine.lease(["a", "b"])] == ["b"]


async def _waiting(postgres_url: str, *job_ids: str) -> list[bool | None]:
    async with pg.connect(postgres_url) as connection:
        rows = await connection.fetch(
            "SELECT id, sequence_waiting FROM queueflow.jobs WHERE id = ANY($1::text[])", list(job_ids)
        )
    flags = {row["id"]: row["sequence_waiting"] for row in rows}
    return [flags[job_id] for job_id in job_ids]


async def test_a_job_behind_a_holding_one_waits_out_of_the_claim_index_until_it_may_start(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    """Migration 0021's flag: a job enqueued behind a holding job of its sequence is written waiting (left out of
    idx_jobs_claim_ready), and the sequence's first unstarted job is woken whenever the job before it stops holding — by
    a resume past a halt, a completion, a cancel — while a job that is not first changes nothing by ending; a job
    cancelled while it waited and replayed later is not left waiting."""
    engine = engine_on(postgres_store, TestClock(START))
    rule = SequenceRule(key="acct", on_failure=OnFailure.HALT)
    a, b, c, d = [
        result.job.id
        for result in await engine.enqueue_many(T, [NewJob(task_name="t", sequence=rule, max_retries=0)] * 4)
    ]
    assert await _waiting(postgres_url, a, b, c, d) == [False, True, True, True]
    [leased] = await engine.lease(["default"], max_jobs=10)
    assert leased.id == a
    assert leased.lease_token is not None
    await engine.fail(a, leased.lease_token, "boom")  # dead, and it halts the sequence
    assert await _waiting(postgres_url, b, c, d) == [True, True, True]
    assert await engine.lease(["default"], max_jobs=10) == []
    await engine.resume_sequence(T, "acct")
    assert await _waiting(postgres_url, b, c, d) == [False, True, True]
    [leased] = await engine.lease(["default"], max_jobs=10)
    assert leased.id == b
    assert leased.lease_token is not None
    await engine.cancel_job(T, d)  # not first: wakes nothing
    assert await _waiting(postgres_url, c) == [True]
    await engine.complete(b, leased.lease_token)
    assert await _waiting(postgres_url, c) == [False]
    e = (await engine.enqueue(T, NewJob(task_name="t", sequence=rule))).job.id
    assert await _waiting(postgres_url, e) == [True]
    await engine.cancel_job(T, c)  # first and unstarted: its end wakes the next
    assert await _waiting(postgres_url, e) == [False]
    [leased] = await engine.lease(["default"], max_jobs=10)
    assert leased.id == e
    assert leased.lease_token is not None
    await engine.complete(e, leased.lease_token)
    # d was cancelled while it waited; replayed into an idle sequence, it is claimable at once.
    await engine.retry_job(T, d)
    assert await _waiting(postgres_url, d) == [False]
    assert [job.id for job in await engine.lease(["default"], max_jobs=10)] == [d]


async def test_an_enqueue_behind_a_job_that_ends_meanwhile_is_woken_when_it_commits(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    """The race a waiting flag invites: a job is enqueued behind the running job of its sequence, and that job ends
    before the enqueue commits. The end's wake-up cannot see the new job yet; the enqueue locks the job it waits
    behind (FOR SHARE) until it commits, so the end waits for it (here it gives up after its lock_timeout and comes
    again after the commit), and then wakes the new job.

    Checked to fail without the lock (FOR SHARE taken out of `queueflow.sequence_enqueued`): the end went through at
    once, and the new job stayed waiting with nothing before it, never claimed."""
    engine = engine_on(postgres_store, TestClock(START))
    first = (await engine.enqueue(T, NewJob(task_name="t", sequence=SequenceRule(key="acct")))).job.id
    [running] = await engine.lease(["default"], max_jobs=1)
    assert running.id == first
    end = "UPDATE queueflow.jobs SET status = 'cancelled' WHERE id = $1"  # any statement: the trigger is on the table
    async with pg.connect(postgres_url) as enqueuing, pg.connect(postgres_url) as ending:
        await ending.execute("SET lock_timeout = '50ms'")
        transaction = enqueuing.transaction()
        await transaction.start()
        behind = await enqueuing.fetchval(
            """SELECT queueflow.enqueue(tenant_id => $1, task_name => 't', sequence => '{"key": "acct"}')""", T
        )
        try:
            await ending.execute(end, first)
            ended_before_the_commit = True
        except asyncpg.LockNotAvailableError:
            ended_before_the_commit = False
        await transaction.commit()
        if not ended_before_the_commit:
            await ending.execute(end, first)
    assert await _waiting(postgres_url, behind) == [False]
    # The ids of the SQL function are the database's clock's: claimed as of a minute after them.
    later = engine_on(postgres_store, TestClock(datetime.now(UTC) + timedelta(minutes=1)))
    assert [job.id for job in await later.lease(["default"], max_jobs=10)] == [behind]
