"""How the chaos checks count duplicate executions: an execution that ran after the job's work was done, not a
retry after a delivery that failed (whether or not that failure's outcome reached the server); how they judge a
sequence's executions; and how the push scenario judges what its receivers saw."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from tests.chaos import push
from tests.chaos.checks import Outcome, Run, duplicate_executions, sequence_violations
from tests.chaos.ledger import Ledger
from tests.chaos.tasks import draw, ends_the_job


def test_only_an_execution_after_one_that_settled_the_job_is_a_duplicate(tmp_path: Path) -> None:
    # The task's behaviour per delivery is drawn from (job id, delivery): these ids were picked for theirs.
    assert 0.07 <= draw("job_5", 1) < 0.12  # asks to retry
    assert 0.12 <= draw("job_38", 1) < 0.14  # overruns its timeout on purpose
    assert draw("job_13", 2) < 0.07  # raises
    assert not any(ends_the_job(job, delivery) for job, delivery in (("job_5", 1), ("job_38", 1), ("job_13", 2)))
    assert all(ends_the_job(job, 1) for job in ("job_1", "job_13"))  # succeed
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    runs = [
        ("job_5", 1),  # asked to retry, its outcome lost: the job ran again, as it was meant to
        ("job_5", 2),
        ("job_38", 1),
        ("job_38", 2),
        ("job_1", 1),  # succeeded, its outcome lost: the second run is a duplicate
        ("job_1", 2),
        ("job_13", 1),  # succeeded; both later runs are duplicates, the one that raised too
        ("job_13", 2),
        ("job_13", 3),
    ]
    for job_id, delivery in runs:
        ledger.executed(job_id, delivery, f"{job_id}-{delivery}")
    assert duplicate_executions(ledger) == 3
    ledger.close()


def test_push_kills_allows_a_second_delivery_only_of_a_job_in_flight_at_a_fault() -> None:
    def judged(arrivals: dict[str, int], exposed: set[str], peak: int, statuses: dict[str, str]) -> list[str]:
        tally = push.Tally(Counter(arrivals), peak, exposed, faults=2)
        return push.judge(Outcome("push_kills"), ["a", "b", "c"], statuses, tally, 5).problems

    done = {"a": "completed", "b": "completed", "c": "completed"}
    assert judged({"a": 1, "b": 2, "c": 1}, {"b"}, 5, done) == []
    assert judged({"a": 1, "b": 2, "c": 1}, {"a"}, 5, done) == ["1 jobs delivered twice, none in flight"]
    assert judged({"a": 1, "b": 1}, {"a"}, 5, done) == ["1 jobs lost (never delivered, or gone)"]
    assert judged({"a": 1, "b": 1, "c": 1}, {"a"}, 6, done) == ["6 requests in flight at the receiver, over 5"]
    assert judged({"a": 1, "b": 1, "c": 1}, set(), 5, done) == [
        "no fault struck while a delivery was in flight: nothing was tested"
    ]
    assert judged({"a": 1, "b": 1, "c": 1}, {"a"}, 5, {**done, "c": "retrying"}) == [
        "1 jobs not completed",
        "1 jobs stuck unfinished",
    ]


def test_a_sequence_breaks_only_by_an_earlier_job_run_late_or_two_jobs_running_at_once() -> None:
    # Jobs a < b < c of one sequence, one after the other; a's first run died with its worker (it never returned)
    # and its second overlapped it; b's first overran its lease on purpose and b ran again meanwhile, then c.
    fine = [
        Run("job_a", 1.0, None),
        Run("job_a", 3.0, 3.1),
        Run("job_a", 3.05, 3.2),  # a duplicate execution of a: the same job, no overlap of two jobs
        Run("job_b", 3.3, 6.3, lost_lease=True),
        Run("job_b", 5.6, 5.7),
        Run("job_c", 5.8, 5.9),  # while b's overrun still slept: not an overlap
    ]
    assert sequence_violations(fine) == (0, 0)
    # a ran again after b and c had started: each of their three executions started before it
    assert sequence_violations([*fine, Run("job_a", 6.0, 6.1)]) == (3, 0)
    assert sequence_violations([*fine[:5], Run("job_c", 5.65, 5.9)]) == (0, 1)  # c started while b ran
    assert sequence_violations([Run("job_b", 1.0, 1.1), Run("job_a", 2.0, 2.1)]) == (1, 0)  # out of id order
