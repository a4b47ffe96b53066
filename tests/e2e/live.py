"""A real `queueflow serve` process on a free loopback port, for tests that need a live server."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
READY = "Application startup complete"
SERVER_PYTHON = os.environ.get("QUEUEFLOW_SERVER_PYTHON") or sys.executable
"""The Python whose `queueflow` the live servers run: this one, or another release's (tests/compat)."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _listening(port: int, timeout: float) -> bool:
    """Whether the port accepts connections within `timeout` s. uvicorn logs READY when the app has started, just
    before it binds its socket: a request sent at once could find nothing listening yet."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)  # another process binding its socket: polling is all there is


@contextmanager
def live_server(
    *args: str,
    env: Mapping[str, str] | None = None,
    timeout: float = 30,
    python: str | Path = SERVER_PYTHON,
    cwd: Path = ROOT,
) -> Iterator[str]:
    """Start `queueflow serve ARGS` (with `python`, in `cwd`) and yield its base URL once uvicorn says it is up;
    stop it afterwards."""
    # A port free a moment ago may be bound by a concurrent test's server before this one binds it: this server then
    # says so and exits, and another port is tried.
    for attempt in range(3):
        port = free_port()
        process, drainer, ready, log = _start(python, port, args, env, cwd)
        if ready.wait(timeout) and process.poll() is None and _listening(port, timeout):
            break
        _stop(process, drainer)
        if attempt == 2 or not any("already in use" in line for line in log):
            raise RuntimeError("queueflow serve did not start:\n" + "".join(log))
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        _stop(process, drainer)


def _start(
    python: str | Path, port: int, args: tuple[str, ...], env: Mapping[str, str] | None, cwd: Path
) -> tuple[subprocess.Popen[str], threading.Thread, threading.Event, list[str]]:
    process = subprocess.Popen(
        [python, "-m", "queueflow.cli", "serve", "--host", "127.0.0.1", "--port", str(port), *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    ready = threading.Event()
    log: list[str] = []

    def drain() -> None:
        # Keep reading until the server exits, so its logging never blocks on a full pipe.
        assert process.stderr is not None
        for line in process.stderr:
            log.append(line)
            if READY in line:
                ready.set()
        ready.set()

    drainer = threading.Thread(target=drain, daemon=True)
    drainer.start()
    return process, drainer, ready, log


def _stop(process: subprocess.Popen[str], drainer: threading.Thread) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    drainer.join(timeout=10)
    if process.stderr is not None:
        process.stderr.close()
