"""`queueflow serve --workers N`: N processes of one server, forked after the socket is bound and the schema migrated.

One Python process uses one core. With `--workers N` the process that binds the socket (and migrates, or starts the
embedded PostgreSQL) forks N children; each listens on a socket of its own at that address (SO_REUSEPORT: the
kernel spreads new connections over them, `serve.own_socket`), with its own pool, notifier, janitor, scheduler and
in-process tasks, exactly as N separate `queueflow serve` processes on one database would (each part is safe to run
in any number of processes). The parent only supervises: SIGTERM or SIGINT to it is passed on to every child as
SIGTERM (uvicorn takes a second SIGINT as "exit now", and a terminal sends SIGINT to the children too), and it exits
once all have; a child that exits on its own stops the others, and the parent exits with its status, so that a
supervisor above (systemd, an orchestrator) sees one failed service rather than one that serves with fewer
processes than it was given.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import Callable
from types import FrameType

log = logging.getLogger("queueflow")

STOP_BOUND = 10.0
"""Seconds the children get to finish their requests and exit after the parent passed a stop on, before SIGKILL
(a server stops within 2 s: tests/e2e/test_sigterm.py)."""


class AllListening:
    """Tells the first process when all `count` listen: it prints the banner that says the server does (a client
    that connects at that line would otherwise find one process listening, and every connection it opens then would
    go to that one). Each process writes a byte to a pipe made before the fork once it listens; the first reads them.
    """

    def __init__(self, count: int) -> None:
        self.count = count
        self._read, self._write = os.pipe()

    async def listening(self, number: int, then: Callable[[], None]) -> None:
        """This process (the `number`-th) listens; the first calls `then` once every process does."""
        os.write(self._write, b".")
        if number != 0:
            return
        loop = asyncio.get_running_loop()
        seen = 0
        while seen < self.count:
            readable: asyncio.Future[None] = loop.create_future()
            loop.add_reader(self._read, _resolve, readable)
            try:
                await readable
            finally:
                loop.remove_reader(self._read)
            seen += len(os.read(self._read, self.count - seen))
        then()


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def supervise(count: int, child: Callable[[int], None]) -> int:
    """Fork `count` processes, the i-th running `child(i)` (which must not return: it ends its process), and wait for
    them; the exit status the parent should end with (0 when they were stopped by a signal and exited cleanly)."""
    pids: dict[int, int] = {}
    for number in range(count):
        pid = os.fork()
        if pid == 0:
            try:
                child(number)
            finally:
                os._exit(1)  # child() ends its process itself; reaching here means it failed
        pids[pid] = number
    stopping: list[int] = []

    def stop(signum: int, frame: FrameType | None) -> None:
        if not stopping:
            stopping.append(signum)
            _signal_all(pids, signal.SIGTERM)
            raise _Stopping  # out of a blocking os.wait(), into the bounded one

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, stop)
    log.info("queueflow: %d processes serving (pids %s)", count, ", ".join(map(str, pids)))
    status = 0
    deadline: float | None = None
    while pids:
        try:
            if stopping and deadline is None:
                deadline = time.monotonic() + STOP_BOUND
            pid, code = _wait(deadline)
            if pid == 0:  # the bound passed
                _signal_all(pids, signal.SIGKILL)
                deadline = time.monotonic() + STOP_BOUND
                continue
            if pid not in pids:
                continue
            number = pids.pop(pid)
            exit_code = os.waitstatus_to_exitcode(code)
            if not stopping:
                log.error("queueflow: process %d (pid %d) exited with %d: stopping the others", number, pid, exit_code)
                stopping.append(signal.SIGTERM)
                _signal_all(pids, signal.SIGTERM)
                status = exit_code or 1
            elif exit_code != 0 and status == 0:
                status = exit_code
        except _Stopping:
            continue
    return status


class _Stopping(Exception):
    """Raised by the parent's signal handler to end its blocking wait."""


def _wait(deadline: float | None) -> tuple[int, int]:
    """The next child to exit, as (pid, wait status); (0, 0) once `deadline` (a monotonic time) has passed."""
    if deadline is None:
        return os.wait()
    while True:
        pid, code = os.waitpid(-1, os.WNOHANG)
        if pid:
            return pid, code
        if time.monotonic() >= deadline:
            return 0, 0
        time.sleep(0.05)  # a supervisor's poll while its children stop, not a wait for a test's condition


def _signal_all(pids: dict[int, int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)
