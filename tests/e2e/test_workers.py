"""`queueflow serve --workers 2` on PostgreSQL: two processes answer on the one port, and SIGTERM to the parent
stops both (and the parent) within the bound a single server has."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from tests.e2e.live import ROOT, free_port

GRACE = 2.0
"""As tests/e2e/test_sigterm.py's: a server is gone within 2 s of SIGTERM."""
KEYS = {"QUEUEFLOW_API_KEYS": "key-a=tenant-a", "QUEUEFLOW_WORKER_KEYS": "key-w"}


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


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
    try:
        while "QueueFlow is listening" not in (line := lines.get(timeout=60)):
            assert line, "the server exited before it listened"
        served = children(process.pid)
        assert len(served) == 2, served
        # Many connections: the kernel hands them to both processes; every request is answered either way.
        for n in range(20):
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": "Bearer key-a"}) as http:
                enqueued = http.post("/v1/jobs", json={"task_name": "t", "queue_name": "w"})
                assert enqueued.status_code == 201, enqueued.text
                assert http.get(f"/v1/jobs/{enqueued.json()['id']}").json()["status"] == "pending", n
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
        reader.join(timeout=10)
        assert process.stdout is not None
        process.stdout.close()


def test_workers_above_one_refuse_the_memory_store() -> None:
    argv = [sys.executable, "-m", "queueflow.cli", "serve", "--workers", "2", "--database-url", "memory://"]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "workers above 1 need PostgreSQL" in done.stderr
