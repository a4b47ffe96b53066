"""One `make bench` run: every scenario in turn, each figure beside its same-run baseline, then the report.

A scenario that fails is recorded and the others still run; the run then exits non-zero, which is all the smoke
profile (in the test suite) checks.
"""

from __future__ import annotations

import tempfile
import time
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path

from bench import stats
from bench.database import ADMIN_URL, BenchDatabase, SessionCounter
from bench.machine import describe
from bench.profiles import Profile
from bench.report import Figure, Results, Target
from bench.scenarios import history, http_throughput, peers, raw, wakeup
from bench.server import QueueFlowServer

MB = 1_000_000


async def run(profile: Profile, log_dir: Path | None = None) -> Results:
    started = time.monotonic()
    results = Results(profile.name, await describe(ADMIN_URL))
    logs = log_dir or Path(tempfile.mkdtemp(prefix="queueflow-bench-"))
    baselines: dict[str, list[float]] = {}

    async def scenario(name: str, body: Callable[[], Awaitable[None]]) -> None:
        print(f"· {name}", end="", flush=True)
        began = time.monotonic()
        try:
            await body()
        except Exception as exc:
            results.errors.append(f"{name}: {type(exc).__name__}: {exc}")
            traceback.print_exc()
        print(f" ({time.monotonic() - began:.0f} s)", flush=True)

    async def raw_ceiling() -> None:
        async with BenchDatabase("raw") as database:
            database.migrate()
            await database.connect()
            # Warm-up: the table's files, the catalog caches and the planner's statistics exist before timing.
            await raw.claim_complete(database, 1, 10)
            for _ in range(profile.repetitions):
                baselines.setdefault("single", []).append(
                    (await raw.claim_complete(database, 1, profile.raw_single_tx)).rate
                )
                baselines.setdefault("batched", []).append(
                    (await raw.claim_complete(database, 100, profile.raw_batched_tx)).rate
                )
                baselines.setdefault("insert", []).append((await raw.insert(database, profile.raw_insert_tx)).rate)
        results.details.append(_spread("raw claim 1 + complete 1 (pgbench)", baselines["single"], "jobs/s"))
        results.details.append(_spread("raw claim 100 + complete 100 (pgbench)", baselines["batched"], "jobs/s"))
        results.details.append(_spread("raw 100-row INSERT (pgbench)", baselines["insert"], "rows/s"))

    await scenario("raw ceiling (pgbench)", raw_ceiling)

    async with BenchDatabase("http") as database:
        database.migrate()
        await database.connect()
        server = QueueFlowServer(database.url, logs / "server.log", profile.server_args)
        await scenario("start queueflow serve --mode all", _sync(server.start))
        sessions: dict[str, int] = {}
        try:
            if server.process is not None:
                await _queueflow(server, database, profile, results, baselines, sessions, scenario)
        finally:
            server.stop()
        if sessions:
            worst = max(sessions.values())
            results.add(
                Figure(
                    "new PostgreSQL sessions after warm-up, worst scenario", worst, "", target=Target("value", "<=", 0)
                )
            )
            results.details.append(
                "new PostgreSQL sessions after warm-up (pg_stat_database.sessions, worst repetition): "
                + ", ".join(f"{name} {count}" for name, count in sessions.items())
            )

    if profile.peers:

        async def pgqueuer() -> None:
            rates = await peers.pgqueuer(profile.pgqueuer_jobs, profile.repetitions)
            _peer(results, baselines, "PgQueuer", "2 processes × batch 100", rates)

        async def procrastinate() -> None:
            rates = await peers.procrastinate(profile.procrastinate_jobs, profile.repetitions)
            _peer(results, baselines, "Procrastinate", "1 worker, concurrency 4", rates)

        await scenario("PgQueuer", pgqueuer)
        await scenario("Procrastinate", procrastinate)

    results.elapsed_seconds = time.monotonic() - started
    return results


async def _queueflow(
    server: QueueFlowServer,
    database: BenchDatabase,
    profile: Profile,
    results: Results,
    baselines: dict[str, list[float]],
    sessions: dict[str, int],
    scenario: Callable[[str, Callable[[], Awaitable[None]]], Awaitable[None]],
) -> None:
    async def throughput() -> None:
        runs = await http_throughput.measure(
            server,
            database,
            repetitions=profile.repetitions,
            enqueue_rows=profile.enqueue_rows,
            single_jobs=profile.single_drain_jobs,
            batched_jobs=profile.batched_drain_jobs,
            settle=profile.session_settle,
            warm_up=profile.warm_up_jobs,
        )
        for key, label, unit, target, measured in (
            ("batched", "HTTP batched drain: lease 100 + ack 100, 4 workers", "jobs/s", 0.5, runs.batched),
            ("single", "HTTP single drain: lease 1 + complete 1, 4 clients", "jobs/s", 0.25, runs.single),
            ("insert", "HTTP batch enqueue, 1,000 per request, 4 clients", "rows/s", 0.4, runs.enqueue),
        ):
            base = {
                "batched": "raw claim 100 + complete 100",
                "single": "raw claim 1 + complete 1",
                "insert": "raw 100-row INSERT",
            }[key]
            rates = [run.rate for run in measured]
            results.add(
                Figure(
                    label,
                    stats.median(rates),
                    unit,
                    _median(baselines.get(key)),
                    f"{base}, 4 clients",
                    Target("ratio", ">=", target),
                    rates,
                )
            )
            results.details.append(_spread(label, rates, unit))
            results.details.append(
                f"{label}: server CPU {stats.median([r.server_cpu_per_1000 for r in measured]):.3f} s per 1,000;"
                f" load generator CPU {stats.median([r.client_cpu / r.items * 1000 for r in measured]):.3f} s"
                f" per 1,000"
            )
            sessions[label.split(":")[0].split(",")[0]] = max(run.new_sessions for run in measured)
        for key, label in (
            ("batched", "HTTP batched drain"),
            ("single", "HTTP single drain"),
            ("insert", "HTTP batch enqueue"),
        ):
            measured = {"batched": runs.batched, "single": runs.single, "insert": runs.enqueue}[key]
            cpu = stats.median([run.server_cpu_per_1000 for run in measured])
            unit = "rows" if key == "insert" else "jobs"
            results.add(Figure(f"server CPU per 1,000 {unit}, {label}", cpu * 1000, "ms"))
        results.add(
            Figure(
                "server peak RSS during the batched drain",
                max(runs.peak_rss) / MB,
                "MB",
                target=Target("value", "<=", 150),
                samples=[rss / MB for rss in runs.peak_rss],
            )
        )

    async def wake_new() -> None:
        counter = SessionCounter(database, profile.session_settle)
        await counter.start()
        latencies = await wakeup.new_job(server, profile.wake_samples)
        sessions["wake-up"] = await counter.stop()
        _latency_figures(results, "wake-up: enqueue → parked long-poll lease returns", latencies, p50=2, p99=10)

    async def wake_due() -> None:
        counter = SessionCounter(database, profile.session_settle)
        await counter.start()
        for retry, what in ((False, "a delayed job (delay_seconds)"), (True, "a retried job (retry_after_seconds)")):
            latencies = await wakeup.due_later(server, profile.due_samples, retry=retry)
            _latency_figures(results, f"{what} leased by a parked long-poll, after its due time", latencies, p99=50)
        sessions["due-later wake-up"] = await counter.stop()

    async def lease_history() -> None:
        counter = SessionCounter(database, profile.session_settle)
        await counter.start()
        empty, full = await history.measure(
            server,
            database,
            samples=profile.lease_samples,
            finished_rows=profile.finished_rows,
            repetitions=profile.repetitions,
        )
        sessions["lease with history"] = await counter.stop()
        ms = [value * 1000 for value in full]
        results.add(
            Figure(
                f"HTTP lease 1 latency (median) with {profile.finished_rows:,} finished rows",
                stats.median(ms),
                "ms",
                stats.median([v * 1000 for v in empty]),
                "with none",
                Target("ratio", "<=", 1.5),
                ms,
            )
        )

    await scenario("HTTP throughput: enqueue, single drain, batched drain", throughput)
    await scenario("wake-up latency, new job", wake_new)
    await scenario("wake-up latency, job due later", wake_due)
    await scenario("lease latency with finished history", lease_history)


def _latency_figures(
    results: Results, label: str, latencies: wakeup.Latencies, *, p99: float, p50: float | None = None
) -> None:
    if not latencies.seconds:
        raise RuntimeError(f"{label}: no sample ({latencies.missed} leases came back empty)")
    ms = [value * 1000 for value in latencies.seconds]
    results.add(
        Figure(
            f"{label}, p50",
            stats.percentile(ms, 50),
            "ms",
            target=Target("value", "<=", p50) if p50 is not None else None,
        )
    )
    results.add(Figure(f"{label}, p99", stats.percentile(ms, 99), "ms", target=Target("value", "<=", p99)))
    results.add(Figure(f"{label}, max", max(ms), "ms"))
    results.details.append(
        f"{label}: {len(ms)} samples; {latencies.missed} leases empty at their deadline"
        + (f"; {latencies.early} answered before the enqueue's own answer (counted as 0)" if latencies.early else "")
    )
    if latencies.missed:
        raise RuntimeError(f"{label}: {latencies.missed} parked leases never got their job")


def _peer(
    results: Results, baselines: dict[str, list[float]], name: str, shape: str, rates: dict[str, list[float]]
) -> None:
    results.add(
        Figure(
            f"{name} drain, {shape} (peer)",
            stats.median(rates["drain"]),
            "jobs/s",
            _median(baselines.get("batched")),
            "raw claim 100 + complete 100",
            samples=rates["drain"],
        )
    )
    results.add(
        Figure(
            f"{name} enqueue (peer)",
            stats.median(rates["enqueue"]),
            "rows/s",
            _median(baselines.get("insert")),
            "raw 100-row INSERT",
            samples=rates["enqueue"],
        )
    )
    results.details.append(_spread(f"{name} drain", rates["drain"], "jobs/s"))
    results.details.append(_spread(f"{name} enqueue", rates["enqueue"], "rows/s"))


def _median(values: list[float] | None) -> float | None:
    return stats.median(values) if values else None


def _spread(label: str, values: list[float], unit: str) -> str:
    return f"{label}: " + ", ".join(f"{value:,.0f}" for value in values) + f" {unit} (repetitions)"


def _sync(work: Callable[[], object]) -> Callable[[], Awaitable[None]]:
    async def body() -> None:
        work()

    return body
