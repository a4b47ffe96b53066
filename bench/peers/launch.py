"""The bench's side of its peers: installs bench/.peers-venv and runs the peer programs beside this module.

PgQueuer, Procrastinate and DBOS Transact live in bench/.peers-venv (made here with pip from requirements.txt when
missing, or again when it changes), never in the project's .venv; their programs (`*_run.py`) print their figures
as JSON, and run each on a database of its own on the same PostgreSQL, in the same run.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.database import BenchDatabase

PEERS = Path(__file__).resolve().parent
VENV = PEERS.parent / ".peers-venv"
PYTHON = VENV / "bin" / "python"
REQUIREMENTS = PEERS / "requirements.txt"
STAMP = VENV / ".installed"


def ensure_venv() -> Path:
    """The peers' interpreter, installed on first use (and again whenever requirements.txt changes)."""
    if STAMP.exists() and STAMP.read_text() == REQUIREMENTS.read_text():
        return PYTHON
    if not PYTHON.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    subprocess.run([str(PYTHON), "-m", "pip", "install", "--quiet", "-r", str(REQUIREMENTS)], check=True)
    STAMP.write_text(REQUIREMENTS.read_text())
    return PYTHON


async def _run(script: str, *args: str) -> dict[str, list[float]]:
    process = await asyncio.create_subprocess_exec(
        str(ensure_venv()), str(PEERS / script), *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"{script} failed:\n{err.decode()[-3000:]}")
    result: dict[str, list[float]] = json.loads(out.decode().strip().splitlines()[-1])
    return result


class PeerSession:
    """A peer program that stays up for a whole run (bench/peers/dbos_run.py): started and warmed once, outside
    any measurement, until it prints "ready"; then one JSON command a line in, one JSON answer a line out."""

    def __init__(self, script: str, log_path: Path, *args: str) -> None:
        self._argv = [script, *args]
        self._log_path = log_path
        self._process: asyncio.subprocess.Process | None = None

    async def start(self, within: float = 300) -> PeerSession:
        with self._log_path.open("ab") as log:
            self._process = await asyncio.create_subprocess_exec(
                str(ensure_venv()),
                str(PEERS / self._argv[0]),
                *self._argv[1:],
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=log,
            )
        if await self._line(within) != "ready":
            raise RuntimeError(f"{self._argv[0]} did not start:\n{self._log_path.read_text()[-3000:]}")
        return self

    async def ask(self, command: dict[str, object], within: float) -> dict[str, Any]:
        """The answer to `command`; TimeoutError after `within` seconds, the program then stopped (it may still
        be busy with the command, and would weigh on whatever runs next)."""
        assert self._process is not None
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps(command).encode() + b"\n")
        await self._process.stdin.drain()
        try:
            answer: dict[str, Any] = json.loads(await self._line(within))
        except TimeoutError:
            await self.stop(kill=True)
            raise
        return answer

    @property
    def running(self) -> bool:
        return self._process is not None

    async def _line(self, within: float) -> str:
        assert self._process is not None
        assert self._process.stdout is not None
        line = await asyncio.wait_for(self._process.stdout.readline(), within)
        if not line:
            raise RuntimeError(f"{self._argv[0]} exited:\n{self._log_path.read_text()[-3000:]}")
        return line.decode().strip()

    async def stop(self, *, kill: bool = False) -> None:
        if self._process is None:
            return
        process, self._process = self._process, None
        if kill and process.returncode is None:
            process.kill()
        if process.returncode is None:
            assert process.stdin is not None
            process.stdin.close()  # its loop ends at the end of its input
            try:
                await asyncio.wait_for(process.wait(), 30)
            except TimeoutError:
                process.kill()
                await process.wait()


PGQUEUER_SHAPE = (2, 500)
"""PgQueuer's drain shape, processes × batch: its best of 1/2/4 × 10/100/500 on the 2-core machine (issue 32; the
sweep of 2026-12-04, 20,000 jobs, 3 alternating repetitions, load ≈ 19, medians in jobs/s: 1×10 409, 1×100 2,522,
1×500 2,907, 2×10 944, 2×100 3,037, 2×500 3,686, 4×10 1,387, 4×100 3,100, 4×500 3,429 — 2 × 500 ahead, 2 × 100 and
4 × 100/500 within the noise behind it, batch 10 far behind; the earlier 2 × 100 came from an earlier sweep)."""


def pgqueuer_shape() -> str:
    processes, batch = PGQUEUER_SHAPE
    return f"{processes} processes × batch {batch}"


async def pgqueuer(url: str, jobs: int, repetitions: int) -> dict[str, list[float]]:
    """PgQueuer's enqueue and drain rates on the database at `url` (its tables are made on first use and emptied
    before each repetition). The bench runs one repetition at a time, in the rotation of the QueueFlow workers'
    drains, on one database for the whole run: dropping a database makes PostgreSQL checkpoint, which stalled the
    drain after it for seconds."""
    return await _run(
        "pgqueuer_run.py",
        url,
        "--jobs",
        str(jobs),
        "--processes",
        str(PGQUEUER_SHAPE[0]),
        "--batch",
        str(PGQUEUER_SHAPE[1]),
        "--repetitions",
        str(repetitions),
    )


async def procrastinate(jobs: int, repetitions: int) -> dict[str, list[float]]:
    async with BenchDatabase("procrastinate") as database:
        return await _run(
            "procrastinate_run.py",
            database.url,
            "--jobs",
            str(jobs),
            "--concurrency",
            "4",
            "--repetitions",
            str(repetitions),
        )
