"""The `JobStore` methods of deadlines, called directly on every store, each against its docstring in `ports`:
job_expiring (reads only, earliest deadline first, pending | retrying past the deadline), job_expire_many (records
only what is still unstarted and past its deadline, each item on its own) and job_next_expiry."""

from __future__ import annotations

from queueflow.core.deadlines import Expiry
from queueflow.core.types import JobStatus
from queueflow.ports import Store

from tests.moments import START, T
from tests.store_contract.store_rows import at, in_status, inserted, job, leased


async def test_expiring_reads_unstarted_jobs_past_their_deadline_earliest_first(store: Store) -> None:
    later, sooner, future, plain = (
        job(expires_in_seconds=20),
        job(expires_in_seconds=10),
        job(expires_in_seconds=60),
        job(),
    )
    await inserted(store, later, sooner, future, plain)
    running = await leased(store, job(queue_name="busy", expires_in_seconds=5))
    assert await store.job_expiring(limit=10, now=at(9)) == []
    assert [row.id for row in await store.job_expiring(limit=10, now=at(20))] == [sooner.id, later.id]
    assert [row.id for row in await store.job_expiring(limit=1, now=at(20))] == [sooner.id]
    assert (await store.job_get(sooner.id)) == (await store.job_expiring(limit=1, now=at(20)))[0]  # read only
    assert running.id not in [row.id for row in await store.job_expiring(limit=10, now=at(100))]
    assert await store.job_next_expiry() == sooner.expires_at


async def test_expire_many_records_only_what_is_still_unstarted_and_due(store: Store) -> None:
    due, early = job(expires_in_seconds=10), job(expires_in_seconds=60)
    await inserted(store, due, early)
    cancelled = await in_status(store, JobStatus.CANCELLED)
    expired = await store.job_expire_many(
        [Expiry(due.id, "expired: a"), Expiry(early.id, "expired: b"), Expiry(cancelled.id, "expired: c"),
         Expiry("job_missing", "expired: d")],
        now=at(10),
    )  # fmt: skip
    assert [(row.id, row.status, row.error_message, row.completed_at) for row in expired] == [
        (due.id, JobStatus.DEAD_LETTER, "expired: a", at(10))
    ]
    assert (await store.job_get(due.id, tenant_id=T)) == expired[0]
    left = await store.job_get_many([early.id, cancelled.id])
    assert [left[row.id].status for row in (early, cancelled)] == [JobStatus.PENDING, JobStatus.CANCELLED]
    assert await store.job_expire_many([Expiry(due.id, "again")], now=at(10)) == []  # once
    assert await store.job_next_expiry() == early.expires_at
    assert await store.job_expire_many([], now=START) == []
