"""`queueflow serve --workers 2` on PostgreSQL: two processes answer on the one port, connections opened together
go to both, and SIGTERM to the parent stops both (and the parent) within the bound a single server has."""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from bench.cpu import children
from tests.e2e.live import ROOT, free_port

GRACE = 2.0
"""As tests/e2e/test_sigterm.py's: a server is gone within 2 s of SIGTERM."""
KEYS = {"QUEUEFLOW_API_KEYS": "key-a=tenant-a", "QUEUEFLOW_WORKER_KEYS": "key-w"}


def connections_to(port: int, pid: int, peers: set[int]) -> int:
    """How many of the established TCP connections from the local ports `peers` to local `port` process `pid` holds
    (its socket fds matched against /proc/net/tcp's entries by inode). Only the test's own connections count: another
    test's server may share the port for a moment (`free_port` hands out a port that is free *now*, and a second
    `--workers 2` server binds it too, SO_REUSEPORT), and a connection of that test's client then landed here — 25
    connections counted against 24 opened, once in a full run."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    held = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local_port, remote_port = (int(address.rsplit(":", 1)[1], 16) for address in fields[1:3])
            state, inode = fields[3], fields[9]
            held += local_port == port and remote_port in peers and state == "01" and inode in inodes  # 01: ESTABLISHED
    return held


def test_two_processes_serve_one_port_and_sigterm_stops_them_all(database_url: str) -> None:
    port = free_port()
    argv = [sys.executable, "-m", "queueflow.cli", "serve", "--workers", "2", "--port", str(port)]
    process = subprocess.Popen(
        [*argv, "--database-url", database_url],
        cwd=ROOT,
        env={**os.environ, **KEYS, "QUEUEFLOW_JANITOR_INTERVAL": "1"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
        lines.put("")

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    served: list[int] = []
    try:
        while "QueueFlow is listening" not in (line := lines.get(timeout=60)):
            assert line, "the server exited before it listened"
        served = children(process.pid)
        assert len(served) == 2, served
        # Connections opened together, as a client's pool opens them, before either process has accepted one: the
        # kernel spreads them over both (each listens on a socket of its own). On one shared socket, the process
        # that woke first took them all. (All 24 to one of two, by the addresses' hash: 1 in 8 million.)
        opened = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(24)]
        try:
            for connection in opened:
                connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: qf\r\n\r\n")
            for connection in opened:
                assert connection.recv(4096).startswith(b"HTTP/1.1 200"), "every connection is answered"
            peers = {connection.getsockname()[1] for connection in opened}
            held = {pid: connections_to(port, pid, peers) for pid in served}
            assert sum(held.values()) == len(opened), held
            assert all(held.values()), f"one process holds every connection: {held}"
        finally:
            for connection in opened:
                connection.close()
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": "Bearer key-a"}) as http:
            enqueued = http.post("/v1/jobs", json={"task_name": "t", "queue_name": "w"})
            assert enqueued.status_code == 201, enqueued.text
            assert http.get(f"/v1/jobs/{enqueued.json()['id']}").json()["status"] == "pending"
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=GRACE + 10) == 0
        took = time.monotonic() - started
        assert took < GRACE, f"exit took {took:.2f} s"
        assert not [pid for pid in served if Path(f"/proc/{pid}").exists()], "a serving process outlived its parent"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for pid in served:  # a parent killed leaves its children, which hold the output the reader reads
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        reader.join(timeout=10)
        assert process.stdout is not None
        process.stdout.close()


def test_workers_above_one_refuse_the_memory_store() -> None:
    argv = [sys.executable, "-m", "queueflow.cli", "serve", "--workers", "2", "--database-url", "memory://"]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "workers above 1 need PostgreSQL" in done.stderr
