"""The `ScheduleStore` methods, called directly on every store: insert, get, list, update, delete, due and fired,
each against its docstring in `ports`. update and fired are compare-and-sets on what the caller read.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from queueflow.core.errors import InvalidState, ValidationError
from queueflow.core.jsonvalue import MAX_DEPTH
from queueflow.core.schedule import Schedule, ScheduleFired
from queueflow.ports import Store

from tests.moments import START, T
from tests.store_contract.store_rows import OTHER, at, nested, newest_first, pages, schedule

HOUR = timedelta(hours=1)


async def stored(store: Store, *rows: Schedule) -> list[Schedule]:
    return [await store.schedule_insert(row) for row in rows]


async def all_schedules(store: Store) -> list[Schedule]:
    """Every schedule of T and OTHER."""
    return [
        *await store.schedule_list(tenant_id=T, limit=1000, after=None),
        *await store.schedule_list(tenant_id=OTHER, limit=1000, after=None),
    ]


async def update(store: Store, read: Schedule, edited: Schedule) -> Schedule | None:
    """`edited`, stored only if the row is still as `read`."""
    return await store.schedule_update(
        edited, expected_updated_at=read.updated_at, expected_next_run_at=read.next_run_at
    )


async def fired(store: Store, read: Schedule, next_run_at: float = 7200, last_run_at: float = 3600) -> bool:
    """Record the firing of `read`'s pending occurrence, only if the row is still as `read`."""
    assert read.next_run_at is not None
    return await store.schedule_fired(
        ScheduleFired(
            schedule_id=read.id,
            expected_next_run_at=read.next_run_at,
            expected_updated_at=read.updated_at,
            next_run_at=at(next_run_at),
            last_run_at=at(last_run_at),
        )
    )


# --- schedule_insert, schedule_get, schedule_list ----------------------------------------------------------


async def test_insert_stores_every_field_as_given(store: Store) -> None:
    row = schedule(
        cron="*/5 * * * *",
        timezone="Europe/Berlin",
        task_name="sync",
        queue_name="cron",
        payload={"a": [1, {"b": None}]},
        priority=-2,
        max_retries=0,
        last_run_at=at(-60),
        updated_at=at(1),
    )
    disabled = schedule("paused", enabled=False, next_run_at=None)
    assert await stored(store, row, disabled) == [row, disabled]
    assert await store.schedule_get(row.name, tenant_id=T) == row
    assert await store.schedule_get(disabled.name, tenant_id=T) == disabled


async def test_insert_of_a_taken_name_is_invalid_state_and_changes_nothing(store: Store) -> None:
    (first,) = await stored(store, schedule("nightly"))
    with pytest.raises(InvalidState):
        await store.schedule_insert(schedule("nightly", cron="0 0 * * *"))
    assert await all_schedules(store) == [first]
    (elsewhere,) = await stored(store, schedule("nightly", tenant=OTHER))
    assert await store.schedule_get("nightly", tenant_id=OTHER) == elsewhere


async def test_insert_of_a_value_postgresql_cannot_store_stores_nothing(store: Store) -> None:
    (existing,) = await stored(store, schedule("existing"))
    for bad in [
        schedule("nul\x00"),
        schedule(cron="0 * * * *\x00"),
        schedule(task_name="lone \ud800"),
        schedule(payload={"k": "nul\x00"}),
        schedule(payload={"deep": nested(MAX_DEPTH)}),
        replace(schedule("another"), id=existing.id),
    ]:
        with pytest.raises(ValidationError):
            await store.schedule_insert(bad)
    assert await all_schedules(store) == [existing]


async def test_get_answers_only_for_the_tenants_schedule_of_that_name(store: Store) -> None:
    (row,) = await stored(store, schedule("nightly"))
    assert await store.schedule_get("nightly", tenant_id=T) == row
    assert await store.schedule_get("nightly", tenant_id=OTHER) is None
    assert await store.schedule_get("hourly", tenant_id=T) is None
    assert await store.schedule_get("nul\x00", tenant_id=T) is None
    assert await store.schedule_get("nightly", tenant_id="nul\x00") is None


async def test_list_is_newest_first_and_resumes_strictly_after_the_cursor(store: Store) -> None:
    rows = await stored(store, *(schedule(f"s{i}", now=at(seconds)) for i, seconds in enumerate([0, 1, 1, 2, 1])))
    await stored(store, schedule("theirs", tenant=OTHER, now=at(9)))
    order = newest_first(rows)
    assert await pages(lambda after: store.schedule_list(tenant_id=T, limit=2, after=after)) == [
        order[0:2],
        order[2:4],
        order[4:],
    ]
    assert (await store.schedule_list(tenant_id=T, limit=1, after=None))[0] == await store.schedule_get(
        "s3", tenant_id=T
    )
    assert await store.schedule_list(tenant_id="nul\x00", limit=10, after=None) == []


# --- schedule_update ---------------------------------------------------------------------------------------


async def test_update_writes_the_editable_fields_and_updated_at_and_keeps_the_rows_identity(store: Store) -> None:
    (read,) = await stored(store, schedule("nightly", last_run_at=at(-60)))
    edited = replace(
        read,
        cron="0 0 * * *",
        timezone="America/New_York",
        task_name="other",
        queue_name="q",
        payload={"v": 2},
        priority=9,
        max_retries=1,
        enabled=False,
        next_run_at=None,
        updated_at=at(5),
    )
    # The name, tenant, creation time and last firing are the row's own: an update never moves them.
    foreign = replace(edited, name="renamed", created_at=at(3), last_run_at=at(4))
    assert await update(store, read, foreign) == edited
    assert await store.schedule_get("nightly", tenant_id=T) == edited
    assert await store.schedule_get("renamed", tenant_id=T) is None
    # A disabled schedule has no next_run_at: the compare-and-set matches that too.
    enabled = replace(edited, enabled=True, next_run_at=at(3600), updated_at=at(6))
    assert await update(store, edited, enabled) == enabled


async def test_update_is_none_when_the_row_changed_since_it_was_read_and_changes_nothing(store: Store) -> None:
    (read,) = await stored(store, schedule("nightly"))
    edit = replace(read, priority=5, updated_at=at(5))
    assert await update(store, replace(read, updated_at=at(-1)), edit) is None  # edited since
    assert await update(store, replace(read, next_run_at=at(1)), edit) is None  # fired since
    assert await update(store, replace(read, next_run_at=None), edit) is None
    assert await update(store, read, replace(edit, tenant_id=OTHER)) is None  # another tenant's row
    assert await update(store, read, replace(edit, id="sch_missing")) is None
    assert await store.schedule_get("nightly", tenant_id=T) == read
    assert await fired(store, read)
    assert await update(store, read, edit) is None  # a firing came in between


async def test_update_with_a_value_postgresql_cannot_store_changes_nothing(store: Store) -> None:
    (read,) = await stored(store, schedule("nightly"))
    for bad in [
        replace(read, payload={"k": "nul\x00"}),
        replace(read, cron="\x00"),
        replace(read, queue_name="\ud800"),
    ]:
        with pytest.raises(ValidationError):
            await update(store, read, replace(bad, updated_at=at(5)))
    assert await all_schedules(store) == [read]


# --- schedule_delete ---------------------------------------------------------------------------------------


async def test_delete_removes_only_the_tenants_schedule_of_that_name(store: Store) -> None:
    mine, theirs = await stored(store, schedule("nightly"), schedule("nightly", tenant=OTHER))
    assert await store.schedule_delete("hourly", tenant_id=T) is False
    assert await store.schedule_delete("nul\x00", tenant_id=T) is False
    assert await store.schedule_delete("nightly", tenant_id=T) is True
    assert await store.schedule_delete("nightly", tenant_id=T) is False
    assert await all_schedules(store) == [theirs]
    assert await fired(store, mine) is False  # a deleted schedule fires no more


# --- schedule_due, schedule_fired --------------------------------------------------------------------------


async def test_due_lists_enabled_due_schedules_of_every_tenant_earliest_first(store: Store) -> None:
    late, early, theirs, on_time = await stored(
        store,
        schedule("late", next_run_at=at(50)),
        schedule("early", next_run_at=at(10)),
        schedule("theirs", tenant=OTHER, next_run_at=at(30)),
        schedule("on-time", next_run_at=at(60)),
    )
    await stored(store, schedule("ahead", next_run_at=at(61)), schedule("off", enabled=False, next_run_at=at(1)))
    await stored(store, schedule("never", enabled=False, next_run_at=None))
    assert await store.schedule_due(limit=10, now=at(60)) == [early, theirs, late, on_time]
    assert await store.schedule_due(limit=2, now=at(60)) == [early, theirs]
    assert await store.schedule_due(limit=10, now=at(9)) == []


async def test_fired_moves_next_run_at_and_last_run_at_and_nothing_else(store: Store) -> None:
    (read,) = await stored(store, schedule("nightly", payload={"a": 1}, updated_at=at(1)))
    assert await fired(store, read, next_run_at=7200, last_run_at=3600) is True
    assert await store.schedule_get("nightly", tenant_id=T) == replace(read, next_run_at=at(7200), last_run_at=at(3600))


async def test_fired_is_false_once_another_firing_or_an_edit_came_first_and_changes_nothing(store: Store) -> None:
    (read,) = await stored(store, schedule("nightly"))
    assert await fired(store, read)
    assert await fired(store, read) is False  # another scheduler recorded this firing first
    now = await store.schedule_get("nightly", tenant_id=T)
    assert now is not None
    edited = await update(store, now, replace(now, priority=3, updated_at=at(5)))
    assert edited is not None
    assert await fired(store, now, next_run_at=10800) is False  # edited since it was read
    disabled = await update(store, edited, replace(edited, enabled=False, updated_at=at(6)))
    assert disabled is not None
    assert await fired(store, disabled) is False  # disabled since it was read
    assert await store.schedule_fired(ScheduleFired(
        schedule_id="sch\x00", expected_next_run_at=START, expected_updated_at=START, next_run_at=START,
        last_run_at=START,
    )) is False  # fmt: skip
    assert await all_schedules(store) == [disabled]
