"""Schedules (README, "Cron schedules"): validation, occurrences across DST, the missed-firing rule, the firing job."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from queueflow.core.errors import FieldError
from queueflow.core.schedule import (
    ALIASES,
    Firing,
    NewSchedule,
    Schedule,
    SchedulePatch,
    cron_errors,
    due_firing,
    firing_job,
    firing_metadata,
    initial_next_run_at,
    latest_due_occurrence,
    next_occurrence,
    occurrence_key,
    patched,
    schedule_errors,
    schedule_patch_errors,
    timezone_errors,
)

BERLIN, NEW_YORK = "Europe/Berlin", "America/New_York"
ONLY_FIVE = (
    "but only 5 are supported (minute hour day-of-month month day-of-week): seconds and years cannot be scheduled"
)


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def occurrences(cron: str, tz: str, start: datetime, end: datetime) -> Iterator[datetime]:
    moment = next_occurrence(cron, tz, start)
    while moment < end:
        yield moment
        moment = next_occurrence(cron, tz, moment)


def local(moments: Iterator[datetime] | list[datetime], tz: str) -> list[str]:
    return [m.astimezone(ZoneInfo(tz)).strftime("%m-%d %H:%M%z") for m in moments]


# --- ordinary days ----------------------------------------------------------------------------------------------


def test_a_minutely_schedule_fires_every_minute_of_a_day() -> None:
    fired = list(occurrences("* * * * *", "UTC", utc(2026, 5, 1), utc(2026, 5, 2)))
    assert len(fired) == 1439  # strictly after midnight, up to 23:59
    assert all(b - a == timedelta(minutes=1) for a, b in itertools.pairwise(fired))


def test_an_hourly_schedule_in_a_zone_fires_each_hour_of_its_day() -> None:
    fired = list(occurrences("15 * * * *", BERLIN, utc(2026, 5, 1, 22), utc(2026, 5, 2, 22)))
    assert len(fired) == 24
    assert local(fired[:2], BERLIN) == ["05-02 00:15+0200", "05-02 01:15+0200"]


def test_a_daily_schedule_follows_its_zone() -> None:
    fired = list(occurrences("0 3 * * *", BERLIN, utc(2026, 1, 1), utc(2026, 1, 4)))
    assert fired == [utc(2026, 1, 1, 2), utc(2026, 1, 2, 2), utc(2026, 1, 3, 2)]


def test_weekdays_only() -> None:
    fired = list(occurrences("0 9 * * MON-FRI", NEW_YORK, utc(2026, 5, 1), utc(2026, 5, 8)))  # Fri .. Thu
    assert local(fired, NEW_YORK) == [
        "05-01 09:00-0400",
        "05-04 09:00-0400",
        "05-05 09:00-0400",
        "05-06 09:00-0400",
        "05-07 09:00-0400",
    ]


def test_next_occurrence_is_strictly_after_and_in_utc() -> None:
    at = utc(2026, 5, 1, 3)
    assert next_occurrence("0 3 * * *", "UTC", at) == utc(2026, 5, 2, 3)
    assert next_occurrence("0 3 * * *", "UTC", at - timedelta(microseconds=1)) == at
    berlin_time = datetime(2026, 5, 1, 5, 0, 30, tzinfo=ZoneInfo(BERLIN))
    result = next_occurrence("* * * * *", "UTC", berlin_time)
    assert result == utc(2026, 5, 1, 3, 1)
    assert result.tzinfo is UTC


def test_a_naive_time_is_refused() -> None:
    with pytest.raises(ValueError, match="no UTC offset"):
        next_occurrence("* * * * *", "UTC", datetime(2026, 5, 1))


@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_aliases_mean_their_expansion(alias: str) -> None:
    start, end = utc(2026, 1, 1), utc(2028, 1, 1)
    limit = 50
    ours = [m for _, m in zip(range(limit), occurrences(alias, BERLIN, start, end), strict=False)]
    theirs = [m for _, m in zip(range(limit), occurrences(ALIASES[alias], BERLIN, start, end), strict=False)]
    assert ours == theirs
    assert ours


def test_aliases_are_case_insensitive() -> None:
    assert cron_errors("@Daily") == []
    assert next_occurrence("@HOURLY", "UTC", utc(2026, 1, 1, 0, 30)) == utc(2026, 1, 1, 1)


# --- DST -----------------------------------------------------------------------------------------------------------


def test_berlin_spring_forward_a_daily_time_in_the_gap_fires_once_after_it() -> None:
    fired = list(occurrences("30 2 * * *", BERLIN, utc(2026, 3, 27, 12), utc(2026, 3, 31, 12)))
    assert local(fired, BERLIN) == ["03-28 02:30+0100", "03-29 03:00+0200", "03-30 02:30+0200", "03-31 02:30+0200"]
    assert fired[1] == utc(2026, 3, 29, 1)


def test_berlin_fall_back_a_daily_time_that_happens_twice_fires_at_the_first() -> None:
    fired = list(occurrences("30 2 * * *", BERLIN, utc(2026, 10, 23, 12), utc(2026, 10, 27, 12)))
    assert local(fired, BERLIN) == ["10-24 02:30+0200", "10-25 02:30+0200", "10-26 02:30+0100", "10-27 02:30+0100"]


def test_berlin_fall_back_an_hourly_schedule_fires_in_both_passes_of_the_hour() -> None:
    fired = list(occurrences("0 * * * *", BERLIN, utc(2026, 10, 24, 21, 59), utc(2026, 10, 25, 23)))
    assert len(fired) == 25  # the local day has 25 hours
    assert local(fired[1:5], BERLIN) == ["10-25 01:00+0200", "10-25 02:00+0200", "10-25 02:00+0100", "10-25 03:00+0100"]
    assert all(b - a == timedelta(hours=1) for a, b in itertools.pairwise(fired))


def test_berlin_spring_forward_an_hourly_schedule_skips_the_missing_hour() -> None:
    fired = list(occurrences("0 * * * *", BERLIN, utc(2026, 3, 28, 22, 59), utc(2026, 3, 29, 22)))
    assert len(fired) == 23
    assert all(b - a == timedelta(hours=1) for a, b in itertools.pairwise(fired))


def test_every_half_hour_across_the_gap_keeps_real_time() -> None:
    fired = list(occurrences("*/30 * * * *", BERLIN, utc(2026, 3, 28, 23, 50), utc(2026, 3, 29, 1, 40)))
    assert local(fired, BERLIN) == ["03-29 01:00+0100", "03-29 01:30+0100", "03-29 03:00+0200", "03-29 03:30+0200"]


def test_named_times_that_collapse_into_the_gap_fire_once() -> None:
    fired = list(occurrences("*/15 2 * * *", BERLIN, utc(2026, 3, 28, 12), utc(2026, 3, 29, 12)))
    assert local(fired, BERLIN) == ["03-29 03:00+0200"]  # 02:00, 02:15, 02:30 and 02:45 do not exist that day
    fired = list(occurrences("0 2,3 * * *", BERLIN, utc(2026, 3, 28, 12), utc(2026, 3, 29, 12)))
    assert local(fired, BERLIN) == ["03-29 03:00+0200"]


def test_named_times_in_the_repeated_hour_fire_in_the_first_pass_only() -> None:
    fired = list(occurrences("*/15 2 * * *", BERLIN, utc(2026, 10, 24, 12), utc(2026, 10, 25, 12)))
    assert local(fired, BERLIN) == ["10-25 02:00+0200", "10-25 02:15+0200", "10-25 02:30+0200", "10-25 02:45+0200"]


def test_new_york_spring_forward() -> None:
    daily = list(occurrences("30 2 * * *", NEW_YORK, utc(2026, 3, 7, 12), utc(2026, 3, 9, 12)))
    assert local(daily, NEW_YORK) == ["03-08 03:00-0400", "03-09 02:30-0400"]
    assert daily[0] == utc(2026, 3, 8, 7)
    hourly = list(occurrences("0 * * * *", NEW_YORK, utc(2026, 3, 8, 5, 30), utc(2026, 3, 8, 8, 30)))
    assert local(hourly, NEW_YORK) == ["03-08 01:00-0500", "03-08 03:00-0400", "03-08 04:00-0400"]


def test_new_york_fall_back() -> None:
    daily = list(occurrences("30 1 * * *", NEW_YORK, utc(2026, 10, 31, 12), utc(2026, 11, 2, 12)))
    assert local(daily, NEW_YORK) == ["11-01 01:30-0400", "11-02 01:30-0500"]
    hourly = list(occurrences("0 * * * *", NEW_YORK, utc(2026, 11, 1, 4, 30), utc(2026, 11, 1, 7, 30)))
    assert local(hourly, NEW_YORK) == ["11-01 01:00-0400", "11-01 01:00-0500", "11-01 02:00-0500"]


def test_an_occurrence_looked_up_from_inside_the_repeated_hour() -> None:
    # From 02:50 CEST (first pass) an hourly schedule's next firing is 02:00 CET, ten minutes later in real time.
    assert next_occurrence("0 * * * *", BERLIN, utc(2026, 10, 25, 0, 50)) == utc(2026, 10, 25, 1)
    # From 02:10 CET (second pass) a daily 02:30 already fired at 02:30 CEST: the next one is tomorrow.
    assert next_occurrence("30 2 * * *", BERLIN, utc(2026, 10, 25, 1, 10)) == utc(2026, 10, 26, 1, 30)


Matcher = Callable[[datetime], bool]
REFERENCE_CASES: list[tuple[str, bool, Matcher]] = [  # (cron, whether its hour field is *, what it matches)
    ("*/20 * * * *", True, lambda w: w.minute % 20 == 0),
    ("30 * * * *", True, lambda w: w.minute == 30),
    ("*/15 2 * * *", False, lambda w: w.hour == 2 and w.minute % 15 == 0),
    ("0 1,2,3 * * *", False, lambda w: w.hour in (1, 2, 3) and w.minute == 0),
    ("45 1 * * *", False, lambda w: (w.hour, w.minute) == (1, 45)),
    ("30 2 * * *", False, lambda w: (w.hour, w.minute) == (2, 30)),
    ("@midnight", False, lambda w: (w.hour, w.minute) == (0, 0)),
]
TRANSITIONS = [
    (BERLIN, utc(2026, 3, 29, 1)),
    (BERLIN, utc(2026, 10, 25, 1)),
    (NEW_YORK, utc(2026, 3, 8, 7)),
    (NEW_YORK, utc(2026, 11, 1, 6)),
    ("Australia/Lord_Howe", utc(2026, 4, 4, 15)),  # a half-hour fall-back
    ("Australia/Lord_Howe", utc(2026, 10, 3, 15, 30)),  # a half-hour spring-forward
]


@pytest.mark.parametrize(("tz", "transition"), TRANSITIONS)
@pytest.mark.parametrize(("cron", "real_time", "matches"), REFERENCE_CASES)
def test_occurrences_agree_with_a_minute_by_minute_reference(
    cron: str, real_time: bool, matches: Matcher, tz: str, transition: datetime
) -> None:
    start, end = transition - timedelta(hours=30), transition + timedelta(hours=30)
    assert list(occurrences(cron, tz, start, end)) == reference(matches, real_time, tz, start, end)


def reference(matches: Matcher, real_time: bool, tz: str, start: datetime, end: datetime) -> list[datetime]:
    """The DST rule, applied the slow way: look at every UTC minute (these zones move their clocks on the minute)."""
    zone = ZoneInfo(tz)
    fired = []
    moment = start + timedelta(minutes=1)
    while moment < end:
        here = moment.astimezone(zone)
        wall = here.replace(tzinfo=None)
        fires = matches(wall) and (real_time or here.fold == 0)
        previous = (moment - timedelta(minutes=1)).astimezone(zone).replace(tzinfo=None)
        skipped = wall - previous - timedelta(minutes=1)  # wall minutes the clocks jumped over
        if not real_time and skipped > timedelta(0):
            gap = (previous + timedelta(minutes=m + 1) for m in range(int(skipped / timedelta(minutes=1))))
            fires = fires or any(matches(w) for w in gap)
        if fires:
            fired.append(moment)
        moment += timedelta(minutes=1)
    return fired


# --- the missed-firing rule ---------------------------------------------------------------------------------------


def schedule(cron: str = "0 * * * *", tz: str = "UTC", **fields: object) -> Schedule:
    values: dict[str, object] = {
        "id": "sch_1",
        "tenant_id": "t",
        "name": "nightly",
        "cron": cron,
        "timezone": tz,
        "task_name": "report",
        "queue_name": "default",
        "payload": {"kind": "full"},
        "priority": 5,
        "max_retries": 2,
        "enabled": True,
        "next_run_at": utc(2026, 5, 1, 1),
        "last_run_at": None,
        "created_at": utc(2026, 5, 1),
        "updated_at": utc(2026, 5, 1),
    }
    return Schedule(**{**values, **fields})  # type: ignore[arg-type]


def test_nothing_is_due_before_next_run_at() -> None:
    assert latest_due_occurrence("0 * * * *", "UTC", utc(2026, 5, 1, 1), utc(2026, 5, 1, 0, 59)) is None
    assert due_firing(schedule(), utc(2026, 5, 1, 0, 59)) is None


def test_an_occurrence_is_due_at_its_instant() -> None:
    assert due_firing(schedule(), utc(2026, 5, 1, 1)) == Firing(utc(2026, 5, 1, 1), utc(2026, 5, 1, 2))


def test_after_downtime_only_the_latest_missed_occurrence_fires() -> None:
    now = utc(2026, 5, 3, 7, 42)
    assert due_firing(schedule(), now) == Firing(utc(2026, 5, 3, 7), utc(2026, 5, 3, 8))


def test_a_month_of_downtime_on_a_minutely_schedule() -> None:
    now = utc(2026, 6, 1) + timedelta(seconds=30)
    firing = due_firing(schedule("* * * * *", next_run_at=utc(2026, 5, 1)), now)
    assert firing == Firing(utc(2026, 6, 1), utc(2026, 6, 1, 0, 1))


def test_a_stale_next_run_at_with_no_later_occurrence_fires_itself() -> None:
    # e.g. a next_run_at recorded at 00:30 for a daily schedule, checked before the next day.
    assert latest_due_occurrence("0 0 * * *", "UTC", utc(2026, 5, 1, 0, 30), utc(2026, 5, 1, 20)) == utc(
        2026, 5, 1, 0, 30
    )


def test_a_disabled_schedule_never_fires() -> None:
    assert due_firing(schedule(enabled=False), utc(2026, 6, 1)) is None
    assert due_firing(schedule(next_run_at=None), utc(2026, 6, 1)) is None


def test_a_scheduler_ticking_with_downtime_fires_each_occurrence_once_and_the_missed_ones_once() -> None:
    row = schedule("*/10 * * * *", BERLIN, next_run_at=utc(2026, 10, 25, 0, 10))
    fired: list[datetime] = []
    now = utc(2026, 10, 25, 0)
    down = (utc(2026, 10, 25, 1, 5), utc(2026, 10, 25, 2, 17))
    while now < utc(2026, 10, 25, 3):
        if not down[0] <= now < down[1] and (firing := due_firing(row, now)) is not None:
            fired.append(firing.occurrence)
            row = replace(row, next_run_at=firing.next_run_at, last_run_at=firing.occurrence)
        now += timedelta(seconds=47)
    assert local(fired, BERLIN)[:6] == [
        "10-25 02:10+0200",
        "10-25 02:20+0200",
        "10-25 02:30+0200",
        "10-25 02:40+0200",
        "10-25 02:50+0200",
        "10-25 02:00+0100",
    ]
    assert fired[6] == utc(2026, 10, 25, 2, 10)  # the downtime's last occurrence, once
    assert fired[7:] == [
        utc(2026, 10, 25, 2, 20),
        utc(2026, 10, 25, 2, 30),
        utc(2026, 10, 25, 2, 40),
        utc(2026, 10, 25, 2, 50),
    ]


# --- the firing job --------------------------------------------------------------------------------------------------


def test_occurrence_key_and_metadata_name_the_occurrence_in_utc() -> None:
    occurrence = datetime(2026, 3, 29, 3, 0, tzinfo=ZoneInfo(BERLIN))
    assert occurrence_key("sch_01ABC", occurrence) == "cron:sch_01ABC:2026-03-29T01:00:00Z"
    assert firing_metadata("nightly", occurrence) == {"schedule": "nightly", "occurrence": "2026-03-29T01:00:00Z"}
    assert (
        occurrence_key("sch_1", utc(2026, 1, 1) + timedelta(microseconds=5)) == "cron:sch_1:2026-01-01T00:00:00.000005Z"
    )


def test_firing_job() -> None:
    job = firing_job(schedule(), utc(2026, 5, 1, 1))
    assert (job.task_name, job.queue_name, job.payload, job.priority, job.max_retries) == (
        "report",
        "default",
        {"kind": "full"},
        5,
        2,
    )
    assert job.run_at == utc(2026, 5, 1, 1)
    assert job.idempotency_key == "cron:sch_1:2026-05-01T01:00:00Z"
    assert job.metadata == {"schedule": "nightly", "occurrence": "2026-05-01T01:00:00Z"}


# --- validation ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cron",
    [
        "0 3 * * *",
        "*/5 9-17 * * mon-fri",
        "0 0 L * *",
        "0 0 * * 5#3",
        "0 12 15W * *",
        "0 0 1 JAN,JUL *",
        "  0  3 * * * ",
    ],
)
def test_valid_expressions(cron: str) -> None:
    assert cron_errors(cron) == []


@pytest.mark.parametrize(
    ("cron", "message"),
    [
        ("@reboot", "@reboot is not supported: a schedule fires at times, not when a process starts"),
        (
            "@fortnightly",
            "unknown alias '@fortnightly'; use one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, "
            "@hourly",
        ),
        (
            "0 0 3 * * *",
            f"has 6 fields, {ONLY_FIVE}",
        ),
        (
            "0 0 3 * * * 2027",
            f"has 7 fields, {ONLY_FIVE}",
        ),
        (
            "0 3 * *",
            "must have 5 fields (minute hour day-of-month month day-of-week) or be an alias such as @daily; got 4",
        ),
        ("61 * * * *", "minute field '61' is not valid (allowed: 0–59; *, lists, ranges, /steps)"),
        ("* 24 * * *", "hour field '24' is not valid (allowed: 0–23; *, lists, ranges, /steps)"),
        ("* * 0 * *", "day-of-month field '0' is not valid (allowed: 1–31, L or nW; *, lists, ranges, /steps)"),
        ("* * * 13 *", "month field '13' is not valid (allowed: 1–12 or JAN–DEC; *, lists, ranges, /steps)"),
        (
            "* * * * 8",
            "day-of-week field '8' is not valid (allowed: 0–7 or SUN–SAT, d#n or Ld; *, lists, ranges, /steps)",
        ),
        ("*/0 * * * *", "minute field '*/0' is not valid (allowed: 0–59; *, lists, ranges, /steps)"),
        ("H * * * *", "minute field 'H': hashed (H) and random (R) values are not supported"),
        ("0 R * * *", "hour field 'R': hashed (H) and random (R) values are not supported"),
        ("0 0 30 2 *", "'0 0 30 2 *' never matches a date (like 30 February)"),
    ],
)
def test_invalid_expressions_say_what_is_wrong(cron: str, message: str) -> None:
    assert cron_errors(cron) == [FieldError(("cron",), message)]


@pytest.mark.parametrize(
    ("cron", "message"),
    [
        ("", "must be 1–255 characters long"),
        ("0 0 * * *\x00", "text may not contain NUL (\\u0000) characters"),
        ("* " * 200, "must be 1–255 characters long"),
    ],
)
def test_cron_text(cron: str, message: str) -> None:
    assert cron_errors(cron) == [FieldError(("cron",), message)]


@pytest.mark.parametrize("tz", ["UTC", BERLIN, NEW_YORK, "Asia/Kolkata", "Etc/GMT+5"])
def test_known_time_zones(tz: str) -> None:
    assert timezone_errors(tz) == []


@pytest.mark.parametrize(
    ("tz", "message"),
    [
        ("europe/berlin", "unknown time zone 'europe/berlin'; did you mean 'Europe/Berlin'?"),
        (
            "Mars/Olympus_Mons",
            "unknown time zone 'Mars/Olympus_Mons'; use an IANA name such as 'Europe/Berlin' or 'UTC'",
        ),
        ("Europe", "unknown time zone 'Europe'; use an IANA name such as 'Europe/Berlin' or 'UTC'"),
        ("../../etc/passwd", "unknown time zone '../../etc/passwd'; use an IANA name such as 'Europe/Berlin' or 'UTC'"),
        ("localtime", "unknown time zone 'localtime'; use an IANA name such as 'Europe/Berlin' or 'UTC'"),
        ("", "must be 1–255 characters long"),
    ],
)
def test_unknown_time_zones(tz: str, message: str) -> None:
    assert timezone_errors(tz) == [FieldError(("timezone",), message)]


def test_schedule_errors_collect_every_field() -> None:
    new = NewSchedule(
        name="bad name",
        cron="* *",
        timezone="Nowhere",
        task_name="",
        queue_name="q/q",
        priority=9999,
        max_retries=101,
        payload={"a": float("nan")},
    )
    assert {error.field for error in schedule_errors(new)} == {
        "name",
        "cron",
        "timezone",
        "task_name",
        "queue_name",
        "payload.a",
        "priority",
        "max_retries",
    }


def test_a_valid_schedule() -> None:
    assert schedule_errors(NewSchedule(name="nightly", cron="0 3 * * *", timezone=BERLIN, task_name="report")) == []


def test_initial_next_run_at() -> None:
    new = NewSchedule(name="n", cron="0 3 * * *", task_name="t")
    assert initial_next_run_at(new, utc(2026, 5, 1, 3)) == utc(2026, 5, 2, 3)
    assert initial_next_run_at(replace(new, enabled=False), utc(2026, 5, 1)) is None


# --- PATCH ---------------------------------------------------------------------------------------------------------


def test_patching_the_cron_starts_afresh_from_now() -> None:
    now = utc(2026, 5, 1, 0, 20)
    updated = patched(schedule(), SchedulePatch(cron="*/15 * * * *"), now)
    assert (updated.cron, updated.next_run_at, updated.updated_at) == ("*/15 * * * *", utc(2026, 5, 1, 0, 30), now)


def test_patching_the_zone_moves_the_next_run() -> None:
    updated = patched(
        schedule("0 3 * * *", next_run_at=utc(2026, 5, 2, 3)), SchedulePatch(timezone=BERLIN), utc(2026, 5, 1, 12)
    )
    assert updated.next_run_at == utc(2026, 5, 2, 1)


def test_patching_other_fields_keeps_the_pending_occurrence() -> None:
    updated = patched(schedule(), SchedulePatch(payload={"kind": "delta"}, priority=0), utc(2026, 5, 1, 0, 20))
    assert (updated.payload, updated.priority, updated.next_run_at) == ({"kind": "delta"}, 0, utc(2026, 5, 1, 1))


def test_disabling_clears_and_enabling_skips_what_was_missed() -> None:
    disabled = patched(schedule(), SchedulePatch(enabled=False), utc(2026, 5, 1, 0, 20))
    assert (disabled.enabled, disabled.next_run_at) == (False, None)
    enabled = patched(disabled, SchedulePatch(enabled=True), utc(2026, 5, 3, 7, 42))
    assert (enabled.enabled, enabled.next_run_at) == (True, utc(2026, 5, 3, 8))


def test_patch_errors() -> None:
    errors = schedule_patch_errors(schedule(), SchedulePatch(cron="@reboot", max_retries=-1))
    assert {error.field for error in errors} == {"cron", "max_retries"}
    assert schedule_patch_errors(schedule(), SchedulePatch(priority=3)) == []
