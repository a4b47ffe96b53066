"""Nothing raw leaves the store: bad values are ValidationError, an absent database is StoreUnavailable."""

from __future__ import annotations

import socket
import uuid

import asyncpg
import pytest
from queueflow.clocks import TestClock
from queueflow.core.errors import StoreUnavailable, ValidationError
from queueflow.core.types import Completion, Failure, Heartbeat, JobStatus, NewJob
from queueflow.stores.postgres import PostgresJobStore
from queueflow.stores.postgres.errors import translate

from tests import pg
from tests.moments import START, T
from tests.postgres.helpers import engine_on, row


async def count_rows(url: str) -> int:
    async with pg.connect(url) as connection:
        return int(await connection.fetchval("SELECT count(*) FROM queueflow.jobs"))


@pytest.mark.parametrize(
    "bad",
    [
        {"task_name": "a\x00b"},
        {"payload": {"s": "nul\x00"}},
        {"payload": {"nul\x00key": 1}},
        {"metadata": {"k": "\ud800"}},
        {"queue_name": "q\x00"},
        {"idempotency_key": "k\x00"},
        {"priority": 2**40},  # passes our checks, fails in the driver: translated all the same
    ],
)
async def test_unstorable_rows_are_validation_errors_and_insert_nothing(
    postgres_url: str, postgres_store: PostgresJobStore, bad: dict[str, object]
) -> None:
    with pytest.raises(ValidationError):
        await postgres_store.job_insert_many([row(), row(**bad)])
    assert await count_rows(postgres_url) == 0


async def test_unstorable_results_and_errors_change_nothing(postgres_store: PostgresJobStore) -> None:
    engine = engine_on(postgres_store, TestClock(START))
    await engine.enqueue(T, NewJob(task_name="t"))
    (job,) = await engine.lease(["default"])
    token = job.lease_token or ""
    with pytest.raises(ValidationError):
        await postgres_store.job_complete_many([Completion(job.id, token, {"r": "\x00"})], now=START)
    with pytest.raises(ValidationError):
        await postgres_store.job_complete_many([Completion(job.id, token, 10**5000)], now=START)
    with pytest.raises(ValidationError):
        await postgres_store.job_fail_many([Failure(job.id, token, "err\x00or", None)], now=START)
    assert await postgres_store.job_get(job.id) == job


async def test_unstorable_keys_match_nothing(postgres_store: PostgresJobStore) -> None:
    for key in ("job\x00", "job\ud800"):
        assert await postgres_store.job_get(key) is None
        assert await postgres_store.job_get("job_x", tenant_id=key) is None
        assert await postgres_store.job_get_many([key]) == {}
        assert await postgres_store.job_complete_many([Completion(key, str(uuid.uuid4()))], now=START) == [None]
        assert await postgres_store.job_cancel(key, tenant_id=T, now=START) is None
    assert (
        await postgres_store.job_heartbeat(
            Heartbeat(job_id="job_x", lease_token="not-a-uuid", lease_seconds=30, now=START)
        )
        is None
    )
    assert await postgres_store.job_complete_many([Completion("job_x", "{" + str(uuid.uuid4()) + "}")], now=START) == [
        None
    ]


async def test_database_data_errors_translate_to_validation_errors(postgres_url: str) -> None:
    async with pg.connect(postgres_url) as connection:
        with pytest.raises(asyncpg.PostgresError) as raw:
            await connection.fetchval("SELECT '\"\\u0000\"'::jsonb")
    assert isinstance(translate(raw.value), ValidationError)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_an_unreachable_database_is_store_unavailable() -> None:
    url = f"postgresql://postgres@127.0.0.1:{closed_port()}/nowhere"
    async with PostgresJobStore.from_url(url, connect_timeout=2) as store:
        engine = engine_on(store, TestClock(START))
        with pytest.raises(StoreUnavailable):
            await store.ping()
        with pytest.raises(StoreUnavailable):
            await engine.lease(["default"])
        with pytest.raises(StoreUnavailable):
            await engine.enqueue(T, NewJob(task_name="t"))
        with pytest.raises(StoreUnavailable):
            await engine.queue_stats(T)


async def test_a_duplicate_id_is_a_validation_error(postgres_store: PostgresJobStore) -> None:
    existing = row()
    await postgres_store.job_insert_many([existing])
    with pytest.raises(ValidationError):
        await postgres_store.job_insert_many([row(), row(id=existing.id, task_name="again")])
    stored = await postgres_store.job_get(existing.id)
    assert stored is not None
    assert (stored.task_name, stored.status) == ("t", JobStatus.PENDING)
