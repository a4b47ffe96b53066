"""SIGTERM under a parked long-poll: the server answers it at once with no jobs and exits within 2 s.

A server that waited out every parked lease (up to `wait_seconds`, 60 s) outlived an orchestrator's grace period
(Kubernetes kills at 30 s) on every deploy.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time

import httpx
import pytest

from tests.e2e.live import ROOT, free_port

GRACE = 2.0
MEMORY = ("--database-url", "memory://")
PARKED = re.compile(r"^queueflow_lease_waiters(?:\{[^}]*\})? (\S+)$", re.MULTILINE)


def parked(http: httpx.Client) -> float:
    found = PARKED.search(http.get("/metrics").text)
    return float(found.group(1)) if found else 0.0


@pytest.mark.parametrize("mode", ["api", "all"])
def test_sigterm_answers_parked_long_polls_and_exits_within_two_seconds(mode: str) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [sys.executable, "-m", "queueflow.cli", "serve", "--mode", mode, "--port", str(port), *MEMORY],
        cwd=ROOT,
        env=os.environ.copy(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    answers: list[httpx.Response | BaseException] = []
    try:
        with httpx.Client(base_url=base, timeout=5) as http:
            # The server is another process that announces nothing we can wait on: poll its readiness and its
            # parked-lease gauge with a deadline.
            deadline = time.monotonic() + 30
            while True:
                try:
                    if http.get("/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "server did not start"
                assert process.poll() is None, "server exited"

            def long_poll() -> None:
                try:
                    with httpx.Client(base_url=base, timeout=70) as client:
                        body = {"queues": ["shutdown"], "wait_seconds": 60}
                        answers.append(client.post("/v1/worker/lease", json=body))
                except BaseException as exc:
                    answers.append(exc)

            poller = threading.Thread(target=long_poll)
            poller.start()
            deadline = time.monotonic() + 10
            while parked(http) < 1:
                assert time.monotonic() < deadline, "the long-poll never parked"
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        poller.join(timeout=GRACE + 1)
        try:
            process.wait(timeout=GRACE + 1)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {GRACE + 1} s after SIGTERM")
        took = time.monotonic() - started
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert took < GRACE, f"exit took {took:.1f} s"
    (answer,) = answers
    assert isinstance(answer, httpx.Response), answer
    assert (answer.status_code, answer.json()) == (200, {"jobs": []})
