"""The `JobStore` methods of the worker side and the janitor, called directly on every store: claim, heartbeat,
complete_many, fail_many and lease_expired, each against its docstring in `ports`.

A lease is held while the job is running, the token is the row's current one and locked_until > now.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence

import pytest
from msgspec.structs import replace
from queueflow.core.errors import ValidationError
from queueflow.core.jsonvalue import MAX_RESULT_DEPTH
from queueflow.core.types import JSON, ClaimRequest, Completion, Ended, Failure, Heartbeat, HeldLease, Job, JobStatus
from queueflow.ports import Store

from tests.moments import START
from tests.store_contract.store_rows import (
    CANCELLED,
    COMPLETED,
    DEAD_LETTER,
    LEASE,
    PENDING,
    RETRYING,
    RUNNING,
    at,
    in_status,
    inserted,
    job,
    jobs_of,
    leased,
    nested,
    stranger_token,
)


async def end_delivery(store: Store, held: Job, status: JobStatus) -> None:
    """End `held`'s delivery at START as `status`: completed, cancelled, or retrying (due at at(60))."""
    token = held.lease_token or ""
    if status is COMPLETED:
        await store.job_complete_many([Completion(held.id, token)], now=START)
    elif status is CANCELLED:
        await store.job_cancel(held.id, tenant_id=held.tenant_id, now=START)
    else:
        await store.job_fail_many([Failure(held.id, token, "again", at(60))], now=START)


async def finish(store: Store, how: str, items: Sequence[tuple[str, str, JSON]]) -> Sequence[Job | Ended | None]:
    """At at(10), in one batch: complete each (job id, token, result) of `items`, or fail each (job id, token,
    error) for a retry at at(60)."""
    if how == "complete":
        return await store.job_complete_many([Completion(*item) for item in items], now=at(10))
    return await store.job_fail_many([Failure(*item, at(60)) for item in items], now=at(10))


# --- job_claim ---------------------------------------------------------------------------------------------


async def test_claim_moves_a_due_job_to_running_with_a_fresh_lease(store: Store) -> None:
    (row,) = await inserted(store, job())
    (claimed,) = await store.job_claim(ClaimRequest(queues=["default"], max_jobs=10, now=at(1), lease_seconds=LEASE))
    token = claimed.lease_token or ""
    assert str(uuid.UUID(token)) == token
    assert claimed == replace(
        row, status=RUNNING, lease_token=token, delivery_count=1, started_at=at(1), locked_until=at(1 + LEASE)
    )
    assert await store.job_get(row.id) == claimed


async def test_claim_takes_a_retrying_job_once_due_with_a_new_token_and_delivery(store: Store) -> None:
    first = await leased(store, job())
    (retrying,) = await store.job_fail_many([Failure(first.id, first.lease_token or "", "flaky", at(60))], now=START)
    assert retrying is not None
    assert await store.job_claim(ClaimRequest(queues=["default"], max_jobs=1, now=at(59), lease_seconds=LEASE)) == []
    (again,) = await store.job_claim(ClaimRequest(queues=["default"], max_jobs=1, now=at(60), lease_seconds=LEASE))
    assert again.lease_token not in (None, first.lease_token)
    assert again == replace(
        retrying,
        status=RUNNING,
        lease_token=again.lease_token,
        delivery_count=2,
        started_at=at(60),
        locked_until=at(60 + LEASE),
    )


async def test_claim_takes_only_waiting_due_jobs_of_the_named_queues(store: Store) -> None:
    for status in (RUNNING, COMPLETED, DEAD_LETTER, CANCELLED):
        await in_status(store, status, "q")  # the running one's lease expires at at(30): still not claimable
    later, elsewhere = await inserted(store, job(queue_name="q", run_at=at(60)), job(queue_name="elsewhere"))
    assert await store.job_claim(ClaimRequest(queues=["q"], max_jobs=100, now=at(59), lease_seconds=LEASE)) == []
    assert await store.job_claim(ClaimRequest(queues=[], max_jobs=100, now=at(59), lease_seconds=LEASE)) == []
    assert await store.job_claim(ClaimRequest(queues=["nul\x00"], max_jobs=100, now=at(59), lease_seconds=LEASE)) == []
    assert [
        row.id
        for row in await store.job_claim(ClaimRequest(queues=["q", "q"], max_jobs=100, now=at(60), lease_seconds=LEASE))
    ] == [later.id]
    assert [
        row.id
        for row in await store.job_claim(
            ClaimRequest(queues=["elsewhere"], max_jobs=100, now=at(60), lease_seconds=LEASE)
        )
    ] == [elsewhere.id]


async def test_claim_order_is_priority_then_scheduled_at_then_created_at_across_queues(store: Store) -> None:
    first = job(priority=5, now=at(1), run_at=at(1))
    second = job(priority=5, now=at(2), run_at=at(1))
    third = job(priority=5, now=at(0), run_at=at(3), queue_name="other")
    fourth = job(priority=0, now=at(0))
    fifth = job(priority=-1, now=at(0), queue_name="other")
    await inserted(store, fifth, third, fourth, second, first)
    queues = ["default", "other"]
    assert [
        row.id
        for row in await store.job_claim(ClaimRequest(queues=queues, max_jobs=2, now=at(10), lease_seconds=LEASE))
    ] == [first.id, second.id]
    rest = await store.job_claim(
        ClaimRequest(queues=list(reversed(queues)), max_jobs=10, now=at(10), lease_seconds=LEASE)
    )
    assert [row.id for row in rest] == [third.id, fourth.id, fifth.id]


async def test_claim_of_some_tasks_passes_over_the_others_in_claim_order(store: Store) -> None:
    urgent_other = job(task_name="resize", priority=9)
    mine, later_mine = job(task_name="send", now=at(1)), job(task_name="send", now=at(2))
    theirs = job(task_name="report", now=at(0))
    await inserted(store, urgent_other, theirs, later_mine, mine)
    claimed = await store.job_claim(
        ClaimRequest(
            queues=["default"], max_jobs=10, now=at(5), lease_seconds=LEASE, task_names=["send", "nobody", "nul\x00"]
        )
    )
    assert [row.id for row in claimed] == [mine.id, later_mine.id]
    assert (
        await store.job_claim(
            ClaimRequest(queues=["default"], max_jobs=10, now=at(5), lease_seconds=LEASE, task_names=["send"])
        )
        == []
    )
    assert (
        await store.job_claim(
            ClaimRequest(queues=["default"], max_jobs=10, now=at(5), lease_seconds=LEASE, task_names=["nul\x00"])
        )
        == []
    )
    assert [
        row.id
        for row in await store.job_claim(
            ClaimRequest(
                queues=["default"], max_jobs=1, now=at(5), lease_seconds=LEASE, task_names=["report", "resize"]
            )
        )
    ] == [urgent_other.id]
    assert (await store.job_get(theirs.id)).status == PENDING  # type: ignore[union-attr]


async def test_claim_caps_the_lease_at_the_jobs_timeout(store: Store) -> None:
    await inserted(store, job(timeout_seconds=2.5), job(timeout_seconds=600))
    claimed = await store.job_claim(ClaimRequest(queues=["default"], max_jobs=2, now=START, lease_seconds=LEASE))
    assert sorted(row.locked_until for row in claimed if row.locked_until) == [at(2.5), at(LEASE)]


async def test_concurrent_claims_never_take_the_same_job(store: Store) -> None:
    rows = await inserted(store, *(job() for _ in range(20)))
    claims = await asyncio.gather(
        *(
            store.job_claim(ClaimRequest(queues=["default"], max_jobs=7, now=at(1), lease_seconds=LEASE))
            for _ in range(4)
        )
    )
    claimed = [row.id for claim in claims for row in claim]
    assert sorted(claimed) == sorted(row.id for row in rows)


# --- job_heartbeat -----------------------------------------------------------------------------------------


async def test_heartbeat_extends_a_held_lease_from_now(store: Store) -> None:
    held = await leased(store, job())
    beat = await store.job_heartbeat(
        Heartbeat(job_id=held.id, lease_token=held.lease_token or "", lease_seconds=60, now=at(20))
    )
    assert beat == replace(held, locked_until=at(80))
    assert await store.job_get(held.id) == beat


async def test_heartbeat_never_extends_past_the_deliverys_timeout(store: Store) -> None:
    held = await leased(store, job(timeout_seconds=40))
    beat = await store.job_heartbeat(
        Heartbeat(job_id=held.id, lease_token=held.lease_token or "", lease_seconds=LEASE, now=at(20))
    )
    assert beat == replace(held, locked_until=at(40))


async def test_heartbeat_answers_none_unless_the_lease_is_held_and_changes_nothing(store: Store) -> None:
    held = await leased(store, job())
    token = held.lease_token or ""
    assert (
        await store.job_heartbeat(
            Heartbeat(job_id=held.id, lease_token=stranger_token(), lease_seconds=LEASE, now=at(1))
        )
        is None
    )
    assert (
        await store.job_heartbeat(Heartbeat(job_id=held.id, lease_token="not-a-token", lease_seconds=LEASE, now=at(1)))
        is None
    )
    assert (
        await store.job_heartbeat(Heartbeat(job_id=held.id, lease_token=token.upper(), lease_seconds=LEASE, now=at(1)))
        is None
    )
    assert (
        await store.job_heartbeat(Heartbeat(job_id="job_missing", lease_token=token, lease_seconds=LEASE, now=at(1)))
        is None
    )
    assert (
        await store.job_heartbeat(Heartbeat(job_id="job\x00", lease_token=token, lease_seconds=LEASE, now=at(1)))
        is None
    )
    assert (
        await store.job_heartbeat(Heartbeat(job_id=held.id, lease_token=token, lease_seconds=LEASE, now=at(LEASE)))
        is None
    )  # locked_until is not > now
    assert await store.job_get(held.id) == held
    for status in (COMPLETED, CANCELLED, RETRYING):
        former = await leased(store, job(queue_name=status.value))
        await end_delivery(store, former, status)
        assert (
            await store.job_heartbeat(
                Heartbeat(job_id=former.id, lease_token=former.lease_token or "", lease_seconds=LEASE, now=at(1))
            )
            is None
        )


# --- job_heartbeat_many ------------------------------------------------------------------------------------


async def test_heartbeat_many_extends_each_held_lease_on_its_own(store: Store) -> None:
    a = await leased(store, job(queue_name="a"))
    capped = await leased(store, job(queue_name="b", timeout_seconds=40))
    gone = await leased(store, job(queue_name="c"))
    await end_delivery(store, gone, COMPLETED)
    items = [
        HeldLease(a.id, a.lease_token or ""),
        HeldLease(capped.id, capped.lease_token or ""),
        HeldLease(gone.id, gone.lease_token or ""),
        HeldLease(a.id, stranger_token()),
        HeldLease(a.id, "not-a-token"),
        HeldLease("job_missing", a.lease_token or ""),
        HeldLease("job\x00", a.lease_token or ""),
        HeldLease(a.id, a.lease_token or ""),  # repeated: answers as the first did
    ]
    assert await store.job_heartbeat_many(items, lease_seconds=60, now=at(20)) == [
        at(80),
        at(40),
        None,
        None,
        None,
        None,
        None,
        at(80),
    ]
    assert await store.job_get(a.id) == replace(a, locked_until=at(80))
    assert await store.job_get(capped.id) == replace(capped, locked_until=at(40))


async def test_heartbeat_many_records_each_reported_progress_only_where_the_lease_holds(store: Store) -> None:
    a, b, c = [await leased(store, job(queue_name=name)) for name in ("a", "b", "c")]
    await store.job_heartbeat(
        Heartbeat(job_id=c.id, lease_token=c.lease_token or "", lease_seconds=LEASE, progress={"kept": True}, now=at(1))
    )
    items = [
        HeldLease(a.id, a.lease_token or "", {"done": 1}),
        HeldLease(b.id, b.lease_token or "", None),  # a reported JSON null
        HeldLease(c.id, c.lease_token or ""),  # no report: the last progress stays
        HeldLease(a.id, stranger_token(), "stranger"),
    ]
    assert await store.job_heartbeat_many(items, lease_seconds=LEASE, now=at(2)) == [at(2 + LEASE)] * 3 + [None]
    rows = await store.job_get_many([a.id, b.id, c.id])
    assert [rows[row.id].progress for row in (a, b, c)] == [{"done": 1}, None, {"kept": True}]


async def test_heartbeat_many_with_a_progress_it_cannot_store_writes_nothing(store: Store) -> None:
    a, b = await leased(store, job(queue_name="a")), await leased(store, job(queue_name="b"))
    for bad in ("nul \x00", "x" * 65_536):
        items = [HeldLease(a.id, a.lease_token or "", "fine"), HeldLease(b.id, b.lease_token or "", bad)]
        with pytest.raises(ValidationError) as raised:
            await store.job_heartbeat_many(items, lease_seconds=LEASE, now=at(2))
        assert raised.value.errors[0].loc[:3] == ("jobs", 1, "progress")
    assert await store.job_get_many([a.id, b.id]) == {a.id: a, b.id: b}


async def test_heartbeat_many_after_the_lease_ran_out_changes_nothing(store: Store) -> None:
    held = await leased(store, job())
    assert await store.job_heartbeat_many(
        [HeldLease(held.id, held.lease_token or "")], lease_seconds=LEASE, now=at(LEASE)
    ) == [None]
    assert await store.job_heartbeat_many([], lease_seconds=LEASE, now=at(1)) == []
    assert await store.job_get(held.id) == held


# --- job_complete_many, job_fail_many ----------------------------------------------------------------------


async def test_complete_many_moves_each_held_job_to_completed_with_its_result_and_answers_briefly(
    store: Store,
) -> None:
    a, b = await leased(store, job(queue_name="a")), await leased(store, job(queue_name="b"))
    stale = await leased(store, job(queue_name="c"))
    assert await store.job_complete_many([], now=at(5)) == []
    ended = await store.job_complete_many(
        [
            Completion(a.id, a.lease_token or "", {"rows": [1, 2]}),
            Completion(b.id, b.lease_token or ""),
            Completion(stale.id, stranger_token()),
            Completion(stale.id, "not-a-token"),
            Completion("job_missing", a.lease_token or ""),
        ],
        now=at(5),
    )
    assert ended == [Ended(a.id, COMPLETED, "a", None, None), Ended(b.id, COMPLETED, "b", None, None), None, None, None]
    cleared = {"status": COMPLETED, "lease_token": None, "locked_until": None, "completed_at": at(5)}
    assert await store.job_get_many([a.id, b.id, stale.id]) == {
        a.id: replace(a, result={"rows": [1, 2]}, **cleared),
        b.id: replace(b, result=None, **cleared),
        stale.id: stale,
    }
    assert await store.job_complete_many([Completion(a.id, a.lease_token or "")], now=at(6)) == [None]  # once only


async def test_complete_answers_the_whole_completed_job_or_none_when_the_lease_is_not_held(store: Store) -> None:
    a, stale = await leased(store, job(queue_name="a")), await leased(store, job(queue_name="c"))
    done = await store.job_complete(Completion(a.id, a.lease_token or "", {"rows": [1]}), now=at(5))
    cleared = {"status": COMPLETED, "lease_token": None, "locked_until": None, "completed_at": at(5)}
    assert done == replace(a, result={"rows": [1]}, **cleared)
    assert await store.job_get(a.id) == done
    assert await store.job_complete(Completion(a.id, a.lease_token or ""), now=at(6)) is None  # once only
    assert await store.job_complete(Completion(stale.id, stranger_token()), now=at(6)) is None
    assert await store.job_complete(Completion(stale.id, "not-a-token"), now=at(6)) is None
    assert await store.job_complete(Completion("job_missing", a.lease_token or ""), now=at(6)) is None
    assert await store.job_get(stale.id) == stale


async def test_fail_many_records_each_items_decision_retrying_or_dead_letter(store: Store) -> None:
    a, b = await leased(store, job(queue_name="a")), await leased(store, job(queue_name="b"))
    assert await store.job_fail_many([], now=at(5)) == []
    failed = await store.job_fail_many(
        [Failure(a.id, a.lease_token or "", "flaky", at(60)), Failure(b.id, b.lease_token or "", "fatal", None)],
        now=at(5),
    )
    cleared = {"lease_token": None, "locked_until": None}
    assert failed == [
        replace(a, status=RETRYING, retry_count=1, scheduled_at=at(60), next_retry_at=at(60), error_message="flaky",
                **cleared),
        replace(b, status=DEAD_LETTER, completed_at=at(5), error_message="fatal", **cleared),
    ]  # fmt: skip
    assert await store.job_get_many([a.id, b.id]) == {a.id: failed[0], b.id: failed[1]}


@pytest.mark.parametrize("how", ["complete", "fail"])
async def test_a_finish_answers_none_for_each_item_whose_lease_is_not_held(store: Store, how: str) -> None:
    held = await leased(store, job(queue_name="held"))
    expired = await leased(store, job(queue_name="expired"), lease_seconds=10)  # locked_until = at(10)
    stale = await leased(store, job(queue_name="stale"))
    await store.job_fail_many([Failure(stale.id, stale.lease_token or "", "lost", at(1))], now=at(1))
    (reclaimed,) = await store.job_claim(ClaimRequest(queues=["stale"], max_jobs=1, now=at(2), lease_seconds=LEASE))
    token = held.lease_token or ""
    items = [
        (expired.id, expired.lease_token or "", "x"),
        (held.id, stranger_token(), "x"),
        (held.id, "not-a-token", "x"),
        (held.id, token, "x"),
        (held.id, token, "x"),  # the repeat finds the lease already gone
        (stale.id, stale.lease_token or "", "x"),
        ("job_missing", token, "x"),
        ("job\x00", token, "x"),
    ]
    results = await finish(store, how, items)
    assert [row is not None for row in results] == [False, False, False, True, False, False, False, False]
    assert await store.job_get_many([expired.id, stale.id]) == {expired.id: expired, stale.id: reclaimed}


async def test_a_finish_with_a_value_postgresql_cannot_store_changes_nothing(store: Store) -> None:
    a, b = await leased(store, job(queue_name="a")), await leased(store, job(queue_name="b"))
    for how, bad in [("complete", "nul\x00"), ("complete", nested(MAX_RESULT_DEPTH + 1)), ("fail", "nul\x00"),
                     ("fail", "lone \ud800")]:  # fmt: skip
        with pytest.raises(ValidationError):
            await finish(store, how, [(a.id, a.lease_token or "", "fine"), (b.id, b.lease_token or "", bad)])
    assert await store.job_get_many([a.id, b.id]) == {a.id: a, b.id: b}


# --- job_lease_expired -------------------------------------------------------------------------------------


async def test_lease_expired_relocks_the_earliest_expired_leases_up_to_the_limit(store: Store) -> None:
    expires = {seconds: await leased(store, job(queue_name=f"q{seconds}"), lease_seconds=seconds) for seconds in
               (20, 5, 10, 21)}  # fmt: skip
    for status in (PENDING, RETRYING, COMPLETED, CANCELLED):
        await in_status(store, status)
    first = await store.job_lease_expired(limit=2, relock_seconds=60, now=at(20))
    # Each is re-leased to the janitor: a new token (the worker's expired one never works again), 60 s more.
    assert [row.lease_token for row in first] != [expires[5].lease_token, expires[10].lease_token]
    assert all(row.lease_token is not None for row in first)
    assert first == [
        replace(expires[5], locked_until=at(80), lease_token=first[0].lease_token),
        replace(expires[10], locked_until=at(80), lease_token=first[1].lease_token),
    ]
    # Relocked rows are no longer expired, so a second sweep at the same moment takes the next one only.
    (second,) = await store.job_lease_expired(limit=10, relock_seconds=60, now=at(20))
    assert second == replace(expires[20], locked_until=at(80), lease_token=second.lease_token)
    assert second.lease_token != expires[20].lease_token
    assert await store.job_lease_expired(limit=10, relock_seconds=60, now=at(20)) == []
    current = {row.id: row for row in await jobs_of(store)}
    assert [current[row.id] for row in first] == first
    assert current[expires[21].id] == expires[21]


async def test_claim_with_task_names_takes_only_those_tasks(store: Store) -> None:
    mine, theirs = await inserted(store, job(task_name="mine"), job(task_name="theirs", priority=5))
    assert (
        await store.job_claim(
            ClaimRequest(queues=["default"], max_jobs=10, now=at(1), lease_seconds=LEASE, task_names=["nobody", "\x00"])
        )
        == []
    )
    (claimed,) = await store.job_claim(
        ClaimRequest(queues=["default"], max_jobs=10, now=at(1), lease_seconds=LEASE, task_names=["mine", "mine"])
    )
    assert claimed.id == mine.id
    (other,) = await store.job_claim(
        ClaimRequest(queues=["default"], max_jobs=10, now=at(1), lease_seconds=LEASE, task_names=None)
    )
    assert other.id == theirs.id


async def test_job_claim_for_a_tenant_claims_only_that_tenants_due_jobs_in_claim_order(store: Store) -> None:
    theirs = [job(tenant="tenant-b", priority=5, queue_name="q") for _ in range(3)]
    ours_low = job(priority=1, queue_name="q")
    ours_high = job(priority=2, queue_name="q", now=at(1))
    ours_later = job(queue_name="q", run_at=at(60))
    await inserted(store, *theirs, ours_low, ours_high, ours_later)
    claimed = await store.job_claim(
        ClaimRequest(queues=["q"], max_jobs=10, now=at(2), lease_seconds=LEASE, tenant_id="tenant-a")
    )
    assert [row.id for row in claimed] == [ours_high.id, ours_low.id]
    assert all(row.status is RUNNING and row.lease_token for row in claimed)
    assert (
        await store.job_claim(
            ClaimRequest(queues=["q"], max_jobs=10, now=at(2), lease_seconds=LEASE, tenant_id="tenant-a")
        )
        == []
    )
    assert (
        await store.job_claim(
            ClaimRequest(queues=["q"], max_jobs=10, now=at(2), lease_seconds=LEASE, tenant_id="tenant-c")
        )
        == []
    )
    assert (
        await store.job_claim(
            ClaimRequest(queues=["q"], max_jobs=10, now=at(2), lease_seconds=LEASE, tenant_id="tenant-\x00")
        )
        == []
    )
    # The other tenant's jobs were left alone, for any other claimer.
    assert sorted(
        row.id for row in await store.job_claim(ClaimRequest(queues=["q"], max_jobs=10, now=at(2), lease_seconds=LEASE))
    ) == sorted(row.id for row in theirs)


async def test_job_heartbeat_records_progress_only_while_the_lease_is_held(store: Store) -> None:
    held = await leased(store, job())
    token = held.lease_token or ""
    beat = await store.job_heartbeat(
        Heartbeat(job_id=held.id, lease_token=token, lease_seconds=LEASE, progress={"done": 3, "text": "ü"}, now=at(1))
    )
    assert beat is not None
    assert beat.progress == {"done": 3, "text": "ü"}
    kept = await store.job_heartbeat(Heartbeat(job_id=held.id, lease_token=token, lease_seconds=LEASE, now=at(2)))
    assert kept is not None
    assert kept.progress == {"done": 3, "text": "ü"}
    assert kept.locked_until == at(2 + LEASE)
    assert (
        await store.job_heartbeat(
            Heartbeat(job_id=held.id, lease_token=stranger_token(), lease_seconds=LEASE, progress="stranger", now=at(3))
        )
        is None
    )
    assert (
        await store.job_heartbeat(
            Heartbeat(job_id=held.id, lease_token=token, lease_seconds=LEASE, progress="expired", now=at(100))
        )
        is None
    )
    after = await store.job_get(held.id)
    assert after is not None
    assert after.progress == {"done": 3, "text": "ü"}
    assert after.locked_until == at(2 + LEASE)


async def test_job_heartbeat_may_clear_progress_and_rejects_what_it_cannot_store(store: Store) -> None:
    held = await leased(store, job())
    token = held.lease_token or ""
    await store.job_heartbeat(
        Heartbeat(job_id=held.id, lease_token=token, lease_seconds=LEASE, progress=[1, 2], now=at(1))
    )
    cleared = await store.job_heartbeat(
        Heartbeat(job_id=held.id, lease_token=token, lease_seconds=LEASE, progress=None, now=at(1))
    )
    assert cleared is not None
    assert cleared.progress is None
    for bad in ("nul \x00", nested(MAX_RESULT_DEPTH + 1), "x" * 65_536):
        with pytest.raises(ValidationError):
            await store.job_heartbeat(
                Heartbeat(job_id=held.id, lease_token=token, lease_seconds=LEASE, progress=bad, now=at(2))
            )
    unchanged = await store.job_get(held.id)
    assert unchanged is not None
    assert (unchanged.progress, unchanged.locked_until) == (None, at(1 + LEASE))


async def test_a_jobs_trace_context_is_stored_and_claimed_with_it(store: Store) -> None:
    context = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "a=b"}
    traced = replace(job(), trace_context=context)
    stored, _ = await inserted(store, traced, job())
    assert stored.trace_context == context
    claimed = {
        row.id: row
        for row in await store.job_claim(ClaimRequest(queues=["default"], max_jobs=10, now=START, lease_seconds=LEASE))
    }
    assert claimed[traced.id].trace_context == context
    assert [row.trace_context for row_id, row in claimed.items() if row_id != traced.id] == [None]
