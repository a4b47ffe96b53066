"""InProcessWorker: Python tasks run inside a server process (`queueflow serve --mode worker --tasks module:tasks`).

It claims through the engine directly (no HTTP, no worker key) and, when nothing is claimable, parks on the
Wakeups hub, which the notifier (or the in-memory store) signals when work arrives on one of its queues: the
reference page's "idle in-process workers". It never holds more than `concurrency` jobs.

The task side, how one delivery runs and is heartbeated, completed or failed, is the SDK's
(`queueflow_client.tasks.TaskRegistry.execute`): the same code a remote `queueflow_client.Worker` runs. The
server does not import the SDK; it only needs a `TaskRunner`, which a `TaskRegistry` is, and hands it a
`Lease` over the engine. Stopping stops claiming, then lets held jobs finish for up to `drain_seconds`; what is
still running then is cancelled, and its lease expires and is reclaimed by the janitor like a crashed worker's.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from queueflow.core.errors import LeaseLost, NotFound, StoreUnavailable
from queueflow.core.types import Job
from queueflow.engine import Engine
from queueflow.runtime.service import BackgroundService
from queueflow.runtime.wakeups import Wakeups

log = logging.getLogger("queueflow.tasks")


class TaskRunner(Protocol):
    """Runs one delivery to its end through `lease` (a `queueflow_client.tasks.TaskRegistry` is one)."""

    async def execute(self, job: Any, lease: Any, *, heartbeat_every: float) -> None: ...


def load_runner(spec: str) -> TaskRunner:
    """`"package.module:attribute"` → the task registry it names (imported from the working directory too)."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError("expected module:attribute (e.g. myapp.tasks:tasks)")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    runner = getattr(importlib.import_module(module_name), attribute)
    if not callable(getattr(runner, "execute", None)):
        raise ValueError(f"{spec} is not a task registry (queueflow_client.TaskRegistry)")
    return runner  # type: ignore[no-any-return]


@dataclass(slots=True)
class EngineLease:
    """A `Lease` held directly on the engine: each call answers False once the token no longer holds the job."""

    engine: Engine
    job: Job
    lease_seconds: float

    @property
    def token(self) -> str:
        assert self.job.lease_token is not None  # a claimed job always carries its token
        return self.job.lease_token

    async def heartbeat(self) -> bool:
        try:
            await self.engine.heartbeat(self.job.id, self.token, lease_seconds=self.lease_seconds)
        except (LeaseLost, NotFound):
            return False
        return True

    async def progress(self, value: Any) -> bool:
        try:
            await self.engine.heartbeat(self.job.id, self.token, lease_seconds=self.lease_seconds, progress=value)
        except (LeaseLost, NotFound):
            return False
        return True

    async def complete(self, result: Any) -> bool:
        try:
            await self.engine.complete(self.job.id, self.token, result)
        except (LeaseLost, NotFound):
            return False
        return True

    async def fail(self, error: str, *, retryable: bool, retry_after_seconds: float | None) -> bool:
        try:
            await self.engine.fail(
                self.job.id, self.token, error, retryable=retryable, retry_after_seconds=retry_after_seconds
            )
        except (LeaseLost, NotFound):
            return False
        return True


class InProcessWorker(BackgroundService):
    name = "tasks"

    def __init__(
        self,
        engine: Engine,
        wakeups: Wakeups,
        runner: TaskRunner,
        *,
        queues: Sequence[str] = ("default",),
        concurrency: int = 10,
        lease_seconds: float = 30.0,
        poll: float = 5.0,
        drain_seconds: float = 30.0,
    ) -> None:
        super().__init__()
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.engine = engine
        self.wakeups = wakeups
        self.runner = runner
        self.queues = list(queues)
        self.concurrency = concurrency
        self.lease_seconds = lease_seconds
        self.poll = poll
        """The longest an idle wait lasts: a lost wake-up (or a retry coming due) costs at most this long."""
        self.drain_seconds = drain_seconds
        self._held: set[asyncio.Task[None]] = set()
        self._slot_freed = asyncio.Event()
        self.peak_held = 0

    @property
    def held(self) -> int:
        return len(self._held)

    async def run(self) -> None:
        while True:
            free = self.concurrency - len(self._held)
            if free <= 0:
                self._slot_freed.clear()
                await self._slot_freed.wait()
                continue
            try:
                jobs = await self.engine.lease(self.queues, max_jobs=free, lease_seconds=self.lease_seconds)
            except StoreUnavailable as exc:
                log.warning("cannot claim, the store is unavailable: %s", exc)
                jobs = []
            if not jobs:
                # No await between the empty claim and parking, so an insert on this loop cannot slip between.
                await self.wakeups.wait(self.queues, self.poll)
                continue
            for job in jobs:
                self._hold(job)

    def _hold(self, job: Job) -> None:
        lease = EngineLease(self.engine, job, self.lease_seconds)
        task = asyncio.create_task(self.runner.execute(job, lease, heartbeat_every=self.lease_seconds / 3))
        self._held.add(task)
        self.peak_held = max(self.peak_held, len(self._held))
        task.add_done_callback(self._release)

    def _release(self, task: asyncio.Task[None]) -> None:
        self._held.discard(task)
        self._slot_freed.set()
        if not task.cancelled() and task.exception() is not None:
            log.error("a job's runner failed", exc_info=task.exception())

    async def stop(self) -> None:
        """Stop claiming, let held jobs finish (up to `drain_seconds`), then cancel what is left."""
        await super().stop()
        if not self._held:
            return
        log.info("finishing %d held jobs", len(self._held))
        _, late = await asyncio.wait(set(self._held), timeout=self.drain_seconds)
        for task in late:
            task.cancel()
        if late:
            log.warning(
                "%d jobs outlived the %.0f s drain: cancelled, their leases expire", len(late), self.drain_seconds
            )
            await asyncio.wait(late)
