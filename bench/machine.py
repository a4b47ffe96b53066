"""What a result was measured on: date, cores, memory, CPU model, load, PostgreSQL version, git commit."""

from __future__ import annotations

import datetime
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import asyncpg

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True, slots=True)
class Machine:
    date: str
    cores: int
    ram_gib: float
    cpu_model: str
    load_average: str
    postgres_version: str
    commit: str

    @property
    def stamp(self) -> str:
        """The date as a file name: "2026-12-02 15:41 UTC" → "2026-12-02-1541"."""
        day, time, _ = self.date.split()
        return f"{day}-{time.replace(':', '')}"


async def describe(database_url: str) -> Machine:
    connection = await asyncpg.connect(database_url)
    try:
        version: str = await connection.fetchval("SELECT version()")
    finally:
        await connection.close()
    return Machine(
        date=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        cores=os.cpu_count() or 0,
        ram_gib=_meminfo_kib("MemTotal") / 2**20,
        cpu_model=_cpu_model(),
        load_average=" ".join(f"{load:.2f}" for load in os.getloadavg()),
        postgres_version=version.split(" on ")[0],
        commit=_commit(),
    )


def _meminfo_kib(key: str) -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


def revision() -> tuple[str, bool] | None:
    """HEAD's commit, and whether tracked files differ from it (None: not a git checkout, or no git)."""
    try:
        commit = _git("rev-parse", "--short=12", "HEAD")
        dirty = bool(_git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit, dirty


def _commit() -> str:
    found = revision()
    if found is None:
        return "unknown"
    commit, dirty = found
    return commit + (" (with uncommitted changes)" if dirty else "")
