"""BackgroundService: a long-running loop that a server's lifespan starts and stops with itself.

    async with Notifier(url, wakeups), Janitor(engine):
        ...  # serve

or `await service.start()` … `await service.stop()`. Stopping cancels the loop and waits for it to clean up
(close its connections); a loop that died on its own is logged when it is stopped, never re-raised into the
shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Self

log = logging.getLogger("queueflow.runtime")


class BackgroundService:
    name = "service"

    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None

    async def run(self) -> None:
        """The loop itself; runs until cancelled."""
        raise NotImplementedError

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def start(self) -> None:
        """Start the loop in the background (once; starting a running service does nothing)."""
        if self._task is None:
            self._task = asyncio.create_task(self.run(), name=f"queueflow-{self.name}")

    async def stop(self) -> None:
        """Cancel the loop and wait until it has cleaned up."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            try:
                await task
            except Exception:
                log.exception("the %s loop had failed", self.name)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()
