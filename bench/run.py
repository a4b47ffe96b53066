"""One `make bench` run: every scenario in turn, each figure beside its same-run baseline, then the report.

The throughput figures and their raw baselines are measured in alternation, repetition by repetition (raw claim 1,
then HTTP single drain, raw claim 100, then HTTP batched drain, then the same across 100 tenants, …): on a shared
machine the load drifts over minutes, and a figure and its baseline should see the same. A step that fails is
recorded and the others still run; the run then exits non-zero, which is all the smoke profile (in the test suite)
checks.
"""

from __future__ import annotations

import os
import tempfile
import time
import traceback
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import replace
from pathlib import Path

from bench import figures, workflow_figures
from bench.database import ADMIN_URL, BenchDatabase, SessionCounter
from bench.machine import describe
from bench.peers import launch
from bench.pgbench import sequence_claim_cost
from bench.profiles import Profile
from bench.report import Results
from bench.rotation import rotate
from bench.scenarios import (
    expiring,
    history,
    per_request,
    prefork,
    push,
    raw,
    sequence_drain,
    unique,
    wakeup,
    worker_drains,
)
from bench.scenarios.events import EventsBench
from bench.scenarios.http_throughput import HttpRun, Throughput
from bench.scenarios.raw import RawRun
from bench.scenarios.unique import DEBOUNCE_KEYS
from bench.scenarios.worker_drains import PeerDrain, WorkerDrain
from bench.scenarios.workflow_deadlines import deadline_lateness
from bench.scenarios.workflow_growth import GrowthBench
from bench.scenarios.workflows import (
    CONCURRENCY,
    TASKS,
    NotRun,
    QueueFlowWorkflows,
    Shape,
    WorkflowRun,
    describe_run,
)
from bench.server import QueueFlowServer


class Steps:
    """Runs named steps, prints each with its duration, records a failure instead of stopping the run."""

    def __init__(self, results: Results) -> None:
        self._results = results

    async def __call__(self, name: str, body: Callable[[], Awaitable[None]]) -> bool:
        print(f"· {name}", flush=True)
        began = time.monotonic()
        try:
            await body()
        except Exception as exc:
            self._results.errors.append(f"{name}: {type(exc).__name__}: {exc}")
            traceback.print_exc()
            return False
        finally:
            print(f"  ({time.monotonic() - began:.0f} s)", flush=True)
        return True


SECTIONS = ("jobs", "workers", "push", "workflows")
"""The parts of a run: the job side against pgbench (and Procrastinate), the worker drains against PgQueuer, push
delivery against the Python SDK worker, the workflow scenarios against DBOS. `make bench` runs them all; one alone
is for working on it."""


async def run(profile: Profile, log_dir: Path | None = None, sections: Sequence[str] = SECTIONS) -> Results:
    started = time.monotonic()
    results = Results(profile.name, await describe(ADMIN_URL))
    step = Steps(results)
    logs = log_dir or Path(tempfile.mkdtemp(prefix="queueflow-bench-"))
    raw_runs: dict[str, list[RawRun]] = {"single": [], "batched": [], "enqueue": [], **{k: [] for k in figures.PLAIN}}
    if "jobs" in sections:
        async with BenchDatabase("raw") as raw_db, BenchDatabase("http") as http_db:
            for database in (raw_db, http_db):
                database.migrate()
                await database.connect()
            await raw.create_plain(raw_db)
            server = QueueFlowServer(http_db.url, logs / "server.log", profile.server_args, floor=True)
            try:
                if await step("start queueflow serve --mode all", _sync(server.start)):
                    await _queueflow(profile, results, step, server, raw_db, http_db, raw_runs, logs)
            finally:
                server.stop()
    drains: dict[WorkerDrain, list[worker_drains.DrainRun]] = {}
    long_drains: list[worker_drains.DrainRun] = []
    pgqueuer: dict[str, dict[int, float]] = {"enqueue": {}, "drain": {}}
    if profile.worker_jobs and "workers" in sections:
        await _workers(profile, step, drains, long_drains, pgqueuer, logs)
    if pgqueuer["drain"]:
        rates = {key: list(by_repetition.values()) for key, by_repetition in pgqueuer.items()}
        figures.peer(results, "PgQueuer", launch.pgqueuer_shape(), rates, raw_runs["batched"], raw_runs["enqueue"])
    if profile.peers and "jobs" in sections:

        async def procrastinate() -> None:
            rates = await launch.procrastinate(profile.procrastinate_jobs, profile.repetitions)
            figures.peer(
                results, "Procrastinate", "1 worker, concurrency 4", rates, raw_runs["batched"], raw_runs["enqueue"]
            )

        await step("peer: Procrastinate", procrastinate)
    figures.workers(results, drains, long_drains, pgqueuer["drain"])
    if profile.push_jobs and "push" in sections:
        await _push(profile, results, step, logs)
    if profile.small_workflows and "workflows" in sections:
        await _workflows(profile, results, step, logs)
    results.elapsed_seconds = time.monotonic() - started
    results.load_at_end = " ".join(f"{load:.2f}" for load in os.getloadavg())
    print(f"server log: {logs / 'server.log'}")
    return results


async def _queueflow(
    profile: Profile,
    results: Results,
    step: Steps,
    server: QueueFlowServer,
    raw_db: BenchDatabase,
    http_db: BenchDatabase,
    raw_runs: dict[str, list[RawRun]],
    logs: Path,
) -> None:
    http_runs: dict[str, list[HttpRun]] = {key: [] for key in figures.THROUGHPUT}
    peaks: list[int] = []
    sessions: dict[str, int] = {}
    throughput = await Throughput(server, http_db, profile.session_settle).open()

    async def warm_up() -> None:
        # The raw table's files, catalog caches and statistics exist; the server's pool and statements are ready.
        await raw.claim_complete(raw_db, 1, 10)
        await raw.plain_claim_complete(raw_db, 1, 10)
        await throughput.warm_up(profile.warm_up_jobs)

    async def repetition() -> None:
        raw_runs["single"].append(await raw.claim_complete(raw_db, 1, profile.raw_single_tx))
        raw_runs["plain single"].append(await raw.plain_claim_complete(raw_db, 1, profile.raw_single_tx))
        http_runs["single"].append(await throughput.single_drain(profile.single_drain_jobs))
        raw_runs["batched"].append(await raw.claim_complete(raw_db, 100, profile.raw_batched_tx))
        raw_runs["plain batched"].append(await raw.plain_claim_complete(raw_db, 100, profile.raw_batched_tx))
        for key, spread in (("batched", False), ("tenants", True)):
            run, peak = await throughput.batched_drain(profile.batched_drain_jobs, spread=spread)
            http_runs[key].append(run)
            peaks.append(peak)
        raw_runs["enqueue"].append(await raw.insert(raw_db, profile.raw_insert_tx))
        http_runs["enqueue"].append(await throughput.enqueue(profile.enqueue_rows))
        http_runs["unique"].append(await unique.enqueue_unique(throughput, profile.enqueue_rows))
        http_runs["unique fresh"].append(await unique.enqueue_unique(throughput, profile.enqueue_rows, fresh=True))

    async def debounce() -> None:
        burst = await unique.debounce_burst(
            throughput, keys=DEBOUNCE_KEYS, rounds=profile.debounce_rounds, debounce_seconds=profile.debounce_seconds
        )
        figures.debounce(results, burst)

    async def sequence_claims() -> None:
        # The raw database is done with (its repetitions are over); the backlog is deleted afterwards.
        measured = await sequence_claim_cost.measure(
            raw_db.url,
            jobs=profile.sequence_claim_jobs,
            pairs=profile.sequence_claim_pairs,
            warm_up=profile.sequence_claim_pairs // 6,
        )
        figures.sequence_claims(results, measured)

    try:
        if await step("warm-up", warm_up):
            for number in range(1, profile.repetitions + 1):
                await step(
                    f"throughput, repetition {number}: raw and HTTP, single, batched (one tenant, many), enqueue"
                    " (plain, unique)",
                    repetition,
                )
            await step("debounce burst: one job per key, with its last payload", debounce)
            await step("claim over a backlog in sequences ÷ the same backlog without", sequence_claims)
    finally:
        await throughput.close()

    async def sequence() -> None:
        drain = await sequence_drain.measure(server, http_db, profile.sequence_jobs)
        print(f"  {sequence_drain.describe(drain)}", flush=True)
        figures.sequence(results, drain)

    async def deadlines() -> None:
        run = await expiring.expiring_run(profile, server, http_db)
        print(f"  {expiring.describe(run)}", flush=True)
        figures.expiring_jobs(results, run)

    if profile.sequence_jobs:
        await step(f"a sequence of {profile.sequence_jobs:,} jobs, {sequence_drain.WORKERS} workers", sequence)
    if profile.expiring_jobs:
        await step(f"{profile.expiring_jobs:,} jobs expiring under load", deadlines)
    # The drain across many tenants is measured against the one-tenant drain; every other one against pgbench.
    baselines: dict[str, list[RawRun] | list[HttpRun]] = {
        **raw_runs,
        "tenants": http_runs["batched"],
        "unique": http_runs["enqueue"],
        "unique fresh": http_runs["enqueue"],
    }
    for key in figures.THROUGHPUT:
        figures.throughput(results, key, baselines[key], http_runs[key])
        if http_runs[key]:
            sessions[figures.THROUGHPUT[key][0].split(":")[0].split(",")[0]] = max(
                run.new_sessions for run in http_runs[key]
            )
    figures.ceilings(results, raw_runs, http_runs)
    for key in figures.THROUGHPUT:
        figures.server_cpu(results, key, http_runs[key])
    figures.cpu_by_party(results, http_runs)
    figures.peak_rss(results, peaks)

    async def counted(name: str, body: Callable[[], Awaitable[None]]) -> None:
        counter = SessionCounter(http_db, profile.session_settle)
        await counter.start()
        await body()
        sessions[name] = await counter.stop()

    async def wake_new() -> None:
        latencies = await wakeup.new_job(server, profile.wake_samples)
        figures.latency(results, "wake-up: enqueue → parked long-poll lease returns", latencies, p50=2, p99=10)

    async def wake_due() -> None:
        for retry, what in ((False, "a delayed job (delay_seconds)"), (True, "a retried job (retry_after_seconds)")):
            latencies = await wakeup.due_later(server, profile.due_samples, retry=retry)
            figures.latency(results, f"{what} leased by a parked long-poll, after its due time", latencies, p99=50)

    async def lease_history() -> None:
        await http_db.reset_jobs()
        empty, full, sessions["lease with history (its second server)"] = await history.measure(
            server,
            http_db,
            logs,
            samples=profile.lease_samples,
            finished_rows=profile.finished_rows,
            repetitions=profile.repetitions,
            server_args=profile.server_args,
            settle=profile.session_settle,
        )
        figures.history(results, profile.finished_rows, empty, full)

    async def per_request_cpu() -> None:
        await http_db.reset_jobs()
        rounds = await per_request.measure(server, profile.per_request_requests, profile.repetitions)
        for round_ in rounds:
            print(f"  {per_request.describe(round_)}", flush=True)
        figures.per_request_cpu(results, rounds)

    async def every_core() -> None:
        rounds = await prefork.measure(
            http_db, logs, profile.prefork_requests, profile.repetitions, profile.server_args
        )
        for round_ in rounds:
            print(f"  {prefork.ratio(round_):.3f}  " + "  ".join(r.describe() for r in round_.values()), flush=True)
        figures.prefork_enqueue(results, rounds)

    await step("server CPU per request, by route, ÷ the one-query route and ÷ GET /healthz", per_request_cpu)
    await step("single enqueue, queueflow serve --workers 2 ÷ --workers 1", every_core)
    await step("wake-up latency, new job", lambda: counted("wake-up", wake_new))
    await step("wake-up latency, job due later", lambda: counted("due-later wake-up", wake_due))
    await step("lease latency with finished history", lambda: counted("lease with history", lease_history))
    figures.sessions(results, sessions)


async def _workers(
    profile: Profile,
    step: Steps,
    drains: dict[WorkerDrain, list[worker_drains.DrainRun]],
    long_drains: list[worker_drains.DrainRun],
    pgqueuer: dict[str, dict[int, float]],
    logs: Path,
) -> None:
    """Each kind of worker drains `worker_jobs` at its default settings, then at concurrency 10 and 100 (the
    Python ones' default is 10, so that run is not repeated), the in-process runner also in 2 processes
    (`queueflow serve --workers 2` at its default settings: every core, as PgQueuer runs processes), with
    PgQueuer's drain (the peers' profile) in the same rotation (`bench.rotation`): each figure is compared with the
    baseline measured beside it. Then the long drains, the TypeScript one with its live heap at the end."""
    rotation: list[WorkerDrain | PeerDrain] = [
        WorkerDrain("in-process"),
        WorkerDrain("in-process", processes=2),
        WorkerDrain("in-process", 100),
        WorkerDrain("Python SDK"),
        WorkerDrain("Python SDK", 100),
        WorkerDrain("TypeScript SDK"),
        WorkerDrain("TypeScript SDK", 10),
        WorkerDrain("TypeScript SDK", 100),
    ]
    async with AsyncExitStack() as databases:
        database = await databases.enter_async_context(BenchDatabase("workers"))
        # PgQueuer's, one for the whole rotation (see launch.pgqueuer); none when the profile runs no peers.
        peer_database = await databases.enter_async_context(BenchDatabase("pgqueuer")) if profile.peers else None
        database.migrate()
        await database.connect()
        server = QueueFlowServer(database.url, logs / "workers-server.log")
        try:
            if not await step("start queueflow serve for the SDK workers", _sync(server.start)):
                return
            # Built when a source is newer than dist/: one left from an earlier checkout would measure the worker as it
            # was then.
            if not await step("build the TypeScript SDK", _sync(worker_drains.build_ts)):
                rotation = [each for each in rotation if each.kind != "TypeScript SDK"]
            if peer_database is not None:
                rotation.insert(
                    len(rotation) // 2, PeerDrain("PgQueuer")
                )  # mid-rotation: as near as it can be to every drain

            async def one(entry: WorkerDrain | PeerDrain, number: int) -> None:
                if isinstance(entry, PeerDrain):
                    assert peer_database is not None
                    rates = await launch.pgqueuer(peer_database.url, profile.pgqueuer_jobs, 1)
                    for key, (rate,) in rates.items():
                        pgqueuer[key][number] = rate
                    print(f"  PgQueuer drain: {rates['drain'][0]:,.0f} jobs/s", flush=True)
                    return
                run = await worker_drains.drain(
                    entry.kind,
                    database,
                    profile.worker_jobs,
                    logs,
                    server=server,
                    concurrency=entry.concurrency,
                    processes=entry.processes,
                )
                drains.setdefault(entry, []).append(replace(run, repetition=number))
                print(f"  {worker_drains.describe(run)}", flush=True)

            title = "workers: in-process, Python SDK, TypeScript SDK drains" + (", PgQueuer's" if peer_database else "")
            await rotate(step, title, rotation, profile.drain_repetitions, one)
            if profile.worker_long_jobs:

                async def long_runs() -> None:
                    for kind in ("Python SDK", "TypeScript SDK"):
                        if WorkerDrain(kind) in rotation:
                            run = await worker_drains.drain(
                                kind,
                                database,
                                profile.worker_long_jobs,
                                logs,
                                server=server,
                                live_heap=kind == "TypeScript SDK",
                            )
                            long_drains.append(run)
                            print(f"  {worker_drains.describe(run)}", flush=True)

                title = f"workers: {profile.worker_long_jobs:,}-job drains (peak RSS; TypeScript: live heap after GC)"
                await step(title, long_runs)
        finally:
            server.stop()


async def _push(profile: Profile, results: Results, step: Steps, logs: Path) -> None:
    """Issue 45's targets (`bench.scenarios.push`): the SDK worker's drain, the push drain and the push drain beside
    a hung endpoint in one rotation (each ratio pairs the runs of one repetition), then the idle endpoint's latency
    and two servers pushing to one endpoint."""
    runs = push.PushRuns()
    async with BenchDatabase("push") as database:
        database.migrate()
        await database.connect()
        server = QueueFlowServer(database.url, logs / "push-server.log", (*profile.server_args, *push.SERVER_ARGS))
        try:
            if not await step("start queueflow serve --allow-private-endpoints (push)", _sync(server.start)):
                return
            async with push.PushBench(database, server, logs) as bench:

                async def one(entry: str, number: int) -> None:
                    if entry == "sdk":
                        runs.sdk[number] = await bench.sdk_drain(profile.push_jobs)
                        print(f"  {worker_drains.describe(runs.sdk[number])}", flush=True)
                        return
                    run = await bench.push_drain(profile.push_jobs, beside_slow=entry == "beside slow")
                    (runs.beside_slow if run.beside_slow else runs.push)[number] = run
                    print(f"  {push.describe(run)}", flush=True)

                repetitions = profile.push_repetitions or profile.repetitions
                title = "push: the Python SDK worker's drain, the push drain, the push drain beside a hung endpoint"
                await rotate(step, title, ["sdk", "push", "beside slow"], repetitions, one)

                async def latency() -> None:
                    runs.latencies_ms, runs.latencies_from_send_ms = await bench.latencies(profile.push_latency_samples)

                async def two_servers() -> None:
                    runs.two_servers_jobs = profile.push_two_servers_jobs
                    runs.two_servers_peak = await bench.two_servers(profile.push_two_servers_jobs)

                await step("push: enqueue → delivery received, idle endpoint", latency)
                await step("push: two servers, one endpoint of concurrency 5", two_servers)
        finally:
            server.stop()
    figures.push_delivery(results, runs)


async def _workflows(profile: Profile, results: Results, step: Steps, logs: Path) -> None:
    """Every workflow shape on QueueFlow (the in-process runner) and on DBOS (the peers' profile), QueueFlow's run
    and DBOS's side by side in one rotation (`bench.rotation`), so that each ratio pairs runs of one repetition;
    then the delayed jobs the in-process runner takes."""
    shapes = profile.workflow_shapes
    runs: list[WorkflowRun] = []
    not_run: dict[tuple[Shape, str], str] = {}
    async with AsyncExitStack() as stack:
        database = await stack.enter_async_context(BenchDatabase("workflows"))
        peer_database = await stack.enter_async_context(BenchDatabase("dbos")) if profile.peers else None
        database.migrate()
        await database.connect()
        server = QueueFlowServer(
            database.url,
            logs / "workflows-server.log",
            ("--tasks", TASKS, "--task-concurrency", str(CONCURRENCY), *profile.server_args),
        )
        stack.callback(server.stop)
        if not await step("start queueflow serve --mode all --tasks … (workflows)", _sync(server.start)):
            return
        queueflow = await QueueFlowWorkflows(server, database).open()
        stack.push_async_callback(queueflow.close)
        dbos = None
        if peer_database is not None:
            session = launch.PeerSession("dbos_run.py", logs / "dbos.log", peer_database.url)
            stack.push_async_callback(session.stop)

            async def start_dbos() -> None:
                await session.start()

            if await step("start DBOS Transact (bench/.peers-venv)", start_dbos):
                dbos = session
        for shape in shapes:
            if dbos is None:
                not_run[(shape, "DBOS")] = "not run (this profile runs no peer)" if not profile.peers else "not run"
            elif shape.kind == "fan-out" and shape.size > profile.dbos_max_width:
                not_run[(shape, "DBOS")] = f"not run (DBOS's fan-outs stop at {profile.dbos_max_width:,} wide)"
        sides = ("QueueFlow", "DBOS")
        entries = [(shape, side) for shape in shapes for side in sides if (shape, side) not in not_run]

        async def one(entry: tuple[Shape, str], number: int) -> None:
            shape, side = entry
            if entry in not_run:
                return
            await (database if side == "QueueFlow" else peer_database or database).vacuum_all()
            try:
                if side == "QueueFlow":
                    run = await queueflow.run(shape, profile.workflow_bound)
                else:
                    run = await _dbos(dbos, shape, profile.workflow_bound)
            except NotRun as reason:
                not_run[entry] = str(reason)
                print(f"  {shape}, {side}: {reason}", flush=True)
                return
            runs.append(replace(run, repetition=number))
            print(f"  {describe_run(run)}", flush=True)

        title = "workflows: QueueFlow" + (" and DBOS side by side" if dbos else "") + ", shape by shape"
        await rotate(step, title, entries, profile.repetitions, one)

        async def delayed() -> None:
            latencies = await queueflow.delayed_jobs(profile.delayed_samples)
            label = "a delayed job leased by the in-process runner, after its due time"
            figures.latency(results, label, latencies, p99=50)

        await step("delayed jobs taken by the in-process runner", delayed)
        if profile.growth_steps:
            await _growth(profile, results, step, server, database)
        if profile.event_width:
            await _events(profile, results, step, server)
        if profile.deadline_samples:

            async def deadlines() -> None:
                latencies = await deadline_lateness(server, database, profile.deadline_samples)
                label = "a workflow past its deadline (timeout_seconds 1), ended after it"
                figures.latency(results, label, latencies, p99=1000)

            await step(f"workflows that end on time: {profile.deadline_samples} 1 s deadlines at once", deadlines)
        # Every healed step belonged to a workflow its run waited for, so the sweep that healed it ended (and
        # logged it) within moments of that run: the delayed jobs' seconds since the last run are ample.
        queueflow.log.healed()
        healed = queueflow.log.healed_total
        workflow_figures.workflows(results, shapes, workflow_figures.by_shape(runs), not_run, healed)


async def _growth(
    profile: Profile, results: Results, step: Steps, server: QueueFlowServer, database: BenchDatabase
) -> None:
    """Issue 31's targets (`bench.scenarios.workflow_growth`) on the workflow scenarios' server."""
    async with GrowthBench(server, database) as bench:

        async def adding() -> None:
            added = await bench.add_versus_create(profile.growth_steps, profile.growth_pairs)
            large = await bench.add_to_large(profile.growth_large, profile.growth_pairs)
            workflow_figures.growth(results, added, profile.growth_steps, large, profile.growth_large)

        async def signals() -> None:
            latencies = await bench.signal_to_next_step(profile.signal_samples)
            figures.latency(results, "a signal sent to the next step's start (in-process runner)", latencies, p99=50)

        async def sleeps() -> None:
            latencies = await bench.sleep_lateness(profile.sleep_samples)
            label = "a seconds wait's end (its dependent enqueued) after its due time"
            figures.latency(results, label, latencies, p99=1000)

        await step(f"workflows that grow: adding {profile.growth_steps:,} steps ÷ creating them", adding)
        await step(f"workflows that wait: {profile.signal_samples} signals, one at a time", signals)
        await step(f"workflows that wait: {profile.sleep_samples} seconds waits at once", sleeps)


async def _events(profile: Profile, results: Results, step: Steps, server: QueueFlowServer) -> None:
    """Issue 44's targets (`bench.scenarios.events`) on the workflow scenarios' server."""
    async with EventsBench(server) as bench:

        async def measured() -> None:
            wide = await bench.wide_versus_batch(profile.event_width, profile.event_pairs)
            rates = await bench.rates(profile.event_triggers, profile.event_requests, profile.event_rate_pairs)
            workflow_figures.events(results, wide, profile.event_width, rates, profile.event_triggers)

        await step(
            f"events: one matching {profile.event_width:,} triggers; 8 clients over {profile.event_triggers:,}",
            measured,
        )


async def _dbos(dbos: launch.PeerSession | None, shape: Shape, bound: float) -> WorkflowRun:
    if dbos is None or not dbos.running:
        raise NotRun("not run (DBOS's program was stopped after a run past its bound)")
    try:
        answer = await dbos.ask({"kind": shape.kind, "size": shape.size}, bound)
    except TimeoutError:
        raise NotRun(f"not run (over its {bound:.0f} s bound)") from None
    return WorkflowRun(shape, "DBOS", answer["seconds"])


def _sync(work: Callable[[], object]) -> Callable[[], Awaitable[None]]:
    async def body() -> None:
        work()

    return body
