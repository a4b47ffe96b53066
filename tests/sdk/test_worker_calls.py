"""The SDK's typed worker calls (`queueflow_client._calls`) against the app in-process."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import httpx
import pytest
from litestar import Litestar
from queueflow.clocks import TestClock
from queueflow_client import AsyncQueueFlow, JobContext, TaskRegistry, Worker, _calls
from queueflow_client._transport import AsyncTransport, RetryPolicy, is_transient
from queueflow_client.errors import APIConnectionError, APIError, APITimeoutError, LeaseLostError, UnavailableError
from queueflow_client.types import HeartbeatResult
from queueflow_client.worker import _HttpSource
from queueflow_worker import Outcome

from tests.sdk.conftest import BASE, Responses
from tests.sdk.test_transport import scripted_transport


async def test_heartbeat_many_answers_each_lease_on_its_own(
    client: AsyncQueueFlow, http: Callable[[], httpx.AsyncClient], clock: TestClock
) -> None:
    await client.jobs.enqueue("t")
    async with http() as raw:
        transport = AsyncTransport(BASE, "key-w", timeout=30.0, retry=RetryPolicy(), http_client=raw)
        (job,) = await transport(
            _calls.lease(["default"], max_jobs=1, lease_seconds=10, wait_seconds=0, worker_id=None)
        )
        clock.advance(5)
        results = await transport(_calls.heartbeat_many([(job.id, job.lease_token), (job.id, "stale")], 60))
    assert results == [
        HeartbeatResult(job.id, "ok", clock.now() + timedelta(seconds=60)),
        HeartbeatResult(job.id, "lease_lost", None),
    ]


def _scripted_worker(*answers: httpx.Response | Exception) -> tuple[Worker, _HttpSource, list[httpx.Request]]:
    """A worker's HTTP source on a scripted transport: each request gets the next answer."""
    scripted, seen = scripted_transport(*answers)
    http = httpx.AsyncClient(transport=scripted)
    worker = Worker(BASE, "key-w", TaskRegistry())
    transport = AsyncTransport(BASE, "key-w", timeout=30.0, retry=RetryPolicy(base_delay=0), http_client=http)
    return worker, _HttpSource(transport, worker), seen


SETTLED_BY_ANOTHER = httpx.Response(
    200, json={"results": [{"id": "job_1", "outcome": "lease_lost", "status": "completed"}]}
)
UNAVAILABLE = httpx.Response(503, json={"title": "Unavailable", "status": 503, "code": "unavailable", "detail": "db"})


async def test_an_ack_answered_lease_lost_on_a_completed_job_was_not_held() -> None:
    # Another delivery completed the job (this one's lease had expired): this outcome was never recorded, so it
    # must not pass for an acknowledged completion — two workers would each believe they finished the job.
    _, source, seen = _scripted_worker(SETTLED_BY_ANOTHER)
    assert await source.ack([Outcome("job_1", "token", result={"n": 1})]) == [False]
    assert len(seen) == 1


async def test_after_a_503_the_repeat_is_the_only_attempt_that_could_land() -> None:
    # A 503 means the server did nothing, so the repeat's lease_lost is as certain as a first answer.
    _, source, seen = _scripted_worker(UNAVAILABLE, SETTLED_BY_ANOTHER)
    outcome = Outcome("job_1", "token", result={"n": 1})
    with pytest.raises(UnavailableError):
        await source.ack([outcome])  # not repeated by the source: the worker loop makes it again, on its clock
    assert await source.ack([outcome]) == [False]
    assert len(seen) == 2


async def test_a_repeated_ack_that_finds_the_job_settled_cannot_tell_whose_outcome_landed() -> None:
    # The first attempt was sent and its answer lost: it may have completed the job, and then the repeat is
    # answered lease_lost. Unknown, never "held".
    _, source, seen = _scripted_worker(httpx.ReadTimeout("lost"), SETTLED_BY_ANOTHER)
    outcome = Outcome("job_1", "token", result={"n": 1})
    with pytest.raises(APITimeoutError):
        await source.ack([outcome])
    assert await source.ack([outcome]) == [None]
    assert len(seen) == 2


async def test_a_refused_connection_is_an_attempt_that_never_landed() -> None:
    _, source, _ = _scripted_worker(httpx.ConnectError("refused"), SETTLED_BY_ANOTHER, SETTLED_BY_ANOTHER)
    outcome = Outcome("job_1", "token", result={"n": 1})
    with pytest.raises(APIConnectionError):
        await source.ack([outcome])
    assert await source.ack([outcome]) == [False]


def test_what_a_worker_makes_again() -> None:
    # A connection error or a 5xx: the server may be back in a moment. Anything else is an answer.
    assert is_transient(APIConnectionError("refused"))
    assert is_transient(APITimeoutError("slow"))
    assert is_transient(UnavailableError(503, "unavailable", "db"))
    assert is_transient(APIError(502, None, "bad gateway"))
    assert not is_transient(LeaseLostError(409, "lease_lost", "gone"))
    assert not is_transient(APIError(400, "validation_error", "bad"))


async def test_each_outcome_of_a_batch_gets_its_own_answer_even_for_one_job() -> None:
    # The answer lists completions, then failures: matched by position, a stale completion and the new
    # delivery's failure of one job each get their own.
    answer = httpx.Response(
        200,
        json={
            "results": [
                {"id": "job_1", "outcome": "lease_lost", "status": "running"},
                {"id": "job_1", "outcome": "ok", "status": "retrying"},
            ]
        },
    )
    _, source, _ = _scripted_worker(answer)
    stale = Outcome("job_1", "expired", result={"n": 1})
    current = Outcome("job_1", "current", error="boom")
    assert await source.ack([current, stale]) == [True, False]


async def test_a_worker_source_releases_held_jobs_each_on_its_own(
    client: AsyncQueueFlow, http: Callable[[], httpx.AsyncClient]
) -> None:
    enqueued = await client.jobs.enqueue("t")
    async with http() as raw:
        worker = Worker(BASE, "key-w", TaskRegistry())
        transport = AsyncTransport(BASE, "key-w", timeout=30.0, retry=RetryPolicy(), http_client=raw)
        source = _HttpSource(transport, worker)
        (job,) = await transport(
            _calls.lease(["default"], max_jobs=1, lease_seconds=10, wait_seconds=0, worker_id=None)
        )
        released = await source.release([(job.id, "stale"), (job.id, job.lease_token), (job.id, job.lease_token)])
        assert released == [False, True, False]
        (again,) = await transport(
            _calls.lease(["default"], max_jobs=1, lease_seconds=10, wait_seconds=0, worker_id=None)
        )
    assert (again.id, again.delivery_count) == (enqueued.id, 1)


class RefusesAcks(httpx.AsyncBaseTransport):
    """The app, but its first `refusals` acks find the server away (the connection refused, as while it restarts)."""

    def __init__(self, app: Litestar, refusals: int) -> None:
        self.app = httpx.ASGITransport(app=app)
        self.refusals = refusals
        self.acks = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/ack"):
            self.acks += 1
            if self.acks <= self.refusals:
                raise httpx.ConnectError("connection refused", request=request)
        return await self.app.handle_async_request(request)


async def test_a_worker_records_an_outcome_once_its_server_is_back(
    client: AsyncQueueFlow, app: Litestar, responses: Responses
) -> None:
    # Before: the ack was given up after its transport's two quick repeats (three refusals), the lease expired, and
    # the job ran again.
    tasks, runs = TaskRegistry(), []

    @tasks.task("t")
    async def task(payload: dict[str, Any], ctx: JobContext) -> str:
        runs.append(ctx.job_id)
        return "done"

    job = await client.jobs.enqueue("t")
    away = RefusesAcks(app, refusals=3)
    http = httpx.AsyncClient(transport=away, event_hooks={"response": [responses.hook]})
    worker = Worker(BASE, "key-w", tasks, http_client=http, wait_seconds=0)
    await worker.start()
    await responses.until("/ack")
    await worker.stop()
    finished = await client.jobs.get(job.id)
    assert (finished.result, finished.delivery_count, finished.retry_count, runs) == ("done", 1, 0, [job.id])
    assert away.acks == 4
