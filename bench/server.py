"""A `queueflow serve --mode all` process under measurement: its port, its CPU time and its peak memory.

It runs as a user would run it: API keys and worker keys on, the access log at its default, its log on stderr
(written to a file, so the logging cost stays in the measured path and no pipe ever fills up). Besides the bench
tenant, MANY_TENANTS tenants have a key each, for the drain whose backlog is spread over them; the one worker key
drains every tenant.

With `floor=True` it is the same command through bench/floor_app.py, whose app has one route more, the
per-request scenario's one-query floor (`FLOOR_PATH`): `queueflow serve`'s own code builds and serves it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import TracebackType

from bench.cpu import tree_cpu_seconds

ROOT = Path(__file__).resolve().parent.parent
TENANT_KEY = "bench-tenant-key"
WORKER_KEY = "bench-worker-key"
TENANT = "bench"
MANY_TENANTS = 100
MANY_TENANT_KEYS = {f"{TENANT_KEY}-{n:03d}": f"{TENANT}-{n:03d}" for n in range(MANY_TENANTS)}
"""API key → tenant, for each of the MANY_TENANTS tenants besides the bench one."""
FLOOR_PATH = "/bench/floor"
"""Where bench/floor_app.py serves its one-query route (`GET {FLOOR_PATH}/{id}`); here so that the harness, which
only sends requests to it, need not import the app."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class QueueFlowServer:
    """`async with`-free on purpose: scenarios start and stop it from synchronous code too."""

    def __init__(
        self, database_url: str, log_path: Path, extra_args: tuple[str, ...] = (), *, floor: bool = False
    ) -> None:
        self.database_url = database_url
        self.extra_args = extra_args
        self.floor = floor
        """Serves the one-query route as well (bench/floor_app.py)."""
        self.log_path = log_path
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def start(self, timeout: float = 60) -> QueueFlowServer:
        env = {
            **os.environ,
            "QUEUEFLOW_API_KEYS": ",".join(
                f"{key}={tenant}" for key, tenant in {TENANT_KEY: TENANT, **MANY_TENANT_KEYS}.items()
            ),
            "QUEUEFLOW_WORKER_KEYS": WORKER_KEY,
        }
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "bench.floor_app" if self.floor else "queueflow.cli",
                    "serve",
                    "--mode",
                    "all",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--database-url",
                    self.database_url,
                    *self.extra_args,
                ],
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout
        # Polling /healthz is the only signal a separate process gives that it accepts requests.
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"queueflow serve exited at start:\n{self.log_path.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=1) as answer:
                    if answer.status == 200:
                        return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"queueflow serve did not answer in {timeout} s:\n{self.log_path.read_text()[-3000:]}")

    def check(self) -> None:
        """RuntimeError, with the end of its log, if the server has exited."""
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"queueflow serve exited:\n{self.log_path.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def __enter__(self) -> QueueFlowServer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def cpu_seconds(self) -> float:
        """User + system CPU time the server has used so far: its process and, under `--workers N`, the N
        processes it forked (every thread of each)."""
        return tree_cpu_seconds(self.pid)

    def reset_peak_rss(self) -> None:
        reset_peak_rss(self.pid)

    def peak_rss_bytes(self) -> int:
        return process_peak_rss(self.pid)


def reset_peak_rss(pid: int) -> None:
    """Start VmHWM afresh (clear_refs "5", Linux ≥ 4.0), so a peak belongs to one scenario, not to startup."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def process_peak_rss(pid: int) -> int:
    """VmHWM: the largest resident set since start or since `reset_peak_rss`."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc status")
