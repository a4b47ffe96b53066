"""`enqueue_in` / `enqueue_in_sync`: the SDK's transactional enqueue through the caller's own connection, with
every driver it names (asyncpg, psycopg 3 sync and async, SQLAlchemy Core and ORM sessions, sync and async)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import asyncpg
import psycopg
import pytest
from queueflow.stores.postgres.url import asyncpg_dsn
from queueflow_client import Backoff
from queueflow_client.transactional import enqueue_in, enqueue_in_sync
from sqlalchemy import create_engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool

from tests import pg

AT = datetime(2031, 5, 6, 7, 8, 9, tzinfo=UTC)
OPTIONS: dict[str, Any] = {
    "queue_name": "mail",
    "priority": 9,
    "run_at": AT,
    "max_retries": 1,
    "backoff": Backoff("linear", 2.5, 10.0, False),
    "timeout_seconds": 12,
    "metadata": {"order": 42, "name": "Ada ✓"},
    "concurrency_key": "user-42",
}


def psycopg_url(url: str) -> str:
    return asyncpg_dsn(url)


def sqlalchemy_url(url: str, driver: str) -> str:
    return asyncpg_dsn(url).replace("postgresql://", f"postgresql+{driver}://", 1)


async def stored(url: str, job_id: str) -> asyncpg.Record | None:
    async with pg.connect(url) as connection:
        return await connection.fetchrow(
            "SELECT tenant_id, task_name, payload::text, queue_name, priority, scheduled_at, max_retries,"
            " config::text, timeout_seconds, metadata::text FROM queueflow.jobs WHERE id = $1",
            job_id,
        )


async def check(url: str, job_id: str, tenant: str) -> None:
    row = await stored(url, job_id)
    assert row is not None
    assert dict(row) == {
        "tenant_id": tenant,
        "task_name": "send",
        "payload": '{"to": "ada@example.com"}',
        "queue_name": "mail",
        "priority": 9,
        "scheduled_at": AT,
        "max_retries": 1,
        # Where the server keeps a job's concurrency_key, so that a key_concurrency_limit holds these jobs too.
        "config": '{"backoff": {"jitter": false, "strategy": "linear", "max_seconds": 10.0, "base_seconds": 2.5},'
        ' "concurrency_key": "user-42"}',
        "timeout_seconds": 12.0,
        "metadata": '{"name": "Ada ✓", "order": 42}',
    }


PAYLOAD = {"to": "ada@example.com"}


async def test_asyncpg(postgres_url: str) -> None:
    async with pg.connect(postgres_url) as connection:
        async with connection.transaction():
            job_id = await enqueue_in(connection, "send", PAYLOAD, tenant_id="t-asyncpg", **OPTIONS)
        transaction = connection.transaction()
        await transaction.start()
        dropped = await enqueue_in(connection, "send", tenant_id="t-asyncpg")
        await transaction.rollback()
    await check(postgres_url, job_id, "t-asyncpg")
    assert await stored(postgres_url, dropped) is None


async def test_psycopg_async(postgres_url: str) -> None:
    async with await psycopg.AsyncConnection.connect(psycopg_url(postgres_url)) as connection:
        job_id = await enqueue_in(connection, "send", PAYLOAD, tenant_id="t-psycopg-async", **OPTIONS)
        await connection.commit()
        async with connection.cursor() as cursor:
            dropped = await enqueue_in(cursor, "send", tenant_id="t-psycopg-async")
        await connection.rollback()
    await check(postgres_url, job_id, "t-psycopg-async")
    assert await stored(postgres_url, dropped) is None


async def test_psycopg_sync(postgres_url: str) -> None:
    with psycopg.connect(psycopg_url(postgres_url)) as connection:
        job_id = enqueue_in_sync(connection, "send", PAYLOAD, tenant_id="t-psycopg", **OPTIONS)
        connection.commit()
        with connection.cursor() as cursor:
            dropped = enqueue_in_sync(cursor, "send", tenant_id="t-psycopg")
        connection.rollback()
    await check(postgres_url, job_id, "t-psycopg")
    assert await stored(postgres_url, dropped) is None


async def test_sqlalchemy_async_connection_and_session(postgres_url: str) -> None:
    engine = create_async_engine(sqlalchemy_url(postgres_url, "asyncpg"), poolclass=NullPool)
    try:
        async with engine.begin() as connection:
            job_id = await enqueue_in(connection, "send", PAYLOAD, tenant_id="t-sa-async", **OPTIONS)
        async with AsyncSession(engine) as session:
            in_session = await enqueue_in(session, "send", PAYLOAD, tenant_id="t-sa-async", **OPTIONS)
            await session.commit()
            dropped = await enqueue_in(session, "send", tenant_id="t-sa-async")
            await session.rollback()
    finally:
        await engine.dispose()
    await check(postgres_url, job_id, "t-sa-async")
    await check(postgres_url, in_session, "t-sa-async")
    assert await stored(postgres_url, dropped) is None


async def test_sqlalchemy_sync_connection_and_session(postgres_url: str) -> None:
    engine = create_engine(sqlalchemy_url(postgres_url, "psycopg"), poolclass=NullPool)
    try:
        with engine.begin() as connection:
            job_id = enqueue_in_sync(connection, "send", PAYLOAD, tenant_id="t-sa", **OPTIONS)
        with Session(engine) as session:
            in_session = enqueue_in_sync(session, "send", PAYLOAD, tenant_id="t-sa", **OPTIONS)
            session.commit()
            dropped = enqueue_in_sync(session, "send", tenant_id="t-sa")
            session.rollback()
    finally:
        engine.dispose()
    await check(postgres_url, job_id, "t-sa")
    await check(postgres_url, in_session, "t-sa")
    assert await stored(postgres_url, dropped) is None


async def test_a_repeated_key_returns_the_original_id(postgres_url: str) -> None:
    async with pg.connect(postgres_url) as connection:
        first = await enqueue_in(connection, "send", tenant_id="t-key", idempotency_key="order-7")
        again = await enqueue_in(connection, "other", {"x": 1}, tenant_id="t-key", idempotency_key="order-7")
    assert again == first


async def test_a_bad_value_is_the_drivers_error_naming_the_field(postgres_url: str) -> None:
    async with pg.connect(postgres_url) as connection:
        with pytest.raises(asyncpg.InvalidParameterValueError, match=r"priority: must be between -1000 and 1000"):
            await enqueue_in(connection, "send", tenant_id="t-bad", priority=5000)
    with psycopg.connect(psycopg_url(postgres_url)) as sync, pytest.raises(psycopg.errors.InvalidParameterValue):
        enqueue_in_sync(sync, "send", tenant_id="t-bad", backoff={"strategy": "sometimes"})
    with (
        psycopg.connect(psycopg_url(postgres_url)) as sync,
        pytest.raises(psycopg.errors.InvalidParameterValue, match=r"concurrency_key: must be 1–200 characters long"),
    ):
        enqueue_in_sync(sync, "send", tenant_id="t-bad", concurrency_key="")
    engine = create_engine(sqlalchemy_url(postgres_url, "psycopg"), poolclass=NullPool)
    try:
        with engine.begin() as connection, pytest.raises(DBAPIError, match=r"queue_name: must match"):
            enqueue_in_sync(connection, "send", tenant_id="t-bad", queue_name="not a queue")
    finally:
        engine.dispose()


async def test_an_unknown_connection_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="asyncpg, psycopg or SQLAlchemy"):
        await enqueue_in(object(), "send", tenant_id="t")
    with pytest.raises(TypeError, match="psycopg or SQLAlchemy"):
        enqueue_in_sync(object(), "send", tenant_id="t")
