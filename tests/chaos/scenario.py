"""One chaos run: start a cluster on a database of its own, put the load on it, inject one kind of fault
throughout, wait for everything to settle, then check the invariants against the ledger.

Scenarios (`FAULTS`): `soak` (no faults), `worker_kills`, `server_kills`, `db_faults` (outages and
pg_terminate_backend bursts on our own database), `pg_restart` (a cluster of our own, restarted), `vacuum_pressure`
(a snapshot held open mid-run; throughput before, during and after it: see `vacuum`), `pooler` (the soak with
every server behind PgBouncer in transaction mode), `rolling_restarts` (a deploy: each worker in turn — Python SDK,
TypeScript SDK, the in-process runner's server — SIGTERMed while its replacement starts at once, SIGKILLed if
still alive `STOP_GRACE` later), `push_kills` (push delivery's servers SIGKILLed mid-request and its receiver
restarted: `tests.chaos.push`, on a fifth of the profile's jobs), and `mixed` (worker kills, server kills and
database blips in turn: the short profile `make test` runs).
"""

from __future__ import annotations

import asyncio
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path

import asyncpg

from bench.endurance.cluster import Cluster as PostgresCluster
from bench.endurance.cluster import own_cluster
from tests import pgbouncer
from tests.chaos import cluster, push, vacuum
from tests.chaos.checks import Outcome, check
from tests.chaos.ledger import Ledger
from tests.chaos.ledger import now as ledger_now
from tests.chaos.load import (
    CRON_QUEUE,
    GROWING_EVERY,
    QUEUES,
    Api,
    create_schedules,
    create_triggers,
    create_workflow,
    delete_schedules,
    enqueue_jobs,
    resend_events,
    send_event,
    send_signal,
)

LEASE_SECONDS = 2.0
TIMING = ("--janitor-interval", "0.5", "--safety-poll", "1", "--scheduler-interval", "0.5")
BATCH = 250
STRANDED_LIMIT = 6.0
"""A killed holder's jobs are released within this: the 2 s lease (or timeout), the 0.5 s janitor sweep, and slack
for a loaded 2-core machine."""
ROLLING_TASK_MS = 20
"""In rolling restarts each job's task takes this long, so a stopped worker has jobs running and waiting."""
STOP_GRACE = 5.0
"""In rolling restarts, a SIGTERMed worker still alive this long after is SIGKILLed (a deploy's grace period)."""
RESTARTED = {"fsync": "off", "max_connections": "200"}
"""The settings of pg_restart's own cluster: no fsync (a cluster thrown away after the run need not survive a crash of
the machine), and connections for every server and worker the scenario starts."""
SETTLE_FOR = 180.0
"""Once the load and the faults stop, how long every job and workflow has to reach a terminal state."""


@dataclass(frozen=True)
class Profile:
    jobs: int
    workflows: int
    schedules: int
    sdk_workers: int
    load_seconds: float
    fault_every: float


SHORT = Profile(jobs=5_000, workflows=40, schedules=10, sdk_workers=3, load_seconds=10, fault_every=1.5)
FULL = Profile(jobs=10_000, workflows=100, schedules=20, sdk_workers=5, load_seconds=30, fault_every=2.5)
"""Sized so that `make chaos` runs all eight scenarios in under 20 minutes on a 2-core machine (at 20,000 jobs a
scenario the six it then had took 43 minutes, when the cluster drained 100–200 jobs/s; since the batched workers,
10,000 jobs take about 35 s of load a scenario)."""
SOAK = replace(FULL, jobs=100_000, workflows=200, sdk_workers=7)
"""The full profile's soak: 100,000 jobs and 200 workflows on eight workers (seven SDK workers and one server's
in-process runner); about 90 s of load at some 1,400 jobs/s on a 2-core machine."""


POOLER_CONNECTIONS = 10
"""PostgreSQL connections PgBouncer opens for the whole `pooler` cluster, whose servers ask for 10 each."""


@dataclass
class Cluster:
    database_url: str
    work: Path
    ledger_path: Path
    server_url: str | None = None
    """Where the servers connect, when not straight to `database_url` (the `pooler` scenario's PgBouncer)."""
    server_args: tuple[str, ...] = ()
    apis: list[cluster.Process] = field(default_factory=list)
    bases: list[str] = field(default_factory=list)
    servers: list[cluster.Process] = field(default_factory=list)
    workers: list[cluster.Process] = field(default_factory=list)
    postgres: PostgresCluster | None = None
    kinds: set[str] = field(default_factory=set)
    watchers: list[asyncio.Task[None]] = field(default_factory=list)
    stranded: list[float] = field(default_factory=list)
    """Seconds from each SIGKILL until every job the killed process held was released (reclaimed or finished)."""
    generations: int = 0
    sigterm_exits: dict[str, list[float]] = field(default_factory=dict)
    """Seconds each SIGTERMed process took to exit, by kind (api, worker)."""
    turns: int = 0
    """Rolling restarts so far: the next one stops the worker after the last one stopped."""

    def start(self, profile: Profile) -> None:
        for n in range(2):
            process, base = cluster.server(
                f"api{n}",
                "api",
                self.server_url or self.database_url,
                self.work,
                self.ledger_path,
                lease_timing=TIMING,
                extra=self.server_args,
            )
            self.apis.append(process)
            self.bases.append(base)
        # Two worker-mode processes: both sweep and schedule (they race each other), one also runs tasks in-process.
        self.servers = [self.worker_server(n, queues) for n, queues in enumerate((QUEUES[:2], ()))]
        self.workers = [self.new_worker(n) for n in range(profile.sdk_workers)]
        # Start everything at once: each waits only for its own "started" line.
        with ThreadPoolExecutor(max_workers=8) as pool:
            for started in [pool.submit(p.start) for p in [*self.apis, *self.servers, *self.workers]]:
                started.result()

    def worker_server(self, n: int, queues: Sequence[str], generation: int = 0) -> cluster.Process:
        """A worker-mode server (janitor, scheduler, and with `queues` the in-process runner)."""
        name = f"worker{n}" if not generation else f"worker{n}-{generation}"
        url = self.server_url or self.database_url
        process, _ = cluster.server(
            name, "worker", url, self.work, self.ledger_path, queues=queues, lease_timing=TIMING, extra=self.server_args
        )
        return process

    def new_worker(self, slot: int, generation: int = 0) -> cluster.Process:
        """The SDK worker in `slot`: Python in even slots, TypeScript in odd ones when its SDK is built."""
        queues = [*QUEUES, CRON_QUEUE]
        base = self.bases[slot % len(self.bases)]
        if slot % 2 and cluster.ts_available():
            name = f"ts{slot}-{generation}"
            self.kinds.add("TypeScript")
            return cluster.ts_worker(name, base, queues, self.work, self.work / f"{name}.jsonl", LEASE_SECONDS)
        self.kinds.add("Python")
        return cluster.sdk_worker(f"py{slot}-{generation}", base, queues, self.work, self.ledger_path, LEASE_SECONDS)

    def watch_release(self, ledger: Ledger, pid: int | None, killed_at: float) -> None:
        """Measure how long the jobs a SIGKILLed process held stay `running` under its dead leases."""
        held = ledger.rows(
            "SELECT e.job_id, max(e.delivery) FROM executions e WHERE e.pid = ? AND NOT EXISTS"
            " (SELECT 1 FROM outcomes o WHERE o.job_id = e.job_id AND o.pid = e.pid) GROUP BY e.job_id",
            pid,
        )
        if held:
            deliveries = {str(job_id): int(str(delivery)) for job_id, delivery in held}
            self.watchers.append(
                asyncio.create_task(_released(self.database_url, deliveries, killed_at, self.stranded))
            )

    def stop(self) -> None:
        for process in [*self.workers, *self.servers, *self.apis]:
            process.kill()


Fault = Callable[[Cluster, Ledger, random.Random], Awaitable[None]]


async def kill_a_worker(c: Cluster, ledger: Ledger, rng: random.Random) -> None:
    """SIGKILL an SDK worker (it holds leases and may have acks in flight); a replacement starts."""
    n = rng.randrange(len(c.workers))
    pid = c.workers[n].pid
    killed_at = ledger.fault("sigkill sdk worker", pid)
    c.workers[n].kill()
    c.watch_release(ledger, pid, killed_at)
    c.generations += 1
    c.workers[n] = c.new_worker(n, c.generations)
    await asyncio.to_thread(c.workers[n].start)  # the next kill waits for the replacement to be up


async def restart_the_next_worker(c: Cluster, ledger: Ledger, rng: random.Random) -> None:
    """A rolling restart's step: SIGTERM the next worker in turn (each SDK worker, then the in-process runner's
    server), start its replacement at once, and SIGKILL it if it is still alive `STOP_GRACE` later."""
    turn = c.turns % (len(c.workers) + 1)
    c.turns += 1
    c.generations += 1
    if turn < len(c.workers):
        old = c.workers[turn]
        new = c.workers[turn] = c.new_worker(turn, c.generations)
    else:
        old = c.servers[0]
        new = c.servers[0] = c.worker_server(0, QUEUES[:2], c.generations)
    ledger.fault(f"sigterm {old.name}", old.pid)
    took, _ = await asyncio.gather(asyncio.to_thread(old.terminate, STOP_GRACE), asyncio.to_thread(new.start))
    c.sigterm_exits.setdefault("worker", []).append(took)


async def kill_or_restart_a_server(c: Cluster, ledger: Ledger, rng: random.Random) -> None:
    """SIGKILL or SIGTERM an API or worker-mode server (long-polls parked, acks in flight), then start it again."""
    process = rng.choice([*c.apis, *c.servers])
    if rng.random() < 0.5:
        pid = process.pid
        killed_at = ledger.fault(f"sigkill {process.name}", pid)
        await asyncio.to_thread(process.kill)
        c.watch_release(ledger, pid, killed_at)
    else:
        ledger.fault(f"sigterm {process.name}")
        took = await asyncio.to_thread(process.terminate)
        c.sigterm_exits.setdefault(process.name.rstrip("0123456789"), []).append(took)
    await asyncio.to_thread(process.start)


async def database_blip(c: Cluster, ledger: Ledger, rng: random.Random) -> None:
    """Our database refuses connections and loses every open one for a moment, or only loses them (a burst of
    pg_terminate_backend on QueueFlow's connections)."""
    if rng.random() < 0.5:
        ledger.fault("database outage 1 s")
        await cluster.cut_off(c.database_url)
        await asyncio.sleep(1.0)  # the length of the outage we inject
        await cluster.restore(c.database_url)
    else:
        ledger.fault("pg_terminate_backend burst")
        for _ in range(3):
            await cluster.terminate_backends(c.database_url)
            await asyncio.sleep(0.2)  # spacing of the burst


async def restart_postgres(c: Cluster, ledger: Ledger, rng: random.Random) -> None:
    """`pg_ctl restart -m fast` on the cluster this run owns: every connection drops, the server is briefly gone."""
    assert c.postgres is not None
    ledger.fault("postgres restart -m fast")
    await asyncio.to_thread(c.postgres.restart)


async def any_fault(c: Cluster, ledger: Ledger, rng: random.Random) -> None:
    """Each of the faults on the shared server in turn (the short profile's one scenario)."""
    faults = (kill_a_worker, kill_or_restart_a_server, database_blip)
    await faults[len(ledger.rows("SELECT 1 FROM faults")) % len(faults)](c, ledger, rng)


FAULTS: dict[str, Fault | None] = {
    "soak": None,
    "worker_kills": kill_a_worker,
    "server_kills": kill_or_restart_a_server,
    "db_faults": database_blip,
    "pg_restart": restart_postgres,
    "vacuum_pressure": None,
    "pooler": None,
    "rolling_restarts": restart_the_next_worker,
    "push_kills": None,
    "mixed": any_fault,
}


async def run(name: str, profile: Profile, *, seed: int = 1) -> Outcome:
    if name == "push_kills":  # a cluster of its own: delivering servers and a receiver, no SDK workers
        return await push.run(profile.jobs // 5, profile.load_seconds, profile.fault_every, seed=seed)
    rng = random.Random(seed)
    fault = FAULTS[name]
    async with AsyncExitStack() as stack:
        # Kept when an invariant breaks: the processes' logs and the ledger are the evidence.
        work = Path(tempfile.mkdtemp(prefix=f"chaos-{name}-"))
        kept: list[Outcome] = []
        stack.callback(_clean_up, work, kept)
        postgres = None
        admin_url = cluster.ADMIN_URL
        if name == "pg_restart":
            # A cluster of its own, so that it may be restarted (the shared server on 5432 never is); its log is kept
            # with the run's evidence.
            postgres = await asyncio.to_thread(stack.enter_context, own_cluster(work / "postgres.log", RESTARTED))
            admin_url = postgres.url
        database_url = await cluster.create_database(admin_url)
        stack.push_async_callback(cluster.drop_database, database_url, admin_url)
        ledger = Ledger(work / "ledger.sqlite3")
        stack.callback(ledger.close)
        c = Cluster(database_url, work, work / "ledger.sqlite3", postgres=postgres)
        if name == "pooler":
            # Every statement through PgBouncer in transaction mode (asyncpg's statement cache off); the notifier
            # LISTENs past it, straight at PostgreSQL, since through it a LISTEN hears nothing.
            bouncer = pgbouncer.PgBouncer(database_url, pool_size=POOLER_CONNECTIONS)
            await asyncio.to_thread(bouncer.start)
            stack.callback(bouncer.close)
            c.server_url = bouncer.url(database_url.rpartition("/")[2])
            c.server_args = ("--statement-cache-size", "0", "--listen-database-url", database_url)
        stack.callback(c.stop)
        phases = Phases()
        await asyncio.to_thread(c.start, profile)
        phases.mark("start")
        pressure = None
        if name == "vacuum_pressure":
            # A snapshot held in the middle of the run: no row version that dies meanwhile can be vacuumed away.
            pressure = asyncio.create_task(vacuum.hold_snapshot(database_url, ledger, profile.jobs))
        api = Api(c.bases)
        stack.push_async_callback(api.aclose)
        await create_schedules(api, profile.schedules)
        await create_triggers(api)
        started = time.time()
        task_ms = ROLLING_TASK_MS if name == "rolling_restarts" else 0
        events: dict[int, list[dict[str, str]]] = {}
        watch = KeyWatch(database_url)
        watching = asyncio.create_task(watch.run())
        loading = asyncio.create_task(_load(api, ledger, profile, rng, events, task_ms))
        faults = asyncio.create_task(_inject(fault, c, ledger, rng, profile, loading)) if fault else None
        await loading
        phases.mark("load")
        # Every event once more, from a driver that cannot tell whether its first send landed (as after a kill),
        # while the faults go on: the same starts, and nothing started again (`checks`).
        changed = await resend_events(api, events)
        if faults is not None:
            await faults
        await asyncio.gather(*c.watchers)
        held = await pressure if pressure is not None else None
        await delete_schedules(api, profile.schedules)
        settled = await _settle(database_url)
        watch.stop.set()
        await watching
        phases.mark("settle")
        for journal in sorted(work.glob("*.jsonl")):  # noqa: ASYNC240 - a handful of local files, once
            ledger.load_journal(journal)
        outcome = await check(name, database_url, ledger, started=started, settled=settled)
        phases.mark("check")
        outcome.phases = phases.took
        outcome.workers = " + ".join(sorted(c.kinds))
        outcome.stranded = c.stranded
        outcome.require(not changed, f"{len(changed)} events re-sent answered other starts: {', '.join(changed[:5])}")
        outcome.require(
            max(c.stranded, default=0) <= STRANDED_LIMIT,
            f"a killed process's job stayed running {max(c.stranded, default=0):.1f} s under its dead lease",
        )
        outcome.unique_twice_live = len(watch.unique_twice)
        outcome.require(
            not watch.unique_twice, f"unique keys with two live jobs at once: {sorted(watch.unique_twice)[:5]}"
        )
        outcome.require(
            not watch.sequences_twice, f"sequences with two jobs running at once: {sorted(watch.sequences_twice)[:5]}"
        )
        outcome.notes.append(
            f"{watch.snapshots} snapshots of the jobs table (every {KeyWatch.EVERY:g} s): unique keys with two live"
            f" jobs {len(watch.unique_twice)}, sequences with two running {len(watch.sequences_twice)}"
        )
        outcome.sigterm_exits = {kind: max(times) for kind, times in c.sigterm_exits.items()}
        if name == "rolling_restarts" and c.sigterm_exits.get("worker"):
            exits = c.sigterm_exits["worker"]
            killed = sum(took >= STOP_GRACE for took in exits)
            outcome.notes.append(
                f"workers' exit after SIGTERM: median {statistics.median(exits):.2f} s, max {max(exits):.2f} s over"
                f" {len(exits)} stops ({killed} SIGKILLed after {STOP_GRACE:g} s)"
            )
        if held is not None:
            vacuum.measure(held, ledger)
            outcome.notes.append(held.describe())
        kept.append(outcome)
        if not outcome.holds:
            outcome.logs = str(work)
        return outcome
    raise AssertionError("unreachable")


class KeyWatch:
    """Snapshots of the jobs table while a run lasts (issue 43): a unique key with two live jobs, or a sequence with
    two jobs running, in any one snapshot — one instant of the database — is a rule broken. A fault that takes the
    database away only skips snapshots."""

    EVERY = 0.25
    UNIQUE_TWICE = (
        "SELECT tenant_id, unique_key FROM queueflow.jobs WHERE unique_key IS NOT NULL"
        " AND status IN ('pending', 'retrying', 'running') GROUP BY 1, 2 HAVING count(*) > 1"
    )
    SEQUENCE_TWICE = (
        "SELECT tenant_id, sequence_key FROM queueflow.jobs WHERE sequence_key IS NOT NULL AND status = 'running'"
        " GROUP BY 1, 2 HAVING count(*) > 1"
    )

    def __init__(self, database_url: str) -> None:
        self.database_url = database_url
        self.stop = asyncio.Event()
        self.snapshots = 0
        self.unique_twice: set[tuple[str, str]] = set()
        self.sequences_twice: set[tuple[str, str]] = set()

    async def run(self) -> None:
        connection = None
        while not self.stop.is_set():
            try:
                if connection is None:
                    connection = await asyncpg.connect(self.database_url)
                async with connection.transaction(isolation="repeatable_read", readonly=True):  # one snapshot
                    unique = await connection.fetch(self.UNIQUE_TWICE)
                    sequences = await connection.fetch(self.SEQUENCE_TWICE)
                self.snapshots += 1
                self.unique_twice.update((row[0], row[1]) for row in unique)
                self.sequences_twice.update((row[0], row[1]) for row in sequences)
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, asyncpg.InternalClientError):
                # The database is away (a fault): the next snapshot reconnects. A connection the server dropped
                # between two snapshots (pg_restart) answers the next one with InternalClientError, which is none of
                # the others; it is terminated, not left to the garbage collector.
                if connection is not None:
                    connection.terminate()
                connection = None
            await asyncio.sleep(self.EVERY)  # the snapshots' cadence
        if connection is not None:
            await connection.close()


class Phases:
    def __init__(self) -> None:
        self.last = time.monotonic()
        self.took: dict[str, float] = {}

    def mark(self, name: str) -> None:
        now = time.monotonic()
        self.took[name], self.last = now - self.last, now


def _clean_up(work: Path, kept: list[Outcome]) -> None:
    if kept and kept[0].holds:
        shutil.rmtree(work, ignore_errors=True)


async def _load(
    api: Api,
    ledger: Ledger,
    profile: Profile,
    rng: random.Random,
    events: dict[int, list[dict[str, str]]],
    task_ms: int = 0,
) -> None:
    """Enqueue the jobs at an even pace over `load_seconds` (so faults land while work flows), the workflows, and
    the events (into `events`: each one's number → what its answer named)."""
    batches = range(0, profile.jobs, BATCH)
    pause = profile.load_seconds / max(len(batches), 1)
    workflows_per_batch = -(-profile.workflows // max(len(batches), 1))
    made = 0
    for start in batches:
        ids = await enqueue_jobs(api, start, min(BATCH, profile.jobs - start), rng, task_ms)
        ledger.enqueued(ids, "job")
        for _ in range(min(workflows_per_batch, profile.workflows - made)):
            workflow_id = await create_workflow(api, made)
            ledger.enqueued([workflow_id], "workflow")
            if made % GROWING_EVERY == GROWING_EVERY - 1:
                await send_signal(api, made, workflow_id)
                ledger.enqueued([workflow_id], "signal")
            events[made] = await send_event(api, made)
            ledger.enqueued([f"evt-{made}"], "event")
            made += 1
        await asyncio.sleep(pause)  # the pace of the load, not a wait for a condition


async def _inject(
    fault: Fault, c: Cluster, ledger: Ledger, rng: random.Random, profile: Profile, loading: asyncio.Task[None]
) -> None:
    """Inject `fault` every `fault_every` seconds while the load lasts, and for as long once more."""
    until = None
    while until is None or time.monotonic() < until:
        await fault(c, ledger, rng)
        if loading.done() and until is None:
            until = time.monotonic() + profile.load_seconds / 2
        await asyncio.sleep(profile.fault_every)  # the cadence of the faults


async def _released(database_url: str, deliveries: dict[str, int], killed_at: float, out: list[float]) -> None:
    """Wait until no job of `deliveries` is still `running` in the delivery the killed process held. The janitor
    that releases them is another process that announces nothing, so this polls the database, with a deadline."""
    deadline = time.monotonic() + 120
    waiting = dict(deliveries)
    while waiting and time.monotonic() < deadline:
        try:
            connection = await asyncpg.connect(database_url)
            try:
                rows = await connection.fetch(
                    "SELECT id, status, delivery_count FROM queueflow.jobs WHERE id = ANY($1)", list(waiting)
                )
            finally:
                await connection.close()
        except (OSError, asyncpg.PostgresError):
            rows = []  # the database is down (another fault): ask again
        for row in rows:
            if row["status"] != "running" or row["delivery_count"] > waiting[row["id"]]:
                del waiting[row["id"]]
        if waiting:
            await asyncio.sleep(0.1)
    out.append(ledger_now() - killed_at if not waiting else float("inf"))


async def _settle(database_url: str) -> bool:
    """Wait until no job is unfinished and no workflow running. The work happens in other processes that
    announce nothing we could wait on, so this polls the database, with a deadline."""
    deadline = time.monotonic() + SETTLE_FOR
    connection = None
    while time.monotonic() < deadline:
        try:
            if connection is None:
                connection = await asyncpg.connect(database_url)
            open_jobs = await connection.fetchval(
                "SELECT count(*) FROM queueflow.jobs WHERE status IN ('pending', 'running', 'retrying')"
            )
            open_workflows = await connection.fetchval(
                "SELECT count(*) FROM queueflow.workflows WHERE status = 'running'"
            )
            if open_jobs == 0 and open_workflows == 0:
                await connection.close()
                return True
        except (OSError, asyncpg.PostgresError):
            connection = None
        await asyncio.sleep(0.5)
    if connection is not None:
        await connection.close()
    return False


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None
