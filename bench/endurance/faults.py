"""The pressures a phase puts on a system, each started at the phase's start and ended at its end (`begin` returns
the call that ends it). A PostgreSQL restart is a real one on the run's own cluster (`cluster`); on a server others
share, which may not be restarted, its effect on the system, every connection of its database gone at once, is
`pg_terminate_backend` of them all.

The faults' own connections are named `endurance-fault`, the probe's `endurance-probe`: the probe is never cut (a
real restart ends it too, and it opens another).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import asyncpg

from bench.endurance.probe import FAULTS, Probe
from bench.endurance.processes import Driver

READERS = 4
CUT_EVERY = 1.0

Stop = Callable[[], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Target:
    url: str
    hot: tuple[str, ...]
    probe: Probe
    worker: Driver
    restart: Callable[[], Awaitable[None]] | None
    """Restarts the server, returning once it accepts connections again; None on a shared server."""


async def _connect(url: str) -> asyncpg.Connection:
    return await asyncpg.connect(url, server_settings={"application_name": FAULTS})


async def _nothing() -> None:
    return None


async def hold(target: Target) -> Stop:
    """A forgotten `BEGIN`: an XID assigned (what pins the horizon for every table), then idle in transaction."""
    connection = await _connect(target.url)
    await connection.execute("BEGIN; SELECT txid_current();")

    async def stop() -> None:
        with contextlib.suppress(Exception):  # cut by a fault of the same phase
            await connection.close(timeout=5)

    return stop


async def _read(url: str, hot: tuple[str, ...], pause: float) -> None:
    """A reporting job: in REPEATABLE READ, read every row of each hot table, commit, start again."""
    await asyncio.sleep(pause)  # staggered: one reader's snapshot is always open
    connection = await _connect(url)
    try:
        while True:
            async with connection.transaction(isolation="repeatable_read"):
                for table in hot:
                    await connection.fetchval(f"SELECT sum(pg_column_size(t)) FROM {table} AS t")
    finally:
        await connection.close(timeout=5)


async def readers(target: Target) -> Stop:
    tasks = [asyncio.create_task(_read(target.url, target.hot, 0.1 * n)) for n in range(READERS)]

    async def stop() -> None:
        failed = [task.exception() for task in tasks if task.done() and not task.cancelled()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if failed and failed[0] is not None:
            raise RuntimeError(f"a REPEATABLE READ reader failed: {failed[0]!r}")

    return stop


async def restart(target: Target) -> Stop:
    """A PostgreSQL restart (`pg_ctl restart -m fast`), over before the phase's first window; on a shared server, its
    effect on the system instead: every connection of its database gone at once."""
    if target.restart is None:
        await target.probe.cut()
        return _nothing
    await target.probe.close()  # the restart ends it; the probe's next reading opens another
    await target.restart()
    return _nothing


async def kill_worker(target: Target) -> Stop:
    """SIGKILL of the worker process (an OOM kill); it is started again at once, as a process manager would."""
    target.worker.kill()
    return _nothing


async def churn(target: Target) -> Stop:
    """`pg_terminate_backend` of the system's connections every second."""

    async def cut() -> None:
        while True:
            await target.probe.cut()
            await asyncio.sleep(CUT_EVERY)

    task = asyncio.create_task(cut())

    async def stop() -> None:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    return stop


async def none(target: Target) -> Stop:
    return _nothing


FAULT: dict[str | None, Callable[[Target], Awaitable[Stop]]] = {
    "hold": hold,
    "readers": readers,
    "restart": restart,
    "kill-worker": kill_worker,
    "churn": churn,
    None: none,
}
