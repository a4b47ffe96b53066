"""The `EndpointStore` methods, called directly on every store, each against its docstring in `ports`: the rows
and their compare-and-set edits, and the delivery slots that bound an endpoint's deliveries in flight."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta

import pytest
from queueflow.core.endpoints import DeliveriesFinished, Endpoint, EndpointQuery, SlotRequest
from queueflow.core.errors import InvalidState, ValidationError
from queueflow.core.types import Cursor
from queueflow.ports import Store

from tests.moments import START, T

OTHER = "tenant-b"
SECOND = timedelta(seconds=1)


def endpoint(name: str = "hooks", *, tenant_id: str = T, number: int = 1, **changes: object) -> Endpoint:
    row = Endpoint(
        id=f"ep_{number:026d}",
        tenant_id=tenant_id,
        name=name,
        url="https://hooks.example.com/queueflow",
        queues=("default", "mail"),
        task_names=("send",),
        concurrency=2,
        timeout_seconds=30,
        paused=False,
        secret="qfsec_one",
        previous_secret=None,
        previous_secret_until=None,
        created_at=START + number * SECOND,
        updated_at=START + number * SECOND,
    )
    return replace(row, **changes)  # type: ignore[arg-type]


def ended(
    row: Endpoint, *slots: str, failed: int = 0, error: str | None = None, at: timedelta = timedelta(0)
) -> DeliveriesFinished:
    """`slots` ended: the first `failed` of them failed (the last with `error`), the others answered 2xx."""
    return DeliveriesFinished(
        endpoint_id=row.id, slot_ids=list(slots), delivered=len(slots) - failed, failed=failed, last_error=error,
        now=START + at,
    )  # fmt: skip


def take(row: Endpoint, want: int, *, at: timedelta = timedelta(0), hold: float = 30) -> SlotRequest:
    return SlotRequest(endpoint_id=row.id, want=want, hold_seconds=hold, now=START + at)


async def test_insert_get_and_list_newest_first_per_tenant(store: Store) -> None:
    first = await store.endpoint_insert(endpoint("a", number=1))
    second = await store.endpoint_insert(endpoint("b", number=2))
    await store.endpoint_insert(endpoint("a", tenant_id=OTHER, number=3))
    assert first == endpoint("a", number=1)
    assert await store.endpoint_get("a", tenant_id=T, now=START) == first
    assert await store.endpoint_get("a", tenant_id="nobody", now=START) is None
    assert await store.endpoint_get("a\x00", tenant_id=T, now=START) is None
    page = await store.endpoint_list(EndpointQuery(tenant_id=T, limit=10, after=None, now=START))
    assert [row.name for row in page] == ["b", "a"]
    after = Cursor(second.created_at, second.id)
    rest = await store.endpoint_list(EndpointQuery(tenant_id=T, limit=10, after=after, now=START))
    assert rest == [first]


async def test_a_taken_name_is_invalid_state_and_writes_nothing(store: Store) -> None:
    await store.endpoint_insert(endpoint("a", number=1))
    with pytest.raises(InvalidState):
        await store.endpoint_insert(endpoint("a", number=2, url="https://other.example.com/"))
    stored = await store.endpoint_get("a", tenant_id=T, now=START)
    assert stored is not None
    assert stored.id == endpoint(number=1).id


async def test_text_it_cannot_store_is_a_validation_error(store: Store) -> None:
    with pytest.raises(ValidationError) as raised:
        await store.endpoint_insert(endpoint(url="https://a.example.com/\x00"))
    assert [error.loc for error in raised.value.errors] == [("url",)]
    assert await store.endpoint_get("hooks", tenant_id=T, now=START) is None


async def test_update_is_a_compare_and_set_that_keeps_identity_and_counters(store: Store) -> None:
    row = await store.endpoint_insert(endpoint())
    (slot,) = await store.endpoint_slots_take(take(row, 1))
    await store.endpoint_deliveries_finish(ended(row, slot))
    edited = replace(
        row,
        name="renamed",
        url="https://new.example.com/",
        task_names=None,
        concurrency=7,
        paused=True,
        secret="qfsec_two",
        previous_secret="qfsec_one",
        previous_secret_until=START + timedelta(hours=24),
        updated_at=START + 5 * SECOND,
        delivered=99,
    )
    stored = await store.endpoint_update(edited, expected_updated_at=row.updated_at)
    assert stored == replace(edited, name="hooks", delivered=1, last_delivery_at=START)
    assert await store.endpoint_update(edited, expected_updated_at=row.updated_at) is None  # it has moved on
    assert await store.endpoint_get("hooks", tenant_id=T, now=START) == stored
    assert await store.endpoint_update(replace(edited, tenant_id=OTHER), expected_updated_at=edited.updated_at) is None


async def test_delete_takes_the_slots_with_it(store: Store) -> None:
    row = await store.endpoint_insert(endpoint())
    (slot,) = await store.endpoint_slots_take(take(row, 1))
    assert await store.endpoint_delete("hooks", tenant_id=OTHER) is False
    assert await store.endpoint_delete("hooks", tenant_id=T) is True
    assert await store.endpoint_delete("hooks", tenant_id=T) is False
    # A delivery that finishes after its endpoint went records nothing, and fails nothing.
    await store.endpoint_deliveries_finish(ended(row, slot))
    assert await store.endpoint_deliverable() == []


async def test_deliverable_is_every_tenants_endpoints_not_paused(store: Store) -> None:
    a = await store.endpoint_insert(endpoint("a", number=1))
    await store.endpoint_insert(endpoint("b", number=2, paused=True))
    c = await store.endpoint_insert(endpoint("c", tenant_id=OTHER, number=3))
    assert await store.endpoint_deliverable() == [a, c]


async def test_slots_never_exceed_concurrency_and_count_as_in_flight(store: Store) -> None:
    row = await store.endpoint_insert(endpoint(concurrency=3))
    first = await store.endpoint_slots_take(take(row, 2))
    second = await store.endpoint_slots_take(take(row, 5))
    assert (len(first), len(second)) == (2, 1)
    assert len(set(first + second)) == 3
    assert await store.endpoint_slots_take(take(row, 1)) == []
    read = await store.endpoint_get("hooks", tenant_id=T, now=START)
    assert read is not None
    assert read.in_flight == 3
    (listed,) = await store.endpoint_list(EndpointQuery(tenant_id=T, limit=5, after=None, now=START))
    assert listed.in_flight == 3
    await store.endpoint_slots_release(first)
    assert len(await store.endpoint_slots_take(take(row, 5))) == 2


async def test_concurrent_takers_share_the_concurrency(store: Store) -> None:
    row = await store.endpoint_insert(endpoint(concurrency=5))
    taken = await asyncio.gather(*(store.endpoint_slots_take(take(row, 2)) for _ in range(6)))
    assert sum(len(slots) for slots in taken) == 5


async def test_a_slot_whose_hold_passed_is_free_again_and_cannot_be_held_on(store: Store) -> None:
    row = await store.endpoint_insert(endpoint(concurrency=1))
    (slot,) = await store.endpoint_slots_take(take(row, 1, hold=10))
    assert await store.endpoint_slots_hold([slot], until=START + 20 * SECOND, now=START + 5 * SECOND) == 1
    assert await store.endpoint_slots_take(take(row, 1, at=15 * SECOND)) == []  # held on past its first hold
    read = await store.endpoint_get("hooks", tenant_id=T, now=START + 21 * SECOND)
    assert read is not None
    assert read.in_flight == 0
    assert await store.endpoint_slots_hold([slot], until=START + 40 * SECOND, now=START + 21 * SECOND) == 0
    assert len(await store.endpoint_slots_take(take(row, 1, at=21 * SECOND))) == 1


async def test_paused_or_missing_endpoints_give_no_slots(store: Store) -> None:
    row = await store.endpoint_insert(endpoint(paused=True))
    assert await store.endpoint_slots_take(take(row, 1)) == []
    assert await store.endpoint_slots_take(replace(take(row, 1), endpoint_id="ep_missing")) == []


async def test_finish_counts_and_frees_the_slots(store: Store) -> None:
    row = await store.endpoint_insert(endpoint(concurrency=3))
    one, two, three = await store.endpoint_slots_take(take(row, 3))
    await store.endpoint_deliveries_finish(ended(row, one, two, failed=1, error="the endpoint answered 500"))
    await store.endpoint_deliveries_finish(ended(row, three, at=SECOND))  # a success keeps the last error
    read = await store.endpoint_get("hooks", tenant_id=T, now=START + SECOND)
    assert read is not None
    assert (read.delivered, read.failed, read.last_error, read.last_delivery_at, read.in_flight) == (
        2, 1, "the endpoint answered 500", START + SECOND, 0,
    )  # fmt: skip
    assert len(await store.endpoint_slots_take(take(row, 5, at=SECOND))) == 3
