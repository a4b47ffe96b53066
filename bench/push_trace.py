"""Where a push drain's time goes (issue 45): the delivery pipeline of one endpoint traced in-process.

The lab runs what `queueflow serve --mode all` runs for push (a `PostgresJobStore` of 10 connections, its
`Notifier`, the `Deliveries` service, uvloop) in this process against the push scenario's receiver (its own
process), drains `--jobs` seeded no-op jobs at `--concurrency`, and prints per pushed job:

- the statements sent (an asyncpg query logger on every pooled connection: count and time by statement) and the
  commits (pg_stat_database's xact_commit over the drain: the bench database is ours alone);
- each stage's calls and time: slots taken, the claim (lease), unused slots given back, the request, the slots and
  counters finished, the ack;
- where the endpoint's `concurrency` slots are over time, sampled every `--sample-ms`: a request in flight, claimed
  but not yet sent, answered but not yet recorded, being recorded, or free;
- this process's CPU and the receiver's (both share the machine's cores);
- enqueue → received on an idle endpoint (`--idle`): the enqueue's commit, the NOTIFY's wake-up, the claim, the
  request, each timed.

    .venv/bin/python -m bench.push_trace [--jobs 5000] [--concurrency 50] [--idle 40]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import random
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg
import uvloop
from queueflow.clocks import SystemClock
from queueflow.core.endpoints import NewEndpoint
from queueflow.core.types import NewJob
from queueflow.engine import Engine, EngineSettings
from queueflow.runtime.delivery import Deliveries, pusher
from queueflow.runtime.delivery.client import Sender
from queueflow.runtime.notifier import Notifier
from queueflow.runtime.wakeups import Wakeups
from queueflow.stores.postgres import PostgresJobStore
from queueflow.stores.postgres import connection as pg_connection

from bench.database import BenchDatabase
from bench.push_client import process_cpu
from bench.scenarios import push, worker_drains

TENANT = "bench"
QUEUE = "push-trace"


class Statements:
    """Every statement the pool's connections ran: count and seconds by its first words."""

    def __init__(self) -> None:
        self.count: collections.Counter[str] = collections.Counter()
        self.seconds: collections.Counter[str] = collections.Counter()
        self.on = False

    def log(self, record: Any) -> None:
        if not self.on:
            return
        text = " ".join(record.query.split())
        key = text[:70]
        self.count[key] += 1
        self.seconds[key] += record.elapsed

    def install(self) -> None:
        real = asyncpg.connect

        async def connect(*args: Any, **kwargs: Any) -> asyncpg.Connection:
            connection = await real(*args, **kwargs)
            connection.add_query_logger(self.log)
            return connection

        pg_connection.asyncpg.connect = connect  # type: ignore[assignment]


class Stages:
    """Calls, jobs and seconds of each stage of the pipeline (wrapped methods)."""

    def __init__(self) -> None:
        self.calls: collections.Counter[str] = collections.Counter()
        self.items: collections.Counter[str] = collections.Counter()
        self.seconds: dict[str, list[float]] = collections.defaultdict(list)
        self.events: list[tuple[str, float, float]] | None = None
        """(stage, began, ended) of every call, wall clock, while a timeline is kept (the idle samples)."""

    def wrap(self, owner: Any, name: str, stage: str, size: Callable[..., int]) -> None:
        real = getattr(owner, name)

        async def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return await real(*args, **kwargs)
            finally:
                if self.events is not None:
                    self.events.append((stage, began - time.perf_counter() + time.time(), time.time()))
                self.calls[stage] += 1
                self.items[stage] += size(*args, **kwargs)
                self.seconds[stage].append(time.perf_counter() - began)

        setattr(owner, name, timed)


async def sample(deliveries: Deliveries, concurrency: int, every: float, into: list[tuple[int, ...]]) -> None:
    while True:
        await asyncio.sleep(every)
        for item in deliveries.pushers.values():
            if item.endpoint.name != "trace":
                continue
            requests = len(item._requests)
            claimed = max(0, len(item.deliveries) - requests)
            if hasattr(item, "_spare"):  # slots kept from the answer on, spare until a claim or the recorder
                answered = len(item._spare)
            else:  # a slot held until its delivery's record
                answered = len(item._unrecorded) + getattr(item, "_recording_now", 0)
            into.append((requests, claimed, answered, concurrency - requests - claimed - answered))


def _count_recording() -> None:
    """The code before issue 45's slot reuse held a delivery's slot until its record: count those being recorded."""
    real = pusher.Pusher._flush

    async def flush(self: Any) -> None:
        self._recording_now = len(self._unrecorded)
        try:
            await real(self)
        finally:
            self._recording_now = 0

    pusher.Pusher._flush = flush  # type: ignore[method-assign]


async def main(args: argparse.Namespace) -> None:
    _count_recording()
    statements = Statements()
    statements.install()
    stages = Stages()
    async with BenchDatabase("pushtrace") as database:
        database.migrate()
        await database.connect()
        receiver = push.Receiver()
        await receiver.ready()
        wakeups = Wakeups()
        store = PostgresJobStore.from_url(database.url, pool_size=10, wakeups=wakeups)
        notifier = Notifier(database.url, wakeups, safety_poll=5.0)
        engine = Engine(
            store, SystemClock(), rng=random.Random(), settings=EngineSettings(allow_private_endpoints=True)
        )
        endpoints = engine.endpoints
        stages.wrap(endpoints, "take_slots", "take slots", lambda _id, want, _lease: want)
        stages.wrap(endpoints, "release_slots", "release slots", lambda slots: len(slots))
        stages.wrap(endpoints, "finished", "finish slots+counters", lambda _id, done, *_: len(done))
        stages.wrap(engine, "lease", "claim (lease)", lambda *a, **k: k.get("max_jobs", 0))
        stages.wrap(engine, "ack", "ack", lambda complete, fail: len(complete) + len(fail))
        stages.wrap(engine, "heartbeat_many", "hold (heartbeat)", lambda leases, **k: len(leases))
        stages.wrap(Sender, "send", "request", lambda *a, **k: 1)
        await notifier.start()
        await endpoints.create(
            TENANT,
            NewEndpoint(name="trace", url=f"{receiver.url}/", queues=(QUEUE,), concurrency=args.concurrency),
        )
        await endpoints.create(TENANT, NewEndpoint(name="idle", url=f"{receiver.url}/timed", queues=("idle",)))
        service = Deliveries(engine, wakeups, max_body_bytes=1 << 20, refresh=1.0, poll=5.0)
        await service.start()
        samples: list[tuple[int, ...]] = []
        try:
            # Warm: the pool's connections, the HTTP pool, the statements prepared.
            await _drain(database, min(args.jobs, 500))
            await asyncio.sleep(1.2)  # statistics flushed
            commits = await _commits(database)
            for counter in (stages.calls, stages.items, statements.count, statements.seconds):
                counter.clear()
            stages.seconds.clear()
            statements.on = True
            sampler = asyncio.create_task(sample(service, args.concurrency, args.sample_ms / 1000, samples))
            cpu, receiver_cpu = time.process_time(), process_cpu(receiver.process.pid)
            sched = _schedstat()
            seconds = await _drain(database, args.jobs)
            cpu, receiver_cpu = time.process_time() - cpu, process_cpu(receiver.process.pid) - receiver_cpu
            on_cpu, queued = (after - before for after, before in zip(_schedstat(), sched, strict=True))
            sampler.cancel()
            statements.on = False
            await asyncio.sleep(1.2)
            commits = await _commits(database) - commits
            jobs = args.jobs
            print(f"drain: {jobs:,} jobs at concurrency {args.concurrency} in {seconds:.2f} s = {jobs / seconds:,.0f}"
                  f" jobs/s; load {worker_drains.load()}")  # fmt: skip
            print(
                f"CPU per job: this process (the server) {cpu / jobs * 1e6:.0f} µs,"
                f" the receiver {receiver_cpu / jobs * 1e6:.0f} µs; commits per job {commits / jobs:.3f}"
            )
            print(f"the event loop's thread over the drain: on a CPU {on_cpu / seconds:.0%}, runnable but waiting for"
                  f" a CPU {queued / seconds:.0%}, asleep (waiting on PostgreSQL or the receiver) "
                  f"{1 - (on_cpu + queued) / seconds:.0%}")  # fmt: skip
            print(f"statements per job {sum(statements.count.values()) / jobs:.3f}:")
            for key, count in statements.count.most_common():
                print(f"  {count / jobs:7.3f}/job {statements.seconds[key] / count * 1e3:7.2f} ms  {key}")
            print("stages (calls per job, jobs per call, ms per call p50 / p90):")
            for stage, calls in stages.calls.items():
                times = sorted(stages.seconds[stage])
                print(
                    f"  {stage:24} {calls / jobs:6.3f} {stages.items[stage] / calls:6.1f}"
                    f"  {times[len(times) // 2] * 1e3:6.2f} / {times[int(len(times) * 0.9)] * 1e3:6.2f}"
                )
            if samples:
                names = ("request in flight", "claimed, not sent", "answered, slot not free", "free")
                print(f"slots over {len(samples)} samples (mean of {args.concurrency}):")
                for index, name in enumerate(names):
                    values = [row[index] for row in samples]
                    print(
                        f"  {name:22} mean {statistics.fmean(values):5.1f}  p10 {_pct(values, 0.1)}"
                        f"  p50 {_pct(values, 0.5)}  p90 {_pct(values, 0.9)}"
                    )
            if args.idle:
                await _idle(engine, receiver, args.idle, stages)
        finally:
            await service.stop()
            await notifier.stop()
            await store.aclose()
            receiver.stop()


def _schedstat() -> tuple[float, float]:
    """This process's main thread (the event loop's): seconds on a CPU, and seconds runnable but waiting for one."""
    on_cpu, queued, _ = Path("/proc/self/schedstat").read_text().split()
    return int(on_cpu) / 1e9, int(queued) / 1e9


def _pct(values: list[int], q: float) -> int:
    return sorted(values)[int(len(values) * q)]


async def _commits(database: BenchDatabase) -> int:
    await database.db.execute("SELECT pg_stat_clear_snapshot()")
    value: int = await database.db.fetchval(
        "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
    )
    return value


async def _drain(database: BenchDatabase, jobs: int) -> float:
    await database.reset_jobs()
    await database.vacuum()
    await database.db.execute(worker_drains.SEED, QUEUE, os.urandom(3).hex(), jobs)
    began = time.perf_counter()
    await database.db.execute("SELECT pg_notify('queueflow_work', $1)", QUEUE)
    deadline = time.monotonic() + 600
    while await database.db.fetchval(worker_drains.UNFINISHED, QUEUE):
        if time.monotonic() > deadline:
            raise TimeoutError("the push drain did not end in 600 s")
        await asyncio.sleep(0.01)
    return time.perf_counter() - began


async def _idle(engine: Engine, receiver: push.Receiver, samples: int, stages: Stages) -> None:
    """Enqueue → received, a job at a time, through the engine (this process's commit and its local wake-up), with
    each sample's timeline: the enqueue's answer, the claim pass's slot take and lease, the request's start, the
    receiver's first byte."""
    for counter in (stages.calls, stages.items):
        counter.clear()
    stages.seconds.clear()
    latencies: list[float] = []
    parts: dict[str, list[float]] = collections.defaultdict(list)
    for _ in range(samples):
        stages.events = []
        (enqueued,) = await engine.enqueue_many(TENANT, [NewJob(task_name="noop", queue_name="idle")])
        answered = time.time()
        deadline = time.monotonic() + 30
        while enqueued.job.id not in receiver.arrived:
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {enqueued.job.id} was not delivered within 30 s")
            await asyncio.sleep(0.0005)  # the receiver is another process: its output is polled
        arrived = receiver.arrived[enqueued.job.id]
        latencies.append((arrived - answered) * 1000)
        first: dict[str, tuple[float, float]] = {}
        for stage, began, ended in stages.events:
            if began >= answered - 0.0005 and stage not in first:
                first[stage] = (began, ended)
        if {"take slots", "claim (lease)", "request"} <= set(first):
            take, lease, request = first["take slots"], first["claim (lease)"], first["request"]
            parts["enqueue answered → slot take begins (wake-up)"].append(take[0] - answered)
            parts["slot take"].append(take[1] - take[0])
            parts["take's end → lease begins"].append(lease[0] - take[1])
            parts["lease (BEGIN+SETs, claim, COMMIT)"].append(lease[1] - lease[0])
            parts["lease's end → request begins"].append(request[0] - lease[1])
            parts["request begins → receiver's first byte"].append(arrived - request[0])
        await asyncio.sleep(0.05)
    stages.events = None
    started = time.perf_counter()
    for _ in range(samples):
        await engine.store.ping()  # type: ignore[attr-defined]
    round_trip = (time.perf_counter() - started) / samples
    latencies.sort()
    print(f"idle: enqueue's answer → received, {samples} samples: p50 {latencies[len(latencies) // 2]:.2f} ms,"
          f" p90 {latencies[int(len(latencies) * 0.9)]:.2f} ms; a pooled round trip (SELECT 1) {round_trip * 1e3:.2f}"
          " ms")  # fmt: skip
    for stage, calls in stages.calls.items():
        times = sorted(stages.seconds[stage])
        print(f"  {stage:24} {calls / samples:5.2f} calls/job  p50 {times[len(times) // 2] * 1e3:6.2f} ms")
    print(f"  the path, per sample (p50 of {len(parts.get('slot take', []))}):")
    for part, values in parts.items():
        print(f"    {part:44} {statistics.median(values) * 1e3:6.2f} ms")


def run(coroutine: Awaitable[None]) -> None:
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(coroutine)  # type: ignore[arg-type]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--sample-ms", type=float, default=2.0)
    parser.add_argument("--idle", type=int, default=40)
    run(main(parser.parse_args()))
