"""DBOS Transact's side of the workflow scenarios, on its own database. Run by bench/.peers-venv's Python:

    dbos_run.py DATABASE_URL

It launches DBOS once, warms up, prints "ready", then reads one JSON command a line on stdin —
{"kind": "workflows" | "fan-out" | "chain", "size": N} — runs it and prints {"seconds": S}, until stdin closes.

DBOS's documented queue pattern (its queue tutorial, "Queue Example"): a queue registered after `DBOS.launch()` with
`DBOS.register_queue(name, worker_concurrency=10, polling_interval_sec=0.01)` — 0.01 s is its best interval on
2 cores (the 1.0 s default caps a queue at about `worker_concurrency` dequeues a second; below 0.01 it is CPU-bound
and no faster) — workflows started with `DBOS.enqueue_workflow(queue, workflow, *args)` and awaited with
`handle.get_result()` (polling at the same interval); steps are `@DBOS.step()` functions called from a
`@DBOS.workflow()`. The shapes, with the same number of no-op steps as QueueFlow's:
- workflows: N workflows enqueued, each calling 3 steps in turn; timed until the last result.
- fan-out 1 → W → 1: a workflow (started with `DBOS.start_workflow`, so that it holds none of the queue's 10
  places) runs a root step, enqueues W one-step child workflows on the queue, waits for all their results, then
  runs the join step — the tutorial's fan-out.
- chain: one enqueued workflow calling N steps in turn.
- children: a parent workflow (started with `DBOS.start_workflow`) enqueues N child workflows, each calling 10
  steps in turn, and awaits their handles — DBOS's child workflows, as issue 44's figure asks.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable

from dbos import DBOS, DBOSConfig

QUEUE = "bench"
CONCURRENCY = 10
POLL = 0.01
SMALL_CHAIN = 3
CHILD_CHAIN = 10


@DBOS.step()
def noop(n: int) -> int:
    return n


@DBOS.workflow()
def chain(length: int) -> int:
    for n in range(length):
        noop(n)
    return length


@DBOS.workflow()
def one_step(n: int) -> int:
    return noop(n)


@DBOS.workflow()
def fan_out(width: int) -> int:
    noop(-1)
    handles = [DBOS.enqueue_workflow(QUEUE, one_step, n) for n in range(width)]
    results = [handle.get_result(polling_interval_sec=POLL) for handle in handles]
    return noop(len(results))


@DBOS.workflow()
def parent_of_children(count: int) -> int:
    handles = [DBOS.enqueue_workflow(QUEUE, chain, CHILD_CHAIN) for _ in range(count)]
    return sum(handle.get_result(polling_interval_sec=POLL) for handle in handles)


def many(count: int) -> None:
    handles = [DBOS.enqueue_workflow(QUEUE, chain, SMALL_CHAIN) for _ in range(count)]
    for handle in handles:
        handle.get_result(polling_interval_sec=POLL)


SHAPES: dict[str, Callable[[int], object]] = {
    "workflows": many,
    "fan-out": lambda width: DBOS.start_workflow(fan_out, width).get_result(polling_interval_sec=POLL),
    "chain": lambda length: DBOS.enqueue_workflow(QUEUE, chain, length).get_result(polling_interval_sec=POLL),
    "children": lambda count: DBOS.start_workflow(parent_of_children, count).get_result(polling_interval_sec=POLL),
}


def main() -> None:
    config: DBOSConfig = {"name": "queueflow-bench", "system_database_url": sys.argv[1], "log_level": "WARNING"}
    DBOS(config=config)
    DBOS.launch()
    DBOS.register_queue(QUEUE, worker_concurrency=CONCURRENCY, polling_interval_sec=POLL)
    logging.getLogger("dbos").setLevel(logging.WARNING)
    for kind in SHAPES:  # warm: connections, statements, the queue's thread
        SHAPES[kind](3)
    print("ready", flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        began = time.perf_counter()
        SHAPES[command["kind"]](int(command["size"]))
        print(json.dumps({"seconds": time.perf_counter() - began}), flush=True)
    DBOS.destroy()


if __name__ == "__main__":
    main()
