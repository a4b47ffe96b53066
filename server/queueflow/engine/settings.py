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
    """Finished jobs older than this are deleted by maintenance; None keeps them forever."""
    sweep_limit: int = 100
    """Rows one maintenance sweep reclaims (and deletes) at most; schedules one scheduler tick fires at most."""
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
