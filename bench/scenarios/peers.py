"""The peers, PgQueuer and Procrastinate, each on a database of its own on the same PostgreSQL, in the same run.

They live in bench/.peers-venv (made here with pip from bench/peers/requirements.txt when missing), never in the
project's .venv; their scripts (bench/peers/*_run.py) print their rates as JSON.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from bench.database import BenchDatabase

PEERS = Path(__file__).resolve().parent.parent / "peers"
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
        "2",
        "--batch",
        "100",
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
