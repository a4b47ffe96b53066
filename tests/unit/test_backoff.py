from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from queueflow.api.schemas.jobs import Backoff
from queueflow.core.backoff import backoff_delay, base_delay
from queueflow.core.types import BackoffPolicy, BackoffStrategy, backoff_policy

E, L, F = BackoffStrategy.EXPONENTIAL, BackoffStrategy.LINEAR, BackoffStrategy.FIXED


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [(E, [3, 6, 12, 24, 48, 50, 50]), (L, [3, 6, 9, 12, 15, 18, 21]), (F, [3, 3, 3, 3, 3, 3, 3])],
)
def test_delay_tables(strategy: BackoffStrategy, expected: list[float]) -> None:
    policy = BackoffPolicy(strategy, base_seconds=3, max_seconds=50, jitter=False)
    assert [base_delay(policy, n) for n in range(7)] == expected


def test_the_first_retry_waits_base_seconds_in_every_strategy() -> None:
    for strategy in BackoffStrategy:
        assert base_delay(BackoffPolicy(strategy, base_seconds=0.25, jitter=False), 0) == 0.25


def test_huge_retry_counts_hit_the_cap_without_overflow() -> None:
    policy = BackoffPolicy(E, base_seconds=1, max_seconds=3600)
    assert base_delay(policy, 100_000) == 3600
    assert base_delay(policy, 1023) == 3600


def test_jitter_is_drawn_from_the_injected_source() -> None:
    policy = BackoffPolicy(E, base_seconds=10, max_seconds=100)
    assert backoff_delay(policy, 2, random.Random(3)) == backoff_delay(policy, 2, random.Random(3))
    assert backoff_delay(BackoffPolicy(E, 10, 100, jitter=False), 2, random.Random(3)) == 40


@given(
    strategy=st.sampled_from(list(BackoffStrategy)),
    base=st.floats(0.001, 86_400),
    cap=st.floats(0.001, 604_800),
    retry_count=st.integers(0, 200),
    seed=st.integers(),
)
def test_jittered_delay_lies_in_half_to_full_capped_delay(
    strategy: BackoffStrategy, base: float, cap: float, retry_count: int, seed: int
) -> None:
    policy = BackoffPolicy(strategy, base_seconds=base, max_seconds=max(cap, base), jitter=True)
    full = base_delay(policy, retry_count)
    assert full <= policy.max_seconds
    assert full / 2 <= backoff_delay(policy, retry_count, random.Random(seed)) <= full


def test_a_row_and_a_request_body_get_the_one_shared_policy() -> None:
    from_row = BackoffPolicy.from_json(BackoffPolicy(F, 2.5, 60.0, jitter=False).to_json())
    from_body = Backoff(strategy="fixed", base_seconds=2.5, max_seconds=60, jitter=False).to_domain()
    assert from_row is from_body is backoff_policy("fixed", 2.5, 60.0, False)
    # A row the SQL enqueue function wrote may hold JSON integers: the same policy, its numbers floats.
    from_sql = BackoffPolicy.from_json({"strategy": "fixed", "base_seconds": 2.5, "max_seconds": 60, "jitter": False})
    assert from_sql is from_row
    assert from_row == BackoffPolicy(F, 2.5, 60.0, jitter=False)
    assert type(from_row.max_seconds) is float
