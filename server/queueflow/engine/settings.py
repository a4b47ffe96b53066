"""How an engine's maintenance behaves: the only knobs the use cases have."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta


@dataclass(frozen=True, slots=True)
class EngineSettings:
    retention: timedelta | None = None
    """Finished jobs older than this are deleted by maintenance; None keeps them forever."""
    sweep_limit: int = 100
    """Rows one maintenance sweep reclaims (and deletes) at most; schedules one scheduler tick fires at most."""
    janitor_lease_seconds: float = 60.0
    """How long the janitor holds an expired job while it routes it through the failure policy."""
