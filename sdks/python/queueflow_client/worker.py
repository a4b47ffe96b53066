"""`Worker`: runs a `TaskRegistry`'s tasks for jobs leased over HTTP with a worker key.

    Worker("http://127.0.0.1:8000", "wkey1", tasks, queues=["default"], concurrency=8).run()

It long-polls the lease route for as many jobs as it has free slots (never holding more than `concurrency`),
runs each (see `queueflow_client.tasks`), and records outcomes through the batched ack route: results that are
ready together go out in one request. On SIGTERM or SIGINT (`run()`), or `await stop()`, it stops leasing,
finishes every job it holds, records their outcomes and returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from queueflow_client import _calls
from queueflow_client._generated.models import AckComplete, AckFail
from queueflow_client._generated.types import UNSET
from queueflow_client._transport import DEFAULT_MAX_RETRIES, AsyncTransport, RetryPolicy
from queueflow_client.errors import LeaseLostError, NotFoundError, QueueFlowError
from queueflow_client.tasks import TaskRegistry
from queueflow_client.types import AckResult, LeasedJob

__all__ = ["Worker"]

log = logging.getLogger("queueflow_client.worker")

MAX_ACK = 1000
ERROR_PAUSE = 1.0
"""Seconds to wait before leasing again after the lease call failed (the server is down or restarting)."""


class Worker:
    def __init__(
        self,
        base_url: str,
        worker_key: str | None,
        tasks: TaskRegistry,
        *,
        queues: Sequence[str] = ("default",),
        concurrency: int = 10,
        lease_seconds: float = 30.0,
        wait_seconds: float = 20.0,
        heartbeat_every: float | None = None,
        worker_id: str | None = None,
        timeout: float = 30.0,
        max_retries: int = DEFAULT_MAX_RETRIES,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.tasks = tasks
        self.queues = list(queues)
        self.concurrency = concurrency
        self.lease_seconds = lease_seconds
        self.wait_seconds = wait_seconds
        self.heartbeat_every = heartbeat_every if heartbeat_every is not None else lease_seconds / 3
        self.worker_id = worker_id or f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}"
        # A long-poll lease must be allowed to wait its `wait_seconds` before the read times out.
        self._timeout = httpx.Timeout(timeout, read=max(timeout, wait_seconds + 10))
        self._http_client = http_client
        self._base_url = base_url
        self._key = worker_key
        self._retry = RetryPolicy(max_retries=max_retries)
        self._transport: AsyncTransport | None = None
        self._acks: _Acker | None = None
        self._main: asyncio.Task[None] | None = None
        self._held: set[asyncio.Task[None]] = set()
        self._slot_freed = asyncio.Event()
        self._stopping = asyncio.Event()
        self.peak_held = 0
        """The most jobs held at once so far (for tests and metrics)."""

    @property
    def held(self) -> int:
        """Jobs leased and not yet settled."""
        return len(self._held)

    def run(self) -> None:
        """Run until SIGTERM or SIGINT, then drain and return."""
        asyncio.run(self.arun(handle_signals=True))

    async def arun(self, *, handle_signals: bool = False) -> None:
        """Run until `stop()` (or, with `handle_signals`, SIGTERM/SIGINT), then drain."""
        await self.start()
        loop = asyncio.get_running_loop()
        signals = (signal.SIGTERM, signal.SIGINT) if handle_signals else ()
        for signum in signals:
            loop.add_signal_handler(signum, self._stopping.set)
        try:
            await self._stopping.wait()
        finally:
            for signum in signals:
                loop.remove_signal_handler(signum)
            await self.stop()

    async def start(self) -> None:
        """Start leasing in the background."""
        if self._main is not None:
            return
        self._transport = AsyncTransport(
            self._base_url, self._key, timeout=30.0, retry=self._retry, http_client=self._http_client
        )
        if self._http_client is None:
            self._transport.http.timeout = self._timeout
        self._acks = _Acker(self._transport)
        self._main = asyncio.create_task(self._lease_loop(), name="queueflow-worker")
        log.info("worker %s: leasing from %s, %d at a time", self.worker_id, ", ".join(self.queues), self.concurrency)

    async def stop(self) -> None:
        """Stop leasing, finish every held job and record its outcome, then close the connection."""
        self._stopping.set()
        main, self._main = self._main, None
        if main is not None:
            main.cancel()  # an in-flight long-poll is abandoned: whatever it would have claimed, we never saw
            with contextlib.suppress(asyncio.CancelledError):
                await main
        if self._held:
            log.info("worker %s: finishing %d held jobs", self.worker_id, len(self._held))
            await asyncio.wait(set(self._held))
        if self._acks is not None:
            await self._acks.aclose()
        if self._transport is not None:
            await self._transport.aclose()
        log.info("worker %s: stopped", self.worker_id)

    async def _lease_loop(self) -> None:
        assert self._transport is not None
        while not self._stopping.is_set():
            free = self.concurrency - len(self._held)
            if free <= 0:
                self._slot_freed.clear()
                await self._slot_freed.wait()
                continue
            call = _calls.lease(
                self.queues,
                max_jobs=free,
                lease_seconds=self.lease_seconds,
                wait_seconds=self.wait_seconds,
                worker_id=self.worker_id,
            )
            try:
                jobs = await self._transport(call)
            except QueueFlowError as exc:
                log.warning("worker %s: lease failed (retrying in %.0f s): %s", self.worker_id, ERROR_PAUSE, exc)
                await asyncio.sleep(ERROR_PAUSE)
                continue
            for job in jobs:
                self._hold(job)

    def _hold(self, job: LeasedJob) -> None:
        assert self._transport is not None
        assert self._acks is not None
        lease = _RemoteLease(self._transport, self._acks, job, self.lease_seconds)
        task = asyncio.create_task(self.tasks.execute(job, lease, heartbeat_every=self.heartbeat_every))
        self._held.add(task)
        self.peak_held = max(self.peak_held, len(self._held))
        task.add_done_callback(self._release)

    def _release(self, task: asyncio.Task[None]) -> None:
        self._held.discard(task)
        self._slot_freed.set()
        if not task.cancelled() and task.exception() is not None:
            log.error("worker %s: a job's runner failed", self.worker_id, exc_info=task.exception())


@dataclass(slots=True)
class _RemoteLease:
    transport: AsyncTransport
    acks: _Acker
    job: LeasedJob
    lease_seconds: float

    async def heartbeat(self) -> bool:
        try:
            await self.transport(_calls.heartbeat(self.job.id, self.job.lease_token, self.lease_seconds))
        except (LeaseLostError, NotFoundError):
            return False
        return True

    async def progress(self, value: Any) -> bool:
        try:
            await self.transport(_calls.heartbeat(self.job.id, self.job.lease_token, self.lease_seconds, value))
        except (LeaseLostError, NotFoundError):
            return False
        return True

    async def complete(self, result: Any) -> bool:
        return await self.acks.send(
            complete=AckComplete(id=self.job.id, lease_token=self.job.lease_token, result=result)
        )

    async def fail(self, error: str, *, retryable: bool, retry_after_seconds: float | None) -> bool:
        item = AckFail(
            id=self.job.id,
            lease_token=self.job.lease_token,
            error=error,
            retryable=retryable,
            retry_after_seconds=retry_after_seconds if retry_after_seconds is not None else UNSET,
        )
        return await self.acks.send(fail=item)


class _Acker:
    """Sends outcomes through the batched ack route: one request in flight, everything that became ready
    meanwhile goes in the next. Under load outcomes batch up by themselves; alone, each goes out at once."""

    def __init__(self, transport: AsyncTransport) -> None:
        self._transport = transport
        self._queue: list[tuple[AckComplete | AckFail, asyncio.Future[bool]]] = []
        self._ready = asyncio.Event()
        self._task = asyncio.create_task(self._run(), name="queueflow-worker-acks")
        self.batches: list[int] = []
        """The size of every ack sent (for tests and metrics)."""

    async def send(self, complete: AckComplete | None = None, fail: AckFail | None = None) -> bool:
        item = complete or fail
        assert item is not None
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._queue.append((item, future))
        self._ready.set()
        return await future

    async def _run(self) -> None:
        while True:
            await self._ready.wait()
            self._ready.clear()
            while self._queue:
                batch, self._queue = self._queue[:MAX_ACK], self._queue[MAX_ACK:]
                await self._flush(batch)

    async def _flush(self, batch: list[tuple[AckComplete | AckFail, asyncio.Future[bool]]]) -> None:
        self.batches.append(len(batch))
        complete = [item for item, _ in batch if isinstance(item, AckComplete)]
        fail = [item for item, _ in batch if isinstance(item, AckFail)]
        try:
            results: list[AckResult] = await self._transport(_calls.ack(complete, fail))
        except Exception as exc:
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        outcomes = {result.id: result for result in results}
        for item, future in batch:
            result = outcomes.get(item.id)
            held = result is not None and result.outcome == "ok"
            if result is not None and not held and result.status in ("completed", "retrying", "dead_letter"):
                # The ack was retried after a first attempt that landed, or the job was settled for us: a
                # lease_lost answer on an already finished job is the expected end, not a failure.
                log.info("job %s: already settled as %s", item.id, result.status)
            if not future.done():
                future.set_result(held)

    async def aclose(self) -> None:
        # Called once every held job has settled, so nothing is queued: each job awaited its own outcome.
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
