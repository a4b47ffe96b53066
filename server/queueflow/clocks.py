"""Clocks: the system's, and one for tests that moves only when told to."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class TestClock:
    """A clock that moves only when told to: `advance(seconds=...)` or `set(dt)`."""

    __test__ = False  # not a pytest test class

    def __init__(self, start: datetime | None = None) -> None:
        self._now = _utc(start or datetime(2026, 1, 1, tzinfo=UTC))

    def now(self) -> datetime:
        return self._now

    def advance(self, seconds: float = 0.0, **delta: float) -> datetime:
        """Move forward by `seconds` (and any other `timedelta` keyword: minutes, hours, days)."""
        step = timedelta(seconds=seconds, **delta)
        if step < timedelta(0):
            raise ValueError("a TestClock never goes backwards")
        self._now += step
        return self._now

    def set(self, when: datetime) -> datetime:
        self._now = _utc(when)
        return self._now


def _utc(when: datetime) -> datetime:
    if when.utcoffset() is None:
        raise ValueError("QueueFlow only deals in aware datetimes")
    return when.astimezone(UTC)
