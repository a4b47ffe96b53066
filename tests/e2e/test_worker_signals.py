"""Ctrl-C on a Python worker process (issue 17): the first SIGINT says how many jobs it finishes and how to quit
sooner, the second quits at once, without a KeyboardInterrupt traceback, and the outcomes already finished are
recorded before the process ends. With no logging configured, the worker prints its startup line and failures."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import IO

from queueflow_client import QueueFlow

from tests.e2e.live import ROOT, live_server


class Lines:
    """The lines a stream has written so far, read by a thread; a test waits on them with a deadline."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()

    def until(self, found: Callable[[str], bool], timeout: float = 15) -> str:
        with self._changed:
            if not self._changed.wait_for(lambda: any(found(line) for line in self.lines), timeout):
                raise AssertionError(f"not seen in {timeout} s; so far:\n{self.text}")
            return next(line for line in self.lines if found(line))

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def join(self) -> None:
        self._thread.join(timeout=10)


def test_ctrl_c_finishes_then_quits_and_records_what_finished(database_url: str) -> None:
    with live_server("--database-url", database_url, "--mode", "api") as base, QueueFlow(base) as client:
        fast = client.jobs.enqueue("fast")
        boom = client.jobs.enqueue("boom", max_retries=0)
        block = client.jobs.enqueue("block")
        worker = subprocess.Popen(
            [sys.executable, "-m", "tests.e2e.signal_worker", base],
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert worker.stdout is not None
        assert worker.stderr is not None
        out, err = Lines(worker.stdout), Lines(worker.stderr)
        try:
            err.until(lambda line: "started; queues: default; tasks: block, boom, fast; concurrency 4" in line)
            out.until(lambda line: line == "blocking\n")
            err.until(lambda line: f"boom job {boom.id} (delivery 1): failed after" in line)

            worker.send_signal(signal.SIGINT)
            err.until(lambda line: "finishing 1 running jobs (up to 30 s) (Ctrl-C again to quit)" in line)
            worker.send_signal(signal.SIGINT)
            assert worker.wait(timeout=15) == 130
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
            # Closed even when a wait above failed: a pipe left to the garbage collector fails a later test.
            out.join()
            err.join()
            worker.stdout.close()
            worker.stderr.close()

        assert "KeyboardInterrupt" not in err.text
        assert "ValueError: boom" in err.text  # the failure's traceback, with no logging configured
        assert "completed in" not in err.text  # a line per completed job only once logging asks for INFO
        assert "quitting with 1 tasks still running in threads" in err.text
        # Both finished outcomes were still waiting to be sent (ack_interval=60): the quit sent them.
        assert (client.jobs.get(fast.id).status, client.jobs.get(fast.id).result) == ("completed", "done")
        failed = client.jobs.get(boom.id)
        assert failed.status == "dead_letter"
        assert (failed.error_message or "").startswith("ValueError: boom\n\nTraceback (most recent call last):")
        assert client.jobs.get(block.id).status == "running"  # abandoned to its lease's expiry


def test_a_refused_key_ends_the_worker_process_with_one_line_and_status_1(database_url: str) -> None:
    keys = ("--api-keys", "tenant-key=tenant-a", "--worker-keys", "worker-key")
    with live_server("--database-url", database_url, "--mode", "api", *keys) as base:
        worker = subprocess.run(
            [sys.executable, "-m", "tests.e2e.signal_worker", base, "tenant-key"],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert worker.returncode == 1, worker.stderr
    errors = [line for line in worker.stderr.splitlines() if " ERROR " in line]
    assert len(errors) == 1, worker.stderr
    assert f"the server at {base} refused the worker key (403 forbidden" in errors[0]
    assert "Traceback" not in worker.stderr
