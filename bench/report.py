"""The results: figures with their same-run baselines and the issue's targets, as a table and as bench/RESULTS.md."""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field

from bench.machine import Machine
from bench.peers.launch import pgqueuer_shape
from bench.profiles import FULL

HOW = f"""## How each figure is measured

- **Raw ceiling**: pgbench, `-M prepared -c 4 -j 2 -t N`, running bench/pgbench/*.sql — the claim, completion and
  batch-insert statements of QueueFlow's PostgreSQL store — on a database migrated with `queueflow migrate`. The
  drains take exactly the rows seeded (and vacuumed) before the clock starts; the rate is rows ÷ pgbench's elapsed
  time.
- **Plain-claim ceiling**: beside each raw claim run, in the same repetition and database, the seed's plain claim
  (`UPDATE … WHERE id IN (SELECT id … ORDER BY priority DESC, scheduled_at, created_at, id LIMIT n FOR UPDATE SKIP
  LOCKED)`, bench/pgbench/plain_claim.sql) on the seed's table with its claim index alone, in a schema of
  its own (bench/pgbench/plain_schema.sql), with the same completion, clients and `-M prepared`. The store's claim
  and the HTTP drains are given ÷ it too, each ratio the median of the repetitions' own.
- **HTTP**: one `queueflow serve --mode all` process with API and worker keys, the access log at its default (to a
  file). The load generator is bench/httpclient.py (keep-alive HTTP/1.1 on asyncio streams, pre-encoded bodies) in
  the harness's own process; its CPU per 1,000 jobs is in the details, to show it is not the bottleneck. Drains start
  from seeded (and vacuumed) backlogs like the raw ones; server CPU is utime + stime from /proc.
- **Server CPU per request** (bench/scenarios/per_request.py): on the same server, each single-item route
  (`POST /v1/jobs` with one job, `GET /v1/jobs/{{id}}` of those jobs, `POST /v1/worker/lease` max_jobs 1 of them,
  their `…/complete`, a lease of an empty queue with `wait_seconds` 0) runs N times on 4 keep-alive connections,
  every request encoded before the clock starts; the server's utime + stime over the phase ÷ N. Its floor (issue
  46) is the one-query route, `GET /bench/floor/{{id}}` of the same jobs: one prepared one-row `SELECT` by primary
  key on `queueflow.jobs`, answered as JSON, behind the tenant key, on the store's pool — served only by the bench's
  server, whose app is `queueflow serve`'s own with that one route added (bench/floor_app.py; every figure of the
  job section is measured on it). `GET /healthz` (the framework's floor alone, the measure before issue 46, kept
  for its history) too. Both floors run before and after the routes, each its mean the round's; a route's ratio is
  the median of the rounds' own ratios.
- **Every core** (bench/scenarios/prefork.py): `queueflow serve --workers 1` and `--workers 2`, both up on the
  same database, each taking N single-job `POST /v1/jobs` on 8 keep-alive connections (pre-encoded), one side after
  the other, every other repetition the other way round; the ratio is the median of the repetitions' own ratios.
  So is the server's CPU per request on `--workers 2` ÷ on `--workers 1` (issue 46: no loss from forking), each
  side's the utime + stime of the server's processes over its N requests ÷ N. The details give each side's CPU per
  request by party: the server (utime + stime of the parent and its forked processes), PostgreSQL (the database's
  backends, by pid from /proc) and the load generator (the harness), and how many of the machine's cores were busy
  over it, whoever ran (/proc/stat): a second process can only go faster if one process left the cores time to
  spare.
- **Batched drain across 100 tenants**: the same drain of the same number of jobs, spread evenly over 100 tenants,
  each enqueuing through its own API key in bursts of random size (20 jobs on average), the bursts of all tenants
  shuffled together (seeded), so that no stretch of the backlog is one tenant's; the same 4 workers and worker key
  drain it. Its ratio is ÷ the one-tenant drain of the same repetitions, measured right before it.
- **Wake-up, new job**: a lease parks (`wait_seconds`), a tenant enqueues one job; from the enqueue's answer to the
  lease's answer. **Due later**: leases park on queues of their own, each queue gets a job due 0.3–0.8 s later (by
  `delay_seconds`, or a failure with `retry_after_seconds`); from the job's `scheduled_at` to the lease's answer.
- **Lease latency with history**: one worker leases one job at a time from a pending backlog; the median round
  trip with N finished rows (one INSERT … SELECT generate_series, then VACUUM) ÷ the same with none. The two sides
  are two databases with a server each, measured in alternating rounds, so that a change in the machine's load
  falls on both.
- **A sequence drained by 8 workers** (bench/scenarios/sequence_drain.py): one sequence's jobs enqueued in
  1,000-job batches from one connection, then 8 workers of the harness's own HTTP client, each on its own
  connection, lease up to 10 at a time with `wait_seconds` 0.5 and complete each job they get; each job's start (its
  lease's answer read) and end (before its complete is sent) by the harness's clock. An order violation is a job
  started before the previous job of the sequence (by id) ended, or before a job of a smaller id started; an overlap,
  a job started while another was running. jobs/s: the jobs ÷ from the workers' start to the last completion.
- **Jobs expiring under load** (bench/scenarios/expiring.py): jobs with `expires_in_seconds` drawn from the
  profile's range, enqueued in batches at a steady pace while 4 workers of the harness's client lease 20 each every
  0.2 s (slower than the enqueues) and ack them; once every deadline has passed the workers stop, the table is polled
  until no job of the queue is unfinished, and every job is read back from the API. Leased after the deadline: a
  lease answer's `started_at` at or after its `expires_at`, and the same of the jobs read back. Dead-lettered after
  the deadline: each expired job's `completed_at` (the expiry pass's time) less its `expires_at`.
- **Peak RSS**: VmHWM of the server, reset (clear_refs) after seeding, read after each batched drain; the largest.
- **New sessions**: `pg_stat_database.sessions` of the bench database, before and after each timed phase (after the
  warm-up), the worst repetition.
- **Workers**: each kind in a process of its own at its default settings (then at concurrency 10 and 100) —
  in-process (`queueflow serve --mode worker --tasks bench.drivers.noop:tasks`; also with `--workers 2`, its
  processes every core, and the row against PgQueuer takes the better of 1 and 2 processes and names it), the
  Python SDK's `Worker` (bench/drivers/sdk_worker.py) and the TypeScript SDK's (bench/drivers/ts_worker.mjs), the
  SDK ones against one `queueflow serve --mode all` process — drains no-op jobs inserted in one statement once the
  worker has run a first job; from that commit until no job of the queue is unfinished (polled every 20 ms). CPU
  is the worker's and the server's utime + stime over the drain, each with the processes it forked; peak RSS the
  worker's VmHWM, reset before the drain (one process's: the 2-process drains are left out of it). The worker
  drains and PgQueuer's drain (their baseline) run in one rotation, repeated {FULL.drain_repetitions} times in the
  full profile (each drain lasts about a second), every other time in reverse order, PgQueuer's in the middle. The
  machine's speed drifts between repetitions by more than the targets' margins, so a worker's ratio is the median
  of its repetitions' own ratios (each drain ÷ the baseline drained in the same repetition), listed in the
  details; the table's two rates are the medians of each side. Then one longer drain per SDK worker
  ({FULL.worker_long_jobs:,} jobs in the full profile) for its peak RSS, the same way. The TypeScript worker's runs
  under `node --expose-gc`: once the queue is drained the harness sends it SIGUSR2, on which it calls `gc()` twice
  and writes `process.memoryUsage().heapUsed` to a file the harness reads — its live heap, which would grow with
  the jobs if the worker kept anything per job, where its RSS also holds what V8 keeps for its young generation.
- **Peers**: each on a database of its own on the same PostgreSQL, from bench/.peers-venv, no-op jobs:
  PgQueuer (enqueue 1,000 a call on 4 connections; drain {pgqueuer_shape()}, its best shape here: see
  bench/peers/launch.py), Procrastinate (batch_defer 1,000 a call; one worker, concurrency 4).
- **Workflows**: QueueFlow as `queueflow serve --mode all --tasks bench.drivers.noop:tasks --task-concurrency 10`
  (the in-process runner) on a database of its own; each shape's workflows created through the API (one
  `POST /v1/workflows` each, 4 connections), timed from the first request until none is `running` (read by primary
  key every 5 ms); server CPU per step is the server's utime + stime over the run ÷ its steps. **DBOS Transact
  3.4.0** (bench/peers/dbos_run.py, one process for the run, on a scratch database dropped after) with its
  documented queue pattern — the "Queue Example" of DBOS's queue tutorial: `DBOS.register_queue(name,
  worker_concurrency=10, polling_interval_sec=0.01)` after `DBOS.launch()` (0.01 s is its best interval on 2
  cores; the 1.0 s default caps a queue at about 10 dequeues a second), `DBOS.enqueue_workflow(queue, fn, *args)`
  and `handle.get_result(polling_interval_sec=0.01)`, steps as `@DBOS.step()` functions called from a
  `@DBOS.workflow()`. The shapes, the same no-op steps on both sides: N workflows of a 3-step chain (steps/s);
  a fan-out 1 → W → 1 (seconds; DBOS: a workflow started with `DBOS.start_workflow` runs the root step, enqueues
  W one-step child workflows on the queue, waits for all their results, runs the join); a chain of N steps (ms
  per step; DBOS: one enqueued workflow calling N steps in turn). DBOS's fan-outs stop at the profile's
  `dbos_max_width` (1,000 in the full one: about 10 ms a child, a 10,000-wide one would add minutes to each
  repetition). QueueFlow's run of a shape and DBOS's run side by side, shape after shape, every other repetition
  in reverse; a ratio is the median of the repetitions' own ratios, > 1 when QueueFlow is better (for times,
  DBOS's ÷ QueueFlow's). A shape the server refuses (over its step or body limit) or that passes its time bound
  is reported "not run". The log–log slope is the least-squares slope of log(median time) over log(width), from
  100 wide up. **Healed steps**: the sum of the janitor's "healed N workflow steps" log lines from the first
  workflow run to the end of the delayed jobs (every step healed unblocks a run, so its sweep has logged it by
  then). **A delayed job taken by the in-process runner**: jobs enqueued with `delay_seconds` 0.3–1.3 s on the
  runner's queue; from each job's `scheduled_at` to its `started_at`, both read from the API. **Workflows that grow
  and wait** (issue 31, on the same server; bench/scenarios/workflow_growth.py): one `POST /v1/worker/jobs/{id}/steps`
  adding N independent steps (by a step leased with the worker key) against one `POST /v1/workflows` of the same N
  steps, in alternating pairs, each request's time and the server's CPU over it (/proc utime + stime), a ratio the
  median of the pairs' ratios; likewise 10 steps added to a 5,000-step workflow against 10 added to a 10-step one
  (the added steps run no task: a task and queue the runner does not serve). A signal: workflows `a → wait(signal)
  → b`, one signal at a time while the runner is parked, from the signal request's sending to `b`'s `started_at`
  (stricter than from its answer, before which `b` has usually started). A `seconds` wait: 200 workflows
  `wait(seconds=1) → b` created at once, from each wait's `due_at` (the creation's answer) to `b`'s job
  `created_at`.
"""


@dataclass(frozen=True, slots=True)
class Target:
    """`on` the ratio (QueueFlow ÷ baseline) or on the value itself, `op` ≥ or ≤ `bound`."""

    on: str  # "ratio" | "value"
    op: str  # ">=" | "<="
    bound: float

    def __str__(self) -> str:
        sign = "≥" if self.op == ">=" else "≤"
        return f"{self.on} {sign} {self.bound:g}"

    def met(self, figure: Figure) -> bool | None:
        measured = figure.ratio if self.on == "ratio" else figure.value
        if measured is None:
            return None
        return bool((operator.ge if self.op == ">=" else operator.le)(measured, self.bound))


@dataclass(slots=True)
class Figure:
    label: str
    value: float
    unit: str
    baseline: float | None = None
    baseline_label: str = ""
    target: Target | None = None
    samples: Sequence[float] = ()
    """Every repetition's value (the figure is their median), shown so the spread is visible."""
    note: str = ""
    """Why the figure has no value (NaN): "not run (over the step limit)", "not run (over its 120 s bound)"."""
    paired_ratio: float | None = None
    """When value and baseline were measured in pairs (one of each per repetition): the median of the pairs'
    ratios, which is the figure's ratio instead of value ÷ baseline (see `stats.paired`)."""
    inverse: bool = False
    """The ratio is baseline ÷ value: for times, so that a ratio above 1 still means QueueFlow is better."""

    @property
    def measured(self) -> bool:
        return not math.isnan(self.value)

    @property
    def ratio(self) -> float | None:
        if self.paired_ratio is not None:
            return self.paired_ratio
        if not self.measured or not self.baseline:
            return None
        return self.baseline / self.value if self.inverse else self.value / self.baseline

    @property
    def met(self) -> bool | None:
        return None if self.target is None or not self.measured else self.target.met(self)


def amount(value: float, unit: str) -> str:
    if unit == "":
        return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"
    if unit == "ms":
        return f"{value:,.2f} ms" if value < 10 else f"{value:,.0f} ms"
    return f"{value:,.0f} {unit}" if abs(value) >= 10 else f"{value:,.2f} {unit}"


@dataclass(frozen=True, slots=True)
class CpuRow:
    """A drain's (or an enqueue's) CPU per job by party, µs, each the median of its repetitions' own; None: not
    measured (PostgreSQL's processes not readable here) or no such party (the in-process runner has no client)."""

    label: str
    rate: float
    unit: str
    """"jobs/s" or "rows/s": what one is per."""
    server: float
    postgres: float | None
    client: float | None
    total: float | None
    """The median of the repetitions' sums of the three."""
    server_per_postgres: float | None
    """The median of the repetitions' own ratios."""
    background: float | None
    """The cluster's background processes over the same time, per job: not the drain's alone, not in the sum."""


CPU_HOW = """Each party's CPU time (utime + stime from /proc) over the timed drain ÷ its jobs (or rows), in µs, the
median of the repetitions (the sum and the ratio: the medians of each repetition's own). **QueueFlow server**: the
`queueflow serve` process with any process it forked — for the SDK workers' drains the API server they lease from,
for the in-process runner the runner's own process(es) (its tasks run inside it). **PostgreSQL**: the backends whose
`pg_stat_activity.datname` is the drain's database, listed and read every 0.1 s through the drain (a backend that
starts during it counts from 0; one that ends keeps its last reading), but for the harness's own connections (which
seed and poll; bench/cpu.py) — in the in-process rows that includes the idle API server's pool on the same
database (its periodic sweeps). **Client**: the HTTP rows' load generator (the harness's process, which also runs that
sampling, about 2 ms of CPU a second), the SDK worker's process; the in-process runner has none. **Background**: the
cluster's WAL writer, checkpointer, background writer and launchers over the same time — every database's, this
PostgreSQL being shared — so not attributed to the drain and not in the sum; work they do for it (WAL flushed by the
WAL writer, pages written by the checkpointer) is missing from the PostgreSQL column. /proc counts each process's time
in 10 ms ticks, so each reading of each process is within 10 ms: ±0.5 µs a job a process over a 20,000-job drain,
but in the smoke profile's drains of 200-400 jobs every cell is a multiple of 25-50 µs, or 0."""


def _per(value: float | None, per: str, missing: str = "not measured") -> str:
    # Rounded first: 15 ms ÷ 1,500 rows is 9.999… µs, which `amount` would print as "10.00".
    return missing if value is None else f"{amount(round(value, 6), 'µs')} a {per}"


@dataclass(slots=True)
class Results:
    profile: str
    machine: Machine
    figures: list[Figure] = field(default_factory=list)
    parties: list[CpuRow] = field(default_factory=list)
    """CPU per job by party, one row a drain (its own table)."""
    details: list[str] = field(default_factory=list)
    """Lines beside the table: per-repetition numbers, CPU per job, what a scenario could not measure."""
    errors: list[str] = field(default_factory=list)
    elapsed_seconds: float = 0.0
    load_at_end: str = ""
    """The load average when the run ended: with the one at its start, how shared the machine was."""

    def add(self, figure: Figure) -> Figure:
        self.figures.append(figure)
        return figure

    def table(self) -> str:
        head = "| figure | QueueFlow | baseline, same run | ratio | target | met? |\n|---|---|---|---|---|---|\n"
        rows = []
        for figure in self.figures:
            baseline = f"{figure.baseline_label}: {amount(figure.baseline, figure.unit)}" if figure.baseline else "—"
            if figure.baseline is None and figure.baseline_label:
                baseline = figure.baseline_label
            ratio = f"{figure.ratio:.3f}" if figure.ratio is not None else "—"
            met = {True: "yes", False: "**no**", None: "—"}[figure.met]
            rows.append(
                f"| {figure.label} | {amount(figure.value, figure.unit) if figure.measured else figure.note} |"
                f" {baseline} | {ratio} |"
                f" {figure.target or '—'} | {met} |"
            )
        return head + "\n".join(rows) + "\n"

    def cpu_table(self) -> str:
        head = (
            "| drain / enqueue | rate | QueueFlow server | PostgreSQL, the database's backends | client | the three |"
            " server ÷ PostgreSQL | PostgreSQL's background processes (not in the sum) |\n"
            "|---|---|---|---|---|---|---|---|\n"
        )
        rows = []
        for row in self.parties:
            per = "row" if row.unit == "rows/s" else "job"
            rows.append(
                f"| {row.label} | {amount(row.rate, row.unit)} | {_per(row.server, per)} | {_per(row.postgres, per)} |"
                f" {_per(row.client, per, '— (none: the tasks run in the server)')} | {_per(row.total, per)} |"
                f" {'—' if row.server_per_postgres is None else f'{row.server_per_postgres:.3f}'} |"
                f" {_per(row.background, per)} |"
            )
        return head + "\n".join(rows) + "\n"

    def markdown(self) -> str:
        machine = self.machine
        lines = [
            "# `make bench` results",
            "",
            f"- date: {machine.date}",
            f"- machine: {machine.cores} cores, {machine.ram_gib:.1f} GiB RAM, {machine.cpu_model}",
            f"- load average (1, 5, 15 min) at start: {machine.load_average}; at end: {self.load_at_end}",
            f"- PostgreSQL: {machine.postgres_version}",
            f"- git commit: {machine.commit}",
            f"- profile: {self.profile}; each figure is the median of its repetitions (a ratio of drains measured in"
            " pairs, the median of the pairs' ratios); whole run "
            f"{self.elapsed_seconds / 60:.1f} min",
            "",
            "Ratios are QueueFlow ÷ its baseline measured in the same run on the same PostgreSQL.",
            "",
            self.table(),
            *(["## CPU per job, by party", "", CPU_HOW, "", self.cpu_table()] if self.parties else []),
            HOW,
        ]
        if self.details:
            lines += ["## Details", "", *(f"- {line}" for line in self.details), ""]
        if self.errors:
            lines += ["## Errors", "", *(f"- {line}" for line in self.errors), ""]
        return "\n".join(lines)
