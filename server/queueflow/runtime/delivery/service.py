"""Deliveries: the background service that keeps one `Pusher` per endpoint not paused, in a `worker` / `all`
process.

Every `refresh` seconds it reads the endpoints (`Endpoints.deliverable`): a new one gets a pusher, a changed one
its new settings, one paused or deleted stops claiming while its deliveries in flight finish. Stopping the service
cancels the deliveries in flight: their jobs go back to the janitor when their leases end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from queueflow.core.errors import StoreUnavailable
from queueflow.engine import Engine
from queueflow.runtime.delivery.pusher import Observer, Pusher
from queueflow.runtime.service import BackgroundService
from queueflow.runtime.wakeups import Wakeups

log = logging.getLogger("queueflow.delivery")


class Deliveries(BackgroundService):
    name = "deliveries"

    def __init__(
        self,
        engine: Engine,
        wakeups: Wakeups,
        *,
        max_body_bytes: int,
        refresh: float = 1.0,
        poll: float = 5.0,
        observe: Observer | None = None,
    ) -> None:
        super().__init__()
        self.engine = engine
        self.wakeups = wakeups
        self.max_body_bytes = max_body_bytes
        self.refresh = refresh
        self.poll = poll
        self.observe = observe
        self.pushers: dict[str, Pusher] = {}
        """By endpoint id: the endpoints this process delivers to now."""
        self._draining: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        try:
            while True:
                try:
                    await self.sync()
                except StoreUnavailable as exc:
                    log.warning("cannot read the endpoints, the store is unavailable: %s", exc)
                except Exception:
                    log.exception("reading the endpoints failed")
                await asyncio.sleep(self.refresh)
        finally:
            await self._close()

    async def sync(self) -> None:
        """Start, update and stop pushers to match the endpoints as they are now."""
        current = {endpoint.id: endpoint for endpoint in await self.engine.endpoints.deliverable()}
        for endpoint_id in set(self.pushers) - set(current):
            pusher = self.pushers.pop(endpoint_id)
            task = asyncio.create_task(self._retire(pusher))
            self._draining.add(task)
            task.add_done_callback(self._draining.discard)
        for endpoint_id, endpoint in current.items():
            known = self.pushers.get(endpoint_id)
            if known is not None:
                known.update(endpoint)
            else:
                pusher = Pusher(
                    self.engine,
                    self.wakeups,
                    endpoint,
                    max_body_bytes=self.max_body_bytes,
                    poll=self.poll,
                    observe=self.observe,
                )
                self.pushers[endpoint_id] = pusher
                pusher.start()

    @staticmethod
    async def _retire(pusher: Pusher) -> None:
        await pusher.stop_claiming()
        await pusher.drain()

    async def _close(self) -> None:
        pushers, self.pushers = list(self.pushers.values()), {}
        with contextlib.suppress(Exception):
            await asyncio.gather(*(pusher.close() for pusher in pushers), return_exceptions=True)
        for task in self._draining:
            task.cancel()
        await asyncio.gather(*self._draining, return_exceptions=True)
