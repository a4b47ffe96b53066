"""How an engine's maintenance behaves: the only knobs the use cases have."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta


@dataclass(frozen=True, slots=True)
class EngineSettings:
    allow_private_endpoints: bool = False
    """Push endpoints may lead to loopback, private, link-local and other non-public addresses
    (`--allow-private-endpoints`; development mode implies it)."""
    retention: timedelta | None = None
    """The server's default retention (`--retention-hours`): maintenance deletes the finished jobs older than this
    of every queue without a `retention_seconds` of its own; None keeps them (`core.retention`)."""
    sweep_limit: int = 100
    """Rows one maintenance sweep reclaims at most; schedules one scheduler tick fires at most."""
    retention_batch: int = 1000
    """Expired jobs one retention batch deletes at most, in a transaction of its own: 80–160 ms for 1,000 rows on
    this kind of machine under other load, commit included (a drain of 200,000 rows ran at 12,000 a second), and
    it holds only rows that nothing else waits for."""
    retention_batches: int = 20
    """Retention batches one maintenance sweep runs at most; it stops at the first that deletes fewer than a full
    batch. 20,000 rows a sweep (about 2 s of it) every 5 s is some 3,000 a second, above the rates jobs finish at
    here, so an expired job goes within a sweep or two, well inside the hour `core.retention.LATEST_AFTER` allows;
    a larger backlog (retention just switched on) drains at that rate."""
    heal_after: timedelta = timedelta(seconds=30)
    """How long after a step's job finished the janitor takes its advance for missed and replays it. An advance
    runs right after its job's write, in the same request, and takes milliseconds (seconds at worst, queued
    behind a halt on a large workflow); it is missed only when its process crashed or lost the database between
    the two writes. 30 s is six janitor intervals (5 s): far above any advance in flight, so the self-heal never
    races one (issue 29: at no bound, every sweep of a busy fan-out replayed live advances), while a really
    missed one is healed within about 35 s."""
    janitor_lease_seconds: float = 5.0
    """How long the janitor holds an expired job while it routes it through the failure policy: the decision is
    made in memory and written by the very next statement, so this covers a round trip. It is also how long the
    job waits if that statement never comes (the janitor's process killed, the database gone between the two);
    at 60 s, the chaos suite's database-fault scenarios took 55–62 s to settle. A janitor slower than this loses
    the job to the next sweep's new token, harmlessly: its own write is then refused."""
