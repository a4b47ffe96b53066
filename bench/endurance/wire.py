"""What every endurance driver shares, QueueFlow's and the peers': the offered rate paced on wall-clock time, the
job's payload, and the lines a producer and a worker print for the harness. Standard library only: the peers'
drivers import this module from bench/.peers-venv, where nothing of QueueFlow's is installed.

Every driver prints READY first. A producer then reads commands on stdin, one JSON object a line (`{"rate": R}`:
offer R jobs/s from now on; end of input: finish what is in flight, then exit), and prints `{"sent": N, "lag": S,
"errors": E}` every PRODUCER_REPORT_EVERY seconds: N jobs whose enqueue has committed, S seconds it is behind its
schedule, E enqueue attempts that failed (each retried). A worker prints `{"s": [[n, latency_us], ...], "d": [n,
...]}`: jobs its task started (with the pickup latency, from the payload's `t`, the producer's clock just before the
enqueue was sent — the same machine's clock) and finished.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

PAYLOAD_BYTES = 256
"""The issue's payload size: a job's JSON payload is padded to this many bytes."""
JOB_SECONDS = 0.001
"""Each job's work: 1 ms asleep, so the figures are the queue's, not the task's."""
REPORT_EVERY = 0.1
"""How often a worker prints what it started and finished (a line per job would cost more than the job)."""
PRODUCER_REPORT_EVERY = 0.2
BATCH_MAX = 1000
"""The most jobs one enqueue carries (QueueFlow's batch limit)."""
TICK = 0.005
"""A producer sends at most every TICK seconds, every job then due in one enqueue (at 1,000 jobs/s, 5 a request; at
150, one): a request per job would make the producer's HTTP, not the queue, what a run at 1,000/s measures. A job's
latency is timed from its enqueue's send, so the wait for the tick (at most TICK) is not counted in it."""
SENDERS = 4
"""Enqueues in flight at once: one slow commit does not stall the schedule behind it."""
RETRY_PAUSE = 0.05
READY = {"ready": True}
"""The first line of every driver: its imports are done (seconds on a loaded machine), it is about to connect."""

Send = Callable[[list[dict[str, Any]]], Awaitable[None]]


def payload(n: int, sent_at: float) -> dict[str, Any]:
    """Job `n`'s payload, stamped with the producer's clock; padded to PAYLOAD_BYTES of JSON."""
    body: dict[str, Any] = {"n": n, "t": sent_at, "pad": ""}
    body["pad"] = "x" * max(0, PAYLOAD_BYTES - len(json.dumps(body)))
    return body


class Pacer:
    """The offered rate as a schedule on wall-clock time: job k of a rate is due at `base + k / rate`. A producer
    that falls behind (slow commits) sends what is due in one batch when it can, rather than drifting late for
    good; a new rate starts a new schedule from the jobs assigned so far."""

    def __init__(self) -> None:
        self.rate = 0.0
        self.assigned = 0
        self._base = time.time()
        self._base_count = 0

    def set_rate(self, rate: float, now: float) -> None:
        self.rate, self._base, self._base_count = rate, now, self.assigned

    def _expected(self, now: float) -> float:
        return self._base_count + (now - self._base) * self.rate

    def due(self, now: float) -> int:
        """Jobs due by `now` and not yet assigned to an enqueue."""
        return math.floor(self._expected(now)) - self.assigned if self.rate > 0 else 0

    def wait(self, now: float) -> float:
        """Seconds until the next job is due (a long nap while no rate is set)."""
        if self.rate <= 0:
            return 0.05
        return max(0.0, self._base + (self.assigned + 1 - self._base_count) / self.rate - now)

    def lag(self, now: float) -> float:
        """Seconds of schedule not yet assigned."""
        return max(0.0, (self._expected(now) - self.assigned) / self.rate) if self.rate > 0 else 0.0


def emit(line: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(line, separators=(",", ":")) + "\n")
    sys.stdout.flush()


async def _commands(pacer: Pacer) -> None:
    """Rates from stdin until its end."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        pacer.set_rate(float(json.loads(line)["rate"]), time.time())


async def produce(send: Send) -> None:
    """Offer jobs through `send` (one enqueue of a batch; it raises on failure, and the same batch, keys and all,
    is sent again) at the rate stdin sets, until stdin ends."""
    pacer = Pacer()
    emit(READY)
    commands = asyncio.create_task(_commands(pacer))
    slots = asyncio.Semaphore(SENDERS)
    counts = {"sent": 0, "errors": 0}
    in_flight: set[asyncio.Task[None]] = set()

    async def deliver(batch: list[dict[str, Any]]) -> None:
        try:
            while True:
                try:
                    await send(batch)
                    break
                except Exception as exc:  # any failure of the system under test: its enqueue is retried
                    counts["errors"] += 1
                    print(f"enqueue failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
                    await asyncio.sleep(RETRY_PAUSE)
            counts["sent"] += len(batch)
        finally:
            slots.release()

    async def report() -> None:
        while True:
            emit({**counts, "lag": round(pacer.lag(time.time()), 4)})
            await asyncio.sleep(PRODUCER_REPORT_EVERY)

    reporting = asyncio.create_task(report())
    while not commands.done():
        now = time.time()
        if pacer.due(now) <= 0:
            await asyncio.sleep(min(pacer.wait(now), 0.05))
            continue
        await slots.acquire()
        now = time.time()
        size = min(pacer.due(now), BATCH_MAX)
        if size <= 0:
            slots.release()
            continue
        batch = [payload(pacer.assigned + i, now) for i in range(size)]
        pacer.assigned += size
        task = asyncio.create_task(deliver(batch))
        in_flight.add(task)
        task.add_done_callback(in_flight.discard)
        await asyncio.sleep(TICK)
    await asyncio.gather(*in_flight)
    reporting.cancel()
    emit({**counts, "lag": 0.0})


class Reporter:
    """A worker's starts and finishes, printed every REPORT_EVERY seconds from the worker's event loop."""

    def __init__(self) -> None:
        self._started: list[list[int]] = []
        self._done: list[int] = []
        self._flush: asyncio.TimerHandle | None = None

    def started(self, body: dict[str, Any]) -> int:
        n = int(body["n"])
        self._started.append([n, round(max(0.0, time.time() - float(body["t"])) * 1e6)])
        self._schedule()
        return n

    def done(self, n: int) -> None:
        self._done.append(n)
        self._schedule()

    def _schedule(self) -> None:
        if self._flush is None:
            self._flush = asyncio.get_running_loop().call_later(REPORT_EVERY, self.flush)

    def flush(self) -> None:
        self._flush = None
        if self._started or self._done:
            emit({"s": self._started, "d": self._done})
            self._started, self._done = [], []


async def run_job(reporter: Reporter, body: dict[str, Any]) -> None:
    """The task every system runs: report the start, work 1 ms, report the end."""
    n = reporter.started(body)
    await asyncio.sleep(JOB_SECONDS)
    reporter.done(n)


def peer_main(
    prog: str,
    install: Callable[[str], Coroutine[Any, Any, None]],
    produce: Callable[[str], Coroutine[Any, Any, None]],
    work: Callable[[str, int], Coroutine[Any, Any, None]],
) -> None:
    """A peer driver's command line: `install|produce|work URL [--concurrency N]`."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("role", choices=("install", "produce", "work"))
    parser.add_argument("url")
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    roles = {"install": install, "produce": produce}
    asyncio.run(roles[args.role](args.url) if args.role in roles else work(args.url, args.concurrency))
