"""Unique jobs and debounce (README.md, "Unique jobs and debounce"): what an enqueue that meets its key's job does
(the rule's input checks are `core.validation.unique_errors`, with the API's other rules). Pure: a store locks the
keys, reads each item's existing job under the lock and records what `resolve` decided.

A rule is a check at enqueue time, not a constraint on the rows: "the existing job" is the newest job of the tenant
with the key that is in one of the rule's `states` now, or, with `period_seconds`, whose `created_at` falls in the
window `now` falls in. So `states: ["completed"]` means "not if this key's job has completed", and nothing stops two
jobs that were each enqueued alone from both completing later.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import msgspec
from msgspec.structs import replace

from queueflow.core.errors import Duplicate, FieldError
from queueflow.core.types import CLAIMABLE, Job, JobStatus, OnConflict, UniqueRule
from queueflow.core.types import UniqueOutcome as Outcome
from queueflow.core.validation import DEFAULT_UNIQUE_STATES as DEFAULT_STATES
from queueflow.core.validation import MAX_DEBOUNCE_SECONDS

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

Loc = tuple[str | int, ...]


class Decision(msgspec.Struct, frozen=True):
    """One per item of a batch that carries a rule (a Struct, not a frozen dataclass: a batch makes a thousand, and
    a frozen dataclass's `__init__` costs ten times as much)."""

    job: Job
    """The new row to insert (CREATED), the existing job as it is (SKIPPED) or as it is to be written (REPLACED)."""
    outcome: Outcome


def states_of(rule: UniqueRule) -> frozenset[JobStatus] | None:
    """The statuses an existing job is looked for in; None for a period rule (any status)."""
    if rule.period_seconds is not None:
        return None
    return frozenset(DEFAULT_STATES if rule.states is None else rule.states)


def window(rule: UniqueRule, now: datetime) -> tuple[datetime, datetime] | None:
    """The period window `now` falls in, [start, end) (`floor(epoch seconds / period_seconds)`); None without one."""
    if rule.period_seconds is None:
        return None
    period = rule.period_seconds
    number = math.floor((now - _EPOCH).total_seconds() / period)
    start = _EPOCH + timedelta(seconds=number * period)
    return start.astimezone(now.tzinfo), (start + timedelta(seconds=period)).astimezone(now.tzinfo)


def matches(rule: UniqueRule, job: Job, now: datetime) -> bool:
    """Whether `job` is one the rule counts: its tenant's job with the key, in the states or in `now`'s window."""
    if job.unique_key != rule.key:
        return False
    bounds = window(rule, now)
    if bounds is not None:
        return bounds[0] <= job.created_at < bounds[1]
    return job.status in states_of(rule)  # type: ignore[operator]  # not None without a period


def debounce_cap(rule: UniqueRule) -> float:
    """How long after its `created_at` a debounced job may be put off at most."""
    if rule.debounce_max_seconds is not None:
        return rule.debounce_max_seconds
    return min(10 * (rule.debounce_seconds or 0.0), MAX_DEBOUNCE_SECONDS)


def decide(rule: UniqueRule, row: Job, existing: Job | None, *, index: int | None = None) -> Decision:
    """What an enqueue of `row` under `rule` does, given the key's existing job (read under the key's lock)."""
    if existing is None:
        return Decision(row, Outcome.CREATED)
    if rule.on_conflict is OnConflict.ERROR:
        raise Duplicate(existing.id, index)
    if rule.on_conflict is OnConflict.SKIP or existing.status not in CLAIMABLE:
        return Decision(existing, Outcome.SKIPPED)
    scheduled_at = row.scheduled_at  # its run_at / delay, else now; with debounce now + debounce_seconds
    if rule.debounce_seconds is not None:
        scheduled_at = min(scheduled_at, existing.created_at + timedelta(seconds=debounce_cap(rule)))
    replaced = replace(
        existing, payload=row.payload, priority=row.priority, metadata=row.metadata, scheduled_at=scheduled_at
    )
    return Decision(replaced, Outcome.REPLACED)


class Ask(msgspec.Struct, frozen=True):
    """One item of a batch that carries a rule: its row, its position, and the key's existing job as the store read
    it under the lock (the newest job of the tenant and key the rule counts), before any of the batch was written."""

    row: Job
    rule: UniqueRule
    found: Job | None
    index: int | None = None
    """Its position in the batch (for the 409's `index`); None for a single enqueue."""


@dataclass(frozen=True, slots=True)
class Sorted:
    """A batch's items sorted for `resolve`, the idempotency key first (`sort_items`)."""

    settled: dict[int, Job]
    """An item whose idempotency key names a stored job → that job (no rule is asked)."""
    repeats: dict[int, int]
    """An item repeating an earlier item's idempotency key → that item (it answers as that one does)."""
    asking: list[tuple[int, Job, UniqueRule]]
    """The others with a rule, in the batch's order: their position, row and rule."""


def sort_items(jobs: Sequence[Job], rules: Sequence[UniqueRule | None], known: Mapping[tuple[str, str], Job]) -> Sorted:
    """Which items the idempotency key settles and which ask their rule; `known` is the stored job of each
    (tenant_id, idempotency_key) of the batch that has one, as the store read it."""
    sorted_ = Sorted({}, {}, [])
    first: dict[tuple[str, str], int] = {}
    for index, (job, rule) in enumerate(zip(jobs, rules, strict=True)):
        key = (job.tenant_id, job.idempotency_key) if job.idempotency_key is not None else None
        if key is not None and key in known:
            sorted_.settled[index] = known[key]
        elif key is not None and key in first:
            sorted_.repeats[index] = first[key]
        else:
            if key is not None:
                first[key] = index
            if rule is not None:
                sorted_.asking.append((index, job, rule))
    return sorted_


def resolve(asks: Sequence[Ask]) -> list[Decision]:
    """Each item's decision, in the batch's order: a later item of a key meets what an earlier one made of it (the
    job it created or replaced), as it would had it come in its own request just after. Raises `Duplicate` for the
    first item whose `on_conflict` is `error` and that meets a job: the whole batch fails. An item's now is its
    row's `created_at` (the enqueue's)."""
    written: dict[tuple[str, str], dict[str, Job]] = {}  # per (tenant, key): the batch's new and replaced jobs by id
    decisions: list[Decision] = []
    for ask in asks:
        key = (ask.row.tenant_id, ask.rule.key)
        mine = written.get(key)
        if mine is None:  # the key's first item: what the store read is all there is
            mine = written[key] = {}
            existing = ask.found
        else:
            candidates = [job for job in mine.values() if matches(ask.rule, job, ask.row.created_at)]
            if ask.found is not None and ask.found.id not in mine:
                candidates.append(ask.found)
            existing = max(candidates, key=lambda job: (job.created_at, job.id), default=None)
        decision = decide(ask.rule, ask.row, existing, index=ask.index)
        if decision.outcome is not Outcome.SKIPPED:
            mine[decision.job.id] = decision.job
        decisions.append(decision)
    return decisions


def rule_mismatch_errors(jobs: Sequence[Job], rules: Sequence[UniqueRule | None] | None) -> list[FieldError]:
    """What a store refuses of the rules it is given with a batch: one per row, each with its row's `unique_key`."""
    if rules is None:
        return []
    if len(rules) != len(jobs):
        return [FieldError(("jobs",), "must have one unique rule (or None) per job")]
    return [
        FieldError(("jobs", index, "unique_key"), "must be its rule's key")
        for index, (job, rule) in enumerate(zip(jobs, rules, strict=True))
        if rule is not None and job.unique_key != rule.key
    ]
