"""`queueflow serve` says it listens only once it does, and a port in use is one clear line, not a traceback."""

from __future__ import annotations

import queue
import socket
import subprocess
import sys
import threading

import httpx

from tests.e2e.live import ROOT, free_port


def serve(port: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "queueflow.cli", "serve", "--port", str(port), "--database-url", "memory://"],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_port_in_use_fails_at_once_with_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        process = serve(port)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 2, err
    expected = f"{port} is already in use (another QueueFlow?): stop it, or choose another --port"
    assert err == f"queueflow serve: 127.0.0.1:{expected}\n"
    assert "listening" not in out


def test_the_banner_comes_once_the_server_answers() -> None:
    process = serve(free_port())
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
        lines.put("")  # end of output

    threading.Thread(target=read, daemon=True).start()
    try:
        first = lines.get(timeout=60)
        assert first.startswith("QueueFlow is listening on http://127.0.0.1:"), first
        base = first.split()[4].rstrip(":")
        # No retry: the line was printed after the socket was serving, so this first request must be answered.
        assert httpx.get(f"{base}/healthz").status_code == 200
    finally:
        process.terminate()
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
