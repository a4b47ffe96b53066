"""One scenario alone, on a database and server of its own: what a scenario module's `main` runs
(`python -m bench.scenarios.<name> [--profile full]`), printing its description and how long it took."""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from bench.database import BenchDatabase
from bench.profiles import PROFILES, Profile
from bench.server import QueueFlowServer

Scenario = Callable[[Profile, argparse.Namespace, QueueFlowServer, BenchDatabase], Awaitable[str]]


def run_alone(purpose: str, parser: argparse.ArgumentParser, scenario: Scenario) -> None:
    """Parse `parser`'s arguments (with `--profile`, default smoke), then run `scenario` on a server of its own."""
    parser.add_argument("--profile", choices=sorted(PROFILES), default="smoke")
    args = parser.parse_args()
    profile = PROFILES[args.profile]

    async def run() -> None:
        async with BenchDatabase(purpose) as database:
            database.migrate()
            await database.connect()
            server = QueueFlowServer(database.url, Path(tempfile.mkdtemp()) / "server.log", profile.server_args)
            server.start()
            try:
                began = time.perf_counter()
                described = await scenario(profile, args, server, database)
                print(f"{described} (the scenario took {time.perf_counter() - began:.1f} s)")
            finally:
                server.stop()

    asyncio.run(run())
