"""The systems an endurance run measures, each on a database of its own: how to set it up, the argv of its producer
and worker, which of the database's relations are its own, which are its hot tables (the REPEATABLE READ readers
scan these, and their dead tuples and size are plotted), and how to count its unfinished jobs."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.database import BenchDatabase
from bench.endurance.profiles import Profile
from bench.peers import launch
from bench.server import TENANT_KEY, WORKER_KEY, QueueFlowServer

QUEUE = "endurance"
CONCURRENCY = 32
"""Worker slots, every system: the issue's setup."""


@dataclass(frozen=True, slots=True)
class System:
    name: str
    relations: str
    """A SQL condition on `n.nspname` (schema) and `c.relname`: the system's own tables."""
    hot: tuple[str, ...]
    reset: tuple[str, ...]
    """Truncated between runs: every run starts from empty tables, as on a new database."""
    unfinished: str
    """SELECT count(*) of jobs not finished (after the drain: stuck or lost inside the system)."""


QUEUEFLOW = System(
    name="QueueFlow",
    relations="n.nspname = 'queueflow' AND c.relname <> 'alembic_version'",
    hot=("queueflow.jobs",),
    reset=("queueflow.jobs", "queueflow.claim_turns"),
    unfinished="SELECT count(*) FROM queueflow.jobs WHERE status IN ('pending', 'running', 'retrying')",
)
PGQUEUER = System(
    name="PgQueuer",
    relations="n.nspname = 'public' AND c.relname LIKE 'pgqueuer%'",
    hot=("pgqueuer",),
    reset=("pgqueuer", "pgqueuer_log", "pgqueuer_statistics"),
    unfinished="SELECT count(*) FROM pgqueuer",  # a finished job leaves the table (its row goes to pgqueuer_log)
)
PROCRASTINATE = System(
    name="Procrastinate",
    relations="n.nspname = 'public' AND c.relname LIKE 'procrastinate%'",
    hot=("procrastinate_jobs",),
    reset=("procrastinate_jobs", "procrastinate_events"),
    unfinished="SELECT count(*) FROM procrastinate_jobs WHERE status IN ('todo', 'doing')",
)
SYSTEMS = {system.name.lower(): system for system in (QUEUEFLOW, PGQUEUER, PROCRASTINATE)}
"""By the name `--system` takes (and a part's file starts with), in the order the report shows them."""


def measured_by(profile: Profile) -> list[System]:
    """What a run of `profile` measures unless told which systems (`--system`)."""
    return list(SYSTEMS.values()) if profile.peers else [QUEUEFLOW]


@dataclass(frozen=True, slots=True)
class Deployment:
    """A system set up on its database: what starts its producer and its worker."""

    system: System
    database: BenchDatabase
    producer: list[str]
    worker: list[str]


@asynccontextmanager
async def deploy(system: System, logs: Path, lease_seconds: float, admin_url: str) -> AsyncIterator[Deployment]:
    """`system` on a new database of the server `admin_url` names."""
    async with BenchDatabase(f"endurance_{system.name.lower()}", admin_url) as database:
        if system is QUEUEFLOW:
            database.migrate()
            with QueueFlowServer(database.url, logs / "queueflow-server.log") as server:
                url = f"http://127.0.0.1:{server.port}"
                driver = [sys.executable, "-m", "bench.endurance.queueflow_driver"]
                yield Deployment(
                    system,
                    database,
                    [*driver, "produce", url, TENANT_KEY, QUEUE],
                    [
                        *driver,
                        "work",
                        url,
                        WORKER_KEY,
                        QUEUE,
                        f"--concurrency={CONCURRENCY}",
                        f"--lease={lease_seconds:g}",
                    ],
                )
            return
        driver = [str(launch.ensure_venv()), "-m", f"bench.peers.{system.name.lower()}_endurance"]
        installing = await asyncio.create_subprocess_exec(
            *driver, "install", database.url, cwd=launch.PEERS.parent.parent
        )
        if await installing.wait() != 0:
            raise RuntimeError(f"{system.name}: installing its schema failed")
        yield Deployment(
            system,
            database,
            [*driver, "produce", database.url],
            [*driver, "work", database.url, f"--concurrency={CONCURRENCY}"],
        )
