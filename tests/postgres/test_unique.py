"""Unique jobs on PostgreSQL (README.md, "Unique jobs and debounce"): `queueflow.enqueue(... unique_rule => ...)`
as the HTTP route decides, and exactness under concurrency — 50 enqueues of one key at once, over HTTP (single and
batch) and SQL together, from 20 database sessions, leave exactly the jobs the rule allows.

How this was checked to fail without the mechanism: with the key lock taken out (stores/postgres/unique.py's
LOCK_KEYS made a no-op, and the function's `INSERT INTO queueflow.unique_keys` removed), the concurrency tests
below left 2–5 jobs of the key in 14 of 15 runs (bench/results/2026-12-07-unique-mechanism.md, "Exactness")."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
from httpx import ASGITransport, AsyncClient
from queueflow.api import create_app
from queueflow.clocks import SystemClock
from queueflow.settings import Settings
from queueflow.stores.postgres import PostgresJobStore

from tests import pg
from tests.moments import T

KEY = {"Authorization": "Bearer key-a"}
SETTINGS = Settings(api_keys={"key-a": T})
SQL = "SELECT queueflow.enqueue(tenant_id => $1, task_name => 'sync', payload => $2::jsonb, unique_rule => $3::jsonb)"
SESSIONS = 10  # SQL sessions; the HTTP side runs on the store's pool (10 more)
ENQUEUES = 50


@pytest.fixture
async def client(postgres_store: PostgresJobStore) -> AsyncIterator[AsyncClient]:
    app = create_app(SETTINGS, store=postgres_store, clock=SystemClock(), rng=random.Random(5))
    async with AsyncClient(transport=ASGITransport(app=app), base_url="http://testserver") as client:
        yield client


async def enqueue_sql(connection: asyncpg.Connection, rule: dict[str, Any], n: int) -> str:
    return str(await connection.fetchval(SQL, T, json.dumps({"n": n}), json.dumps(rule)))


# --- the SQL function decides as the route does ------------------------------------------------------------------


async def test_skip_and_replace_return_the_existing_id_and_error_raises_23505(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    async with pg.connect(postgres_url) as connection:
        first = await enqueue_sql(connection, {"key": "k"}, 1)
        assert await enqueue_sql(connection, {"key": "k"}, 2) == first
        assert await enqueue_sql(connection, {"key": "k", "on_conflict": "replace"}, 3) == first
        with pytest.raises(asyncpg.UniqueViolationError) as raised:
            await enqueue_sql(connection, {"key": "k", "on_conflict": "error"}, 4)
        assert raised.value.sqlstate == "23505"
        assert raised.value.detail == first
    job = await postgres_store.job_get(first)
    assert job is not None
    assert (job.unique_key, job.payload) == ("k", {"n": 3})


async def test_the_http_route_and_the_function_share_one_key(
    postgres_url: str, postgres_store: PostgresJobStore, client: AsyncClient
) -> None:
    over_http = (await client.post("/v1/jobs", json={"task_name": "t", "unique": {"key": "k"}}, headers=KEY)).json()
    async with pg.connect(postgres_url) as connection:
        assert await enqueue_sql(connection, {"key": "k"}, 1) == over_http["id"]
        by_sql = await enqueue_sql(connection, {"key": "other"}, 1)
    again = await client.post("/v1/jobs", json={"task_name": "t", "unique": {"key": "other"}}, headers=KEY)
    assert (again.status_code, again.headers["QueueFlow-Unique"], again.json()["id"]) == (200, "skipped", by_sql)


async def test_debounce_in_sql_moves_the_job_and_caps_it(postgres_url: str, postgres_store: PostgresJobStore) -> None:
    rule = {"key": "hook", "on_conflict": "replace", "debounce_seconds": 60, "debounce_max_seconds": 90}
    async with pg.connect(postgres_url) as connection:
        first = await enqueue_sql(connection, rule, 1)
        due = await connection.fetchval("SELECT scheduled_at - created_at FROM queueflow.jobs WHERE id = $1", first)
        assert due.total_seconds() == 60
        # As if the first enqueue had been 45 s ago: now + 60 s is past created_at + 90 s, so the cap holds.
        await connection.execute(
            "UPDATE queueflow.jobs SET created_at = created_at - interval '45 s' WHERE id = $1", first
        )
        assert await enqueue_sql(connection, rule, 2) == first
        row = await connection.fetchrow("SELECT payload, scheduled_at - created_at AS due FROM queueflow.jobs")
    assert json.loads(row["payload"]) == {"n": 2}
    assert row["due"].total_seconds() == 90


async def test_a_period_window_and_a_terminal_only_rule_in_sql(
    postgres_url: str, postgres_store: PostgresJobStore
) -> None:
    async with pg.connect(postgres_url) as connection:
        hourly = await enqueue_sql(connection, {"key": "report", "period_seconds": 3600}, 1)
        await connection.execute("UPDATE queueflow.jobs SET status = 'cancelled', completed_at = now()")
        assert await enqueue_sql(connection, {"key": "report", "period_seconds": 3600}, 2) == hourly
        done = {"key": "sync", "states": ["completed"]}
        first, second = await enqueue_sql(connection, done, 1), await enqueue_sql(connection, done, 2)
        assert first != second  # neither is completed
        await connection.execute(
            "UPDATE queueflow.jobs SET status = 'completed', completed_at = now() WHERE id = $1", second
        )
        assert await enqueue_sql(connection, done, 3) == second


@pytest.mark.parametrize(
    ("rule", "field"),
    [
        ({"key": ""}, "unique_rule.key"),
        ({"states": ["pending"]}, "unique_rule.key"),
        ({"key": "k", "states": []}, "unique_rule.states"),
        ({"key": "k", "states": ["done"]}, "unique_rule.states"),
        ({"key": "k", "states": ["pending"], "period_seconds": 60}, "unique_rule.states"),
        ({"key": "k", "period_seconds": 1.5}, "unique_rule.period_seconds"),
        ({"key": "k", "period_seconds": 31536001}, "unique_rule.period_seconds"),
        ({"key": "k", "on_conflict": "merge"}, "unique_rule.on_conflict"),
        ({"key": "k", "debounce_seconds": 5}, "unique_rule.debounce_seconds"),
        ({"key": "k", "on_conflict": "replace", "debounce_seconds": 0}, "unique_rule.debounce_seconds"),
        ({"key": "k", "on_conflict": "replace", "debounce_seconds": 5, "states": ["pending"]},
         "unique_rule.debounce_seconds"),
        ({"key": "k", "on_conflict": "replace", "debounce_seconds": 5, "debounce_max_seconds": 4},
         "unique_rule.debounce_max_seconds"),
        ({"key": "k", "debounce_max_seconds": 40}, "unique_rule.debounce_max_seconds"),
        ({"key": "k", "extra": 1}, "unique_rule.extra"),
    ],
)  # fmt: skip
async def test_a_bad_rule_raises_22023_naming_the_field(
    postgres_url: str, postgres_store: PostgresJobStore, rule: dict[str, Any], field: str
) -> None:
    async with pg.connect(postgres_url) as connection:
        with pytest.raises(asyncpg.InvalidParameterValueError) as raised:
            await enqueue_sql(connection, rule, 1)
        assert await connection.fetchval("SELECT count(*) FROM queueflow.jobs") == 0
    assert raised.value.column_name == field


async def test_debounce_beside_a_delay_is_refused_in_sql(postgres_url: str, postgres_store: PostgresJobStore) -> None:
    rule = json.dumps({"key": "k", "on_conflict": "replace", "debounce_seconds": 5})
    async with pg.connect(postgres_url) as connection:
        with pytest.raises(asyncpg.InvalidParameterValueError) as raised:
            await connection.fetchval(
                "SELECT queueflow.enqueue(tenant_id => $1, task_name => 't', delay_seconds => 3,"
                " unique_rule => $2::jsonb)",
                T,
                rule,
            )
    assert raised.value.column_name == "delay_seconds"


# --- exact under concurrency ---------------------------------------------------------------------------------------

RULES = {
    "skip": {"key": "hot"},
    "error": {"key": "hot", "on_conflict": "error"},
    "replace": {"key": "hot", "on_conflict": "replace"},
    "debounce": {"key": "hot", "on_conflict": "replace", "debounce_seconds": 30},
    "period": {"key": "hot", "period_seconds": 3600},
}


@pytest.mark.parametrize("name", list(RULES))
async def test_fifty_concurrent_enqueues_of_one_key_over_http_and_sql_leave_one_job(
    postgres_url: str, postgres_store: PostgresJobStore, client: AsyncClient, name: str
) -> None:
    rule = RULES[name]
    connections = [await asyncpg.connect(postgres_url) for _ in range(SESSIONS)]
    try:
        await _warm(client, connections)
        start = asyncio.Event()
        turns = [asyncio.Lock() for _ in connections]  # a session runs one statement at a time

        async def over_sql(n: int) -> str | None:
            await start.wait()
            async with turns[n % SESSIONS]:
                try:
                    return await enqueue_sql(connections[n % SESSIONS], rule, n)
                except asyncpg.UniqueViolationError:
                    return None

        async def over_http(n: int) -> str | None:
            await start.wait()
            if n % 5 == 0:  # a batch: the key beside a key of its own
                body = {"jobs": [{"task_name": "sync", "payload": {"n": n}, "unique": rule},
                                 {"task_name": "sync", "unique": {"key": f"own-{n}"}}]}  # fmt: skip
                response = await client.post("/v1/jobs/batch", json=body, headers=KEY)
                return None if response.status_code == 409 else str(response.json()["jobs"][0]["id"])
            response = await client.post(
                "/v1/jobs", json={"task_name": "sync", "payload": {"n": n}, "unique": rule}, headers=KEY
            )
            assert response.status_code in (200, 201, 409), response.text
            return None if response.status_code == 409 else str(response.json()["id"])

        tasks = [asyncio.create_task(over_sql(n) if n % 2 else over_http(n)) for n in range(ENQUEUES)]
        await asyncio.sleep(0)  # every task waits at the start line
        start.set()
        answers = await asyncio.gather(*tasks)
        rows = await connections[0].fetch("SELECT id, payload FROM queueflow.jobs WHERE unique_key = 'hot'")
    finally:
        for connection in connections:
            await connection.close()
    assert len(rows) == 1, f"{len(rows)} jobs of one key under {name}"
    (job_id,) = [row["id"] for row in rows]
    answered = {answer for answer in answers if answer is not None}
    assert answered == {job_id}
    if name == "error":
        assert answers.count(None) == ENQUEUES - 1
    else:
        assert None not in answers


async def _warm(client: AsyncClient, connections: list[asyncpg.Connection]) -> None:
    """Open the store's pool and prepare the statements first, so the race is between enqueues, not connects."""
    await asyncio.gather(
        *(client.post("/v1/jobs", json={"task_name": "w", "unique": {"key": f"warm-{i}"}}, headers=KEY)
          for i in range(SESSIONS)),
        *(enqueue_sql(connection, {"key": f"warm-sql-{i}"}, 0) for i, connection in enumerate(connections)),
    )  # fmt: skip
