"""`answers_in_order`: an ack answers its completions, then its failures; each outcome gets its own answer back."""

from __future__ import annotations

from queueflow_worker.outcomes import Outcome, answers_in_order


def test_completions_alone_are_answered_in_their_order() -> None:
    outcomes = [Outcome("a", "t1"), Outcome("b", "t2"), Outcome("a", "t3")]
    assert answers_in_order(outcomes, ["A1", "B", "A3"]) == ["A1", "B", "A3"]


def test_failures_are_answered_after_the_completions_and_matched_back_by_position() -> None:
    outcomes = [
        Outcome("a", "t1", error="boom"),
        Outcome("b", "t2"),
        Outcome("c", "t3", error="bang"),
        Outcome("d", "t4"),
    ]
    # sent as: complete b, complete d, fail a, fail c
    assert answers_in_order(outcomes, ["B", "D", "A", "C"]) == ["A", "B", "C", "D"]


def test_two_deliveries_of_one_job_each_get_their_own_answer() -> None:
    outcomes = [Outcome("a", "old", error="lost"), Outcome("a", "new")]
    assert answers_in_order(outcomes, ["new ok", "old lost"]) == ["old lost", "new ok"]


def test_a_short_answer_leaves_the_unanswered_outcomes_none() -> None:
    assert answers_in_order([Outcome("a", "t1"), Outcome("b", "t2")], ["A"]) == ["A", None]
    assert answers_in_order([Outcome("a", "t1", error="x"), Outcome("b", "t2")], ["B"]) == [None, "B"]
