"""Which due jobs flow control holds back, and why (`flow.held_back`, the /metrics gauge)."""

from __future__ import annotations

from queueflow.core.flow import Backlog, QueueSettings, RateLimit, held_back


def backlog(settings: QueueSettings, *, running: int = 0, tokens: float | None = None, **due: int) -> Backlog:
    return Backlog(
        queue_name="q",
        settings=settings,
        tokens=tokens,
        running=running,
        due_by_key={(None if key == "none" else key): count for key, count in due.items()},
        running_by_key={"u1": 1} if running else {},
    )


def test_each_due_job_counts_under_the_first_reason_that_holds_it() -> None:
    everything = QueueSettings(paused=True, concurrency_limit=1, key_concurrency_limit=1, rate_limit=RateLimit(1, 1))
    assert held_back(backlog(everything, u1=2, none=3)) == {"paused": 5}
    capped = QueueSettings(concurrency_limit=1, key_concurrency_limit=1)
    assert held_back(backlog(capped, running=1, u1=2, none=3)) == {"concurrency": 5}
    keyed = QueueSettings(key_concurrency_limit=1, rate_limit=RateLimit(1, 1))
    assert held_back(backlog(keyed, running=1, tokens=5, u1=2, u2=1, none=3)) == {"key_concurrency": 2}
    assert held_back(backlog(keyed, running=1, tokens=0.5, u1=2, u2=1, none=3)) == {"key_concurrency": 2, "rate": 4}
    assert held_back(backlog(keyed, running=1, tokens=0.5, u1=2)) == {"key_concurrency": 2}


def test_nothing_is_held_back_when_nothing_is_due_or_there_is_room() -> None:
    assert held_back(backlog(QueueSettings(paused=True))) == {}
    assert held_back(backlog(QueueSettings(concurrency_limit=2), running=1, none=4)) == {}
    assert held_back(backlog(QueueSettings(rate_limit=RateLimit(1, 1)), tokens=1.0, none=4)) == {}
