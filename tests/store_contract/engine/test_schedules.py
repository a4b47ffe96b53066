"""Schedules on every store (README, "Cron schedules"): CRUD, tenancy, and the scheduler's tick over simulated days.

Time moves only through the TestClock; `run` ticks the scheduler at a fixed step, as a scheduler process would.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from queueflow.clocks import TestClock
from queueflow.core.errors import InvalidState, NotFound, ValidationError
from queueflow.core.schedule import NewSchedule, Schedule, ScheduleFired, SchedulePatch, firing_job
from queueflow.core.types import Job
from queueflow.engine import Engine
from queueflow.ports import Store

from tests.moments import T

BERLIN, NEW_YORK = "Europe/Berlin", "America/New_York"


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def new(name: str = "nightly", cron: str = "0 3 * * *", **fields: object) -> NewSchedule:
    return NewSchedule(name=name, cron=cron, task_name=fields.pop("task_name", "report"), **fields)  # type: ignore[arg-type]


async def run(engine: Engine, clock: TestClock, until: datetime, step: timedelta) -> int:
    """Tick the scheduler every `step` until `until`; the firings recorded."""
    fired = 0
    while clock.now() < until:
        clock.set(min(clock.now() + step, until))
        fired += await engine.fire_due_schedules()
    return fired


async def jobs(engine: Engine, tenant: str = T) -> list[Job]:
    """Every job of `tenant`, by scheduled_at."""
    rows, cursor = [], None
    while True:
        page = await engine.list_jobs(tenant, limit=500, cursor=cursor)
        rows += page.items
        if (cursor := page.next_cursor) is None:
            return sorted(rows, key=lambda job: (job.scheduled_at, job.id))


def local(moments: list[datetime], zone: str) -> list[str]:
    return [moment.astimezone(ZoneInfo(zone)).strftime("%m-%d %H:%M%z") for moment in moments]


# --- create, read, list, update, delete --------------------------------------------------------------------------


async def test_create_and_get(engine: Engine, clock: TestClock) -> None:
    created = await engine.create_schedule(
        T, new(timezone=BERLIN, queue_name="reports", payload={"a": [1]}, priority=5, max_retries=1)
    )
    assert created.id.startswith("sch_")
    assert (created.tenant_id, created.name, created.cron, created.timezone) == (T, "nightly", "0 3 * * *", BERLIN)
    assert (created.queue_name, created.payload, created.priority, created.max_retries) == ("reports", {"a": [1]}, 5, 1)
    assert created.enabled
    assert created.next_run_at == utc(2026, 3, 2, 2)  # 03:00 in Berlin (CET) after 2026-03-01 12:00 UTC
    assert created.last_run_at is None
    assert created.created_at == created.updated_at == clock.now()
    assert await engine.get_schedule(T, "nightly") == created


async def test_defaults_and_a_disabled_schedule(engine: Engine) -> None:
    created = await engine.create_schedule(T, new(enabled=False))
    assert (created.timezone, created.queue_name, created.payload, created.priority, created.max_retries) == (
        "UTC", "default", {}, 0, 3,
    )  # fmt: skip
    assert created.next_run_at is None


async def test_list_is_newest_first_and_pages_with_a_cursor(engine: Engine, clock: TestClock) -> None:
    for i in range(7):
        await engine.create_schedule(T, new(f"s{i}"))
        if i % 2:
            clock.advance(seconds=1)  # some share a created_at; the id breaks the tie
    await engine.create_schedule("tenant-b", new("theirs"))
    seen, cursor = [], None
    while True:
        page = await engine.list_schedules(T, limit=3, cursor=cursor)
        assert len(page.items) <= 3
        seen += page.items
        if (cursor := page.next_cursor) is None:
            break
    assert [(s.created_at, s.id) for s in seen] == sorted(((s.created_at, s.id) for s in seen), reverse=True)
    assert sorted(s.name for s in seen) == [f"s{i}" for i in range(7)]


@pytest.mark.parametrize(("limit", "cursor"), [(0, None), (501, None), (10, "garbage")])
async def test_list_bounds(engine: Engine, limit: int, cursor: str | None) -> None:
    with pytest.raises(ValidationError):
        await engine.list_schedules(T, limit=limit, cursor=cursor)


async def test_a_duplicate_name_is_invalid_state_but_another_tenant_may_use_it(engine: Engine) -> None:
    first = await engine.create_schedule(T, new())
    with pytest.raises(InvalidState, match="nightly"):
        await engine.create_schedule(T, new(cron="* * * * *"))
    assert await engine.get_schedule(T, "nightly") == first
    other = await engine.create_schedule("tenant-b", new())
    assert other.id != first.id


async def test_another_tenants_schedule_is_not_found(engine: Engine) -> None:
    await engine.create_schedule(T, new())
    with pytest.raises(NotFound):
        await engine.get_schedule("tenant-b", "nightly")
    with pytest.raises(NotFound):
        await engine.update_schedule("tenant-b", "nightly", SchedulePatch(enabled=False))
    with pytest.raises(NotFound):
        await engine.delete_schedule("tenant-b", "nightly")
    assert (await engine.list_schedules("tenant-b")).items == []
    assert (await engine.get_schedule(T, "nightly")).enabled


@pytest.mark.parametrize("name", ["missing", "nul\x00name", "\ud800"])
async def test_an_unknown_name_is_not_found(engine: Engine, name: str) -> None:
    with pytest.raises(NotFound):
        await engine.get_schedule(T, name)
    with pytest.raises(NotFound):
        await engine.delete_schedule(T, name)


@pytest.mark.parametrize(
    ("fields", "field", "says"),
    [
        ({"cron": "61 * * * *"}, "cron", "minute field '61' is not valid"),
        ({"cron": "0 0 30 2 *"}, "cron", "never matches"),
        ({"cron": "* * * * * *"}, "cron", "only 5 are supported"),
        ({"timezone": "Mars/Olympus"}, "timezone", "unknown time zone 'Mars/Olympus'"),
        ({"timezone": "europe/berlin"}, "timezone", "did you mean 'Europe/Berlin'?"),
        ({"name": "no spaces"}, "name", "must match"),
        ({"queue_name": ""}, "queue_name", "must match"),
        ({"priority": 1001}, "priority", "between"),
        ({"payload": {"x": "\x00"}}, "payload.x", "NUL"),
    ],
)
async def test_invalid_fields_are_validation_errors_naming_the_field(
    engine: Engine, fields: dict[str, object], field: str, says: str
) -> None:
    with pytest.raises(ValidationError) as raised:
        await engine.create_schedule(T, new(**fields))
    assert [error.field for error in raised.value.errors] == [field]
    assert says in raised.value.errors[0].message
    assert (await engine.list_schedules(T)).items == []


async def test_patch_changes_only_what_it_names(engine: Engine, clock: TestClock) -> None:
    created = await engine.create_schedule(T, new())
    clock.advance(minutes=5)
    updated = await engine.update_schedule(T, "nightly", SchedulePatch(payload={"v": 2}, priority=-3))
    assert (updated.payload, updated.priority) == ({"v": 2}, -3)
    assert (updated.id, updated.cron, updated.next_run_at, updated.created_at) == (
        created.id, created.cron, created.next_run_at, created.created_at,
    )  # fmt: skip
    assert updated.updated_at == clock.now()
    assert await engine.get_schedule(T, "nightly") == updated


async def test_a_new_cron_or_zone_starts_from_now(engine: Engine, clock: TestClock) -> None:
    await engine.create_schedule(T, new())
    clock.advance(minutes=1)
    recron = await engine.update_schedule(T, "nightly", SchedulePatch(cron="*/15 * * * *"))
    assert recron.next_run_at == utc(2026, 3, 1, 12, 15)
    rezoned = await engine.update_schedule(T, "nightly", SchedulePatch(cron="0 9 * * *", timezone=NEW_YORK))
    assert rezoned.next_run_at == utc(2026, 3, 1, 14)  # 09:00 EST


async def test_an_invalid_patch_changes_nothing(engine: Engine) -> None:
    created = await engine.create_schedule(T, new())
    with pytest.raises(ValidationError) as raised:
        await engine.update_schedule(T, "nightly", SchedulePatch(cron="not cron", timezone="Nowhere/Land"))
    assert [error.field for error in raised.value.errors] == ["cron", "timezone"]
    assert await engine.get_schedule(T, "nightly") == created


async def test_edits_at_one_instant_each_apply(engine: Engine) -> None:
    # Two edits within one clock reading: the second is applied to the first's result, not lost.
    await engine.create_schedule(T, new())
    first = await engine.update_schedule(T, "nightly", SchedulePatch(priority=1))
    second = await engine.update_schedule(T, "nightly", SchedulePatch(max_retries=0))
    assert (second.priority, second.max_retries) == (1, 0)
    assert second.updated_at > first.updated_at


async def test_delete(engine: Engine) -> None:
    await engine.create_schedule(T, new())
    await engine.delete_schedule(T, "nightly")
    with pytest.raises(NotFound):
        await engine.get_schedule(T, "nightly")
    with pytest.raises(NotFound):
        await engine.delete_schedule(T, "nightly")
    await engine.create_schedule(T, new())  # the name is free again


# --- the store's compare-and-sets ---------------------------------------------------------------------------------


async def test_a_firing_is_recorded_once_and_never_over_an_edit(engine: Engine, store: Store, clock: TestClock) -> None:
    read = await engine.create_schedule(T, new(cron="* * * * *"))
    assert read.next_run_at is not None
    later = read.next_run_at + timedelta(minutes=1)

    async def fired(schedule: Schedule) -> bool:
        assert schedule.next_run_at is not None
        return await store.schedule_fired(
            ScheduleFired(
                schedule_id=schedule.id,
                expected_next_run_at=schedule.next_run_at,
                expected_updated_at=schedule.updated_at,
                next_run_at=later,
                last_run_at=schedule.next_run_at,
            )
        )

    edited = await engine.update_schedule(T, "nightly", SchedulePatch(payload={"edited": True}))
    assert not await fired(read), "an edit came in between: the stale firing must not land"
    assert await fired(edited)
    assert not await fired(edited), "the same firing twice"
    now = await engine.get_schedule(T, "nightly")
    assert (now.next_run_at, now.last_run_at, now.payload) == (later, edited.next_run_at, {"edited": True})


async def test_a_stale_edit_is_refused_by_the_store(engine: Engine, store: Store, clock: TestClock) -> None:
    read = await engine.create_schedule(T, new(cron="* * * * *"))
    clock.advance(minutes=1)
    assert await engine.fire_due_schedules() == 1
    stale = await store.schedule_update(
        Schedule(**{**{f: getattr(read, f) for f in Schedule.__dataclass_fields__}, "priority": 9}),
        expected_updated_at=read.updated_at,
        expected_next_run_at=read.next_run_at,
    )
    assert stale is None, "a firing came in between: the stale edit would move next_run_at backwards"
    assert (await engine.get_schedule(T, "nightly")).priority == 0


# --- firing over simulated time ----------------------------------------------------------------------------------


async def test_a_minutely_schedule_over_three_hours(engine: Engine, clock: TestClock) -> None:
    schedule = await engine.create_schedule(
        T, new("tick", "* * * * *", task_name="ping", queue_name="q", payload={"p": 1}, priority=7, max_retries=2)
    )
    start = clock.now()
    assert await run(engine, clock, start + timedelta(hours=3), timedelta(seconds=20)) == 180
    fired = await jobs(engine)
    assert [job.scheduled_at for job in fired] == [start + timedelta(minutes=m) for m in range(1, 181)]
    first = fired[0]
    assert first.idempotency_key == f"cron:{schedule.id}:2026-03-01T12:01:00Z"
    assert first.metadata == {"schedule": "tick", "occurrence": "2026-03-01T12:01:00Z"}
    assert (first.tenant_id, first.task_name, first.queue_name, first.payload, first.priority, first.max_retries) == (
        T, "ping", "q", {"p": 1}, 7, 2,
    )  # fmt: skip
    assert len({job.idempotency_key for job in fired}) == 180
    after = await engine.get_schedule(T, "tick")
    assert (after.last_run_at, after.next_run_at) == (start + timedelta(hours=3), start + timedelta(hours=3, minutes=1))


async def test_an_hourly_schedule_over_two_days_fires_on_the_hour(engine: Engine, clock: TestClock) -> None:
    await engine.create_schedule(T, new("hourly", "@hourly"))
    await run(engine, clock, clock.now() + timedelta(days=2), timedelta(minutes=7))
    fired = await jobs(engine)
    assert len(fired) == 48
    # Each job is due at its occurrence, whenever the tick that inserted it came.
    assert [job.scheduled_at for job in fired] == [utc(2026, 3, 1, 13) + timedelta(hours=h) for h in range(48)]


async def test_a_daily_schedule_over_a_week_in_its_zone(engine: Engine, clock: TestClock) -> None:
    await engine.create_schedule(T, new(timezone=BERLIN))
    await run(engine, clock, utc(2026, 3, 8, 12), timedelta(minutes=15))
    assert [job.scheduled_at for job in await jobs(engine)] == [utc(2026, 3, d, 2) for d in range(2, 9)]


async def test_schedules_of_every_tenant_fire_into_their_own_tenant(engine: Engine, clock: TestClock) -> None:
    for tenant in (T, "tenant-b"):
        await engine.create_schedule(tenant, new("m", "*/10 * * * *"))
    assert await run(engine, clock, clock.now() + timedelta(hours=1), timedelta(minutes=1)) == 12
    assert len(await jobs(engine, T)) == len(await jobs(engine, "tenant-b")) == 6


# --- DST ---------------------------------------------------------------------------------------------------------


async def daily_jobs(engine: Engine, clock: TestClock, cron: str, zone: str, start: datetime, days: int) -> list[str]:
    clock.set(start)
    await engine.create_schedule(T, new(cron=cron, timezone=zone))
    await run(engine, clock, start + timedelta(days=days), timedelta(minutes=5))
    fired = await jobs(engine)
    assert len({job.idempotency_key for job in fired}) == len(fired)
    return local([job.scheduled_at for job in fired], zone)


async def test_berlin_spring_forward_a_0230_job_runs_once_after_the_gap(engine: Engine, clock: TestClock) -> None:
    fired = await daily_jobs(engine, clock, "30 2 * * *", BERLIN, utc(2026, 3, 27, 12), 4)
    # 02:30 does not exist on 29 March: it runs once, at the first instant after the gap (03:00 CEST).
    assert fired == ["03-28 02:30+0100", "03-29 03:00+0200", "03-30 02:30+0200", "03-31 02:30+0200"]


async def test_berlin_fall_back_a_0230_job_runs_once_in_the_first_pass(engine: Engine, clock: TestClock) -> None:
    fired = await daily_jobs(engine, clock, "30 2 * * *", BERLIN, utc(2026, 10, 23, 12), 4)
    # 02:30 happens twice on 25 October: it runs at the first, in summer time.
    assert fired == ["10-24 02:30+0200", "10-25 02:30+0200", "10-26 02:30+0100", "10-27 02:30+0100"]


async def test_berlin_fall_back_an_hourly_job_runs_in_both_passes(engine: Engine, clock: TestClock) -> None:
    clock.set(utc(2026, 10, 24, 21, 30))
    await engine.create_schedule(T, new(cron="0 * * * *", timezone=BERLIN))
    await run(engine, clock, utc(2026, 10, 25, 22, 30), timedelta(minutes=10))  # the local day of 25 October
    fired = local([job.scheduled_at for job in await jobs(engine)], BERLIN)
    assert len(fired) == 25
    assert fired[1:5] == ["10-25 01:00+0200", "10-25 02:00+0200", "10-25 02:00+0100", "10-25 03:00+0100"]


async def test_new_york_spring_forward(engine: Engine, clock: TestClock) -> None:
    fired = await daily_jobs(engine, clock, "30 2 * * *", NEW_YORK, utc(2026, 3, 6, 12), 3)
    assert fired == ["03-07 02:30-0500", "03-08 03:00-0400", "03-09 02:30-0400"]


async def test_new_york_fall_back(engine: Engine, clock: TestClock) -> None:
    fired = await daily_jobs(engine, clock, "30 1 * * *", NEW_YORK, utc(2026, 10, 30, 12), 3)
    assert fired == ["10-31 01:30-0400", "11-01 01:30-0400", "11-02 01:30-0500"]


# --- missed firings, pauses, deletion, repeats, crashes ----------------------------------------------------------


@pytest.mark.parametrize(("cron", "latest"), [("0 3 * * *", utc(2026, 3, 4, 3)), ("* * * * *", utc(2026, 3, 4, 12))])
async def test_a_scheduler_down_for_three_days_fires_only_the_latest_occurrence_once(
    engine: Engine, clock: TestClock, cron: str, latest: datetime
) -> None:
    schedule = await engine.create_schedule(T, new(cron=cron))
    clock.advance(days=3)
    assert await engine.fire_due_schedules() == 1
    assert await engine.fire_due_schedules() == 0
    (job,) = await jobs(engine)
    assert job.scheduled_at == latest
    assert job.metadata["occurrence"] == latest.isoformat().replace("+00:00", "Z")
    after = await engine.get_schedule(T, schedule.name)
    assert after.last_run_at == latest
    assert after.next_run_at is not None
    assert after.next_run_at > clock.now()


async def test_disabling_stops_firings_and_enabling_does_not_catch_up(engine: Engine, clock: TestClock) -> None:
    await engine.create_schedule(T, new(cron="* * * * *"))
    await run(engine, clock, clock.now() + timedelta(minutes=5), timedelta(seconds=30))
    paused = await engine.update_schedule(T, "nightly", SchedulePatch(enabled=False))
    assert paused.next_run_at is None
    assert await run(engine, clock, clock.now() + timedelta(hours=1), timedelta(minutes=1)) == 0
    resumed = await engine.update_schedule(T, "nightly", SchedulePatch(enabled=True))
    assert resumed.next_run_at == clock.now() + timedelta(minutes=1)
    assert await engine.fire_due_schedules() == 0, "the hour it was paused for never fires"
    await run(engine, clock, clock.now() + timedelta(minutes=2), timedelta(seconds=30))
    scheduled = [job.scheduled_at for job in await jobs(engine)]
    assert len(scheduled) == 7
    assert scheduled[5] == utc(2026, 3, 1, 13, 6)


async def test_a_deleted_schedule_fires_no_more(engine: Engine, clock: TestClock) -> None:
    await engine.create_schedule(T, new(cron="* * * * *"))
    await run(engine, clock, clock.now() + timedelta(minutes=3), timedelta(minutes=1))
    await engine.delete_schedule(T, "nightly")
    assert await run(engine, clock, clock.now() + timedelta(hours=1), timedelta(minutes=1)) == 0
    assert len(await jobs(engine)) == 3


async def test_ticking_twice_at_one_instant_inserts_nothing_new(engine: Engine, clock: TestClock) -> None:
    await engine.create_schedule(T, new("a", "* * * * *"))
    await engine.create_schedule(T, new("b", "*/5 * * * *"))
    clock.advance(minutes=5)
    assert await engine.fire_due_schedules() == 2
    assert await engine.fire_due_schedules() == 0
    assert len(await jobs(engine)) == 2


async def test_a_scheduler_that_crashed_after_inserting_does_not_duplicate(engine: Engine, clock: TestClock) -> None:
    schedule = await engine.create_schedule(T, new(cron="*/5 * * * *"))
    assert schedule.next_run_at is not None
    clock.advance(minutes=6)
    # What a scheduler that died between its two writes left behind: the job, and a schedule not advanced.
    inserted = await engine.enqueue(T, firing_job(schedule, schedule.next_run_at))
    assert (await engine.get_schedule(T, "nightly")).next_run_at == schedule.next_run_at
    assert await engine.fire_due_schedules() == 1
    (job,) = await jobs(engine)
    assert job.id == inserted.job.id
    after = await engine.get_schedule(T, "nightly")
    assert (after.last_run_at, after.next_run_at) == (schedule.next_run_at, utc(2026, 3, 1, 12, 10))


async def test_a_tenant_the_store_cannot_keep_is_refused(engine: Engine) -> None:
    with pytest.raises(ValidationError) as raised:
        await engine.create_schedule("tenant\x00", new())
    assert [error.field for error in raised.value.errors] == ["tenant_id"]
