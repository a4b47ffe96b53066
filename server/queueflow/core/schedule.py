"""Cron schedules: their rules, their occurrences in the schedule's time zone, and when they fire.

Expressions
    Five fields, ``minute hour day-of-month month day-of-week``, in croniter's syntax (``*``, lists, ranges,
    ``/steps``, ``JAN``–``DEC``, ``SUN``–``SAT``, ``L``, ``nW``, ``d#n``), or one of the aliases ``@yearly``
    ``@annually`` ``@monthly`` ``@weekly`` ``@daily`` ``@midnight`` ``@hourly``. Seconds and years (6 and 7
    fields), ``@reboot`` and croniter's hashed/random values (``H``, ``R``) are rejected: a schedule must name
    the same instants on every scheduler process, forever.

Occurrences
    croniter only walks *naive wall-clock* times here; this module maps each wall time to UTC instants with
    ``zoneinfo`` itself. croniter's own time-zone handling is not used: croniter 7 fires a daily 02:30 twice
    on a fall-back night, which the rule below forbids (a test pins that).

DST rule
    * An expression whose hour field is ``*`` (``@hourly``, ``*/15 * * * *``) follows real time: it fires at
      every real instant whose local wall time matches. In the fall-back hour an hourly job fires at both
      02:00 CEST and 02:00 CET; in the spring-forward gap the missing wall times simply do not occur (an
      every-30-minutes job goes 01:30 CET → 03:00 CEST, thirty real minutes later).
    * Any other expression names wall-clock times, and each named time fires exactly once per day it names:
      a time that happens twice (02:30 on 2026-10-25 in Europe/Berlin) fires at its first instance (+02:00);
      a time that does not exist (02:30 on 2026-03-29 in Europe/Berlin) fires at the first valid instant
      after the gap (03:00 local = 01:00 UTC). Wall times that land on the same instant fire once.

Missed firings
    After downtime only the latest missed occurrence fires, once (`due_firing`). Each firing's job carries
    the idempotency key ``cron:<schedule id>:<occurrence>``, so any number of schedulers that decide the same
    firing insert one job between them.

What fires
    A job (`task_name`, with its `queue_name`, `payload`, `priority`, `max_retries`), or a workflow (`workflow`:
    a new workflow's name, context and steps): exactly one of the two. A workflow schedule has none of the job's
    fields (None); each firing starts one workflow (`firing_workflow`), keyed as a job's firing is, its context
    gaining `schedule` and `occurrence`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import NamedTuple
from zoneinfo import ZoneInfo, available_timezones

import msgspec
from croniter import CroniterError, croniter

from queueflow.core.errors import FieldError
from queueflow.core.jsonvalue import storage_errors
from queueflow.core.types import JSON, NewJob
from queueflow.core.validation import Loc, name_errors, new_job_errors, text_errors
from queueflow.core.workflow import NewWorkflow, new_workflow_errors

ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
MAX_CRON_LENGTH = 255

_FIELDS = (
    ("minute", "0–59"),
    ("hour", "0–23"),
    ("day-of-month", "1–31, L or nW"),
    ("month", "1–12 or JAN–DEC"),
    ("day-of-week", "0–7 or SUN–SAT, d#n or Ld"),
)
_FIELD_SEPARATOR = re.compile(r"\S+", re.ASCII)  # croniter's own field split
_HASHED = re.compile(r"^[hr](?:$|[(/])", re.IGNORECASE)
_PROBE_START = datetime(2000, 1, 1)


class CronError(ValueError):
    """A cron expression QueueFlow does not accept; the message says what is wrong with it."""


JOB_DEFAULTS: dict[str, JSON] = {"queue_name": "default", "payload": {}, "priority": 0, "max_retries": 3}
"""A job schedule's fields when not given (a workflow schedule has none of them)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NewSchedule:
    """A job schedule (`task_name`; its other job fields None take `JOB_DEFAULTS`) or a workflow schedule
    (`workflow`, and no job field): exactly one of the two (`schedule_errors`)."""

    name: str
    cron: str
    task_name: str | None = None
    timezone: str = "UTC"
    queue_name: str | None = None
    payload: dict[str, JSON] | None = None
    priority: int | None = None
    max_retries: int | None = None
    enabled: bool = True
    workflow: NewWorkflow | None = None

    def with_defaults(self) -> NewSchedule:
        """A job schedule with its absent job fields at their defaults; a workflow schedule as it is."""
        if self.workflow is not None:
            return self
        given = {name: getattr(self, name) for name in JOB_DEFAULTS}
        return replace(self, **{name: JOB_DEFAULTS[name] if value is None else value for name, value in given.items()})


@dataclass(frozen=True, slots=True, kw_only=True)
class Schedule:
    """A schedule row. `next_run_at` is the pending occurrence; None while the schedule is disabled."""

    id: str
    tenant_id: str
    name: str
    cron: str
    timezone: str
    task_name: str | None
    queue_name: str | None
    payload: dict[str, JSON] | None
    priority: int | None
    max_retries: int | None
    enabled: bool
    next_run_at: datetime | None
    last_run_at: datetime | None
    created_at: datetime
    updated_at: datetime
    workflow: NewWorkflow | None = None
    """What a workflow schedule starts (its job fields are then None)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SchedulePatch:
    """A PATCH body: None leaves a field as it is. The name is the schedule's address and does not change."""

    cron: str | None = None
    timezone: str | None = None
    task_name: str | None = None
    queue_name: str | None = None
    payload: dict[str, JSON] | None = None
    priority: int | None = None
    max_retries: int | None = None
    enabled: bool | None = None
    workflow: NewWorkflow | None = None


class Firing(NamedTuple):
    occurrence: datetime
    """The occurrence that fires now (aware UTC)."""
    next_run_at: datetime
    """The schedule's next pending occurrence, strictly after `occurrence` and after `now`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ScheduleFired:
    """A firing for the store to record (`ScheduleStore.schedule_fired`): the schedule `schedule_id`, as read
    (`expected_next_run_at`, `expected_updated_at`), moves on to `next_run_at`, having run at `last_run_at`."""

    schedule_id: str
    expected_next_run_at: datetime
    expected_updated_at: datetime
    next_run_at: datetime
    last_run_at: datetime


# --- validation --------------------------------------------------------------------------------------------


def cron_errors(cron: str, loc: Loc = ("cron",)) -> list[FieldError]:
    errors = text_errors(cron, loc, max_len=MAX_CRON_LENGTH)
    if errors:
        return errors
    try:
        _parse(cron)
    except CronError as error:
        return [FieldError(loc, str(error))]
    return []


def timezone_errors(timezone: str, loc: Loc = ("timezone",)) -> list[FieldError]:
    errors = text_errors(timezone, loc, max_len=255)
    if errors or timezone in _zone_names():
        return errors
    hint = next((name for name in _zone_names() if name.lower() == timezone.lower()), None)
    suggestion = f"did you mean {hint!r}?" if hint else "use an IANA name such as 'Europe/Berlin' or 'UTC'"
    return [FieldError(loc, f"unknown time zone {timezone!r}; {suggestion}")]


def schedule_errors(schedule: NewSchedule) -> list[FieldError]:
    errors = name_errors(schedule.name, ("name",))
    errors += cron_errors(schedule.cron)
    errors += timezone_errors(schedule.timezone)
    if (schedule.task_name is None) == (schedule.workflow is None):
        errors.append(FieldError((), "a schedule has either a task_name or a workflow"))
    elif schedule.workflow is not None:
        # Each step carries its own job fields; the schedule's would say nothing.
        errors += [
            FieldError((name,), "a workflow schedule has no job fields")
            for name in JOB_DEFAULTS
            if getattr(schedule, name) is not None
        ]
        errors += [replace(error, loc=("workflow", *error.loc)) for error in new_workflow_errors(schedule.workflow)]
    else:
        errors += new_job_errors(_firing_job_fields(schedule.with_defaults()))
    if not isinstance(schedule.enabled, bool):
        errors.append(FieldError(("enabled",), "must be a boolean"))
    return errors


def schedule_patch_errors(schedule: Schedule, patch: SchedulePatch) -> list[FieldError]:
    """Errors of `schedule` with `patch` applied; fields are independent, so only patched ones can be wrong."""
    merged = _merge(schedule, patch)
    return schedule_errors(NewSchedule(**{name: getattr(merged, name) for name in NewSchedule.__dataclass_fields__}))


def schedule_storage_errors(schedule: Schedule) -> list[FieldError]:
    """Why a store could not keep `schedule` (text PostgreSQL refuses), whether or not the engine validated it."""
    errors: list[FieldError] = []
    for name in ("tenant_id", "name", "cron", "timezone", "task_name", "queue_name", "payload"):
        if (value := getattr(schedule, name)) is not None:
            errors += storage_errors(value, (name,))
    return errors


def _firing_job_fields(schedule: NewSchedule | Schedule) -> NewJob:
    """The job fields of a job schedule (its defaults applied): a firing is a job, so they obey the job rules."""
    return NewJob(
        task_name=schedule.task_name or "",
        queue_name=schedule.queue_name if schedule.queue_name is not None else str(JOB_DEFAULTS["queue_name"]),
        payload=dict(schedule.payload) if schedule.payload is not None else {},
        priority=schedule.priority if schedule.priority is not None else 0,
        max_retries=schedule.max_retries if schedule.max_retries is not None else 3,
    )


# --- lifecycle ---------------------------------------------------------------------------------------------


def initial_next_run_at(schedule: NewSchedule, now: datetime) -> datetime | None:
    """A new schedule's first pending occurrence: the first one strictly after its creation."""
    return next_occurrence(schedule.cron, schedule.timezone, now) if schedule.enabled else None


def patched(schedule: Schedule, patch: SchedulePatch, now: datetime) -> Schedule:
    """`schedule` with `patch` applied at `now`.

    A new cron or time zone, or re-enabling, starts afresh from `now`: occurrences missed while the schedule was
    disabled, or that belonged to the old expression, never fire. Disabling clears `next_run_at`.
    """
    merged = _merge(schedule, patch)
    next_run_at = merged.next_run_at
    restarted = patch.cron is not None or patch.timezone is not None or (merged.enabled and not schedule.enabled)
    if not merged.enabled:
        next_run_at = None
    elif restarted or next_run_at is None:
        next_run_at = next_occurrence(merged.cron, merged.timezone, now)
    return replace(merged, next_run_at=next_run_at, updated_at=now)


def _merge(schedule: Schedule, patch: SchedulePatch) -> Schedule:
    """`schedule` with `patch`'s fields. A patch may change what the schedule fires: a `workflow` makes a job
    schedule a workflow schedule (its job fields gone), a `task_name` a workflow schedule a job schedule (its job
    fields at their defaults unless patched); a patch naming both is refused by `schedule_errors`."""
    changes = {name: getattr(patch, name) for name in SchedulePatch.__dataclass_fields__}
    if patch.workflow is not None and patch.task_name is None:
        schedule = replace(schedule, task_name=None, queue_name=None, payload=None, priority=None, max_retries=None)
    elif patch.task_name is not None and patch.workflow is None and schedule.workflow is not None:
        defaults = NewSchedule(name="", cron="", task_name="").with_defaults()
        schedule = replace(
            schedule,
            workflow=None,
            queue_name=defaults.queue_name,
            payload=defaults.payload,
            priority=defaults.priority,
            max_retries=defaults.max_retries,
        )
    return replace(schedule, **{name: value for name, value in changes.items() if value is not None})


def due_firing(schedule: Schedule, now: datetime) -> Firing | None:
    """What `schedule` fires at `now`, if anything: its latest due occurrence, and the occurrence after that.

    A store records a firing atomically and only while `next_run_at` is still the value it read, so two
    schedulers deciding the same firing write it once; the job's idempotency key covers the rest.
    """
    if not schedule.enabled or schedule.next_run_at is None:
        return None
    occurrence = latest_due_occurrence(schedule.cron, schedule.timezone, schedule.next_run_at, now)
    if occurrence is None:
        return None
    return Firing(occurrence, next_occurrence(schedule.cron, schedule.timezone, occurrence))


def firing_job(schedule: Schedule, occurrence: datetime) -> NewJob:
    """The job one firing of a job schedule inserts; it is due at its occurrence, so a late firing is claimable
    at once."""
    return msgspec.structs.replace(
        _firing_job_fields(schedule),
        run_at=occurrence,
        metadata=firing_metadata(schedule.name, occurrence),
        idempotency_key=occurrence_key(schedule.id, occurrence),
    )


def firing_workflow(schedule: Schedule, workflow: NewWorkflow, occurrence: datetime) -> NewWorkflow:
    """The workflow one firing of a workflow schedule starts: keyed per occurrence, so any number of schedulers
    start one, its context gaining `schedule` and `occurrence` (as a job firing's metadata does)."""
    return replace(
        workflow,
        context={**workflow.context, **firing_metadata(schedule.name, occurrence)},
        idempotency_key=occurrence_key(schedule.id, occurrence),
    )


def occurrence_key(schedule_id: str, occurrence: datetime) -> str:
    return f"cron:{schedule_id}:{utc_text(occurrence)}"


def firing_metadata(name: str, occurrence: datetime) -> dict[str, JSON]:
    return {"schedule": name, "occurrence": utc_text(occurrence)}


def utc_text(moment: datetime) -> str:
    """RFC 3339 in UTC with a `Z`; fractions only when there are any, so whole-minute occurrences read plainly."""
    text = _aware_utc(moment).replace(tzinfo=None).isoformat()
    return f"{text}Z"


# --- occurrences -------------------------------------------------------------------------------------------


def next_occurrence(cron: str, timezone: str, after: datetime) -> datetime:
    """The first occurrence strictly after `after` (aware, any zone), as an aware UTC datetime.

    Raises CronError for an expression `cron_errors` rejects.
    """
    expression, follows_real_time = _parse(cron)
    zone = ZoneInfo(timezone)
    after = _aware_utc(after)
    local = after.astimezone(zone)
    wall = local.replace(tzinfo=None)
    start = wall
    if follows_real_time and local.fold == 0:
        first, second = _folds(wall, zone)
        if first != second:
            # `after` is in the first pass of a repeated hour: the wall times already behind it in that hour
            # happen again after it, so the walk starts at the beginning of the repeat.
            start = wall - (second - first) - timedelta(minutes=1)
    walk = croniter(expression, start)
    best: datetime | None = None
    while True:
        instants = _instants(walk.get_next(datetime), zone, follows_real_time)
        for instant in instants:
            if instant > after and (best is None or instant < best):
                best = instant
        # The first instant of each wall time never decreases along the walk, so once one lies past `after`
        # no later wall time can beat the best candidate.
        if instants and instants[0] > after:
            assert best is not None
            return best


def latest_due_occurrence(cron: str, timezone: str, next_run_at: datetime, now: datetime) -> datetime | None:
    """The latest occurrence in [`next_run_at`, `now`], or None when `next_run_at` is still ahead.

    `next_run_at` is the pending occurrence the schedule recorded; everything between it and the latest one was
    missed and is dropped. The search window doubles backwards from `now`, so a month of downtime on a
    minutely schedule costs a few dozen steps, not forty thousand.
    """
    next_run_at, now = _aware_utc(next_run_at), _aware_utc(now)
    if next_run_at > now:
        return None
    span = timedelta(minutes=1)
    while True:
        start = max(now - span, next_run_at)
        found = next_occurrence(cron, timezone, start)
        if found <= now:
            while (following := next_occurrence(cron, timezone, found)) <= now:
                found = following
            return found
        if start == next_run_at:
            return next_run_at
        span *= 2


@lru_cache(maxsize=1024)
def _parse(cron: str) -> tuple[str, bool]:
    """The five-field expression `cron` stands for, and whether it follows real time (its hour field is `*`)."""
    text = cron.strip()
    if text.startswith("@"):
        alias = text.lower()
        if alias == "@reboot":
            raise CronError("@reboot is not supported: a schedule fires at times, not when a process starts")
        if alias not in ALIASES:
            raise CronError(f"unknown alias {text!r}; use one of {', '.join(ALIASES)}")
        text = ALIASES[alias]
    fields = _FIELD_SEPARATOR.findall(text)
    if len(fields) in (6, 7):
        raise CronError(
            f"has {len(fields)} fields, but only 5 are supported (minute hour day-of-month month day-of-week): "
            "seconds and years cannot be scheduled"
        )
    if len(fields) != 5:
        raise CronError(
            f"must have 5 fields (minute hour day-of-month month day-of-week) or be an alias such as @daily; "
            f"got {len(fields)}"
        )
    for index, (value, (name, allowed)) in enumerate(zip(fields, _FIELDS, strict=True)):
        if any(_HASHED.match(item) for item in value.split(",")):
            raise CronError(f"{name} field {value!r}: hashed (H) and random (R) values are not supported")
        alone = ["*"] * 5
        alone[index] = value
        try:
            croniter.expand(" ".join(alone))
        except CroniterError:
            raise CronError(
                f"{name} field {value!r} is not valid (allowed: {allowed}; *, lists, ranges, /steps)"
            ) from None
    expression = " ".join(fields)
    try:
        expanded, _ = croniter.expand(expression)
    except CroniterError as error:  # fields valid alone, invalid together (e.g. mixing `5#2` with `1`)
        raise CronError(f"is not valid: {error}") from None
    try:
        # A date that never comes (30 February) would make every later lookup search fifty years and fail.
        croniter(expression, _PROBE_START).get_next(datetime)
    except CroniterError:
        raise CronError(f"{expression!r} never matches a date (like 30 February)") from None
    return expression, bool(expanded[1] == ["*"])


@lru_cache(maxsize=1)
def _zone_names() -> frozenset[str]:
    # `localtime` names the host's own zone, which differs between machines.
    return frozenset(available_timezones() - {"localtime"})


def _instants(wall: datetime, zone: ZoneInfo, follows_real_time: bool) -> list[datetime]:
    """The instants at which naive wall time `wall` fires, earliest first (see the DST rule above)."""
    first, second = _folds(wall, zone)
    if first == second:
        return [first]
    if first < second:  # the clocks went back: `wall` happens twice
        return [first, second] if follows_real_time else [first]
    # The clocks went forward over `wall`: fold=1 read it with the new offset (before the gap), fold=0 with the
    # old one (after it); the transition lies between the two.
    return [] if follows_real_time else [_transition(second, first, zone)]


def _folds(wall: datetime, zone: ZoneInfo) -> tuple[datetime, datetime]:
    return (
        wall.replace(tzinfo=zone, fold=0).astimezone(UTC),
        wall.replace(tzinfo=zone, fold=1).astimezone(UTC),
    )


def _transition(before: datetime, after: datetime, zone: ZoneInfo) -> datetime:
    """The first instant in (`before`, `after`] whose UTC offset differs from `before`'s (to the second)."""
    offset = before.astimezone(zone).utcoffset()
    low, high = 0, int((after - before).total_seconds())
    while high - low > 1:
        middle = (low + high) // 2
        if (before + timedelta(seconds=middle)).astimezone(zone).utcoffset() == offset:
            low = middle
        else:
            high = middle
    return before + timedelta(seconds=high)


def _aware_utc(moment: datetime) -> datetime:
    if moment.utcoffset() is None:
        raise ValueError(f"{moment!r} has no UTC offset")
    return moment.astimezone(UTC)
