"""`Worker`: runs a `TaskRegistry`'s tasks for jobs leased over HTTP with a worker key.

    Worker("http://127.0.0.1:8000", "wkey1", tasks, queues=["default"], concurrency=8).run()

It is a `queueflow_worker.WorkerLoop` (slots, prefetch, batched acks and heartbeats, graceful drain, logs)
whose jobs come from the long-poll lease route over one keep-alive connection pool. It leases only the tasks its
registry has (`task_names`), so workers with different tasks can share a queue.

Stopping: on SIGTERM or SIGINT (`run()`), or `await stop()`, it stops leasing, releases at once every job it holds
and has not started (`POST /v1/worker/release`: claimable again at once, no retry counted), finishes the running
ones (for up to `shutdown_grace_seconds`; then async tasks are cancelled and their jobs released, sync ones left to
their leases' expiry), records their outcomes and returns. A second SIGINT or SIGTERM quits at once: running tasks
are ended the same way, and the outcomes already finished are still recorded. A sync task's thread cannot be
stopped, so when one still runs then, `run()` ends the process with `os._exit(130)` once those outcomes are
recorded (Python would otherwise wait for it).

A key the server refuses (401, 403) is not retried: the worker stops, logs one error, and `arun()` raises it
(`run()` exits with status 1 instead of a traceback).

Logging (logger `queueflow_client.worker`, per job `queueflow_client.worker.jobs`, see `WorkerLoop`): when the
root logger has no handler, `run()` adds one of its own to `queueflow_client.worker` (stderr, INFO, as uvicorn
does), and leaves the per-job lines at WARNING: the startup line and every failure with its traceback print, a
line per completed job does not. Configure logging (`logging.basicConfig(level=logging.INFO)`) to see every job.

A lease long-polls until work arrives, but only after one found nothing (so under load no lease waits); `stop()`
closes a parked one's connection, and the server then claims nothing for it (and hands back, uncounted, jobs it
claimed for it after all). A lease that does not wait is never cut: its answer may already be on its way, and its
jobs are released instead. A job whose outcome was still waiting to be sent in a batch when the process died is
delivered again once its lease expires.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys
import uuid
from collections.abc import Sequence
from typing import Any

import httpx
from queueflow_worker import Outcome, WorkerLoop, answers_in_order

from queueflow_client import _calls
from queueflow_client._transport import (
    DEFAULT_MAX_RETRIES,
    ONCE,
    AsyncTransport,
    RetryPolicy,
    is_transient,
    may_have_landed,
)
from queueflow_client.errors import AuthenticationError, LeaseLostError, NotFoundError, PermissionDeniedError
from queueflow_client.tasks import TaskRegistry
from queueflow_client.types import LeasedJob, WorkflowStep

__all__ = ["Worker"]

SETTLED = ("completed", "retrying", "dead_letter")
"""The statuses an ack may have put a job in."""

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
        wait_seconds: float = 1.0,
        heartbeat_every: float | None = None,
        ack_batch: int = 100,
        ack_interval: float = 0.01,
        shutdown_grace_seconds: float | None = 30.0,
        worker_id: str | None = None,
        timeout: float = 30.0,
        max_retries: int = DEFAULT_MAX_RETRIES,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        """`concurrency` tasks run at once and up to `prefetch` (default: adaptive) more jobs are leased ahead
        (never more than the slots start within half a lease and half the shortest timeout lately leased); outcomes
        go out in batches of up to `ack_batch`, at most `ack_interval` seconds after the first. An idle worker's
        lease long-polls up to `wait_seconds` (work wakes it at once); short, because a stop lets it answer rather
        than cut it — an answer on its way would strand its jobs — and cuts only one still unanswered 2 s on.
        Stopping releases the jobs not started and lets the running ones finish for `shutdown_grace_seconds`
        (None: no limit). The defaults are the TypeScript SDK's too (`concurrency: 10`, `waitSeconds: 1`,
        `shutdownGraceMs: 30000`, …)."""
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
        self._failure: Exception | None = None
        self._signals = 0
        self.loop = WorkerLoop(
            _Unopened(),
            tasks,
            concurrency=concurrency,
            prefetch=prefetch,
            lease_seconds=lease_seconds,
            heartbeat_every=heartbeat_every,
            ack_batch=ack_batch,
            ack_interval=ack_interval,
            drain_seconds=shutdown_grace_seconds,
            name=f"worker {self.worker_id}",
            queues=self.queues,
            fatal=(AuthenticationError, PermissionDeniedError),
            on_fatal=self._refused,
            transient=is_transient,
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
        """Run until SIGTERM or SIGINT, then drain and return (see the module docstring: a second signal, a
        refused key, logging when none is configured)."""
        _default_logging()
        try:
            asyncio.run(self._main())
        except (AuthenticationError, PermissionDeniedError):
            raise SystemExit(1) from None  # the loop has logged why
        except KeyboardInterrupt:  # a Ctrl-C before the signal handlers were in place, or after they left
            raise SystemExit(130) from None

    async def _main(self) -> None:
        await self.arun(handle_signals=True)
        if self.loop.stranded_threads:
            # asyncio.run would join the abandoned tasks' threads (and so would the interpreter at exit).
            log.warning(
                "worker %s: quitting with %d tasks still running in threads", self.worker_id, self.loop.stranded_threads
            )
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(130)

    async def arun(self, *, handle_signals: bool = False) -> None:
        """Run until `stop()` (or, with `handle_signals`, SIGTERM/SIGINT: a second one quits at once), then
        drain. Raises the server's refusal of the key (401, 403) once stopped."""
        loop = asyncio.get_running_loop()
        signals = (signal.SIGTERM, signal.SIGINT) if handle_signals else ()
        for signum in signals:
            loop.add_signal_handler(signum, self._signalled, signum)
        try:
            await self.start()
            await self._stopping.wait()
            hint = " (Ctrl-C again to quit)" if handle_signals else ""
            await self.stop(hint=hint)
        finally:
            for signum in signals:
                loop.remove_signal_handler(signum)
            await self.stop()
        if self._failure is not None:
            raise self._failure

    def _signalled(self, signum: int) -> None:
        self._signals += 1
        if self._signals == 1:
            log.info("worker %s: %s: stopping", self.worker_id, signal.Signals(signum).name)
            self._stopping.set()
        else:
            log.warning("worker %s: %s again: quitting now", self.worker_id, signal.Signals(signum).name)
            self.loop.quit()

    def _refused(self, error: Exception) -> None:
        """The server refused the key (401, 403): retrying cannot help, so the worker stops."""
        self._failure = error
        log.error(
            "worker %s: the server at %s refused the worker key (%s); stopping. A worker needs one of the server's"
            " worker keys (QUEUEFLOW_WORKER_KEYS), not a tenant API key.",
            self.worker_id,
            self._base_url,
            error,
        )
        self._stopping.set()

    async def start(self) -> None:
        """Start leasing in the background."""
        if self._transport is not None:
            return
        if not self.tasks.names:
            raise ValueError("register a task (@tasks.task(name)) before starting a worker: it leases only its tasks")
        self._transport = AsyncTransport(
            self._base_url, self._key, timeout=30.0, retry=self._retry, http_client=self._http_client
        )
        if self._http_client is None:
            self._transport.http.timeout = self._timeout
        self._source = _HttpSource(self._transport, self)
        self.loop.source = self._source
        await self.loop.start()

    async def stop(self, *, hint: str = "") -> None:
        """Stop leasing, release every held job not started, finish the running ones (up to
        `shutdown_grace_seconds`) and record their outcomes, then close the connection."""
        self._stopping.set()
        transport, self._transport = self._transport, None
        if transport is None:
            return
        await self.loop.stop(hint=hint)
        await transport.aclose()
        log.info("worker %s: stopped", self.worker_id)


class _Unopened:
    """The source of a worker not started yet."""

    async def lease(self, max_jobs: int) -> list[LeasedJob]:
        raise RuntimeError("the worker is not started")

    def interrupt(self) -> None:
        pass

    async def ack(self, outcomes: Sequence[Outcome]) -> list[bool | None]:
        raise RuntimeError("the worker is not started")

    async def heartbeat(self, leases: Sequence[tuple[str, str]]) -> list[bool]:
        raise RuntimeError("the worker is not started")

    async def release(self, leases: Sequence[tuple[str, str]]) -> list[bool]:
        raise RuntimeError("the worker is not started")

    async def progress(self, job_id: str, token: str, value: Any) -> bool:
        raise RuntimeError("the worker is not started")

    async def add_steps(self, job_id: str, token: str, steps: list[dict[str, Any]]) -> list[WorkflowStep]:
        raise RuntimeError("the worker is not started")


class _HttpSource:
    """The worker routes as a `LeaseSource`."""

    def __init__(self, transport: AsyncTransport, worker: Worker) -> None:
        self._transport = transport
        self._worker = worker
        self._park = False
        """Whether the next lease may wait for work: only after one found none (a busy worker's leases answer at
        once)."""
        self._interrupted = False
        self._task_names = worker.tasks.names
        self._unsure: set[tuple[str, str]] = set()
        """The outcomes of the last ack that failed after it may have reached the server: the loop sends the same
        batch again (`queueflow_worker.retries`), and an answer to these may then describe that attempt's effect."""

    async def lease(self, max_jobs: int) -> list[LeasedJob]:
        if self._interrupted:
            return []
        worker = self._worker
        wait = worker.wait_seconds if self._park else 0
        call = _calls.lease(
            worker.queues,
            max_jobs=max_jobs,
            lease_seconds=worker.lease_seconds,
            wait_seconds=wait,
            worker_id=worker.worker_id,
            task_names=self._task_names,  # only the tasks it can run
        )
        jobs = await self._transport(call)
        self._park = not jobs
        return jobs

    def interrupt(self) -> None:
        """No lease after this one; none in flight is cut, a long-poll included: once the server has claimed for
        it — work arrived, or became due, a moment before the stop — the answer may be on its way, and cut then
        its jobs would sit `running` until their leases expire, each then counting a failed delivery (the
        chaos suite's rolling restarts saw it). The loop releases what it brings; a poll waits at most
        `wait_seconds` (1 s by default, as Sidekiq's and Faktory's fetches wait 2 s, so a stop need not cut it)."""
        self._interrupted = True

    async def ack(self, outcomes: Sequence[Outcome]) -> list[bool | None]:
        items = [(o.job_id, o.lease_token) for o in outcomes]
        unsure = self._unsure.intersection(items) if self._unsure else set()
        try:
            # Not repeated here: the loop makes it again on its clock, as long as the leases may hold.
            results, _ = await self._transport.send(_calls.ack_outcomes(outcomes), retry=ONCE)
        except Exception as exc:
            self._unsure = unsure.union(items) if may_have_landed(exc) else unsure
            raise
        self._unsure = set()
        held: list[bool | None] = []
        for item, result in zip(items, answers_in_order(outcomes, results), strict=True):
            ok: bool | None = result is not None and result.outcome == "ok"
            if item in unsure and not ok and result is not None and result.status in SETTLED:
                # An earlier attempt that was sent and then failed may have landed: this lease_lost may be its own
                # effect (a repeat is answered lease_lost, never applied twice) or another delivery's. Neither can
                # be told apart here, so the outcome is reported as unknown, never as held: a once-only guarantee
                # must not rest on it.
                log.info("job %s: settled as %s, perhaps by this worker's first attempt", item[0], result.status)
                ok = None
            held.append(ok)
        return held

    async def heartbeat(self, leases: Sequence[tuple[str, str]]) -> list[bool]:
        results = await self._transport(_calls.heartbeat_many(leases, self._worker.lease_seconds))
        return [result.outcome == "ok" for result in results]

    async def release(self, jobs: Sequence[tuple[str, str]]) -> list[bool]:
        """Give back held jobs not started, (job id, token) pairs (at most 1,000): claimable again at once, no retry
        counted; per item, whether it was still held (and is now released)."""
        results = await self._transport(_calls.release(jobs), retry=ONCE)  # the loop makes it again
        return [result.outcome == "ok" for result in results]

    async def progress(self, job_id: str, token: str, value: Any) -> bool:
        try:
            await self._transport(_calls.heartbeat(job_id, token, self._worker.lease_seconds, value))
        except (LeaseLostError, NotFoundError):
            return False
        return True

    async def add_steps(self, job_id: str, token: str, steps: list[dict[str, Any]]) -> list[WorkflowStep]:
        """`POST /v1/worker/jobs/{id}/steps`: its errors are the client's (LeaseLostError, InvalidStateError,
        ValidationError, …)."""
        return await self._transport(_calls.add_steps(job_id, token, steps))


def _default_logging() -> None:
    """With no logging configured, a handler of the worker's own (as uvicorn does): its startup line, stopping
    and failures print; the per-job lines stay at WARNING (a busy worker would print thousands a second)."""
    if logging.getLogger().handlers:
        return
    worker_log = logging.getLogger("queueflow_client.worker")
    if worker_log.handlers:
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    worker_log.addHandler(handler)
    worker_log.setLevel(logging.INFO)
    jobs_log = logging.getLogger("queueflow_client.worker.jobs")
    if jobs_log.level == logging.NOTSET:
        jobs_log.setLevel(logging.WARNING)
