"""The processes under test — `queueflow serve` in api and worker mode, SDK workers — and a database of our own.

Everything is driven through the CLI, HTTP and SQL, never through QueueFlow's modules, so the suite tests what a
user deploys. Each process can be SIGKILLed, SIGTERMed and started again on the same port.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg

ROOT = Path(__file__).resolve().parent.parent.parent
ADMIN_URL = os.environ.get("QUEUEFLOW_TEST_DATABASE_URL") or "postgresql://postgres@127.0.0.1:5432/postgres"
API_KEYS = "key-a=tenant-a,key-b=tenant-b"
WORKER_KEY = "key-w"
TENANT_KEYS = {"tenant-a": "key-a", "tenant-b": "key-b"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def with_database(url: str, database: str) -> str:
    base, _, _ = url.rpartition("/")
    return f"{base}/{database}"


async def admin(sql: str, *args: object, url: str = ADMIN_URL) -> list[asyncpg.Record]:
    connection = await asyncpg.connect(url)
    try:
        return await connection.fetch(sql, *args)
    finally:
        await connection.close()


async def create_database(admin_url: str = ADMIN_URL) -> str:
    name = f"queueflow_chaos_{secrets.token_hex(6)}"
    await admin(f'CREATE DATABASE "{name}"', url=admin_url)
    return with_database(admin_url, name)


async def drop_database(url: str, admin_url: str = ADMIN_URL) -> None:
    name = url.rpartition("/")[2]
    await admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', url=admin_url)


async def cut_off(url: str, admin_url: str = ADMIN_URL) -> None:
    """An outage of our own database only: refuse new connections and kill every open one."""
    name = url.rpartition("/")[2]
    await admin(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false', url=admin_url)
    await terminate_backends(url, admin_url)


async def restore(url: str, admin_url: str = ADMIN_URL) -> None:
    name = url.rpartition("/")[2]
    await admin(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true', url=admin_url)


async def terminate_backends(url: str, admin_url: str = ADMIN_URL) -> int:
    name = url.rpartition("/")[2]
    rows = await admin(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
        name,
        url=admin_url,
    )
    return len(rows)


@dataclass
class Process:
    """One child process, restartable; `ready_line` (on stderr) says it is up, when there is one to wait for."""

    name: str
    argv: Sequence[str]
    env: dict[str, str]
    log_dir: Path
    ready_line: str | None = None
    process: subprocess.Popen[str] | None = None
    starts: int = 0
    _ready: threading.Event = field(default_factory=threading.Event)
    _drainer: threading.Thread | None = None

    def start(self, timeout: float = 60) -> None:
        self.starts += 1
        self._ready = threading.Event()
        log = open(self.log_dir / f"{self.name}.log", "a")  # noqa: SIM115 - closed by the drain thread
        self.process = subprocess.Popen(
            list(self.argv),
            cwd=ROOT,
            env={**os.environ, **self.env},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._drainer = threading.Thread(target=self._drain, args=(self.process, self._ready, log), daemon=True)
        self._drainer.start()
        if self.ready_line is not None and (not self._ready.wait(timeout) or self.process.poll() is not None):
            raise RuntimeError(f"{self.name} did not start; see {self.log_dir / self.name}.log")

    def _drain(self, process: subprocess.Popen[str], ready: threading.Event, log: object) -> None:
        # Keep reading until the process exits, so its logging never blocks on a full pipe.
        assert process.stderr is not None
        with log:  # type: ignore[attr-defined]
            for line in process.stderr:
                log.write(line)  # type: ignore[attr-defined]
                if self.ready_line is not None and self.ready_line in line:
                    ready.set()
        process.stderr.close()
        ready.set()

    def _reap(self) -> None:
        assert self.process is not None
        self.process.wait()
        if self._drainer is not None:
            self._drainer.join()

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        if self.running:
            assert self.process is not None
            self.process.send_signal(signal.SIGKILL)
            self._reap()

    def terminate(self, grace: float = 30) -> float:
        """SIGTERM, and how long the process took to exit (SIGKILL after `grace`)."""
        if not self.running:
            return 0.0
        assert self.process is not None
        started = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.process.kill()
        took = time.monotonic() - started
        self._reap()
        return took


def server(
    name: str,
    mode: str,
    database_url: str,
    log_dir: Path,
    ledger: Path,
    *,
    queues: Sequence[str] = (),
    lease_timing: Sequence[str] = (),
    extra: Sequence[str] = (),
) -> tuple[Process, str]:
    """A `queueflow serve --mode MODE` process and its base URL (worker mode serves no HTTP); `extra`, more flags."""
    port = free_port()
    argv = [sys.executable, "-m", "queueflow.cli", "serve", "--mode", mode, "--port", str(port)]
    argv += ["--database-url", database_url, "--api-keys", API_KEYS, "--worker-keys", WORKER_KEY, *lease_timing]
    argv += extra
    if queues:
        argv += ["--tasks", "tests.chaos.tasks:registry", "--task-queues", ",".join(queues)]
        argv += ["--task-concurrency", "8"]
    ready = "Application startup complete" if mode != "worker" else "queueflow worker mode: running"
    env = {"QUEUEFLOW_CHAOS_LEDGER": str(ledger)}
    return Process(name, argv, env, log_dir, ready_line=ready), f"http://127.0.0.1:{port}"


def sdk_worker(name: str, base_url: str, queues: Sequence[str], log_dir: Path, ledger: Path, lease: float) -> Process:
    argv = [sys.executable, "-m", "tests.chaos.sdk_worker", base_url, WORKER_KEY, ",".join(queues), "16", str(lease)]
    # The worker's own startup line (queueflow_worker.loop), logged once it is leasing.
    return Process(name, argv, {"QUEUEFLOW_CHAOS_LEDGER": str(ledger)}, log_dir, ready_line="started; queues:")


TS_SDK = ROOT / "sdks" / "typescript"


def ts_available() -> bool:
    return (TS_SDK / "dist" / "index.js").exists() and shutil.which("node") is not None


def ts_worker(name: str, base_url: str, queues: Sequence[str], log_dir: Path, journal: Path, lease: float) -> Process:
    """A TypeScript SDK worker (`sdks/typescript/dist`, built by `npm run build`) writing its ledger rows to
    `journal` (`Ledger.load_journal` reads them)."""
    script = str(ROOT / "tests" / "chaos" / "ts_worker.mjs")
    argv = ["node", script, base_url, WORKER_KEY, ",".join(queues), "16", str(lease), str(journal)]
    return Process(name, argv, {}, log_dir, ready_line="leasing from")
