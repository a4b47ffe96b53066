"""The driver programs as the harness runs them: one process each, supervised as a process manager would (a worker
that dies is started again after a pause, and counted), their JSON lines handed to a callback, their stderr kept in a
log file."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.server import ROOT

RESTART_PAUSE = 1.0
"""Before a crashed driver starts again (systemd's RestartSec): a driver that dies at once does not spin."""
READY_WITHIN = 120.0
"""A driver's imports on a 2-core machine shared with busy processes take seconds; this is a hang guard."""


class Driver:
    """One driver program. `restart`: started again whenever it exits unasked (a worker); otherwise its exit before
    `stop` is an error the run reports (a producer: its sequence numbers would start again at 0)."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        on_line: Callable[[dict[str, Any]], None],
        *,
        restart: bool,
    ) -> None:
        self.name, self._argv, self._log_path, self._on_line = name, list(argv), log_path, on_line
        self._restart = restart
        self.crashes = 0
        """Exits nobody asked for (kills by the harness not counted)."""
        self.failure: str | None = None
        """Why the run cannot go on with this driver (a producer that exited, reports that could not be read)."""
        self._process: asyncio.subprocess.Process | None = None
        self._watching: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stopping = self._killed = False

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    async def start(self) -> Driver:
        """Started and READY (its imports done); RuntimeError, with its log's path, if it exits first."""
        await self._spawn()
        deadline = asyncio.get_running_loop().time() + READY_WITHIN
        while not self._ready.is_set():
            if self.failure or self.crashes:
                raise RuntimeError(f"{self.name} exited at start; its log: {self._log_path}")
            if asyncio.get_running_loop().time() > deadline:
                raise RuntimeError(f"{self.name} was not ready in {READY_WITHIN:g} s; its log: {self._log_path}")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ready.wait(), 0.2)
        return self

    async def _spawn(self) -> None:
        self._ready.clear()
        with self._log_path.open("ab") as log:
            self._process = await asyncio.create_subprocess_exec(
                *self._argv,
                cwd=ROOT,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=log,
                limit=2**24,  # a report line of a busy worker carries thousands of entries
            )
        self._watching = asyncio.create_task(self._watch(self._process))

    async def _watch(self, process: asyncio.subprocess.Process) -> None:
        try:
            await self._follow(process)
        except Exception as exc:  # a bad line or a failing callback: the run must hear of it, not lose it
            self.failure = f"{self.name}: reading its reports failed: {exc!r}"
            raise

    async def _follow(self, process: asyncio.subprocess.Process) -> None:
        """Hand its reports on until it exits; then start it again (a worker) or record why the run cannot go on."""
        assert process.stdout is not None
        while line := await process.stdout.readline():
            if not line.startswith(b"{"):
                continue  # a library's print, not a report
            message = json.loads(line)
            if message.get("ready"):
                self._ready.set()
            else:
                self._on_line(message)
        await process.wait()
        if self._stopping:
            return
        if not self._restart:
            self.failure = f"{self.name} exited ({process.returncode}); its log: {self._log_path}"
            return
        if not self._killed:
            self.crashes += 1
            await asyncio.sleep(RESTART_PAUSE)
        self._killed = False
        if not self._stopping:
            await self._spawn()

    async def send(self, message: dict[str, Any]) -> None:
        assert self._process is not None
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps(message).encode() + b"\n")
        await self._process.stdin.drain()

    def kill(self) -> None:
        """SIGKILL, then started again at once, as a process manager restarts a worker killed by the OOM killer."""
        if self._process is not None and self._process.returncode is None:
            self._killed = True
            self._process.send_signal(signal.SIGKILL)

    async def stop(self, within: float = 40) -> None:
        """End of input (a producer finishes what is in flight) and SIGTERM (a worker drains), then SIGKILL."""
        self._stopping = True
        process = self._process
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()
        if process.returncode is None and self._restart:
            process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), within)
        except TimeoutError:
            process.kill()
            await process.wait()
        if self._watching is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._watching, 5)
