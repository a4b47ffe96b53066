"""`core.pressure`: ages at the caller's `now`, and when a held horizon is worth a warning."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from queueflow.core.pressure import HorizonHolder, Pressure, held_too_long

from tests.moments import HOLDER, START

THRESHOLD = timedelta(seconds=300)


def holder(**changes: Any) -> HorizonHolder:
    return replace(HOLDER, **changes)


def test_nothing_held_is_never_a_warning_and_every_age_is_zero() -> None:
    empty = Pressure()
    assert held_too_long(empty, now=START + timedelta(days=1), threshold=THRESHOLD) is None
    assert (empty.oldest_transaction_age(START), empty.horizon_age(START)) == (0.0, 0.0)


def test_a_holder_is_a_warning_from_the_threshold_on() -> None:
    pressure = Pressure(horizon=holder())
    assert held_too_long(pressure, now=START + timedelta(seconds=299.999), threshold=THRESHOLD) is None
    assert held_too_long(pressure, now=START + THRESHOLD, threshold=THRESHOLD) == holder()
    assert held_too_long(pressure, now=START + timedelta(hours=2), threshold=THRESHOLD) == holder()


def test_a_holder_is_held_since_its_transaction_began_not_its_last_query() -> None:
    pressure = Pressure(horizon=holder(query_start=START + timedelta(seconds=290)))
    assert pressure.horizon_age(START + timedelta(seconds=301)) == 301.0
    assert held_too_long(pressure, now=START + timedelta(seconds=301), threshold=THRESHOLD) is not None


def test_a_holder_whose_start_the_role_may_not_see_is_no_warning() -> None:
    pressure = Pressure(horizon=holder(xact_start=None, state=None))
    assert held_too_long(pressure, now=START + timedelta(days=1), threshold=THRESHOLD) is None
    assert pressure.horizon_age(START + timedelta(days=1)) == 0.0


def test_a_clock_behind_the_databases_reads_no_negative_age() -> None:
    pressure = Pressure(oldest_xact_start=START, horizon=holder())
    before = START - timedelta(seconds=2)
    assert (pressure.oldest_transaction_age(before), pressure.horizon_age(before)) == (0.0, 0.0)
    assert held_too_long(pressure, now=before, threshold=timedelta(0)) == holder()


def test_the_oldest_transaction_is_aged_at_now() -> None:
    pressure = Pressure(oldest_xact_start=START - timedelta(seconds=90))
    assert pressure.oldest_transaction_age(START) == 90.0
