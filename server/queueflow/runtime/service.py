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
from typing import Generic, Self, TypeVar

from queueflow.core.errors import StoreUnavailable

R = TypeVar("R")

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


class PeriodicService(BackgroundService, Generic[R]):
    """A loop that runs `once()` every `interval` seconds. A pass that fails, the store being unavailable or
    anything else, is logged and the loop goes on: the next pass picks up where this one could not."""

    def __init__(self, *, interval: float) -> None:
        super().__init__()
        self.interval = interval
        self.passes = 0
        """Passes attempted so far, failed ones included (for metrics and tests)."""
        self.log = logging.getLogger(f"queueflow.{self.name}")

    async def once(self) -> R:
        """One pass of the loop's work."""
        raise NotImplementedError

    def backlog(self, result: R) -> bool:
        """Whether `result` shows more work waiting, so the next pass should start at once."""
        return False

    async def pause(self, result: R | None) -> float:
        """Seconds to wait before the next pass, after one with `result` (None: it failed)."""
        return self.interval

    async def tick(self) -> R | None:
        """One pass; None when it failed."""
        self.passes += 1
        try:
            return await self.once()
        except StoreUnavailable as exc:
            self.log.warning("%s pass skipped, the store is unavailable: %s", self.name, exc)
        except Exception:
            self.log.exception("%s pass failed", self.name)
        return None

    async def run(self) -> None:
        while True:
            result = await self.tick()
            if result is not None and self.backlog(result):
                await asyncio.sleep(0)  # yield to the loop, then go again at once
                continue
            await asyncio.sleep(await self.pause(result))
