"""`expires_at=` / `expires_in=` through the Python SDK against the real app: a single enqueue and a batch,
the job's `expires_at`, the server's 400 for both at once, and the transactional enqueue's SQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from queueflow_client import AsyncQueueFlow, ValidationError
from queueflow_client.transactional import _params, _statement


async def test_enqueue_with_a_deadline_shows_it_on_the_job(client: AsyncQueueFlow) -> None:
    at = datetime(2031, 1, 1, tzinfo=UTC)
    by_time = await client.jobs.enqueue("offer", expires_at=at)
    assert by_time.expires_at == at
    by_seconds = await client.jobs.enqueue("offer", expires_in=90)
    by_delta = await client.jobs.enqueue("offer", expires_in=timedelta(minutes=2))
    assert by_seconds.expires_at is not None
    assert by_delta.expires_at is not None
    assert by_seconds.expires_at - by_seconds.created_at == timedelta(seconds=90)
    assert by_delta.expires_at - by_delta.created_at == timedelta(minutes=2)
    assert (await client.jobs.enqueue("offer")).expires_at is None
    batch = await client.jobs.enqueue_many([{"task_name": "a", "expires_in": 30}, {"task_name": "b"}])
    assert [job.expires_at is not None for job in batch] == [True, False]
    assert (await client.jobs.get(by_time.id)).expires_at == at


async def test_a_deadline_the_server_refuses_is_a_validation_error(client: AsyncQueueFlow) -> None:
    with pytest.raises(ValidationError, match="expires_in_seconds"):
        await client.jobs.enqueue("offer", expires_in=10, delay_seconds=20)
    with pytest.raises(ValidationError, match="expires_in_seconds"):
        await client.jobs.enqueue("offer", expires_in=10, expires_at=datetime(2031, 1, 1, tzinfo=UTC))


def test_the_transactional_enqueue_counts_expires_in_by_the_databases_clock() -> None:
    params = _params("acme", "offer", None, {"expires_in": timedelta(seconds=90)})
    sql, values = _statement(params, lambda index, _name: f"${index}")
    assert sql == (
        "SELECT queueflow.enqueue(tenant_id => CAST($1 AS text), task_name => CAST($2 AS text),"
        " expires_at => clock_timestamp() + make_interval(secs => CAST($3 AS double precision)))"
    )
    assert values == ["acme", "offer", 90.0]
    with pytest.raises(TypeError, match="expires_in cannot be combined with expires_at"):
        _params("acme", "offer", None, {"expires_in": 5, "expires_at": datetime(2031, 1, 1, tzinfo=UTC)})
