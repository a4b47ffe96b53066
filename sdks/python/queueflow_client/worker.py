"""`Worker`: runs a `TaskRegistry`'s tasks for jobs leased over HTTP with a worker key.

    Worker("http://127.0.0.1:8000", "wkey1", tasks, queues=["default"], concurrency=8).run()

It is a `queueflow_client.loop.WorkerLoop` (slots, prefetch, batched acks and heartbeats, graceful drain) whose
jobs come from the long-poll lease route over one keep-alive connection pool. On SIGTERM or SIGINT (`run()`),
or `await stop()`, it stops leasing, finishes every job it holds, records their outcomes and returns.

A lease long-polls until work arrives; `stop()` closes a parked one's connection, and the server then claims
nothing for it (and hands back, uncounted, jobs it claimed for it after all). A job whose outcome was still
waiting to be sent in a batch when the process died is delivered again once its lease expires.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import uuid
from collections.abc import Sequence
from typing import Any

import httpx

from queueflow_client import _calls
from queueflow_client._generated.models import AckComplete, AckFail
from queueflow_client._generated.types import UNSET
from queueflow_client._transport import DEFAULT_MAX_RETRIES, AsyncTransport, RetryPolicy
from queueflow_client.errors import LeaseLostError, NotFoundError
from queueflow_client.loop import Outcome, WorkerLoop
from queueflow_client.tasks import TaskRegistry
from queueflow_client.types import LeasedJob

__all__ = ["Worker"]

log = logging.getLogger("queueflow_client.worker")


class Worker:
    def __init__(
        self,
        base_url: str,
        worker_key: str | None,
        tasks: TaskRegistry,
        *,
        queues: Sequence[str] = ("default",),
        concurrency: int = 10,
        prefetch: int | None = None,
        lease_seconds: float = 30.0,
        wait_seconds: float = 20.0,
        heartbeat_every: float | None = None,
        ack_batch: int = 100,
        ack_interval: float = 0.01,
        worker_id: str | None = None,
        timeout: float = 30.0,
        max_retries: int = DEFAULT_MAX_RETRIES,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        """`concurrency` tasks run at once and up to `prefetch` (default: `concurrency`) more jobs are leased
        ahead; outcomes go out in batches of up to `ack_batch`, at most `ack_interval` seconds after the first."""
        self.tasks = tasks
        self.queues = list(queues)
        self.concurrency = concurrency
        self.lease_seconds = lease_seconds
        self.wait_seconds = wait_seconds
        self.worker_id = worker_id or f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}"
        # A long-poll lease must be allowed to wait its `wait_seconds` before the read times out.
        self._timeout = httpx.Timeout(timeout, read=max(timeout, wait_seconds + 10))
        self._http_client = http_client
        self._base_url = base_url
        self._key = worker_key
        self._retry = RetryPolicy(max_retries=max_retries)
        self._transport: AsyncTransport | None = None
        self._source: _HttpSource | None = None
        self.loop = WorkerLoop(
            _Unopened(),
            tasks,
            concurrency=concurrency,
            prefetch=prefetch,
            lease_seconds=lease_seconds,
            heartbeat_every=heartbeat_every,
            ack_batch=ack_batch,
            ack_interval=ack_interval,
            name=f"worker {self.worker_id}",
        )
        self._stopping = asyncio.Event()

    @property
    def held(self) -> int:
        """Jobs leased and not yet settled: running, or waiting for a slot."""
        return self.loop.held

    @property
    def peak_held(self) -> int:
        """The most jobs running at once so far (for tests and metrics)."""
        return self.loop.peak_running

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
        if self._transport is not None:
            return
        self._transport = AsyncTransport(
            self._base_url, self._key, timeout=30.0, retry=self._retry, http_client=self._http_client
        )
        if self._http_client is None:
            self._transport.http.timeout = self._timeout
        self._source = _HttpSource(self._transport, self)
        self.loop.source = self._source
        await self.loop.start()
        log.info("worker %s: leasing from %s, %d at a time", self.worker_id, ", ".join(self.queues), self.concurrency)

    async def stop(self) -> None:
        """Stop leasing, finish every held job and record its outcome, then close the connection."""
        self._stopping.set()
        transport, self._transport = self._transport, None
        if transport is None:
            return
        await self.loop.stop()
        await transport.aclose()
        log.info("worker %s: stopped", self.worker_id)


class _Unopened:
    """The source of a worker not started yet."""

    async def lease(self, max_jobs: int) -> list[LeasedJob]:
        raise RuntimeError("the worker is not started")

    def interrupt(self) -> None:
        pass

    async def ack(self, outcomes: Sequence[Outcome]) -> list[bool]:
        raise RuntimeError("the worker is not started")

    async def heartbeat(self, leases: Sequence[tuple[str, str]]) -> list[bool]:
        raise RuntimeError("the worker is not started")

    async def progress(self, job_id: str, token: str, value: Any) -> bool:
        raise RuntimeError("the worker is not started")


class _HttpSource:
    """The worker routes as a `LeaseSource`."""

    def __init__(self, transport: AsyncTransport, worker: Worker) -> None:
        self._transport = transport
        self._worker = worker
        self._poll: asyncio.Future[list[LeasedJob]] | None = None
        self._interrupted = False

    async def lease(self, max_jobs: int) -> list[LeasedJob]:
        if self._interrupted:
            return []
        worker = self._worker
        call = _calls.lease(
            worker.queues,
            max_jobs=max_jobs,
            lease_seconds=worker.lease_seconds,
            wait_seconds=worker.wait_seconds,
            worker_id=worker.worker_id,
            task_names=worker.tasks.names or None,  # only the tasks it can run
        )
        poll = self._poll = asyncio.ensure_future(self._transport(call))
        try:
            return await poll
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if self._interrupted and poll.cancelled() and not (current and current.cancelling()):
                return []  # closed by interrupt(): the server claims nothing for a request whose client left
            raise
        finally:
            self._poll = None

    def interrupt(self) -> None:
        self._interrupted = True
        if self._poll is not None:
            self._poll.cancel()

    async def ack(self, outcomes: Sequence[Outcome]) -> list[bool]:
        complete = [
            AckComplete(id=o.job_id, lease_token=o.lease_token, result=o.result) for o in outcomes if o.error is None
        ]
        fail = [
            AckFail(
                id=o.job_id,
                lease_token=o.lease_token,
                error=o.error,
                retryable=o.retryable,
                retry_after_seconds=o.retry_after_seconds if o.retry_after_seconds is not None else UNSET,
            )
            for o in outcomes
            if o.error is not None
        ]
        results = await self._transport(_calls.ack(complete, fail))
        answered = {(result.id): result for result in results}
        held = []
        for outcome in outcomes:
            result = answered.get(outcome.job_id)
            ok = result is not None and result.outcome == "ok"
            if result is not None and not ok and result.status in ("completed", "retrying", "dead_letter"):
                # The ack was retried after a first attempt that landed, or the job was settled for us: a
                # lease_lost answer on an already finished job is the expected end, not a failure.
                log.info("job %s: already settled as %s", outcome.job_id, result.status)
                ok = True
            held.append(ok)
        return held

    async def heartbeat(self, leases: Sequence[tuple[str, str]]) -> list[bool]:
        results = await self._transport(_calls.heartbeat_many(leases, self._worker.lease_seconds))
        return [result.outcome == "ok" for result in results]

    async def progress(self, job_id: str, token: str, value: Any) -> bool:
        try:
            await self._transport(_calls.heartbeat(job_id, token, self._worker.lease_seconds, value))
        except (LeaseLostError, NotFoundError):
            return False
        return True
