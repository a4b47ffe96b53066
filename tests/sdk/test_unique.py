"""`unique=Unique(...)` through the Python SDK against the real app: enqueue, a batch, the list filter and
`DuplicateError`."""

from __future__ import annotations

import pytest
from queueflow_client import AsyncQueueFlow, DuplicateError, Unique


async def test_enqueue_with_unique_skips_replaces_and_raises_duplicate(client: AsyncQueueFlow) -> None:
    first = await client.jobs.enqueue("sync", payload={"n": 1}, unique=Unique(key="customer-1"))
    assert first.unique_key == "customer-1"
    skipped = await client.jobs.enqueue("sync", payload={"n": 2}, unique=Unique(key="customer-1"))
    assert (skipped.id, skipped.payload) == (first.id, {"n": 1})
    replaced = await client.jobs.enqueue(
        "sync", payload={"n": 3}, unique={"key": "customer-1", "on_conflict": "replace"}
    )
    assert (replaced.id, replaced.payload) == (first.id, {"n": 3})
    with pytest.raises(DuplicateError) as raised:
        await client.jobs.enqueue("sync", unique=Unique(key="customer-1", on_conflict="error"))
    assert (raised.value.existing_job_id, raised.value.index) == (first.id, None)
    with pytest.raises(DuplicateError) as in_batch:
        await client.jobs.enqueue_many(
            [{"task_name": "a"}, {"task_name": "sync", "unique": Unique(key="customer-1", on_conflict="error")}]
        )
    assert (in_batch.value.existing_job_id, in_batch.value.index) == (first.id, 1)
    batch = await client.jobs.enqueue_many(
        [{"task_name": "sync", "unique": Unique(key="k2")}, {"task_name": "sync", "unique": Unique(key="k2")}]
    )
    assert batch[0].id == batch[1].id
    listed = await client.jobs.list_page(unique_key="customer-1")
    assert [job.id for job in listed.items] == [first.id]


async def test_a_bad_option_is_refused_before_anything_is_sent(client: AsyncQueueFlow) -> None:
    with pytest.raises(ValueError, match="on_conflict"):
        await client.jobs.enqueue("sync", unique={"key": "k", "on_conflict": "merge"})
    with pytest.raises(TypeError, match="unknown unique option"):
        await client.jobs.enqueue("sync", unique={"key": "k", "debounce": 5})
