"""The `queueflow` command: serve | migrate | spec | demo."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from queueflow import __version__
from queueflow.settings import ACCESS_LOGS, MODES, Settings, SettingsError

if TYPE_CHECKING:
    from queueflow.serve import AppFactory

DEFAULT_SPEC = Path("spec/openapi.json")


def main(argv: Sequence[str] | None = None, *, app_factory: AppFactory | None = None) -> int:
    """`app_factory`: for the bench alone (see `serve.AppFactory`); the command line has no way to name one."""
    parser = argparse.ArgumentParser(prog="queueflow", description="A durable job queue on PostgreSQL.")
    parser.add_argument("--version", action="version", version=f"queueflow {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="walk a few jobs through the engine on the in-memory store")

    serving = commands.add_parser("serve", help="run the HTTP API (each flag is also a QUEUEFLOW_* variable)")
    serving.add_argument("--mode", choices=MODES, help="api, worker or all (default all)")
    serving.add_argument("--host", help="address to bind (default 127.0.0.1)")
    serving.add_argument("--port", help="port to bind (default 8000)")
    serving.add_argument(
        "--database-url",
        help="PostgreSQL URL (without one: an embedded PostgreSQL under --data-dir; memory:// for no database)",
    )
    serving.add_argument("--api-keys", help='tenant keys, "key1=tenant-a,key2=tenant-b"')
    serving.add_argument("--worker-keys", help='worker keys, "wkey1,wkey2=tenant-a" (key=tenant: that tenant only)')
    serving.add_argument("--janitor-interval", help="seconds between janitor sweeps (default 5)")
    serving.add_argument("--scheduler-interval", help="seconds between cron scheduler ticks (default 1)")
    serving.add_argument("--safety-poll", help="seconds between polls when a wake-up may be lost (default 5)")
    serving.add_argument(
        "--retention-hours",
        help="delete finished jobs older than this where a queue sets no retention_seconds (default: keep)",
    )
    serving.add_argument("--data-dir", help="where the embedded database keeps its files (default .queueflow)")
    serving.add_argument("--max-body-bytes", help="largest request body accepted (default 4 MiB)")
    serving.add_argument("--lease-wait-limit", help="longest a lease long-polls, in seconds (default 60)")
    serving.add_argument("--tasks", help="module:attribute of a queueflow_client TaskRegistry to run in-process")
    serving.add_argument("--task-queues", help='queues the in-process tasks drain, "q1,q2" (default: default)')
    serving.add_argument("--task-concurrency", help="most jobs the in-process tasks run at once (default 10)")
    serving.add_argument(
        "--workers", help="processes serving on the one port, each with its own pool and loops (default 1)"
    )
    serving.add_argument("--pool-size", help="most PostgreSQL connections this process holds (default 10)")
    serving.add_argument(
        "--statement-cache-size",
        help="prepared statements cached per connection (default 100; 0 behind a transaction-mode pooler)",
    )
    serving.add_argument(
        "--statement-timeout", help="seconds a SQL statement may run before it is cancelled: 503 (default 10, 0: none)"
    )
    serving.add_argument(
        "--listen-database-url", help="where to LISTEN for new work, past a transaction pooler (default: database URL)"
    )
    serving.add_argument(
        "--allow-private-endpoints",
        action="store_true",
        default=None,
        help="let push endpoints lead to loopback, private and link-local addresses (implied in development mode)",
    )
    serving.add_argument(
        "--access-log", choices=ACCESS_LOGS, help="log every request, only 4xx/5xx ones, or none (default errors)"
    )
    serving.add_argument(
        "--horizon-warning-seconds",
        help="the dashboard warns when a backend has held the xmin horizon this long (default 300)",
    )

    migrating = commands.add_parser("migrate", help="upgrade the PostgreSQL schema to the latest version")
    migrating.add_argument(
        "--database-url", help="postgresql://user:password@host:port/database (or QUEUEFLOW_DATABASE_URL)"
    )

    spec = commands.add_parser("spec", help="write the OpenAPI document the code generates")
    spec.add_argument("--output", type=Path, default=DEFAULT_SPEC, help=f"where to write it (default {DEFAULT_SPEC})")
    spec.add_argument("--check", action="store_true", help="write nothing; exit 1 if the file differs")

    args = parser.parse_args(argv)
    if args.command == "demo":
        from queueflow.demo import run_demo

        asyncio.run(run_demo())
        return 0
    if args.command == "spec":
        return write_spec(args.output, check=args.check)
    if args.command == "migrate":
        return migrate(args.database_url or os.environ.get("QUEUEFLOW_DATABASE_URL"))
    flags = {key: value for key, value in vars(args).items() if key != "command"}
    from queueflow.serve import listen, load_tasks, serve

    try:
        settings = Settings.load(os.environ, **flags)
        settings.check_bind()
        tasks = load_tasks(settings)
        sock = listen(settings) if settings.mode != "worker" else None
    except SettingsError as exc:
        print(f"queueflow serve: {exc}", file=sys.stderr)
        return 2
    serve(settings, tasks, sock, app_factory=app_factory)
    return 0


def render_spec() -> str:
    """The OpenAPI document, byte-identical for every settings, key set and hash seed."""
    from queueflow.api import create_app
    from queueflow.clocks import SystemClock
    from queueflow.stores.memory import InMemoryJobStore

    app = create_app(Settings(), store=InMemoryJobStore(), clock=SystemClock())
    return json.dumps(app.openapi_schema.to_schema(), sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def write_spec(path: Path, *, check: bool) -> int:
    spec = render_spec()
    if check:
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current != spec:
            print(f"{path} is out of date: run `queueflow spec` and commit the result", file=sys.stderr)
            return 1
        print(f"{path} is up to date")
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(spec, encoding="utf-8")
    print(f"wrote {path}")
    return 0


def migrate(database_url: str | None) -> int:
    from queueflow.stores.postgres import schema as pgschema

    if not database_url:
        print("queueflow migrate: give --database-url or set QUEUEFLOW_DATABASE_URL", file=sys.stderr)
        return 2
    try:
        pgschema.upgrade(database_url)
    except Exception as exc:  # a CLI answers with one line, not a traceback
        print(f"queueflow migrate: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print("queueflow migrate: the schema is at head")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
