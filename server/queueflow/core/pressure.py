"""What the database is under, as data: per table its live and dead tuples and its size, the oldest transaction, and
the backend whose snapshot or transaction id holds the xmin horizon back (README.md, "Seeing pressure").

A held horizon is what hurts a queue: while a transaction older than them is open, no row a claim, completion or
delete left behind can be vacuumed, so every claim steps over them, and the tables grow. The store reads these facts
(its database's own timestamps); this module turns them into ages at the caller's `now` and decides when a holder has
held the horizon too long. No I/O here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass(frozen=True, slots=True, kw_only=True)
class TableUse:
    """One of the store's tables as the database's statistics count it (estimates, as autovacuum sees them)."""

    table: str
    live_tuples: int
    dead_tuples: int
    size_bytes: int
    """The table with its indexes and TOAST."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HorizonHolder:
    """The backend with the oldest xmin (its snapshot's, or its own transaction id's when that is older)."""

    pid: int
    application_name: str
    state: str | None
    """`active`, `idle in transaction`, …; None when the store's role may not see the backend's state."""
    xact_start: datetime | None
    query_start: datetime | None
    age_transactions: int
    """Transaction ids assigned since its xmin: how many transactions' dead rows it may keep from vacuum."""

    def held_for(self, now: datetime) -> timedelta | None:
        """How long it has held the horizon at `now`: since its transaction began. An upper bound (a READ COMMITTED
        transaction that wrote nothing takes a new snapshot per statement); None when its start is not visible."""
        if self.xact_start is None:
            return None
        return max(now - self.xact_start, timedelta(0))


@dataclass(frozen=True, slots=True, kw_only=True)
class Pressure:
    """What a store's database is under. The in-memory store has no tables and no horizon: `Pressure()`."""

    tables: tuple[TableUse, ...] = ()
    oldest_xact_start: datetime | None = None
    """When the oldest open transaction of another backend began; None when none is open."""
    horizon: HorizonHolder | None = None
    """None when no other backend holds an xmin."""

    def oldest_transaction_age(self, now: datetime) -> float:
        """Seconds the oldest open transaction has run at `now`; 0 when none is open."""
        return _seconds(self.oldest_xact_start, now)

    def horizon_age(self, now: datetime) -> float:
        """Seconds the horizon has been held at `now` (`HorizonHolder.held_for`); 0 when nothing holds it."""
        held = self.horizon.held_for(now) if self.horizon is not None else None
        return 0.0 if held is None else held.total_seconds()


def held_too_long(pressure: Pressure, *, now: datetime, threshold: timedelta) -> HorizonHolder | None:
    """The backend to warn about: the horizon's holder, when at `now` it has held it for `threshold` or longer."""
    holder = pressure.horizon
    if holder is None:
        return None
    held = holder.held_for(now)
    return holder if held is not None and held >= threshold else None


def _seconds(start: datetime | None, now: datetime) -> float:
    return 0.0 if start is None else max((now - start).total_seconds(), 0.0)
