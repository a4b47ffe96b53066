"""`client.queues`: a tenant's queues, their counts and settings — flow control and retention (`Queues` sync,
`AsyncQueues` async)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict, Unpack

from queueflow_client import _calls
from queueflow_client._transport import Call
from queueflow_client.resources._base import Resource
from queueflow_client.types import UNCHANGED, Queue, RateLimit, Unchanged

__all__ = ["AsyncQueues", "QueueSettings", "Queues"]


class QueueSettings(TypedDict, total=False):
    """A queue's settings, as `queues.update` changes them: what is not given (or is UNCHANGED) stays, None removes
    a limit (or the queue's own retention: the server's `--retention-hours` applies, or finished jobs are kept)."""

    paused: bool | Unchanged
    concurrency_limit: int | Unchanged | None
    key_concurrency_limit: int | Unchanged | None
    rate_limit: RateLimit | Unchanged | None
    retention_seconds: int | Unchanged | None
    """Finished jobs older than this (60 s to ten years) are deleted, at the latest an hour later."""


def _update_call(name: str, settings: Mapping[str, Any]) -> Call[Queue]:
    unknown = set(settings) - QueueSettings.__optional_keys__
    if unknown:
        raise TypeError(f"unknown queue setting(s): {', '.join(sorted(unknown))}")
    return _calls.update_queue(
        name,
        paused=settings.get("paused", UNCHANGED),
        concurrency_limit=settings.get("concurrency_limit", UNCHANGED),
        key_concurrency_limit=settings.get("key_concurrency_limit", UNCHANGED),
        rate_limit=settings.get("rate_limit", UNCHANGED),
        retention_seconds=settings.get("retention_seconds", UNCHANGED),
    )


class Queues(Resource):
    def list(self) -> list[Queue]:
        """Every queue of the tenant with its counts by state."""
        result: list[Queue] = self._send(_calls.queues())
        return result

    def get(self, name: str) -> Queue:
        """One queue's counts and settings (NotFoundError: no jobs and no settings)."""
        result: Queue = self._send(_calls.get_queue(name))
        return result

    def update(self, name: str, **settings: Unpack[QueueSettings]) -> Queue:
        """Change some of a queue's settings: what is not given stays, None removes a limit or its own retention."""
        result: Queue = self._send(_update_call(name, settings))
        return result

    def pause(self, name: str) -> Queue:
        """Lease none of the tenant's jobs in this queue until `resume` (enqueue and running jobs go on)."""
        return self.update(name, paused=True)

    def resume(self, name: str) -> Queue:
        """Lease the queue's jobs again; parked workers take them at once."""
        return self.update(name, paused=False)


class AsyncQueues(Resource):
    """`Queues`, awaited."""

    async def list(self) -> list[Queue]:
        """Every queue of the tenant with its counts by state."""
        result: list[Queue] = await self._send(_calls.queues())
        return result

    async def get(self, name: str) -> Queue:
        """One queue's counts and settings (NotFoundError: no jobs and no settings)."""
        result: Queue = await self._send(_calls.get_queue(name))
        return result

    async def update(self, name: str, **settings: Unpack[QueueSettings]) -> Queue:
        """Change some of a queue's settings: what is not given stays, None removes a limit or its own retention."""
        result: Queue = await self._send(_update_call(name, settings))
        return result

    async def pause(self, name: str) -> Queue:
        """Lease none of the tenant's jobs in this queue until `resume` (enqueue and running jobs go on)."""
        return await self.update(name, paused=True)

    async def resume(self, name: str) -> Queue:
        """Lease the queue's jobs again; parked workers take them at once."""
        return await self.update(name, paused=False)
