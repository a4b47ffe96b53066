"""What each of the claim's caches saves (`queueflow.stores.postgres.claim.caches`): a claim's wall time through the
store, with the cache and without it, in alternating blocks on one database, one connection each.

    python -m bench.claim_caches [scenario ...]     # idle1 idle10 short; all by default

Each scenario prints the median time of a claim with and without the cache and the median of the block-by-block
ratios (with / without), so a drift of the machine's speed cancels out.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from queueflow.clocks import TestClock
from queueflow.core.types import NewJob
from queueflow.engine import Engine
from queueflow.runtime.wakeups import Wakeups
from queueflow.stores.postgres import PostgresJobStore
from queueflow.stores.postgres.claim.caches import IdleQueues, QueueList, UnrestrictedQueues

from bench.database import BenchDatabase

BLOCKS, PER_BLOCK, WARM_UP = 16, 150, 50

Claim = Callable[[Engine], Awaitable[float]]


class NeverIdle(IdleQueues):
    def claimed(self, queues: QueueList, took_any: bool, announced: int) -> None:
        pass


class NeverUnrestricted(UnrestrictedQueues):
    def learnt(self, queues: QueueList, restricted: bool, heard: int | None) -> None:
        pass


def without(cache: str) -> Callable[[PostgresJobStore], None]:
    def take_out(store: PostgresJobStore) -> None:
        replacement: Any = {
            "_idle_queues": lambda: NeverIdle(store._notices),
            "_unrestricted_queues": lambda: NeverUnrestricted(store._heard),
        }[cache]()
        setattr(store, cache, replacement)

    return take_out


async def timed(work: Awaitable[object]) -> float:
    start = time.perf_counter()
    await work
    return time.perf_counter() - start


async def idle(engine: Engine, max_jobs: int) -> float:
    return await timed(engine.lease(["idle"], max_jobs=max_jobs))


async def short(engine: Engine) -> float:
    await engine.enqueue("t", NewJob(task_name="x", queue_name="short"))
    return await timed(engine.lease(["short"], max_jobs=10))


SCENARIOS: dict[str, tuple[str, str, Claim, Callable[[Engine], Awaitable[None]] | None]] = {
    "idle1": ("an empty lease of 1", "_idle_queues", lambda e: idle(e, 1), None),
    "idle10": ("an empty lease of 10", "_idle_queues", lambda e: idle(e, 10), None),
    "short": ("a lease of 10 that finds 1 job", "_unrestricted_queues", short, None),
}


async def scenario(url: str, name: str) -> None:
    title, cache, claim, setup = SCENARIOS[name]
    times: dict[bool, list[float]] = {True: [], False: []}
    async with (
        PostgresJobStore.from_url(url, pool_size=1, wakeups=Wakeups()) as cached,
        PostgresJobStore.from_url(url, pool_size=1, wakeups=Wakeups()) as plain,
    ):
        without(cache)(plain)
        clock = TestClock()
        engines = {True: Engine(cached, clock), False: Engine(plain, clock)}
        if setup is not None:
            await setup(engines[True])
        for engine in engines.values():
            for _ in range(WARM_UP):
                await claim(engine)
        for block in range(BLOCKS):
            for with_cache in (True, False) if block % 2 == 0 else (False, True):
                spent = [await claim(engines[with_cache]) for _ in range(PER_BLOCK)]
                times[with_cache].append(statistics.fmean(spent) * 1e6)
    ratios = [a / b for a, b in zip(times[True], times[False], strict=True)]
    print(
        f"{title} ({cache}): with {statistics.median(times[True]):,.0f} µs, without"
        f" {statistics.median(times[False]):,.0f} µs a claim; with/without {statistics.median(ratios):.2f}"
        f" (blocks {min(ratios):.2f}–{max(ratios):.2f})",
        flush=True,
    )


async def main(names: list[str]) -> None:
    for name in names:
        async with BenchDatabase(f"claim_caches_{name}") as database:
            database.migrate()
            await scenario(database.url, name)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:] or list(SCENARIOS)))
