"""What every part of a `WorkerLoop` — its acks, releases, heartbeats and leasing, each a module of its own —
needs of the loop; each part's `Host` adds what only it uses."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from queueflow_worker.ports import Clock, LeaseSource
from queueflow_worker.retries import LeaseHorizon

__all__ = ["LoopHost", "RecordingHost"]

T = TypeVar("T")


class LoopHost(Protocol):
    name: str
    source: LeaseSource
    clock: Clock
    horizon: LeaseHorizon
    """No lease held lasts past this (the loop's clock)."""

    def is_fatal(self, exc: Exception) -> bool:
        """True when `exc` is one of the loop's `fatal` errors (leasing stops)."""
        ...


class RecordingHost(LoopHost, Protocol):
    """What the parts that record on the server what became of the jobs it leased — the acks and the releases —
    need besides."""

    async def persist(self, call: Callable[[], Awaitable[T]]) -> T:
        """`call()`, made again while the server is away, as long as a lease the loop holds could still hold."""
        ...

    def settled(self, job_id: str, token: str) -> None:
        """The job is no longer held under `token`."""
        ...
