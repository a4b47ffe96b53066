"""Events and triggers (issue 44's targets), against the workflow scenarios' server. The triggers' jobs go to a
queue of their own that nothing drains, so only the starting is measured.

- **one event matching W triggers ÷ one batch of W**: `POST /v1/events` whose name W enabled job triggers match,
  against `POST /v1/jobs/batch` of W jobs, in alternating pairs; each request's time (its jobs are committed when it
  answers) and the server's CPU over it.
- **events/s ÷ single enqueues/s**: CLIENTS keep-alive clients, each sending events whose names match 2 of the
  tenant's `total` triggers (a random pair of `total / 2` names), against as many clients each enqueueing one job a
  request, in alternating pairs (one rate's drift on a shared machine falls on both sides of a pair's ratio); every
  request encoded before the clock starts, so the load generator stays light.
"""

from __future__ import annotations

import asyncio
import random
import time

import msgspec

from bench.httpclient import Connection, HttpError, close_all, connections
from bench.scenarios.workflow_growth import Pairs, Timed
from bench.server import TENANT_KEY, QueueFlowServer

QUEUE = "bench-events"
"""The started jobs' queue: the in-process runner serves `default` only."""
TASK = "event-bench"
CLIENTS = 8
WIDE = "bench.wide"
NARROW = "bench.narrow"


class EventsBench:
    def __init__(self, server: QueueFlowServer) -> None:
        self.server = server
        self.clients: list[Connection] = []

    async def __aenter__(self) -> EventsBench:
        self.clients = await connections("127.0.0.1", self.server.port, TENANT_KEY, CLIENTS)
        return self

    async def __aexit__(self, *_: object) -> None:
        await close_all(self.clients)

    async def _triggers(self, names: list[tuple[str, str]]) -> None:
        """One job trigger per (trigger name, event name), created over every client at once."""

        async def client(connection: Connection, mine: list[tuple[str, str]]) -> None:
            for name, event in mine:
                body = {"name": name, "event": event, "task": {"task_name": TASK, "queue_name": QUEUE}}
                await connection.post("/v1/triggers", body, 201, decode=False)

        await asyncio.gather(*(client(c, names[i :: len(self.clients)]) for i, c in enumerate(self.clients)))

    async def wide_versus_batch(self, width: int, pairs: int) -> Pairs:
        """`pairs` (after one unmeasured): an event that `width` triggers match, and a batch of `width` jobs."""
        await self._triggers([(f"wide-{n}", WIDE) for n in range(width)])
        connection = self.clients[0]
        event = msgspec.json.encode({"name": WIDE, "payload": {"order": 1}})
        batch = msgspec.json.encode(
            {"jobs": [{"task_name": TASK, "queue_name": QUEUE, "payload": {"order": 1}} for _ in range(width)]}
        )
        result = Pairs()
        for pair in range(-1, pairs):
            started, answer = await self._timed(connection, "/v1/events", event, 202)
            if len(msgspec.json.decode(answer)["started"]) != width:
                raise RuntimeError(f"an event matching {width} triggers started {answer[:200]!r}")
            batched, _ = await self._timed(connection, "/v1/jobs/batch", batch, 201)
            if pair >= 0:
                result.value[pair], result.baseline[pair] = started, batched
        return result

    async def _timed(self, connection: Connection, path: str, body: bytes, expect: int) -> tuple[Timed, bytes]:
        cpu, began = self.server.cpu_seconds(), time.perf_counter()
        status, answer = await connection.request("POST", path, body)
        seconds = time.perf_counter() - began
        if status != expect:
            raise HttpError(f"POST {path}: {status} {answer[:500]!r}")
        return Timed(seconds, self.server.cpu_seconds() - cpu), answer

    async def rates(self, total: int, requests: int, pairs: int) -> tuple[dict[int, float], dict[int, float]]:
        """`pairs` of (events/s, single enqueues/s) by pair, `requests` of each a pair over CLIENTS clients, the
        side that goes first alternating; each event matches 2 of the `total` triggers."""
        names = [f"{NARROW}.{n}" for n in range(max(1, total // 2))]
        await self._triggers([(f"narrow-{n}-{copy}", name) for n, name in enumerate(names) for copy in (0, 1)])
        per_client = max(1, requests // CLIENTS)
        pick = random.Random(44)
        events = [
            [
                c.encode("POST", "/v1/events", msgspec.json.encode({"name": pick.choice(names), "payload": {"n": i}}))
                for i in range(per_client)
            ]
            for c in self.clients
        ]
        job = msgspec.json.encode({"task_name": TASK, "queue_name": QUEUE, "payload": {"n": 1}})
        enqueues = [[c.encode("POST", "/v1/jobs", job)] * per_client for c in self.clients]
        event_rates: dict[int, float] = {}
        enqueue_rates: dict[int, float] = {}
        for pair in range(-1, pairs):  # the first, unmeasured, warms both paths
            if pair % 2:
                event_rate, enqueue_rate = await self._rate(events, 202), await self._rate(enqueues, 201)
            else:
                enqueue_rate, event_rate = await self._rate(enqueues, 201), await self._rate(events, 202)
            if pair >= 0:
                event_rates[pair], enqueue_rates[pair] = event_rate, enqueue_rate
        return event_rates, enqueue_rates

    async def _rate(self, requests: list[list[bytes]], expect: int) -> float:
        async def client(connection: Connection, mine: list[bytes]) -> int:
            for raw in mine:
                status, answer = await connection.exchange(raw)
                if status != expect:
                    raise HttpError(f"{raw.split(b' ', 2)[:2]}: {status} {answer[:300]!r}")
            return len(mine)

        began = time.perf_counter()
        done = await asyncio.gather(*(client(c, mine) for c, mine in zip(self.clients, requests, strict=True)))
        return sum(done) / (time.perf_counter() - began)
