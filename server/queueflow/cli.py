"""The `queueflow` command: serve | spec | demo."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from queueflow.settings import MODES, Settings, SettingsError

DEFAULT_SPEC = Path("spec/openapi.json")
log = logging.getLogger("queueflow")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="queueflow", description="A durable job queue on PostgreSQL.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="walk a few jobs through the engine on the in-memory store")

    serve = commands.add_parser("serve", help="run the HTTP API (each flag is also a QUEUEFLOW_* variable)")
    serve.add_argument("--mode", choices=MODES, help="api, worker or all (default all)")
    serve.add_argument("--host", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", help="port to bind (default 8000)")
    serve.add_argument("--database-url", help="PostgreSQL URL (without one: the in-memory store, nothing is kept)")
    serve.add_argument("--api-keys", help='tenant keys, "key1=tenant-a,key2=tenant-b"')
    serve.add_argument("--worker-keys", help='worker keys, "wkey1,wkey2"')
    serve.add_argument("--janitor-interval", help="seconds between janitor sweeps (default 5)")
    serve.add_argument("--safety-poll", help="seconds between polls when a wake-up may be lost (default 5)")
    serve.add_argument("--retention-hours", help="delete finished jobs older than this (default: keep)")
    serve.add_argument("--data-dir", help="where an embedded database keeps its files")
    serve.add_argument("--max-body-bytes", help="largest request body accepted (default 1 MiB)")
    serve.add_argument("--lease-wait-limit", help="longest a lease long-polls, in seconds (default 60)")

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
    flags = {key: value for key, value in vars(args).items() if key != "command"}
    try:
        settings = Settings.load(os.environ, **flags)
        settings.check_bind()
    except SettingsError as exc:
        print(f"queueflow serve: {exc}", file=sys.stderr)
        return 2
    serve_http(settings)
    return 0


def render_spec() -> str:
    """The OpenAPI document, byte-identical for every settings, key set and hash seed."""
    from queueflow.api import create_app
    from queueflow.ports import SystemClock
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


def serve_http(settings: Settings) -> None:
    import uvicorn

    from queueflow.api import create_app
    from queueflow.ports import SystemClock
    from queueflow.runtime.wakeups import Wakeups
    from queueflow.stores.memory import InMemoryJobStore

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    if settings.database_url:
        raise SystemExit("queueflow serve: the PostgreSQL store is not wired in yet; omit --database-url for now")
    if settings.development_mode:
        log.warning("no API or worker keys: development mode, auth is off, every request is tenant 'default'")
    log.warning("no database URL: serving on the in-memory store; every job is lost when the process stops")
    if settings.mode != "api":
        log.warning(
            "mode %s: the janitor and scheduler loops are not wired in yet; serving the API only", settings.mode
        )
    if settings.development_mode:
        print(first_steps(f"http://{settings.host}:{settings.port}"), flush=True)
    wakeups = Wakeups()
    app = create_app(settings, store=InMemoryJobStore(wakeups=wakeups), clock=SystemClock(), wakeups=wakeups)
    config: dict[str, Any] = {"host": settings.host, "port": settings.port, "access_log": False, "log_config": None}
    uvicorn.run(app, **config)


def first_steps(base: str) -> str:
    """How to push a first job through a development-mode server with curl."""
    json_header = "-H 'Content-Type: application/json'"
    done = """'{"lease_token": "TOKEN", "result": {"sent": true}}'"""
    return f"""
QueueFlow is starting on {base} (development mode: no keys, tenant "default"). In another terminal:

  # enqueue a job
  curl -s {base}/v1/jobs {json_header} -d '{{"task_name": "send_email", "payload": {{"to": "ada@example.com"}}}}'
  # lease it as a worker (note its id and lease_token)
  curl -s {base}/v1/worker/lease {json_header} -d '{{"queues": ["default"], "wait_seconds": 5}}'
  # complete it
  curl -s {base}/v1/worker/jobs/JOB_ID/complete {json_header} -d {done}

The API reference is at {base}/schema (the spec at {base}/schema/openapi.json).
"""


if __name__ == "__main__":
    raise SystemExit(main())
