"""Unique jobs and debounce against a live server (issue 43): batch enqueue with `unique` beside the plain batch
enqueue of the same repetition, and a burst of debounced enqueues that must run exactly one job per key.

- `enqueue_unique`: 1,000-job requests, each job with `unique: {"key": ...}` (`skip`), 1,000 distinct keys a
  request and client — a client's first request creates one job per key, its later ones meet them all (skips).
  `fresh=True`: every job a key never seen (each a lock and an insert).
- `debounce_burst`: `keys` × `rounds` enqueues, each client its own share of the keys in order, each enqueue
  `on_conflict: "replace"` with `debounce_seconds`; then, once the last is due, the workers drain the queue. Exactly
  `keys` jobs must run, each with its key's last payload (`round: rounds - 1`).
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass

import msgspec

from bench.httpclient import Connection
from bench.scenarios.http_throughput import CLIENTS, DRAIN_BATCH, ENQUEUE_BATCH, QUEUE, HttpRun, Throughput

DEBOUNCE_KEYS = 100
DEBOUNCE_QUEUE = "debounced"


def unique_body(keys: list[str]) -> bytes:
    return msgspec.json.encode(
        {
            "jobs": [
                {"task_name": "noop", "queue_name": QUEUE, "payload": {"i": i}, "unique": {"key": key}}
                for i, key in enumerate(keys)
            ]
        }
    )


async def enqueue_unique(throughput: Throughput, rows: int, *, fresh: bool = False) -> HttpRun:
    """As `Throughput.enqueue`, each job with a `unique` rule (`skip`). Each client enqueues for customers of its
    own (as independent applications would: one key's enqueues from several clients at once wait for each other,
    which is the rule's point, not its cost): 1,000 distinct keys in each of its 1,000-job requests, the same
    1,000 in every request (its first creates their jobs, the others meet them), or, `fresh`, new ones each time.
    Keys never seen by an earlier phase, so every repetition starts alike."""
    await throughput.database.reset_jobs()
    await throughput.database.vacuum()
    run = secrets.token_hex(4)
    plans: list[list[bytes]] = [[] for _ in range(CLIENTS)]
    for number, start in enumerate(range(0, rows, ENQUEUE_BATCH)):
        client = number % CLIENTS
        prefix = f"{run}-c{client}-r{number}" if fresh else f"{run}-c{client}"
        size = min(ENQUEUE_BATCH, rows - start)
        plans[client].append(unique_body([f"{prefix}-customer-{i}" for i in range(size)]))

    async def client(connection: Connection, plan: list[bytes]) -> None:
        for body in plan:
            await connection.post("/v1/jobs/batch", body, 201, decode=False)

    async with throughput.phase() as phase:
        await asyncio.gather(*(client(c, plan) for c, plan in zip(throughput.tenants, plans, strict=True)))
    return phase.run(rows)


@dataclass(frozen=True, slots=True)
class Burst:
    enqueues: int
    keys: int
    ran: int
    """Jobs the workers ran."""
    last_payloads: int
    """Of those, how many carried their key's last payload."""
    stored: int
    """Jobs of the queue in the table afterwards (every one run: as many as ran)."""
    seconds: float
    """How long the enqueues took."""

    @property
    def exact(self) -> bool:
        return self.ran == self.keys == self.last_payloads == self.stored


async def debounce_burst(throughput: Throughput, *, keys: int, rounds: int, debounce_seconds: float) -> Burst:
    database, tenants, workers = throughput.database, throughput.tenants, throughput.workers
    await database.reset_jobs()
    share = [list(range(number, keys, CLIENTS)) for number in range(CLIENTS)]
    # A key's job must not come due during the burst: no cap short of the whole burst.
    rule = {"on_conflict": "replace", "debounce_seconds": debounce_seconds, "debounce_max_seconds": 86_400}

    async def client(connection: Connection, mine: list[int]) -> None:
        for round_ in range(rounds):
            body = {
                "jobs": [
                    {"task_name": "noop", "queue_name": DEBOUNCE_QUEUE, "payload": {"key": key, "round": round_},
                     "unique": {"key": f"hook-{key}", **rule}}
                    for key in mine
                ]
            }  # fmt: skip
            await connection.post("/v1/jobs/batch", body, 201, decode=False)

    loop = asyncio.get_running_loop()
    began = loop.time()
    await asyncio.gather(*(client(connection, mine) for connection, mine in zip(tenants, share, strict=True)))
    seconds = loop.time() - began
    # A bench, not a test: wait out the debounce (and a safety poll's worth), then drain what came due.
    await asyncio.sleep(debounce_seconds + 1.5)
    ran, last = 0, 0
    lease = msgspec.json.encode({"queues": [DEBOUNCE_QUEUE], "max_jobs": DRAIN_BATCH, "lease_seconds": 60})
    while jobs := (await workers[0].post("/v1/worker/lease", lease))["jobs"]:
        complete = [{"id": job["id"], "lease_token": job["lease_token"], "result": None} for job in jobs]
        await workers[0].post("/v1/worker/ack", {"complete": complete})
        ran += len(jobs)
        last += sum(job["payload"]["round"] == rounds - 1 for job in jobs)
    stored = await database.db.fetchval("SELECT count(*) FROM queueflow.jobs WHERE queue_name = $1", DEBOUNCE_QUEUE)
    return Burst(keys * rounds, keys, ran, last, stored, seconds)


def main() -> None:
    """This scenario alone, on a server of its own: `python -m bench.scenarios.unique [--profile smoke]`."""
    import argparse
    import tempfile
    from pathlib import Path

    from bench import stats
    from bench.database import BenchDatabase
    from bench.profiles import PROFILES
    from bench.server import QueueFlowServer

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=sorted(PROFILES), default="smoke")
    parser.add_argument("--rows", type=int, help="rows per enqueue phase (default: the profile's)")
    parser.add_argument("--repetitions", type=int, help="default: the profile's")
    args = parser.parse_args()
    profile = PROFILES[args.profile]
    rows, repetitions = args.rows or profile.enqueue_rows, args.repetitions or profile.repetitions

    async def run() -> None:
        async with BenchDatabase("unique") as database:
            database.migrate()
            await database.connect()
            server = QueueFlowServer(database.url, Path(tempfile.mkdtemp()) / "server.log", profile.server_args)
            server.start()
            throughput = await Throughput(server, database, profile.session_settle).open()
            try:
                await throughput.warm_up(profile.warm_up_jobs)
                plain, keyed, fresh = [], [], []
                for _ in range(repetitions):
                    plain.append((await throughput.enqueue(rows)).rate)
                    keyed.append((await enqueue_unique(throughput, rows)).rate)
                    fresh.append((await enqueue_unique(throughput, rows, fresh=True)).rate)
                for name, rates in (("unique, 1,000 keys", keyed), ("unique, a new key a row", fresh)):
                    ratios = [rate / base for rate, base in zip(rates, plain, strict=True)]
                    print(
                        f"{name}: {stats.median(rates):,.0f} rows/s ÷ plain {stats.median(plain):,.0f}"
                        f" = {stats.median(ratios):.2f} (each repetition: {', '.join(f'{r:.2f}' for r in ratios)})"
                    )
                burst = await debounce_burst(
                    throughput,
                    keys=DEBOUNCE_KEYS,
                    rounds=profile.debounce_rounds,
                    debounce_seconds=profile.debounce_seconds,
                )
                print(f"debounce: {burst}, exact: {burst.exact}")
            finally:
                await throughput.close()
                server.stop()

    asyncio.run(run())


if __name__ == "__main__":
    main()
