"""Every client method against the real app, and every error class it raises."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from litestar import Litestar
from litestar.testing import TestClient
from queueflow.clocks import TestClock
from queueflow_client import (
    AsyncQueueFlow,
    AuthenticationError,
    Backoff,
    InvalidStateError,
    LeaseLostError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    QueueFlow,
    RateLimit,
    ValidationError,
    _calls,
)
from queueflow_client._transport import AsyncTransport, RetryPolicy

from tests.moments import START
from tests.sdk.conftest import BASE


async def test_enqueue_sends_every_option_and_returns_a_typed_job(client: AsyncQueueFlow) -> None:
    job = await client.jobs.enqueue(
        "send_email",
        payload={"to": "ada@example.com"},
        queue_name="mail",
        priority=5,
        delay_seconds=30,
        max_retries=7,
        backoff=Backoff("linear", base_seconds=2, max_seconds=60, jitter=False),
        timeout_seconds=90,
        metadata={"team": "growth"},
        idempotency_key="welcome-ada",
    )

    assert job.id.startswith("job_")
    assert (job.task_name, job.queue_name, job.status, job.priority) == ("send_email", "mail", "pending", 5)
    assert job.payload == {"to": "ada@example.com"}
    assert job.scheduled_at == START + timedelta(seconds=30)
    assert job.max_retries == 7
    assert job.backoff == Backoff("linear", 2.0, 60.0, False)
    assert job.timeout_seconds == 90
    assert job.metadata == {"team": "growth"}
    assert job.idempotency_key == "welcome-ada"


async def test_enqueue_with_run_at_and_defaults(client: AsyncQueueFlow) -> None:
    job = await client.jobs.enqueue("report", run_at=START + timedelta(hours=1))
    assert job.scheduled_at == START + timedelta(hours=1)
    assert (job.queue_name, job.priority, job.max_retries, job.payload) == ("default", 0, 3, {})


async def test_an_idempotent_repeat_returns_the_original_job(client: AsyncQueueFlow) -> None:
    first = await client.jobs.enqueue("send_email", payload={"n": 1}, idempotency_key="k")
    again = await client.jobs.enqueue("send_email", payload={"n": 2}, idempotency_key="k")
    assert again == first


async def test_the_client_keys_every_enqueue_so_its_own_retries_are_safe(client: AsyncQueueFlow) -> None:
    job = await client.jobs.enqueue("send_email")
    (batched,) = await client.jobs.enqueue_many([{"task_name": "send_email"}])
    assert (job.idempotency_key or "").startswith("qf-client-")
    assert (batched.idempotency_key or "").startswith("qf-client-")
    assert batched.idempotency_key != job.idempotency_key


async def test_enqueue_many(client: AsyncQueueFlow) -> None:
    jobs = await client.jobs.enqueue_many(
        [
            {"task_name": "a", "payload": {"i": 1}, "metadata": {"m": 1}, "idempotency_key": "one"},
            {"task_name": "b", "queue_name": "other", "priority": 3, "backoff": {"strategy": "fixed"}},
        ]
    )
    assert [(job.task_name, job.queue_name) for job in jobs] == [("a", "default"), ("b", "other")]
    assert jobs[0].payload == {"i": 1}
    assert jobs[0].metadata == {"m": 1}
    assert jobs[0].idempotency_key == "one"
    assert jobs[1].backoff.strategy == "fixed"
    with pytest.raises(TypeError, match="unknown job option"):
        await client.jobs.enqueue_many([{"task_name": "a", "colour": "red"}])  # type: ignore[typeddict-unknown-key]


async def test_get(client: AsyncQueueFlow) -> None:
    job = await client.jobs.enqueue("send_email")
    assert await client.jobs.get(job.id) == job


async def test_list_iterates_over_every_page_and_filters(client: AsyncQueueFlow, clock: TestClock) -> None:
    created = []
    for index in range(5):
        clock.advance(1)
        created.append(await client.jobs.enqueue("t", metadata={"even": index % 2 == 0}))
    await client.jobs.enqueue("other", queue_name="q2")

    every = [job.id async for job in client.jobs.list(task_name="t", page_size=2)]
    assert every == [job.id for job in reversed(created)]  # newest first, across three pages

    page = await client.jobs.list_page(task_name="t", limit=2)
    assert len(page.items) == 2
    assert page.next_cursor is not None
    rest = await client.jobs.list_page(task_name="t", limit=10, cursor=page.next_cursor)
    assert [job.id for job in rest.items] == [job.id for job in reversed(created[:3])]
    assert rest.next_cursor is None

    even = [job.id async for job in client.jobs.list(metadata={"even": True})]
    assert even == [created[4].id, created[2].id, created[0].id]
    assert [job.task_name async for job in client.jobs.list(queue_name="q2")] == ["other"]
    assert [job async for job in client.jobs.list(status="running")] == []
    assert [job async for job in client.jobs.list(workflow_id="wf_none")] == []


async def test_cancel_then_retry(client: AsyncQueueFlow) -> None:
    job = await client.jobs.enqueue("send_email")
    cancelled = await client.jobs.cancel(job.id)
    assert cancelled.status == "cancelled"
    with pytest.raises(InvalidStateError) as caught:
        await client.jobs.cancel(job.id)
    assert (caught.value.status, caught.value.code) == (409, "invalid_state")

    replayed = await client.jobs.retry(job.id)
    assert (replayed.status, replayed.retry_count) == ("pending", 0)
    with pytest.raises(InvalidStateError):
        await client.jobs.retry(job.id)


async def test_queues(client: AsyncQueueFlow) -> None:
    await client.jobs.enqueue("a")
    await client.jobs.enqueue("b", queue_name="later", delay_seconds=60)
    queues = {queue.name: queue for queue in await client.queues.list()}
    assert (queues["default"].pending, queues["default"].scheduled) == (1, 0)
    assert (queues["later"].pending, queues["later"].scheduled) == (0, 1)
    assert queues["later"].oldest_pending_age_seconds is None
    later = queues["later"]
    assert (later.paused, later.concurrency_limit, later.rate_limit) == (False, None, None)


async def test_concurrency_key_and_a_per_user_limit(client: AsyncQueueFlow) -> None:
    job = await client.jobs.enqueue("export", queue_name="exports", concurrency_key="user-1")
    assert job.concurrency_key == "user-1"
    (other,) = await client.jobs.enqueue_many(
        [{"task_name": "export", "queue_name": "exports", "concurrency_key": "u2"}]
    )
    assert other.concurrency_key == "u2"
    assert (await client.queues.update("exports", key_concurrency_limit=1)).key_concurrency_limit == 1


async def test_queue_settings(client: AsyncQueueFlow) -> None:
    with pytest.raises(NotFoundError):
        await client.queues.get("exports")
    queue = await client.queues.update("exports", concurrency_limit=2, rate_limit=RateLimit(10, 1.5))
    assert (queue.name, queue.concurrency_limit, queue.rate_limit) == ("exports", 2, RateLimit(10, 1.5))
    assert (await client.queues.pause("exports")).paused is True
    queue = await client.queues.get("exports")
    assert (queue.paused, queue.concurrency_limit, queue.key_concurrency_limit) == (True, 2, None)
    # None removes a limit; what is not given stays.
    queue = await client.queues.update("exports", concurrency_limit=None, key_concurrency_limit=1)
    assert (queue.paused, queue.concurrency_limit, queue.key_concurrency_limit) == (True, None, 1)
    assert queue.rate_limit == RateLimit(10, 1.5)
    assert (await client.queues.resume("exports")).paused is False
    with pytest.raises(ValidationError):
        await client.queues.update("exports", concurrency_limit=0)


async def test_a_queue_s_retention(client: AsyncQueueFlow) -> None:
    queue = await client.queues.update("reports", retention_seconds=7 * 86_400)
    assert (queue.retention_seconds, queue.paused) == (7 * 86_400, False)
    assert (await client.queues.pause("reports")).retention_seconds == 7 * 86_400  # what is not given stays
    assert [queue.retention_seconds for queue in await client.queues.list()] == [7 * 86_400]
    # None: the server's --retention-hours applies again (or finished jobs are kept).
    assert (await client.queues.update("reports", retention_seconds=None)).retention_seconds is None
    with pytest.raises(ValidationError) as caught:
        await client.queues.update("reports", retention_seconds=59)
    assert [error.field for error in caught.value.errors] == ["retention_seconds"]


# ---- errors from the real app ----------------------------------------------------------------------


async def test_validation_error_names_the_fields(client: AsyncQueueFlow) -> None:
    with pytest.raises(ValidationError) as caught:
        await client.jobs.enqueue("t", priority=5000)
    error = caught.value
    assert (error.status, error.code) == (400, "validation_error")
    assert any("priority" in item.field for item in error.errors)
    assert error.detail


async def test_not_found(client: AsyncQueueFlow) -> None:
    with pytest.raises(NotFoundError) as caught:
        await client.jobs.get("job_missing")
    assert caught.value.code == "not_found"


async def test_authentication_error(http: object, app: Litestar) -> None:
    async with (
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as transport,
        AsyncQueueFlow(BASE, "wrong", http_client=transport) as client,
    ):
        with pytest.raises(AuthenticationError) as caught:
            await client.queues.list()
    assert caught.value.status == 401


async def test_permission_denied_for_a_worker_key_on_a_tenant_route(app: Litestar) -> None:
    async with (
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as transport,
        AsyncQueueFlow(BASE, "key-w", http_client=transport) as client,
    ):
        with pytest.raises(PermissionDeniedError) as caught:
            await client.jobs.enqueue("t")
    assert caught.value.code == "forbidden"


async def test_payload_too_large(client: AsyncQueueFlow) -> None:
    with pytest.raises(PayloadTooLargeError) as caught:
        await client.jobs.enqueue("t", payload={"blob": "x" * 10_000})
    assert caught.value.status == 413


async def test_lease_lost_from_a_worker_route(app: Litestar, client: AsyncQueueFlow) -> None:
    await client.jobs.enqueue("t")
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app))
    worker = AsyncTransport(BASE, "key-w", timeout=5, retry=RetryPolicy(base_delay=0), http_client=http)
    async with http:
        (job,) = await worker(_calls.lease(["default"], max_jobs=1, lease_seconds=30, wait_seconds=0, worker_id=None))
        await client.jobs.cancel(job.id)
        with pytest.raises(LeaseLostError) as caught:
            await worker(_calls.complete(job.id, job.lease_token, {"ok": True}))
    assert (caught.value.status, caught.value.code) == (409, "lease_lost")


# ---- the synchronous client ------------------------------------------------------------------------


def test_the_sync_client_has_the_same_methods(app: Litestar) -> None:
    with TestClient(app) as http, QueueFlow(BASE, "key-a", http_client=http) as client:
        job = client.jobs.enqueue("send_email", payload={"to": "ada"}, idempotency_key="s1")
        assert client.jobs.enqueue("send_email", idempotency_key="s1") == job
        assert client.jobs.get(job.id) == job
        more = client.jobs.enqueue_many([{"task_name": "a"}, {"task_name": "b"}])
        assert len(more) == 2
        assert {item.id for item in client.jobs.list(page_size=1)} == {job.id, *(item.id for item in more)}
        assert len(client.jobs.list_page(limit=2).items) == 2
        assert client.jobs.cancel(job.id).status == "cancelled"
        assert client.jobs.retry(job.id).status == "pending"
        assert [queue.pending for queue in client.queues.list()] == [3]
        assert client.queues.pause("default").paused is True
        assert client.queues.update("default", paused=False, concurrency_limit=4).concurrency_limit == 4
        assert client.queues.get("default").paused is False
        with pytest.raises(NotFoundError):
            client.jobs.get("job_missing")
        with pytest.raises(ValidationError):
            client.jobs.enqueue("t", max_retries=-1)
