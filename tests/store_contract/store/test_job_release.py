"""`JobStore.job_release_many` on every store, against its docstring in `ports`: a held job handed back is claimable
again exactly as it was before that claim (status, scheduled_at, started_at, delivery_count, retry_count)."""

from __future__ import annotations

from queueflow.core.types import ClaimRequest, Failure, HeldLease, Job
from queueflow.ports import Store

from tests.store_contract.store_rows import (
    LEASE,
    PENDING,
    RETRYING,
    T,
    at,
    inserted,
    job,
    leased,
    stranger_token,
)


def held(job: Job) -> HeldLease:
    return HeldLease(job.id, job.lease_token or "")


async def claim_one(store: Store, seconds: float, queue: str = "default") -> Job:
    (claimed,) = await store.job_claim(ClaimRequest(queues=[queue], max_jobs=1, now=at(seconds), lease_seconds=LEASE))
    return claimed


async def test_release_many_makes_held_jobs_claimable_again_as_if_never_claimed(store: Store) -> None:
    row = job(queue_name="a")
    first = await leased(store, row)
    (again,) = await store.job_release_many([held(first)], now=at(2))
    assert again == row  # pending, no delivery, no lease, never started
    assert await store.job_get(row.id) == row
    claimed = await claim_one(store, 3, "a")
    assert (claimed.id, claimed.delivery_count) == (row.id, 1)


async def test_release_many_of_a_retry_puts_it_back_exactly_as_before_its_claim(store: Store) -> None:
    first = await leased(store, job())  # started at START
    (retrying,) = await store.job_fail_many([Failure(first.id, first.lease_token or "", "flaky", at(10))], now=at(5))
    assert retrying is not None
    second = await claim_one(store, 10)
    assert second.started_at == at(10)

    (released,) = await store.job_release_many([held(second)], now=at(11))

    # Retrying, its scheduled_at and one retry, one delivery, and the first delivery's started_at, as before.
    assert released == retrying
    assert await store.job_get(first.id) == retrying
    assert released is not None
    assert (released.status, released.delivery_count, released.started_at) == (RETRYING, 1, at(0))
    # Released again and again, it stays as it was; the next claim counts as the second delivery.
    for seconds in (12, 14):
        (again,) = await store.job_release_many([held(await claim_one(store, seconds))], now=at(seconds + 1))
        assert again == retrying
    third = await claim_one(store, 20)
    assert (third.delivery_count, third.retry_count, third.started_at) == (2, 1, at(20))


async def test_release_many_of_a_replayed_job_keeps_its_last_delivery(store: Store) -> None:
    first = await leased(store, job(max_retries=0))
    await store.job_fail_many([Failure(first.id, first.lease_token or "", "fatal", None)], now=at(5))
    replayed = await store.job_retry(first.id, tenant_id=T, now=at(30))  # the DLQ replay: pending, retry_count 0
    assert replayed is not None
    again = await claim_one(store, 40)

    (released,) = await store.job_release_many([held(again)], now=at(41))

    assert released == replayed
    assert released is not None
    assert (released.status, released.delivery_count, released.started_at) == (PENDING, 1, at(0))


async def test_release_many_answers_each_item_in_order_and_a_repeat_finds_the_lease_gone(store: Store) -> None:
    a, b, c = await inserted(store, job(priority=3), job(priority=2), job(priority=1))
    claimed = await store.job_claim(ClaimRequest(queues=["default"], max_jobs=3, now=at(1), lease_seconds=LEASE))
    held_a, held_b, held_c = claimed
    assert [held_a.id, held_b.id, held_c.id] == [a.id, b.id, c.id]

    results = await store.job_release_many(
        [
            held(held_c),
            HeldLease(held_b.id, stranger_token()),  # not its token: b stays held
            held(held_a),
            held(held_a),  # the second item for one job
            held(held_c),
        ],
        now=at(2),
    )

    assert results == [c, None, a, None, None]
    assert await store.job_get(b.id) == held_b
    # A stale token before the current one does not hide it.
    (back,) = [item for item in await store.job_release_many([HeldLease(b.id, "x"), held(held_b)], now=at(3)) if item]
    assert back == b


async def test_release_many_answers_none_unless_the_lease_is_held_and_changes_nothing(store: Store) -> None:
    held_job = await leased(store, job())
    token = held_job.lease_token or ""
    items = [
        HeldLease(held_job.id, stranger_token()),
        HeldLease(held_job.id, "not-a-token"),
        HeldLease("job_missing", token),
        HeldLease(held_job.id, "nul\x00"),
    ]
    assert await store.job_release_many(items, now=at(1)) == [None, None, None, None]
    assert await store.job_release_many([HeldLease(held_job.id, token)], now=at(LEASE)) == [None]  # expired
    assert await store.job_get(held_job.id) == held_job
    assert await store.job_release_many([], now=at(1)) == []
