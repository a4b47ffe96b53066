"""The pool exhausted by slow requests, on a real `queueflow serve`: every statement it runs waits behind a lock
another session holds. Each request answers a clear 503 problem within the statement timeout plus its wait for a
connection (none hangs for as long as the lock lasts), health checks answer meanwhile, and once the lock is gone
the next request succeeds."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import httpx
import pytest

from tests import pg
from tests.e2e.live import live_server

KEYS = {"QUEUEFLOW_API_KEYS": "key-a=tenant-a", "QUEUEFLOW_WORKER_KEYS": "key-w"}
TENANT = {"Authorization": "Bearer key-a"}
POOL, TIMEOUT, REQUESTS = 2, 1.0, 20
BOUND = 5.0 + TIMEOUT + 2.0
"""The longest any request may take: the wait for a connection (5 s), its own statement timeout, and slack. A
request waits for a connection once: `GET /v1/queues` took a connection for its settings and then waited again
for one for its counts (9.1 s with 20 requests on 2 connections)."""


@pytest.fixture
async def database() -> AsyncIterator[str]:
    async with pg.fresh_database() as url:
        yield url


async def test_an_exhausted_pool_answers_503_problems_and_recovers(database: str) -> None:
    flags = ("--database-url", database, "--mode", "api", "--pool-size", str(POOL), "--statement-timeout", str(TIMEOUT))
    with live_server(*flags, env=KEYS) as base:
        async with httpx.AsyncClient(base_url=base, timeout=60) as http, pg.connect(database) as holder:
            assert (await http.post("/v1/jobs", json={"task_name": "t"}, headers=TENANT)).status_code == 201
            await holder.execute("BEGIN; LOCK TABLE queueflow.jobs IN ACCESS EXCLUSIVE MODE")

            async def timed(method: str, path: str, **kw: object) -> tuple[httpx.Response, float]:
                started = time.monotonic()
                response = await http.request(method, path, headers=TENANT, **kw)  # type: ignore[arg-type]
                return response, time.monotonic() - started

            # Interleaved, so a request's second turn for a connection would queue behind the others' first.
            slow = [
                timed("GET", "/v1/queues") if n % 2 else timed("POST", "/v1/jobs", json={"task_name": "t"})
                for n in range(REQUESTS)
            ]
            answered = asyncio.gather(*slow)
            health = (await http.get("/healthz")).status_code
            scrape, scraped_in = await timed("GET", "/metrics")
            answers = await answered
            await holder.execute("ROLLBACK")
            after = await http.post("/v1/jobs", json={"task_name": "t"}, headers=TENANT)
    assert health == 200
    # A scrape answers within a second, with the values it has (the queue depth it could not refresh).
    assert scrape.status_code == 200
    assert "queueflow_http_requests_total" in scrape.text
    assert scraped_in < 1.0, f"the scrape took {scraped_in:.2f} s"
    for response, took in answers:
        assert response.status_code == 503, response.text
        assert response.headers["content-type"].startswith("application/problem+json")
        assert response.json()["code"] == "unavailable"
        assert took < BOUND, f"a request took {took:.1f} s"
    assert after.status_code == 201
