"""The `QueueStore` methods, called directly on every store, each against its docstring in `ports`: a queue's
settings and counts together (`queue_overview`). Backlogs are in test_flow_control.py, throughput in
test_throughput.py.
"""

from __future__ import annotations

from queueflow.core.flow import ConfigureRequest, QueueSettings, QueueSettingsPatch, RateLimit
from queueflow.core.types import ClaimRequest, QueueCounts
from queueflow.ports import Store

from tests.moments import START, T
from tests.store_contract.store_rows import (
    CANCELLED,
    COMPLETED,
    DEAD_LETTER,
    OTHER,
    RETRYING,
    RUNNING,
    at,
    in_status,
    inserted,
    job,
)


async def test_queue_overview_counts_each_of_the_tenants_queues_by_state_at_now(store: Store) -> None:
    await in_status(store, RUNNING, "a")
    await in_status(store, COMPLETED, "a")
    await in_status(store, DEAD_LETTER, "a")
    await in_status(store, CANCELLED, "a")
    await in_status(store, RETRYING, "a", now=at(40))  # due at at(100)
    await in_status(store, RETRYING, "a", now=at(-55))  # due at at(5)
    await inserted(store, job(queue_name="a"), job(queue_name="a", run_at=at(11)), job(queue_name="b", now=at(3)))
    await inserted(store, job(tenant=OTHER, queue_name="c"))

    assert await store.queue_overview(tenant_id=T, now=at(10)) == ({}, [
        # pending and scheduled are disjoint; retrying is the retrying part of both.
        QueueCounts(
            name="a", pending=2, scheduled=2, running=1, retrying=2, completed=1, dead_letter=1, cancelled=1,
            oldest_due_at=START,
        ),
        QueueCounts(name="b", pending=1, oldest_due_at=at(3)),
    ])  # fmt: skip
    assert await store.queue_overview(tenant_id=OTHER, now=at(10)) == (
        {},
        [QueueCounts(name="c", pending=1, oldest_due_at=START)],
    )
    assert await store.queue_overview(tenant_id="nobody", now=at(10)) == ({}, [])
    assert await store.queue_overview(tenant_id="nul\x00", now=at(10)) == ({}, [])


async def test_queue_overview_reads_the_configured_queues_settings_with_the_counts(store: Store) -> None:
    await inserted(store, job(queue_name="a"), job(queue_name="b", now=at(3)))
    await store.queue_configure(
        ConfigureRequest(tenant_id=T, queue_name="idle", patch=QueueSettingsPatch(paused=True), now=at(0))
    )
    await store.queue_configure(
        ConfigureRequest(tenant_id=T, queue_name="a", patch=QueueSettingsPatch(concurrency_limit=2), now=at(0))
    )
    await store.queue_configure(
        ConfigureRequest(tenant_id=OTHER, queue_name="b", patch=QueueSettingsPatch(paused=True), now=at(0))
    )

    settings, counts = await store.queue_overview(tenant_id=T, now=at(10))
    assert settings == {"a": QueueSettings(concurrency_limit=2), "idle": QueueSettings(paused=True)}
    assert list(settings) == ["a", "idle"]
    assert counts == [
        QueueCounts(name="a", pending=1, oldest_due_at=START),
        QueueCounts(name="b", pending=1, oldest_due_at=at(3)),
    ]
    assert await store.queue_overview(tenant_id=T, queue_name="a", now=at(10)) == ({"a": settings["a"]}, counts[:1])
    assert await store.queue_overview(tenant_id=T, queue_name="b", now=at(10)) == ({}, counts[1:])
    assert await store.queue_overview(tenant_id=T, queue_name="idle", now=at(10)) == ({"idle": settings["idle"]}, [])
    assert await store.queue_overview(tenant_id=OTHER, now=at(10)) == ({"b": QueueSettings(paused=True)}, [])
    assert await store.queue_overview(tenant_id=T, queue_name="nul\x00", now=at(10)) == ({}, [])


async def test_a_claim_whose_clock_reads_earlier_never_moves_the_rate_buckets_refill_time_back(store: Store) -> None:
    # Claims read their now before they reach the bucket, so one may come after a claim that read a later time.
    await inserted(store, *(job(queue_name="rated") for _ in range(10)))
    await store.queue_configure(
        ConfigureRequest(
            tenant_id=T,
            queue_name="rated",
            patch=QueueSettingsPatch(rate_limit=RateLimit(jobs=2, per_seconds=1)),
            now=START,
        )
    )

    def claim(seconds: float) -> ClaimRequest:
        return ClaimRequest(queues=["rated"], max_jobs=10, now=at(seconds), lease_seconds=60)

    assert len(await store.job_claim(claim(1))) == 2  # the burst: the bucket is empty as of at(1)
    assert await store.job_claim(claim(0.5)) == []  # nothing was refilled before at(1)
    # One token since at(1). Had the claim at at(0.5) written its time back, [0.5, 1] would be refilled twice.
    assert len(await store.job_claim(claim(1.5))) == 1
