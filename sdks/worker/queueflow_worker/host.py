"""What every part of a `WorkerLoop` — its acks, releases, heartbeats and leasing, each a module of its own —
needs of the loop; each part's `Host` adds what only it uses."""

from __future__ import annotations

from typing import Protocol

from queueflow_worker.ports import Clock, LeaseSource
from queueflow_worker.retries import LeaseHorizon

__all__ = ["LoopHost"]


class LoopHost(Protocol):
    name: str
    source: LeaseSource
    clock: Clock
    horizon: LeaseHorizon
    """No lease held lasts past this (the loop's clock)."""

    def is_fatal(self, exc: Exception) -> bool:
        """True when `exc` is one of the loop's `fatal` errors (leasing stops)."""
        ...
