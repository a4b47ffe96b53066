"""`StepClock`: a monotonic clock (a `queueflow_worker.Clock`) for worker-loop tests, which moves only when told to."""

from __future__ import annotations

import asyncio


class StepClock:
    """A monotonic clock that moves only when `advance` is called; `sleep` returns once it has moved that far."""

    def __init__(self) -> None:
        self.time = 0.0
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []

    def now(self) -> float:
        return self.time

    async def sleep(self, seconds: float) -> None:
        wake: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._sleepers.append((self.time + seconds, wake))
        try:
            await wake
        finally:
            self._sleepers = [(due, other) for due, other in self._sleepers if other is not wake]

    async def advance(self, seconds: float) -> None:
        """Let every task run up to its next wait first (a sleep counts from when it is asked for), then move on,
        waking every sleeper whose time came, and let the woken tasks run."""
        for _ in range(20):
            await asyncio.sleep(0)
        self.time += seconds
        for due, wake in list(self._sleepers):
            if due <= self.time and not wake.done():
                wake.set_result(None)
        for _ in range(20):
            await asyncio.sleep(0)
