"""Measurements → the report's figures, each beside its baseline and the issue's target (issue 12)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bench import stats
from bench.cpu import PostgresCpu
from bench.peers import launch
from bench.pgbench import sequence_claim_cost as sequence_claim
from bench.report import CpuRow, Figure, Results, Target
from bench.scenarios import expiring, per_request, prefork, push, sequence_drain, wakeup
from bench.scenarios.http_throughput import HttpRun
from bench.scenarios.raw import RawRun
from bench.scenarios.unique import Burst
from bench.scenarios.worker_drains import KINDS, DrainRun, WorkerDrain
from bench.server import MANY_TENANTS

MB = 1_000_000

# key → (figure, unit, its baseline, target ratio). The baseline is pgbench running the store's statements; the
# drain across many tenants has the one-tenant batched drain of the same repetitions instead.
THROUGHPUT = {
    "batched": (
        "HTTP batched drain: lease 100 + ack 100, 4 workers",
        "jobs/s",
        "raw claim 100 + complete 100, 4 clients",
        0.5,
    ),
    "tenants": (
        f"HTTP batched drain across {MANY_TENANTS} tenants: lease 100 + ack 100, 4 workers",
        "jobs/s",
        "one tenant",
        0.8,
    ),
    "single": (
        "HTTP single drain: lease 1 + complete 1, 4 clients",
        "jobs/s",
        "raw claim 1 + complete 1, 4 clients",
        0.25,
    ),
    "enqueue": ("HTTP batch enqueue, 1,000 per request, 4 clients", "rows/s", "raw 100-row INSERT, 4 clients", 0.4),
    "unique": (
        "HTTP unique batch enqueue (skip) over 1000 distinct keys: 1,000 per request, 4 clients",
        "rows/s",
        "HTTP batch enqueue",
        0.8,
    ),
    "unique fresh": (
        "HTTP unique batch enqueue (skip) with a new key per row: 1,000 per request, 4 clients",
        "rows/s",
        "HTTP batch enqueue",
        0.8,
    ),
}
ROWS = {"enqueue", "unique", "unique fresh"}
"""The THROUGHPUT keys that count rows enqueued, not jobs drained."""


def throughput(
    results: Results, key: str, baseline_runs: list[RawRun] | list[HttpRun], http_runs: list[HttpRun]
) -> None:
    label, unit, base, target = THROUGHPUT[key]
    baseline_rates = [run.rate for run in baseline_runs]
    rates = [run.rate for run in http_runs]
    if baseline_runs and isinstance(baseline_runs[0], RawRun):  # an HTTP baseline's are listed with its own figure
        results.details.append(spread(f"{base} (pgbench)", baseline_rates, unit))
    if not rates:
        return
    baseline = stats.median(baseline_rates) if baseline_rates else None
    results.add(Figure(label, stats.median(rates), unit, baseline, base, Target("ratio", ">=", target), rates))
    results.details.append(spread(label, rates, unit))
    what = "rows" if key in ROWS else "jobs"
    results.details.append(
        f"{label}: load generator CPU {stats.median([r.client_cpu / r.items * 1000 for r in http_runs]):.3f} s"
        f" per 1,000 {what} (server: see the table)"
    )


# The plain-claim ceiling (bench/scenarios/raw.py, plain_claim_complete): raw_runs' key → (the store's raw run and
# the HTTP drain measured beside it, what it is, the targets of the store's claim ÷ it and of the HTTP drain ÷ it).
PLAIN = {
    "plain batched": ("batched", "claim 100 + complete 100", 0.9, 0.8),
    "plain single": ("single", "claim 1 + complete 1", None, 0.4),
}


def ceilings(results: Results, raw_runs: Mapping[str, list[RawRun]], http_runs: Mapping[str, list[HttpRun]]) -> None:
    """Both ceilings side by side (issue 32): the store's claim on QueueFlow's schema ÷ the seed's plain claim on
    the seed's table and index, each repetition's pgbench runs paired; and each HTTP drain ÷ the plain claim."""
    for key, (store_key, what, store_target, http_target) in PLAIN.items():
        plain = {n: run.rate for n, run in enumerate(raw_runs[key])}
        if not plain:
            continue
        results.details.append(spread(f"plain claim, {what}, 4 clients (pgbench)", list(plain.values()), "jobs/s"))
        base = f"plain claim on the seed's index, {what} (pgbench)"

        store = {n: run.rate for n, run in enumerate(raw_runs[store_key])}
        results.add(
            _against_plain(
                f"raw ceiling: the store's claim on its schema, {what}, 4 clients (pgbench)",
                store,
                plain,
                base,
                Target("ratio", ">=", store_target) if store_target else None,
            )
        )
        drains = {n: run.rate for n, run in enumerate(http_runs[store_key])}
        if drains:
            results.add(
                _against_plain(
                    f"{THROUGHPUT[store_key][0]} (÷ the plain claim)",
                    drains,
                    plain,
                    base,
                    Target("ratio", ">=", http_target),
                )
            )


def _against_plain(
    label: str, rates: dict[int, float], plain: dict[int, float], base: str, target: Target | None
) -> Figure:
    """`rates` (jobs/s by repetition) beside the plain claim's of the same repetitions, the ratio paired."""
    return Figure(
        label,
        stats.median(list(rates.values())),
        "jobs/s",
        stats.median(list(plain.values())),
        base,
        target,
        list(rates.values()),
        paired_ratio=stats.paired(rates, plain).median,
    )


def server_cpu(results: Results, key: str, http_runs: list[HttpRun]) -> None:
    if http_runs:
        what = "rows" if key in ROWS else "jobs"
        cpu = stats.median([run.server_cpu_per_1000 for run in http_runs])
        results.add(
            Figure(f"server CPU per 1,000 {what}, {THROUGHPUT[key][0].split(':')[0].split(',')[0]}", cpu * 1000, "ms")
        )


@dataclass(frozen=True, slots=True)
class Spent:
    """What one run did and the CPU seconds each party spent on it."""

    items: int
    rate: float
    server: float
    postgres: PostgresCpu | None
    client: float | None
    """None: the run has no client (the in-process runner)."""

    @property
    def postgres_cpu(self) -> float | None:
        return None if self.postgres is None else self.postgres.backends

    @property
    def background_cpu(self) -> float | None:
        return None if self.postgres is None else self.postgres.background


def _http_spent(run: HttpRun) -> Spent:
    return Spent(run.items, run.rate, run.server_cpu, run.postgres, run.client_cpu)


def _drain_spent(run: DrainRun) -> Spent:
    return Spent(run.jobs, run.rate, run.queueflow_cpu, run.postgres, run.client_cpu)


def by_party(results: Results, label: str, unit: str, runs: Sequence[Spent]) -> None:
    """A row of the CPU-by-party table: each party's CPU per job (per row for an enqueue), the median of the runs;
    each run's in the details."""
    if not runs:
        return

    def per(seconds: float | None, run: Spent) -> float | None:
        return None if seconds is None else seconds / run.items * 1e6

    server = [per(run.server, run) for run in runs]
    postgres = [per(run.postgres_cpu, run) for run in runs]
    client = [per(run.client, run) for run in runs]
    total = [
        None if each is None or base is None else base + each + (other or 0.0)
        for base, each, other in zip(server, postgres, client, strict=True)
    ]
    ratio = [None if not each or base is None else base / each for base, each in zip(server, postgres, strict=True)]
    results.parties.append(
        CpuRow(
            label,
            stats.median([run.rate for run in runs]),
            unit,
            stats.median([value for value in server if value is not None]),
            _median(postgres),
            _median(client),
            _median(total),
            _median(ratio),
            _median([per(run.background_cpu, run) for run in runs]),
        )
    )
    what = "row" if unit == "rows/s" else "job"
    results.details.append(
        f"{label}, CPU per {what} (each repetition): server {_listed(server)} µs; PostgreSQL's backends"
        f" {_listed(postgres)} µs; client {_listed(client)} µs; PostgreSQL: "
        + "; ".join(run.postgres.describe() if run.postgres else "not measured" for run in runs)
    )


def _median(values: Sequence[float | None]) -> float | None:
    measured = [value for value in values if value is not None]
    return stats.median(measured) if measured else None


def _listed(values: Sequence[float | None]) -> str:
    return ", ".join("—" if value is None else f"{value:,.1f}" for value in values)


SERVER_PER_POSTGRES = 0.5
"""Issue 46: the HTTP batched drain's server CPU per job at most half PostgreSQL's in the same drain."""


def cpu_by_party(results: Results, http_runs: Mapping[str, list[HttpRun]]) -> None:
    """The HTTP phases' rows of the CPU-by-party table, and the batched drain's server CPU per job ÷ PostgreSQL's
    (its backends'), the median of the repetitions' own ratios."""
    for key, (label, unit, _, _) in THROUGHPUT.items():
        by_party(results, label, unit, [_http_spent(run) for run in http_runs.get(key, [])])
    runs = http_runs.get("batched", [])
    if not runs:
        return
    label = "server CPU per job, HTTP batched drain (÷ PostgreSQL's CPU per job in the same drain, its backends')"
    target = Target("ratio", "<=", SERVER_PER_POSTGRES)
    server = {n: run.server_cpu / run.items * 1e6 for n, run in enumerate(runs)}
    postgres = {
        n: run.postgres.backends / run.items * 1e6
        for n, run in enumerate(runs)
        if run.postgres is not None and run.postgres.backends is not None
    }
    if not postgres:
        note = "not measured (PostgreSQL's processes not readable in /proc here)"
        results.add(Figure(label, math.nan, "µs", target=target, note=note))
        return
    pairs = stats.paired(server, postgres)
    results.add(
        Figure(
            label,
            stats.median(list(server.values())),
            "µs",
            stats.median(list(postgres.values())),
            "PostgreSQL's backends",
            target,
            list(server.values()),
            paired_ratio=pairs.median,
        )
    )
    results.details.append(
        f"HTTP batched drain, server ÷ PostgreSQL's backends, CPU per job: {pairs.listed()} (each repetition's ratio;"
        " the table shows their median)"
    )


PER_REQUEST_TARGETS = {"get": 1.3, "enqueue": 1.8, "lease": 1.8, "complete": 1.8, "empty_lease": 1.2}
"""key → the most its server CPU per request may be, ÷ the one-query route's (issue 46)."""


def per_request_cpu(results: Results, rounds: list[per_request.Round]) -> None:
    """Each route's server CPU per request ÷ the one-query route's, against issue 46's targets; then the same ÷
    `GET /healthz`'s, the measure before it (issue 32), without a target: for its history. Each ratio is the median
    of the rounds' own ratios (each round measures both floors, before and after its routes)."""
    if not rounds:
        return
    cpu = {key: [round_[key].cpu_us for round_ in rounds] for key in per_request.ROUTES}
    healthz, floor = stats.median(cpu[per_request.HEALTHZ]), stats.median(cpu[per_request.FLOOR])
    results.add(Figure(f"server CPU per request, {per_request.ROUTES[per_request.HEALTHZ]}", healthz, "µs"))
    results.add(
        Figure(
            f"server CPU per request, {per_request.ROUTES[per_request.FLOOR]}",
            floor,
            "µs",
            healthz,
            "GET /healthz",
            samples=cpu[per_request.FLOOR],
            paired_ratio=stats.median([per_request.floor_over_healthz(round_) for round_ in rounds]),
        )
    )
    for under, name, history, baseline, targets in (
        (per_request.FLOOR, "the one-query route", "", floor, PER_REQUEST_TARGETS),
        (per_request.HEALTHZ, "GET /healthz", " (history: issue 32's measure)", healthz, {}),
    ):
        for key in PER_REQUEST_TARGETS:
            bound = targets.get(key)
            results.add(
                Figure(
                    f"server CPU per request ÷ {name}{history}: {per_request.ROUTES[key]}",
                    stats.median(cpu[key]),
                    "µs",
                    baseline,
                    name,
                    Target("ratio", "<=", bound) if bound is not None else None,
                    cpu[key],
                    paired_ratio=stats.median([per_request.ratios(round_, under)[key] for round_ in rounds]),
                )
            )
    for key in per_request.ROUTES:
        results.details.append(
            spread(f"{per_request.ROUTES[key]}: server CPU per request", cpu[key], "µs")
            + "; requests/s "
            + ", ".join(f"{r[key].rate:,.0f}" for r in rounds)
        )


PREFORK_CPU = 1.05
"""Issue 46: the server's CPU per request on `--workers 2` at most this ÷ on `--workers 1` — forking costs nothing.
The rate's target (issue 32) needs cores that PostgreSQL and the load leave free, which 2 cores do not (README)."""


def prefork_enqueue(results: Results, rounds: list[dict[int, prefork.EnqueueRun]]) -> None:
    """Single enqueue on `--workers 2` beside `--workers 1`: the rate (issue 32: ≥ 1.3) and the server's CPU per
    request (issue 46), each ratio the median of the repetitions' own ratios; each side's CPU per request, by party,
    in the details."""
    if not rounds:
        return
    two, one = [r[2].rate for r in rounds], [r[1].rate for r in rounds]
    results.add(
        Figure(
            f"HTTP single enqueue (POST /v1/jobs, one job), {prefork.CLIENTS} clients, queueflow serve --workers 2",
            stats.median(two),
            "requests/s",
            stats.median(one),
            "--workers 1",
            Target("ratio", ">=", 1.3),
            two,
            paired_ratio=stats.median([prefork.ratio(r) for r in rounds]),
        )
    )
    cpu = {n: {p: run.server_cpu / run.requests * 1e6 for p, run in r.items()} for n, r in enumerate(rounds)}
    _paired_figure(
        results,
        "server CPU per request, single enqueue, queueflow serve --workers 2 (÷ --workers 1)",
        {n: each[2] for n, each in cpu.items()},
        {n: each[1] for n, each in cpu.items()},
        "µs",
        "--workers 1",
        Target("ratio", "<=", PREFORK_CPU),
    )
    for processes in prefork.PROCESSES:
        results.details.append(
            "single enqueue: " + "; ".join(r[processes].describe() for r in rounds) + " (each repetition)"
        )


def debounce(results: Results, burst: Burst) -> None:
    """Issue 43: a burst of debounced enqueues runs exactly one job per key, with the key's last payload."""
    label = (
        f"debounce burst: {burst.enqueues:,} enqueues on {burst.keys} keys, jobs not run exactly once with the last"
        " payload"
    )
    misses = abs(burst.ran - burst.keys) + (burst.ran - burst.last_payloads) + abs(burst.stored - burst.ran)
    results.add(Figure(label, misses, "jobs", target=Target("value", "<=", 0)))
    results.details.append(
        f"debounce burst: {burst.ran} jobs ran for {burst.keys} keys ({burst.last_payloads} with their key's last"
        f" payload, {burst.stored} in the table); the {burst.enqueues:,} enqueues took {burst.seconds:.1f} s"
    )


def sequence(results: Results, drain: sequence_drain.SequenceDrain) -> None:
    """Issue 43: one sequence drained by 8 workers runs one job at a time, in id order."""
    what = f"a sequence of {drain.jobs:,} jobs drained by {sequence_drain.WORKERS} concurrent workers"
    results.add(Figure(f"{what}: order violations", drain.order_violations, "", target=Target("value", "<=", 0)))
    results.add(Figure(f"{what}: overlaps", drain.overlaps, "", target=Target("value", "<=", 0)))
    results.add(Figure(f"{what}: jobs/s", drain.rate, "jobs/s"))
    results.details.append(sequence_drain.describe(drain))


def expiring_jobs(results: Results, run: expiring.Expiring) -> None:
    """Issue 43: no job is leased after its deadline; the expired ones are dead-lettered within 1 s of it."""
    what = f"{run.jobs:,} jobs expiring under load"
    results.add(Figure(f"{what}: leased after their deadline", run.late, "", target=Target("value", "<=", 0)))
    if run.lateness:
        ms = [value * 1000 for value in run.lateness]
        label = f"{what}: dead-lettered after the deadline ({run.expired:,} expired)"
        results.add(Figure(f"{label}, p50", stats.percentile(ms, 50), "ms"))
        results.add(Figure(f"{label}, p99", stats.percentile(ms, 99), "ms", target=Target("value", "<=", 1000)))
        results.add(Figure(f"{label}, max", max(ms), "ms"))
    results.details.append(expiring.describe(run))
    if not run.lateness or run.other:
        raise RuntimeError(f"{what}: {run.expired} expired, {run.other} neither completed nor expired")


def sequence_claims(results: Results, measured: sequence_claim.Measured) -> None:
    """Issue 43: a claim of 100 over a backlog in sequences ÷ the same backlog without (`sequence_claim_cost`), at a
    tenth of the issue's scale (its docstring says why): the claim reads a tenant's range of idx_jobs_claim only as far
    as its share, so the layout, not the backlog's size, sets the ratio."""
    sequences = measured.jobs // 100
    for name, key, layout in (
        (sequence_claim.SPREAD, "spread", f"{sequences:,} sequences, each head among the first in claim order"),
        (sequence_claim.RUNS, "runs", f"{sequences:,} sequences of 100 consecutive ids"),
    ):
        results.add(
            Figure(
                f"claim of 100 over {measured.jobs:,} pending jobs in {layout} (1/10 of the issue's scale)",
                measured.medians_ms[name],
                "ms",
                measured.medians_ms[sequence_claim.PLAIN],
                "no sequence",
                Target("ratio", "<=", 1.5),
                paired_ratio=measured.ratio(key),
            )
        )
    results.details.append(
        f"sequence claims ({measured.pairs} alternating pairs, generic plans, each claim rolled back): "
        + "; ".join(f"{name}: {measured.medians_ms[name]:.2f} ms, {measured.plans[name]}" for name in measured.plans)
        + f"; plain with ÷ without the sequence condition {measured.ratio('condition'):.3f}"
    )


def peak_rss(results: Results, peaks: list[int]) -> None:
    if peaks:
        results.add(
            Figure(
                "server peak RSS during the batched drains",
                max(peaks) / MB,
                "MB",
                target=Target("value", "<=", 150),
                samples=[peak / MB for peak in peaks],
            )
        )


def sessions(results: Results, counts: dict[str, int]) -> None:
    if counts:
        results.add(
            Figure(
                "new PostgreSQL sessions after warm-up, worst scenario",
                max(counts.values()),
                "",
                target=Target("value", "<=", 0),
            )
        )
        results.details.append(
            "new PostgreSQL sessions after warm-up (pg_stat_database.sessions, worst repetition): "
            + ", ".join(f"{name} {count}" for name, count in counts.items())
        )


def latency(results: Results, label: str, latencies: wakeup.Latencies, *, p99: float, p50: float | None = None) -> None:
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


def history(results: Results, finished_rows: int, empty: list[float], full: list[float]) -> None:
    ms, base = [value * 1000 for value in full], [value * 1000 for value in empty]
    results.add(
        Figure(
            f"HTTP lease 1 latency (median) with {finished_rows:,} finished rows",
            stats.median(ms),
            "ms",
            stats.median(base),
            "with none",
            Target("ratio", "<=", 1.5),
            ms,
        )
    )
    results.details.append(spread("HTTP lease 1 latency with none", base, "ms", digits=2))
    results.details.append(spread(f"HTTP lease 1 latency with {finished_rows:,} finished rows", ms, "ms", digits=2))


def peer(
    results: Results,
    name: str,
    shape: str,
    rates: dict[str, list[float]],
    raw_batched: list[RawRun],
    raw_insert: list[RawRun],
) -> None:
    batched = stats.median([run.rate for run in raw_batched]) if raw_batched else None
    insert = stats.median([run.rate for run in raw_insert]) if raw_insert else None
    results.add(
        Figure(
            f"{name} drain, {shape} (peer)",
            stats.median(rates["drain"]),
            "jobs/s",
            batched,
            "raw claim 100 + complete 100",
            samples=rates["drain"],
        )
    )
    results.add(
        Figure(
            f"{name} enqueue (peer)",
            stats.median(rates["enqueue"]),
            "rows/s",
            insert,
            "raw 100-row INSERT",
            samples=rates["enqueue"],
        )
    )
    results.details.append(spread(f"{name} drain", rates["drain"], "jobs/s"))
    results.details.append(spread(f"{name} enqueue", rates["enqueue"], "rows/s"))


# kind → (its default concurrency, target ÷ PgQueuer, peak RSS target in MB); issue 13's targets.
WORKER_TARGETS: dict[str, tuple[int, float, float | None]] = {
    "in-process": (10, 1.0, None),
    "Python SDK": (10, 0.5, 60),
    "TypeScript SDK": (1, 0.5, 100),
}
LONG_DRAIN_RSS = {"TypeScript SDK": 128}
"""kind → its peak RSS target in MB over the long drain, where it is not the shorter drains' (issue 46): some 16 s
into a busy run V8 doubles its young generation (bench/results/2026-12-06-notes.md), which node's own flags set, not
a library; the 20,000-job drains end before that."""
LIVE_HEAP = 16
"""Issue 46: the TypeScript worker's heap in use after a full GC at its long drain's end, MB at most: the leak check
that its RSS cannot be."""


def workers(
    results: Results,
    drains: Mapping[WorkerDrain, list[DrainRun]],
    long_drains: list[DrainRun],
    pgqueuer: Mapping[int, float],
) -> None:
    """Each worker's default drain beside PgQueuer's, its concurrency 100 ÷ 10, its peak RSS and CPU per job. The
    ratios pair the drains of each repetition (`stats.paired`): PgQueuer's drain and every worker's shapes
    are run in one rotation. A kind drained in several processes too (the in-process runner under
    `queueflow serve --workers N`) meets PgQueuer at its best shape, as PgQueuer does at its own (the row names
    it), and its one-process drain is a row of its own."""
    peer = stats.median(list(pgqueuer.values())) if pgqueuer else None
    peer_label = f"PgQueuer, {launch.pgqueuer_shape()}" if peer else "PgQueuer not run"
    for kind in KINDS:
        default_concurrency, target, rss_target = WORKER_TARGETS[kind]
        default = drains.get(WorkerDrain(kind), [])
        if not default:
            continue
        jobs = f"{default[0].jobs:,} no-op jobs"
        shapes = {
            shape.processes: runs
            for shape, runs in drains.items()
            if shape.kind == kind and shape.concurrency is None and runs
        }
        best = max(shapes, key=lambda processes: stats.median([run.rate for run in shapes[processes]]))
        label = f"{kind} worker drain, default settings"
        if len(shapes) > 1:
            results.add(
                Figure(
                    f"{kind} worker drain, one process, default settings, {jobs}",
                    stats.median([run.rate for run in default]),
                    "jobs/s",
                    peer,
                    peer_label,
                    samples=[run.rate for run in default],
                    paired_ratio=_paired(results, f"{kind} worker drain, one process ÷ PgQueuer", default, pgqueuer),
                )
            )
            tried = " / ".join(str(each) for each in sorted(shapes))
            processes = f"{best} process{'es' if best > 1 else ''}"
            label = f"{kind} worker drain at its best shape, {processes} (of {tried}), default settings"
        rates = [run.rate for run in shapes[best]]
        versus_peer = _paired(results, f"{label} ÷ PgQueuer", shapes[best], pgqueuer)
        results.add(
            Figure(
                f"{label}, {jobs}",
                stats.median(rates),
                "jobs/s",
                peer,
                peer_label,
                Target("ratio", ">=", target),
                rates,
                paired_ratio=versus_peer,
            )
        )
        ten = drains.get(WorkerDrain(kind, 10)) or (default if default_concurrency == 10 else [])
        hundred = drains.get(WorkerDrain(kind, 100), [])
        if ten and hundred:
            high = [run.rate for run in hundred]
            versus_ten = _paired(results, f"{kind} worker drain, concurrency 100 ÷ 10", hundred, _by_repetition(ten))
            results.add(
                Figure(
                    f"{kind} worker drain at concurrency 100 (÷ at 10)",
                    stats.median(high),
                    "jobs/s",
                    stats.median([run.rate for run in ten]),
                    "at concurrency 10",
                    Target("ratio", ">=", 1.0),
                    high,
                    paired_ratio=versus_ten,
                )
            )
        # One process's peak: the shapes run in several sum theirs, which is not the same figure.
        runs = [run for shape, shape_runs in drains.items() if shape.kind == kind for run in shape_runs]
        peaks = [run.peak_rss / MB for run in runs if run.processes == 1]
        results.add(
            Figure(
                f"{kind} worker peak RSS, {default[0].jobs:,}-job drains"
                + (" (the whole server process)" if kind == "in-process" else ""),
                max(peaks),
                "MB",
                target=Target("value", "<=", rss_target) if rss_target else None,
                samples=peaks,
            )
        )
        for processes, shape_runs in sorted(shapes.items()):
            cpu = [run.cpu_per_1000 * 1000 for run in shape_runs]
            each = "" if len(shapes) == 1 else f"{processes} process{'es' if processes > 1 else ''}, "
            results.add(
                Figure(
                    f"{kind} worker CPU per 1,000 jobs, worker + server, {each}default settings",
                    stats.median(cpu),
                    "ms",
                )
            )
        for shape, shape_runs in drains.items():
            if shape.kind == kind:
                by_party(
                    results, f"{kind} worker drain, {shape.label}", "jobs/s", [_drain_spent(r) for r in shape_runs]
                )
        for shape, shape_runs in drains.items():
            if shape.kind == kind:
                results.details.append(
                    spread(f"{kind} worker drain, {shape.label}", [r.rate for r in shape_runs], "jobs/s")
                )
                results.details.append(
                    f"{kind} worker drain, {shape.label}: load average at each drain's end: "
                    + "; ".join(run.load for run in shape_runs)
                )
    for run in long_drains:
        short = drains.get(WorkerDrain(run.kind), [])
        results.add(
            Figure(
                f"{run.kind} worker peak RSS, one {run.jobs:,}-job drain (÷ the shorter drains')",
                run.peak_rss / MB,
                "MB",
                max(each.peak_rss for each in short) / MB if short else None,
                "the shorter drains' peak",
                Target("value", "<=", LONG_DRAIN_RSS.get(run.kind) or WORKER_TARGETS[run.kind][2] or 0),
            )
        )
        if run.live_heap is not None:
            results.add(
                Figure(
                    f"{run.kind} worker live heap after a full GC, one {run.jobs:,}-job drain",
                    run.live_heap / MB,
                    "MB",
                    target=Target("value", "<=", LIVE_HEAP),
                )
            )
        results.details.append(workers_line(run))
        by_party(results, f"{run.kind} worker, one {run.jobs:,}-job drain", "jobs/s", [_drain_spent(run)])


def _by_repetition(runs: list[DrainRun]) -> dict[int, float]:
    return {run.repetition: run.rate for run in runs}


def _paired(results: Results, label: str, runs: list[DrainRun], baselines: Mapping[int, float]) -> float | None:
    """The runs' ratio to the baselines of their repetitions (`stats.paired`); each repetition's ratio goes to the
    details."""
    pairs = stats.paired(_by_repetition(runs), baselines)
    if pairs.ratios:
        results.details.append(f"{label}: {pairs.listed()} (each repetition's ratio; the table shows their median)")
    return pairs.median


def workers_line(run: DrainRun) -> str:
    heap = "" if run.live_heap is None else f" live heap after a full GC {run.live_heap / MB:.1f} MB,"
    return (
        f"{run.kind} worker, {run.jobs:,}-job drain: {run.rate:,.0f} jobs/s, peak RSS {run.peak_rss / MB:.0f} MB,"
        f"{heap} load {run.load}"
    )


def spread(label: str, values: list[float], unit: str, digits: int = 0) -> str:
    return f"{label}: " + ", ".join(f"{value:,.{digits}f}" for value in values) + f" {unit} (each repetition)"


def push_delivery(results: Results, runs: push.PushRuns) -> None:
    """Issue 45's targets: the push drain and its server CPU per job ÷ the Python SDK worker's, the drain beside a
    hung endpoint ÷ alone (each ratio the median of its repetitions' own, listed in the details), the idle
    endpoint's latency, and the receiver's peak in flight with two servers."""
    sdk = {number: run.rate for number, run in runs.sdk.items()}
    pushed = {number: run.rate for number, run in runs.push.items()}
    beside = {number: run.rate for number, run in runs.beside_slow.items()}
    if pushed and sdk:
        jobs = f"{next(iter(runs.push.values())).jobs:,} no-op jobs"
        concurrency = push.DRAIN_CONCURRENCY
        label = f"push drain, one endpoint at concurrency {concurrency}, {jobs} (÷ the Python SDK worker's)"
        sdk_label = "Python SDK worker drain, default settings"
        _paired_figure(results, label, pushed, sdk, "jobs/s", sdk_label, Target("ratio", ">=", 0.6))
        push_cpu = {n: run.server_cpu / run.jobs * 1e6 for n, run in runs.push.items()}
        sdk_cpu = {n: run.server_cpu / run.jobs * 1e6 for n, run in runs.sdk.items()}
        label = "push: server CPU per pushed job (÷ per job leased and acked by the Python SDK worker)"
        _paired_figure(results, label, push_cpu, sdk_cpu, "µs", "per leased job", Target("ratio", "<=", 1.5))
        results.details.append(
            "push drains: load average at each drain's end: " + "; ".join(run.load for run in runs.push.values())
        )
    if beside and pushed:
        label = f"push: an endpoint's drain while another answers after {push.SLOW_SECONDS:.0f} s (÷ alone)"
        _paired_figure(results, label, beside, pushed, "jobs/s", "alone", Target("ratio", ">=", 0.9))
    if runs.latencies_ms:
        label = "push: enqueue (its answer) → delivery received, idle endpoint"
        ms = runs.latencies_ms
        sent = runs.latencies_from_send_ms
        results.details.append(
            f"push, idle endpoint, from sending the enqueue → delivery received: p50 {stats.percentile(sent, 50):.1f}"
            f" ms, p99 {stats.percentile(sent, 99):.1f} ms ({len(sent)} samples)"
        )
        results.add(Figure(f"{label}, p50", stats.percentile(ms, 50), "ms", target=Target("value", "<=", 5)))
        results.add(Figure(f"{label}, p99", stats.percentile(ms, 99), "ms", target=Target("value", "<=", 20)))
        results.add(Figure(f"{label}, max", max(ms), "ms"))
    if runs.two_servers_peak is not None:
        limit = push.TWO_SERVERS_CONCURRENCY
        results.add(
            Figure(
                f"push: requests in flight at the receiver over the endpoint's concurrency {limit}, two servers",
                max(0, runs.two_servers_peak - limit),
                "",
                target=Target("value", "<=", 0),
            )
        )
        results.details.append(
            f"push, two servers: {runs.two_servers_jobs:,} jobs, the receiver's peak in flight {runs.two_servers_peak}"
            f" (the endpoint's concurrency {limit})"
        )


def _paired_figure(
    results: Results,
    label: str,
    values: dict[int, float],
    baselines: dict[int, float],
    unit: str,
    base: str,
    target: Target,
) -> None:
    """`values` beside the `baselines` of their repetitions, the ratio their pairs' median; both sides and each
    repetition's ratio in the details."""
    pairs = stats.paired(values, baselines)
    results.add(
        Figure(
            label,
            stats.median(list(values.values())),
            unit,
            stats.median(list(baselines.values())),
            base,
            target,
            list(values.values()),
            paired_ratio=pairs.median,
        )
    )
    short = label.split(" (")[0]
    results.details.append(spread(short, list(values.values()), unit, digits=1 if unit == "µs" else 0))
    results.details.append(spread(f"{short}: {base}", list(baselines.values()), unit))
    results.details.append(f"{short}: {pairs.listed()} (each repetition's ratio; the table shows their median)")
