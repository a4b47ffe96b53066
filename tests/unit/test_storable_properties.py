"""The fast paths of validation never disagree with the exact, row-by-row checks, on values built to trip them."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from queueflow.core.errors import ValidationError
from queueflow.core.jsonvalue import MAX_DEPTH, storage_errors, walk_errors
from queueflow.core.types import BackoffPolicy, NewJob
from queueflow.core.validation import check_new_jobs, new_job_errors

# Texts that PostgreSQL refuses, or that only look like what the fast path searches for.
tricky_text = st.one_of(
    st.text(max_size=8),
    st.sampled_from(["\x00", "a\x00b", "\udc80", "\\u0000", "[[[", "{{", "null", "é", "\\"]),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    tricky_text,
    st.just(datetime(2026, 1, 1, tzinfo=UTC)),  # encodable by msgspec, yet not a JSON value
    st.just(b"bytes"),
)
keys = st.one_of(tricky_text, st.integers(min_value=-5, max_value=5), st.floats(allow_nan=False, width=32))
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.tuples(children, children),
        st.dictionaries(keys, children, max_size=4),
    ),
    max_leaves=30,
)


@settings(max_examples=600, deadline=None)
@given(st.one_of(st.dictionaries(keys, values, max_size=5), st.lists(values, max_size=5)))
def test_fast_path_agrees_with_the_walk(value: object) -> None:
    assert storage_errors(value, ("p",)) == walk_errors(value, ("p",))


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=MAX_DEPTH - 3, max_value=MAX_DEPTH + 3), st.booleans())
def test_depth_is_decided_the_same_near_the_limit(levels: int, objects: bool) -> None:
    value: object = {"leaf": math.pi}
    for _ in range(levels - 1):
        value = {"k": value} if objects else [value]
    assert storage_errors(value, ()) == walk_errors(value, ())
    assert bool(storage_errors(value, ())) is (levels > MAX_DEPTH)


def mostly(valid: object, *invalid: object) -> st.SearchStrategy[object]:
    """Usually `valid`, so that one bad field in one row of an otherwise good batch is a common case."""
    return st.sampled_from([valid] * 8 + list(invalid))


new_jobs = st.builds(
    NewJob,
    task_name=mostly("send", "x" * 201, "nul\x00", ""),
    queue_name=mostly("default", "bad queue", "q1"),
    payload=st.one_of(st.just({}), st.dictionaries(keys, values, max_size=2)),
    priority=mostly(0, 5, 1001, -1001),
    delay_seconds=mostly(None, 0.5, -1.0, math.inf),
    max_retries=mostly(3, 0, 101),
    metadata=st.one_of(st.just({}), st.dictionaries(tricky_text, scalars, max_size=2)),
    idempotency_key=mostly(None, "k1", "k2", "nul\x00", "x" * 256),
)


@settings(max_examples=500, deadline=None)
@given(st.lists(new_jobs, min_size=2, max_size=12))
def test_a_batch_is_refused_exactly_when_one_of_its_rows_would_be(jobs: list[NewJob]) -> None:
    expected = [error for index, job in enumerate(jobs) for error in new_job_errors(job, ("jobs", index))]
    if not expected:
        check_new_jobs(jobs)
        return
    with pytest.raises(ValidationError) as raised:
        check_new_jobs(jobs)
    assert raised.value.errors == expected


@pytest.mark.parametrize("row", [0, 2, 4])
@pytest.mark.parametrize(
    "bad",
    [
        {"payload": {"a": "nul\x00"}},
        {"metadata": {"a": "\udc80"}},
        {"idempotency_key": "x" * 256},
        {"task_name": ""},
        {"priority": 1001},
        {"backoff": BackoffPolicy(base_seconds=0)},
    ],
    ids=lambda bad: next(iter(bad)),
)
def test_one_bad_row_among_identical_ones_is_named(row: int, bad: dict[str, object]) -> None:
    jobs = [NewJob(task_name="send", payload={"n": 1}, metadata={"m": 1}) for _ in range(5)]
    jobs[row] = msgspec.structs.replace(jobs[row], **bad)
    with pytest.raises(ValidationError) as raised:
        check_new_jobs(jobs)
    assert {error.loc[:3] for error in raised.value.errors} == {("jobs", row, next(iter(bad)))}
