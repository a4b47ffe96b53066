"""What a claim remembers between claims (`claim.caches`), on its own: how long each thing is trusted, and how much
is kept. (What the caches spare a claim, and that they change no answer, is in test_idle_claim.py and
test_one_statement_claim.py.)"""

from __future__ import annotations

from queueflow.stores.postgres.claim.caches import (
    MAX_REMEMBERED,
    UNRESTRICTED_FRESH,
    IdleQueues,
    Remembered,
    UnrestrictedQueues,
)

Q = ("q",)


class Counts:
    """A hub's counts and a monotonic clock, moved by hand."""

    def __init__(self) -> None:
        self.heard: int | None = 0
        self.notices = 0
        self.seconds = 100.0


def test_queues_known_unrestricted_are_trusted_until_a_notification_or_for_at_most_a_moment() -> None:
    counts = Counts()
    known = UnrestrictedQueues(lambda: counts.heard, lambda: counts.seconds)
    known.learnt(Q, restricted=False, heard=known.heard())
    assert known.known(Q)
    counts.seconds += UNRESTRICTED_FRESH - 0.01
    assert known.known(Q)
    counts.seconds += 0.01  # a process that hears nothing (no LISTEN) trusts it no longer than this
    assert not known.known(Q)

    known.learnt(Q, restricted=False, heard=known.heard())
    counts.heard = 1  # e.g. another process changed a queue's settings, and NOTIFYed it
    assert not known.known(Q)

    asked = known.heard()
    counts.heard = 2  # heard while the question was on its way: the answer may predate it
    known.learnt(Q, restricted=False, heard=asked)
    assert not known.known(Q)

    known.learnt(Q, restricted=False, heard=known.heard())
    known.forget()  # this process changed some queue's settings
    assert not known.known(Q)
    known.learnt(Q, restricted=True, heard=known.heard())
    assert not known.known(Q)


def test_nothing_is_known_unrestricted_without_a_hub_that_counts() -> None:
    counts = Counts()
    counts.heard = None
    known = UnrestrictedQueues(lambda: counts.heard, lambda: counts.seconds)
    known.learnt(Q, restricted=False, heard=known.heard())
    assert not known.known(Q)


def test_queues_stay_idle_until_work_is_announced_or_a_claim_takes_some() -> None:
    counts = Counts()
    idle = IdleQueues(lambda: counts.notices)
    assert not idle.still_idle(Q, idle.announced())
    idle.claimed(Q, took_any=False, announced=idle.announced())
    assert idle.still_idle(Q, idle.announced())
    counts.notices += 1
    assert not idle.still_idle(Q, idle.announced())
    idle.claimed(Q, took_any=False, announced=idle.announced())
    idle.claimed(Q, took_any=True, announced=idle.announced())
    assert not idle.still_idle(Q, idle.announced())


def test_the_oldest_queue_list_is_forgotten_first_past_the_bound() -> None:
    table: Remembered[int] = Remembered()
    for n in range(MAX_REMEMBERED):
        table.put((str(n),), n)
    table.put(("0",), 0)  # used again: now the newest
    table.put(("new",), 1)
    assert table.get(("0",)) == 0
    assert table.get(("1",)) is None
    assert table.get(("new",)) == 1
