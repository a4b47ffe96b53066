"""`core.triggers`: the patterns an event name can match (what a store looks up), and filters compared as JSON."""

from __future__ import annotations

from typing import Any

import pytest
from queueflow.core.triggers import (
    NewTrigger,
    event_patterns,
    filter_matches,
    pattern_errors,
    pattern_matches,
    task_from_json,
    task_json,
    trigger_errors,
)
from queueflow.core.types import BackoffPolicy, BackoffStrategy, NewJob

from tests.moments import START


def test_an_event_name_can_match_itself_and_one_prefix_per_dot() -> None:
    assert event_patterns("order") == ["order"]
    assert event_patterns("a.b.c") == ["a.b.c", "a.*", "a.b.*"]
    assert event_patterns("a.b.") == ["a.b.", "a.*", "a.b.*"]
    assert len(event_patterns("x." * 100)) == 101


@pytest.mark.parametrize("name", ["order.paid", "order.eu.paid", "order."])
def test_a_prefix_matches_every_name_that_starts_with_it(name: str) -> None:
    assert pattern_matches("order.*", name)
    assert "order.*" in event_patterns(name)


@pytest.mark.parametrize("name", ["order", "orders.paid", "xorder.paid"])
def test_a_prefix_matches_no_other_name(name: str) -> None:
    assert not pattern_matches("order.*", name)
    assert "order.*" not in event_patterns(name)


@pytest.mark.parametrize(
    ("pattern", "valid"),
    [("order.paid", True), ("order.*", True), ("a:b-c_d.*", True), ("x" * 198 + ".*", True), ("x" * 199 + ".*", False),
     ("*", False), (".*", False), ("order*", False), ("a.*.b", False), ("a b", False), ("", False)],
)  # fmt: skip
def test_patterns(pattern: str, valid: bool) -> None:
    assert (pattern_errors(pattern) == []) is valid


@pytest.mark.parametrize(
    ("wanted", "given", "equal"),
    [(1, 1.0, True), (True, 1, False), (False, 0, False), (None, None, True), ("3", 3, False), ([1, 2], [1, 2], True),
     ([1, 2], [2, 1], False), ({"a": [True]}, {"a": [1]}, False), ({"a": 1}, {"a": 1, "b": 2}, False),
     (2**53 + 1, float(2**53), False)],
)  # fmt: skip
def test_filter_values_compare_as_json(wanted: Any, given: Any, equal: bool) -> None:
    assert filter_matches({"k": wanted}, {"k": given}) is equal


def test_a_missing_key_never_matches() -> None:
    assert not filter_matches({"k": None}, {})
    assert filter_matches({}, {})


def test_a_task_reads_back_as_written() -> None:
    task = NewJob(
        task_name="t", queue_name="q", payload={"a": [1]}, priority=3, run_at=START, max_retries=2,
        backoff=BackoffPolicy(BackoffStrategy.LINEAR, 2.0, 20.0, False), timeout_seconds=30.0, metadata={"m": 1},
        concurrency_key="c",
    )  # fmt: skip
    assert task_from_json(task_json(task)) == task


def test_a_trigger_starts_a_task_or_a_workflow_and_leaves_the_event_key_alone() -> None:
    assert trigger_errors(NewTrigger(name="n", event="e"))
    assert not trigger_errors(NewTrigger(name="n", event="e", task=NewJob(task_name="t")))
    reserved = NewTrigger(name="n", event="e", task=NewJob(task_name="t", payload={"_event": 1}))
    assert [error.loc for error in trigger_errors(reserved)] == [("task", "payload", "_event")]
