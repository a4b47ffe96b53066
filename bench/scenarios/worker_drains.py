"""Workers at full speed: how fast each kind of QueueFlow worker, at its default settings, drains no-op jobs —
the in-process runner (`queueflow serve --mode worker --tasks …`, in one process or, with `--workers N`, in N forked
ones: QueueFlow's way to use every core), the Python SDK's `Worker` and the TypeScript SDK's `Worker`, each in a
process of its own (the SDK ones against a `queueflow serve --mode api` process).

A drain: the worker is started and proven ready (it has run one job), `jobs` pending jobs are inserted in one
statement (one NOTIFY), and the clock runs from that commit until no job of the queue is unfinished. Each run
also records the CPU time (user + system) of the worker and of the server (each with every process it forked), of
the database's backends (`bench.cpu.BackendCpu`: the harness's polling connection left out), and the worker's peak
RSS (summed over its processes); for the TypeScript worker's long drain, also its live heap after a full GC at the
drain's end (`node --expose-gc`, asked for by SIGUSR2: bench/drivers/ts_worker.mjs).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench import typescript_build
from bench.cpu import PostgresCpu, children, tree_cpu_seconds
from bench.database import BenchDatabase
from bench.server import ROOT, WORKER_KEY, QueueFlowServer, process_peak_rss, reset_peak_rss

QUEUE = "drain"
KINDS = ("in-process", "Python SDK", "TypeScript SDK")
TS_SDK = ROOT / "sdks" / "typescript"

SEED = """
INSERT INTO queueflow.jobs (id, tenant_id, queue_name, task_name, payload, config, scheduled_at, created_at)
SELECT 'job_drain_' || $2 || lpad(n::text, 9, '0'), 'bench', $1, 'noop', jsonb_build_object('i', n),
       '{"backoff": {"strategy": "exponential", "base_seconds": 1, "max_seconds": 3600, "jitter": true}}',
       now(), now()
  FROM generate_series(1, $3::int) AS n
"""
UNFINISHED = """
SELECT EXISTS (SELECT FROM queueflow.jobs WHERE queue_name = $1 AND status IN ('pending', 'retrying', 'running'))
"""


@dataclass(frozen=True, slots=True)
class WorkerDrain:
    """A drain of the workers' rotation: a kind of QueueFlow worker, its concurrency (None: its default) and, for the
    in-process runner, how many processes serve (`queueflow serve --workers`)."""

    kind: str
    concurrency: int | None = None
    processes: int = 1

    @property
    def label(self) -> str:
        shape = f"concurrency {self.concurrency}" if self.concurrency else "default settings"
        return shape if self.processes == 1 else f"{self.processes} processes, {shape}"


@dataclass(frozen=True, slots=True)
class PeerDrain:
    """A peer's drain in the workers' rotation (bench/peers/): the baseline the workers' drains are paired with."""

    kind: str


@dataclass(frozen=True, slots=True)
class DrainRun:
    kind: str
    concurrency: int | None
    """None: the kind's default."""
    jobs: int
    seconds: float
    worker_cpu: float
    server_cpu: float
    peak_rss: int
    load: str
    """The load average (1, 5, 15 min) as the drain ended: how shared the machine was."""
    repetition: int = 0
    """Which repetition of the bench's rotation it belongs to: its figures pair it with the drains beside it."""
    processes: int = 1
    """The worker's processes (`queueflow serve --workers`, the in-process runner only)."""
    postgres: PostgresCpu | None = None
    """The CPU of the database's backends over the drain."""
    live_heap: int | None = None
    """Bytes of V8 heap in use after a full GC at the drain's end (None: not asked for; the TypeScript worker only)."""

    @property
    def shape(self) -> WorkerDrain:
        return WorkerDrain(self.kind, self.concurrency, self.processes)

    @property
    def rate(self) -> float:
        return self.jobs / self.seconds

    @property
    def queueflow_cpu(self) -> float:
        """The QueueFlow server's CPU for the drain: the in-process runner is a `queueflow serve` process (its
        tasks run inside it), the SDK workers' server is the API server they lease from."""
        return self.worker_cpu if self.kind == "in-process" else self.server_cpu

    @property
    def client_cpu(self) -> float | None:
        """The SDK worker process's CPU; None for the in-process runner, which has no client."""
        return None if self.kind == "in-process" else self.worker_cpu

    @property
    def cpu_per_1000(self) -> float:
        """Worker plus server CPU seconds per 1,000 jobs."""
        return (self.worker_cpu + self.server_cpu) / self.jobs * 1000


def build_ts() -> None:
    typescript_build.build(TS_SDK)


class WorkerProcess:
    def __init__(self, argv: list[str], log_path: Path) -> None:
        self.argv, self.log_path = argv, log_path
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> WorkerProcess:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                self.argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
        return self

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def check(self) -> None:
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"{self.argv[:3]} exited:\n{self.log_path.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None


def worker_argv(
    kind: str,
    database_url: str,
    server: QueueFlowServer | None,
    concurrency: int | None,
    processes: int = 1,
    heap_report: Path | None = None,
) -> list[str]:
    if kind == "in-process":
        argv = [sys.executable, "-m", "queueflow.cli", "serve", "--mode", "worker", "--database-url", database_url,
                "--tasks", "bench.drivers.noop:tasks", "--task-queues", QUEUE, "--workers", str(processes)]  # fmt: skip
        return argv + (["--task-concurrency", str(concurrency)] if concurrency else [])
    assert server is not None
    assert processes == 1  # the SDK workers are one process each
    url = f"http://127.0.0.1:{server.port}"
    extra = [str(concurrency)] if concurrency else []
    if kind == "Python SDK":
        return [sys.executable, "-m", "bench.drivers.sdk_worker", url, WORKER_KEY, QUEUE, *extra]
    driver = str(ROOT / "bench" / "drivers" / "ts_worker.mjs")
    if heap_report is not None:
        return ["node", "--expose-gc", driver, "--heap-report", str(heap_report), url, WORKER_KEY, QUEUE, *extra]
    return ["node", driver, url, WORKER_KEY, QUEUE, *extra]


async def _until_drained(database: BenchDatabase, worker: WorkerProcess, limit: float) -> None:
    deadline = time.monotonic() + limit
    while await database.db.fetchval(UNFINISHED, QUEUE):
        worker.check()
        if time.monotonic() > deadline:
            raise TimeoutError(f"the queue was not drained in {limit:.0f} s")
        await asyncio.sleep(0.02)


async def _seed(database: BenchDatabase, jobs: int) -> None:
    await database.db.execute(SEED, QUEUE, secrets.token_hex(3), jobs)


async def drain(
    kind: str,
    database: BenchDatabase,
    jobs: int,
    log_dir: Path,
    *,
    server: QueueFlowServer | None = None,
    concurrency: int | None = None,
    processes: int = 1,
    live_heap: bool = False,
    limit: float = 600,
) -> DrainRun:
    """Start a worker of `kind` (in `processes` processes), drain `jobs` no-op jobs with it, stop it. With
    `live_heap` (the TypeScript worker only), the run has its heap in use after a full GC at the drain's end."""
    assert not live_heap or kind == "TypeScript SDK"
    name = f"worker-{kind.replace(' ', '-').lower()}-{concurrency or 'default'}-{processes}"
    heap_report = log_dir / f"{name}-heap-{secrets.token_hex(3)}" if live_heap else None
    argv = worker_argv(kind, database.url, server, concurrency, processes, heap_report)
    worker = WorkerProcess(argv, log_dir / f"{name}.log").start()
    try:
        await database.reset_jobs()
        # Ready once it has run a job: imports done, pool and statements warm. Forked processes import before the
        # fork; each opens its own pool as it starts, so with several one may still be connecting here.
        await _seed(database, 1)
        await _until_drained(database, worker, 60)
        await database.reset_jobs()
        await database.vacuum()
        _tree_reset_peak_rss(worker.pid)
        async with database.postgres_cpu() as postgres:
            worker_cpu = tree_cpu_seconds(worker.pid)
            server_cpu = server.cpu_seconds() if server is not None else 0.0
            await _seed(database, jobs)
            began = time.perf_counter()
            await _until_drained(database, worker, limit)
            seconds = time.perf_counter() - began
            worker_cpu = tree_cpu_seconds(worker.pid) - worker_cpu
            server_cpu = (server.cpu_seconds() - server_cpu) if server is not None else 0.0
        # The peak before the collections: they are the harness's, not the drain's.
        peak_rss = _tree_peak_rss(worker.pid)
        heap = await _live_heap(worker, heap_report) if heap_report is not None else None
        run = DrainRun(
            kind=kind,
            concurrency=concurrency,
            jobs=jobs,
            seconds=seconds,
            worker_cpu=worker_cpu,
            server_cpu=server_cpu,
            peak_rss=peak_rss,
            load=load(),
            processes=processes,
            postgres=postgres.result,
            live_heap=heap,
        )
        completed = await database.count(f"queue_name = '{QUEUE}' AND status = 'completed'")
        if completed != jobs:
            raise RuntimeError(f"{kind}: {completed} of {jobs} jobs completed")
        return run
    finally:
        worker.stop()


async def _live_heap(worker: WorkerProcess, report: Path, limit: float = 30) -> int:
    """The TypeScript driver's heap in use after a full GC, now: SIGUSR2 asks for it, the driver writes it to
    `report` (bench/drivers/ts_worker.mjs)."""
    os.kill(worker.pid, signal.SIGUSR2)
    deadline = time.monotonic() + limit
    while (heap := _read_bytes(report)) is None:
        worker.check()
        if time.monotonic() > deadline:
            raise TimeoutError(f"the TypeScript worker wrote no heap figure in {limit:.0f} s")
        await asyncio.sleep(0.02)
    return heap


def _read_bytes(report: Path) -> int | None:
    """None: not written yet (the driver renames it into place whole)."""
    return int(report.read_text()) if report.exists() else None


def _tree(pid: int) -> list[int]:
    """`pid` and its running descendants (a pre-forked server's supervisor and its children)."""
    return [pid, *(each for child in children(pid) for each in _tree(child))]


def _tree_reset_peak_rss(pid: int) -> None:
    for each in _tree(pid):
        reset_peak_rss(each)


def _tree_peak_rss(pid: int) -> int:
    """The processes' peaks summed: an upper bound of their peak together (forked pages they share count twice)."""
    return sum(process_peak_rss(each) for each in _tree(pid))


def load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def describe(run: DrainRun) -> str:
    return (
        f"{run.kind} worker, {run.shape.label}: {run.jobs:,} jobs in {run.seconds:.2f} s = {run.rate:,.0f} jobs/s;"
        f" CPU {run.worker_cpu:.2f} s worker + {run.server_cpu:.2f} s server + {_seconds(run.postgres)} PostgreSQL's"
        f" backends; peak RSS {run.peak_rss / 1e6:.0f} MB;"
        + ("" if run.live_heap is None else f" live heap after a full GC {run.live_heap / 1e6:.1f} MB;")
        + f" load {run.load}"
    )


def _seconds(postgres: PostgresCpu | None) -> str:
    return "?" if postgres is None or postgres.backends is None else f"{postgres.backends:.2f} s"
