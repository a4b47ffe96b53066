"""The `JobStore` methods a tenant's calls and the janitor's retention reach, called directly on every store:
insert, get, list, cancel, retry and delete_finished, each against its docstring in `ports`.

The lease methods (claim, heartbeat, complete, fail, lease_expired) are in test_job_leases.py.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from msgspec.structs import replace
from queueflow.core.advance import AdvanceRequest, Transition
from queueflow.core.errors import ValidationError
from queueflow.core.flow import ConfigureRequest, QueueSettingsPatch
from queueflow.core.jsonvalue import MAX_DEPTH
from queueflow.core.types import (
    BackoffPolicy,
    BackoffStrategy,
    ClaimRequest,
    Completion,
    Failure,
    JobFilter,
    JobQuery,
)
from queueflow.core.workflow import WorkflowStatus
from queueflow.ports import Store

from tests.moments import START, T
from tests.store_contract.store_rows import (
    CANCELLED,
    COMPLETED,
    DEAD_LETTER,
    LEASE,
    OTHER,
    PENDING,
    RETRYING,
    RUNNING,
    at,
    everything,
    found_only_by_its_tenant,
    in_status,
    inserted,
    job,
    jobs_of,
    leased,
    nested,
    newest_first,
    pages,
    stored_workflow,
)
from tests.store_contract.workflow_helpers import step

# --- job_insert_many ---------------------------------------------------------------------------------------


async def test_insert_many_stores_every_row_as_given_and_answers_in_order(store: Store) -> None:
    assert await store.job_insert_many([]) == []
    rows = [
        job(
            queue_name="mail",
            task_name="notify",
            payload={"to": ["a", {"b": None}], "n": 1.5},
            metadata={"team": "x"},
            priority=-3,
            run_at=at(60),
            max_retries=0,
            backoff=BackoffPolicy(BackoffStrategy.FIXED, 2.0, 10.0, jitter=False),
            timeout_seconds=2.5,
            idempotency_key="k1",
        ),
        replace(job(tenant=OTHER), workflow_id="wf_x", workflow_step_id="s"),
        job(),
    ]
    assert await store.job_insert_many(rows) == [(row, True) for row in rows]
    assert await store.job_get_many([row.id for row in rows]) == {row.id: row for row in rows}


async def test_a_batch_without_keys_stores_its_shared_and_its_own_values_alike(store: Store) -> None:
    # The PostgreSQL store sends a value every row shares once: rows alike but for id and payload, rows alike in
    # nothing, and a trace context, timeout and delay that only some rows have.
    alike = [job(queue_name="bulk", payload={"i": i}, timeout_seconds=5) for i in range(3)]
    different = [
        job(queue_name="a", task_name="x", priority=1, delay_seconds=30, trace_context={"traceparent": "t"}),
        job(queue_name="b", task_name="y", priority=2, metadata={"m": 1}, concurrency_key="user_1"),
        replace(job(tenant=OTHER), workflow_id="wf_x", workflow_step_id="s"),
    ]
    for rows in (alike, different):
        assert await store.job_insert_many(rows) == [(row, True) for row in rows]
        assert await store.job_get_many([row.id for row in rows]) == {row.id: row for row in rows}


async def test_a_key_repeated_within_one_batch_resolves_to_its_first_row(store: Store) -> None:
    first, again, plain = job(idempotency_key="k"), job(idempotency_key="k", payload={"v": 2}), job()
    elsewhere = job(tenant=OTHER, idempotency_key="k")
    results = await store.job_insert_many([first, again, plain, elsewhere])
    assert results == [(first, True), (first, False), (plain, True), (elsewhere, True)]
    assert await store.job_get(again.id) is None


async def test_a_key_stored_by_an_earlier_batch_resolves_to_the_row_as_it_is_now(store: Store) -> None:
    original = await leased(store, job(idempotency_key="k"))
    repeat, fresh = job(idempotency_key="k", payload={"v": 2}), job(idempotency_key="other")
    assert await store.job_insert_many([repeat, fresh]) == [(original, False), (fresh, True)]
    assert await store.job_get(repeat.id) is None
    assert await store.job_get(original.id) == original


async def test_a_batch_with_a_value_postgresql_cannot_store_stores_none_of_it(store: Store) -> None:
    good = job()
    bad_rows = [
        job(payload={"text": "nul\x00"}),
        job(payload={"nul\x00key": 1}),
        job(metadata={"deep": nested(MAX_DEPTH)}),
        job(task_name="nul\x00"),
        job(queue_name="lone \ud800 surrogate"),
        job(idempotency_key="nul\x00"),
        replace(job(), workflow_step_id="nul\x00"),
    ]
    for bad in bad_rows:
        with pytest.raises(ValidationError):
            await store.job_insert_many([good, bad])
    assert await jobs_of(store) == []


async def test_a_batch_that_repeats_an_id_stores_none_of_it(store: Store) -> None:
    (existing,) = await inserted(store, job())
    fresh = job()
    for batch in ([fresh, replace(job(), id=fresh.id)], [fresh, replace(job(), id=existing.id)]):
        with pytest.raises(ValidationError):
            await store.job_insert_many(batch)
    assert await jobs_of(store) == [existing]


# --- job_get, job_get_many, job_list -----------------------------------------------------------------------


async def test_get_answers_only_for_an_existing_job_of_the_tenant(store: Store) -> None:
    (row,) = await inserted(store, job())
    await found_only_by_its_tenant(lambda job_id, tenant_id: store.job_get(job_id, tenant_id=tenant_id), row)


async def test_get_many_returns_the_jobs_that_exist_of_any_tenant(store: Store) -> None:
    mine, theirs = await inserted(store, job(), job(tenant=OTHER))
    assert await store.job_get_many([mine.id, "job_missing", theirs.id, "nul\x00", mine.id]) == {
        mine.id: mine,
        theirs.id: theirs,
    }
    assert await store.job_get_many([]) == {}


async def test_list_is_newest_first_and_resumes_strictly_after_the_cursor(store: Store) -> None:
    rows = [job(now=at(0)), job(now=at(1)), job(now=at(1)), job(now=at(2)), job(now=at(1))]
    await inserted(store, *rows, job(tenant=OTHER, now=at(5)))
    order = newest_first(rows)
    assert await pages(
        lambda after: store.job_list(JobQuery(tenant_id=T, where=JobFilter(), limit=2, after=after))
    ) == [order[0:2], order[2:4], order[4:]]


async def test_list_filters_by_queue_status_task_workflow_and_metadata_containment(store: Store) -> None:
    running = await leased(store, job(queue_name="q3", task_name="t1"))
    a, b, c = await inserted(
        store,
        job(queue_name="q1", task_name="t1", metadata={"team": "x", "tags": ["red", "blue"], "n": {"k": 1}}),
        job(queue_name="q2", task_name="t1", metadata={"team": "y"}),
        replace(job(queue_name="q1", task_name="t2"), workflow_id="wf_1", workflow_step_id="s"),
    )
    await inserted(store, job(tenant=OTHER, queue_name="q1", task_name="t1", metadata={"team": "x"}))

    async def ids(**where: object) -> set[str]:
        return {
            row.id
            for row in await store.job_list(JobQuery(tenant_id=T, where=JobFilter(**where), limit=100, after=None))
        }

    assert await ids() == {running.id, a.id, b.id, c.id}
    assert await ids(queue_name="q1") == {a.id, c.id}
    assert await ids(status=RUNNING) == {running.id}
    assert await ids(status=PENDING) == {a.id, b.id, c.id}
    assert await ids(task_name="t1") == {running.id, a.id, b.id}
    assert await ids(workflow_id="wf_1") == {c.id}
    assert await ids(queue_name="q1", task_name="t1") == {a.id}
    assert await ids(metadata={"team": "x"}) == {a.id}
    assert await ids(metadata={"tags": ["blue"], "n": {}}) == {a.id}
    assert await ids(metadata={}) == {running.id, a.id, b.id, c.id}
    assert await ids(metadata={"team": "z"}) == set()
    # Text no row can hold matches no row.
    assert await ids(queue_name="nul\x00") == set()
    assert await ids(metadata={"team": "nul\x00"}) == set()


# --- job_cancel, job_retry ---------------------------------------------------------------------------------


async def test_cancel_moves_an_unfinished_job_to_cancelled_and_voids_its_lease(store: Store) -> None:
    for status in (PENDING, RETRYING, RUNNING):
        row = await in_status(store, status)
        cancelled = await store.job_cancel(row.id, tenant_id=T, now=at(5))
        assert cancelled == replace(row, status=CANCELLED, lease_token=None, locked_until=None, completed_at=at(5))
        assert await store.job_get(row.id) == cancelled
        if status is RUNNING:
            assert await store.job_complete_many([Completion(row.id, row.lease_token or "")], now=at(5)) == [None]


async def test_cancel_answers_none_for_a_finished_missing_or_foreign_job_and_changes_nothing(store: Store) -> None:
    finished = [await in_status(store, status) for status in (COMPLETED, DEAD_LETTER, CANCELLED)]
    (foreign,) = await inserted(store, job(tenant=OTHER))
    before = await everything(store), await everything(store, OTHER)
    for row in finished:
        assert await store.job_cancel(row.id, tenant_id=T, now=at(5)) is None
    assert await store.job_cancel(foreign.id, tenant_id=T, now=at(5)) is None
    assert await store.job_cancel("job_missing", tenant_id=T, now=at(5)) is None
    assert await store.job_cancel("job\x00", tenant_id="nul\x00", now=at(5)) is None
    assert (await everything(store), await everything(store, OTHER)) == before


async def test_retry_moves_a_dead_letter_or_cancelled_job_back_to_pending_at_now(store: Store) -> None:
    # A dead letter that had a retry first: retry_count, next_retry_at and completed_at are all set.
    held = await leased(store, job(queue_name="dlq"))
    await store.job_fail_many([Failure(held.id, held.lease_token or "", "flaky", at(1))], now=at(0))
    (again,) = await store.job_claim(ClaimRequest(queues=["dlq"], max_jobs=1, now=at(1), lease_seconds=LEASE))
    (dead,) = await store.job_fail_many([Failure(again.id, again.lease_token or "", "fatal", None)], now=at(2))
    assert dead is not None
    assert (dead.retry_count, dead.next_retry_at, dead.completed_at) == (1, at(1), at(2))
    cancelled = await in_status(store, CANCELLED)
    for row in (dead, cancelled):
        replayed = await store.job_retry(row.id, tenant_id=T, now=at(50))
        assert replayed == replace(
            row, status=PENDING, scheduled_at=at(50), retry_count=0, next_retry_at=None, completed_at=None
        )
        assert await store.job_get(row.id) == replayed
    assert [
        row.id
        for row in await store.job_claim(ClaimRequest(queues=["dlq"], max_jobs=1, now=at(50), lease_seconds=LEASE))
    ] == [dead.id]


async def test_retry_answers_none_for_other_states_missing_or_foreign_jobs_and_changes_nothing(store: Store) -> None:
    for status in (PENDING, RUNNING, RETRYING, COMPLETED):
        await in_status(store, status)
    foreign = replace(job(tenant=OTHER), id="job_foreign")
    await inserted(store, foreign)
    await store.job_cancel(foreign.id, tenant_id=OTHER, now=START)
    before = await everything(store), await everything(store, OTHER)
    for row in await jobs_of(store):
        assert await store.job_retry(row.id, tenant_id=T, now=at(5)) is None
    assert await store.job_retry(foreign.id, tenant_id=T, now=at(5)) is None
    assert await store.job_retry("job_missing", tenant_id=T, now=at(5)) is None
    assert await store.job_retry("job\x00", tenant_id="nul\x00", now=at(5)) is None
    assert (await everything(store), await everything(store, OTHER)) == before


# --- job_delete_finished -----------------------------------------------------------------------------------

MINUTE = timedelta(minutes=1)


async def configured(store: Store, queue: str, retention_seconds: int | None, tenant: str = T) -> None:
    patch = QueueSettingsPatch(retention_seconds=retention_seconds)
    await store.queue_configure(ConfigureRequest(tenant_id=tenant, queue_name=queue, patch=patch, now=START))


async def test_delete_finished_deletes_the_jobs_of_every_tenant_older_than_the_default_retention(
    store: Store,
) -> None:
    done_10 = await in_status(store, COMPLETED, "a", now=at(10))
    dead_20 = await in_status(store, DEAD_LETTER, "b", now=at(20))
    cancelled_30 = await in_status(store, CANCELLED, "c", now=at(30))
    (theirs,) = await inserted(store, replace(job(tenant=OTHER, idempotency_key="k"), id="job_theirs"))
    await store.job_cancel(theirs.id, tenant_id=OTHER, now=at(15))
    unfinished = [await in_status(store, status, now=at(0)) for status in (PENDING, RUNNING, RETRYING)]
    expired = {done_10.id, dead_20.id, theirs.id}

    # At 90 s a minute's retention reaches back to 30 s: completed_at = at(30) is not older than that.
    assert await store.job_delete_finished(now=at(90), default_retention=MINUTE, limit=2) == 2
    assert len(set(await store.job_get_many(list(expired)))) == 1
    assert await store.job_delete_finished(now=at(90), default_retention=MINUTE, limit=10) == 1
    assert await store.job_delete_finished(now=at(90), default_retention=MINUTE, limit=10) == 0
    assert {row.id for row in await jobs_of(store)} == {cancelled_30.id} | {row.id for row in unfinished}
    # A deleted job's idempotency key is free again.
    (again, created) = (await store.job_insert_many([job(tenant=OTHER, idempotency_key="k")]))[0]
    assert created
    assert again.id != theirs.id


async def test_delete_finished_takes_a_queue_s_longest_finished_jobs_first(store: Store) -> None:
    older = await in_status(store, COMPLETED, "mail", now=at(10))
    younger = await in_status(store, COMPLETED, "mail", now=at(20))
    assert await store.job_delete_finished(now=at(200), default_retention=MINUTE, limit=1) == 1
    assert set(await store.job_get_many([older.id, younger.id])) == {younger.id}


async def test_delete_finished_keeps_everything_without_a_retention(store: Store) -> None:
    await in_status(store, COMPLETED, "mail", now=at(0))
    await configured(store, "mail", None)
    assert await store.job_delete_finished(now=at(10**8), default_retention=None, limit=10) == 0
    assert len(await jobs_of(store)) == 1


async def test_delete_finished_applies_a_queue_s_own_retention_before_the_default(store: Store) -> None:
    await configured(store, "short", 60)
    await configured(store, "long", 3600)
    short = await in_status(store, COMPLETED, "short", now=at(0))
    long = await in_status(store, DEAD_LETTER, "long", now=at(0))
    plain = await in_status(store, CANCELLED, "plain", now=at(0))
    (theirs,) = await inserted(store, job(tenant=OTHER, queue_name="short"))  # their "short" has no retention
    await store.job_cancel(theirs.id, tenant_id=OTHER, now=at(0))

    # Without a default only the queues with a retention of their own lose jobs, each by its own.
    assert await store.job_delete_finished(now=at(61), default_retention=None, limit=10) == 1
    assert await store.job_get(short.id) is None
    assert await store.job_delete_finished(now=at(3600), default_retention=None, limit=10) == 0
    assert await store.job_delete_finished(now=at(3601), default_retention=None, limit=10) == 1
    assert await store.job_get(long.id) is None
    assert await store.job_delete_finished(now=at(10**8), default_retention=None, limit=10) == 0

    # With a default, the rest go by it; a queue's own retention still wins where it is longer.
    await configured(store, "long", 7200)
    longer = await in_status(store, COMPLETED, "long", now=at(0))
    two_minutes = 2 * MINUTE
    assert await store.job_delete_finished(now=at(121), default_retention=two_minutes, limit=10) == 2
    assert set(await store.job_get_many([plain.id, longer.id])) == {longer.id}
    assert await store.job_get(theirs.id, tenant_id=OTHER) is None
    assert await store.job_delete_finished(now=at(7201), default_retention=two_minutes, limit=10) == 1
    assert await jobs_of(store) == []


async def test_delete_finished_keeps_the_finished_jobs_of_a_running_workflow(store: Store) -> None:
    workflow = await stored_workflow(store, step("a"))
    (held,) = await store.job_claim(ClaimRequest(queues=["default"], max_jobs=1, now=START, lease_seconds=LEASE))
    await store.job_complete_many([Completion(held.id, held.lease_token or "")], now=at(1))
    await configured(store, "default", 60)
    assert await store.job_delete_finished(now=at(100), default_retention=MINUTE, limit=10) == 0
    assert await store.job_delete_finished(now=at(100), default_retention=None, limit=10) == 0
    assert await store.job_get(held.id) is not None
    finish = Transition(workflow_status=WorkflowStatus.COMPLETED)
    await store.workflow_advance(AdvanceRequest(workflow_id=workflow.id, decide=lambda _: finish, now=at(2)))
    assert await store.job_delete_finished(now=at(100), default_retention=None, limit=10) == 1
    assert await store.job_get(held.id) is None
