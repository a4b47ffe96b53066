"""core.unique's pure decisions: windows, the debounce cap, and a batch resolved in its order."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from msgspec.structs import replace
from queueflow.core.ids import IdSource
from queueflow.core.lifecycle import pending_job
from queueflow.core.types import Job, JobStatus, NewJob, OnConflict, UniqueOutcome, UniqueRule
from queueflow.core.unique import Ask, Duplicate, debounce_cap, matches, resolve, window

NOW = datetime(2026, 3, 1, 12, 34, 56, tzinfo=UTC)
IDS = IdSource(random.Random(1))


def row(rule: UniqueRule, payload: dict[str, object] | None = None) -> Job:
    return pending_job("t", NewJob(task_name="x", payload=payload or {}, unique=rule), NOW, IDS)


def test_a_window_is_the_epochs_floor_by_the_period() -> None:
    assert window(UniqueRule(key="k", period_seconds=3600), NOW) == (
        datetime(2026, 3, 1, 12, tzinfo=UTC),
        datetime(2026, 3, 1, 13, tzinfo=UTC),
    )
    assert window(UniqueRule(key="k"), NOW) is None


@pytest.mark.parametrize(("seconds", "cap"), [(2, 20), (10_000, 86_400), (86_400, 86_400)])
def test_the_default_cap_is_ten_times_debounce_at_most_a_day(seconds: float, cap: float) -> None:
    rule = UniqueRule(key="k", on_conflict=OnConflict.REPLACE, debounce_seconds=seconds)
    assert debounce_cap(rule) == cap
    assert debounce_cap(replace(rule, debounce_max_seconds=30)) == 30


def test_a_rule_counts_its_states_or_its_window() -> None:
    done = UniqueRule(key="k", states=(JobStatus.COMPLETED,))
    job = row(done)
    assert not matches(done, job, NOW)
    assert matches(done, replace(job, status=JobStatus.COMPLETED), NOW)
    hourly = UniqueRule(key="k", period_seconds=3600)
    assert matches(hourly, replace(job, status=JobStatus.CANCELLED), NOW)
    assert not matches(hourly, job, NOW + timedelta(hours=1))
    assert not matches(replace(hourly, key="other"), job, NOW)


def test_a_batch_meets_what_its_earlier_items_made_and_fails_at_the_first_error() -> None:
    rule = UniqueRule(key="k", on_conflict=OnConflict.REPLACE)
    first, second = row(rule, payload={"n": 1}), row(rule, payload={"n": 2})
    made, replaced = resolve([Ask(first, rule, None, 0), Ask(second, rule, None, 1)])
    assert (made.outcome, replaced.outcome) == (UniqueOutcome.CREATED, UniqueOutcome.REPLACED)
    assert (replaced.job.id, replaced.job.payload) == (first.id, {"n": 2})
    strict = UniqueRule(key="k", on_conflict=OnConflict.ERROR)
    with pytest.raises(Duplicate) as raised:
        resolve([Ask(first, rule, None, 0), Ask(row(strict), strict, None, 1)])
    assert (raised.value.existing_job_id, raised.value.index) == (first.id, 1)
