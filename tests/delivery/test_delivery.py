"""Push delivery against a live receiver on 127.0.0.1: the body, headers and signature, and what each answer
means for the job (README.md, "Push delivery")."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from datetime import datetime, timedelta

import pytest
from prometheus_client import generate_latest
from queueflow.api.observe import Metrics
from queueflow.core.endpoints import EndpointPatch
from queueflow.core.types import JobStatus, NewJob
from queueflow.engine import Engine
from queueflow.resolver import StaticResolver
from queueflow.runtime.delivery import Deliveries
from queueflow.runtime.wakeups import Wakeups
from queueflow.stores.memory import InMemoryJobStore

from tests.delivery.conftest import endpoint, engine_on, settled
from tests.delivery.receiver import Receiver, receiving
from tests.moments import T


async def test_a_2xx_completes_with_the_json_body_as_result_and_the_request_is_signed(
    engine: Engine, wakeups: Wakeups, receiver: Receiver, deliveries: Deliveries
) -> None:
    hook = await endpoint(engine, receiver.url)
    enqueued = await engine.enqueue(T, NewJob(task_name="send", payload={"to": "ada"}, timeout_seconds=60))
    job = await settled(engine, wakeups, enqueued.job.id)
    assert (job.status, job.result) == (JobStatus.COMPLETED, {"ok": True})
    (delivery,) = receiver.deliveries
    sent = json.loads(delivery.body)
    assert sent["delivery"] == 1
    assert (sent["job"]["id"], sent["job"]["payload"]) == (job.id, {"to": "ada"})
    assert "lease_token" not in sent["job"]
    assert sent["job"]["deadline"] is not None
    assert delivery.headers["content-type"] == "application/json"
    assert (delivery.headers["queueflow-job-id"], delivery.headers["queueflow-delivery"]) == (job.id, "1")
    t, v1 = delivery.headers["queueflow-signature"].split(",")
    timestamp = t.removeprefix("t=")
    expected = hmac.new(hook.secret.encode(), f"{timestamp}.".encode() + delivery.body, hashlib.sha256).hexdigest()
    assert v1 == f"v1={expected}"
    read = await engine.endpoints.get(T, "hooks")
    assert (read.delivered, read.failed, read.in_flight) == (1, 0, 0)
    assert read.last_delivery_at is not None


async def test_during_a_rotation_both_secrets_sign(
    engine: Engine, wakeups: Wakeups, receiver: Receiver, deliveries: Deliveries
) -> None:
    first = await endpoint(engine, receiver.url, paused=True)
    second = await engine.endpoints.rotate_secret(T, "hooks")
    await engine.endpoints.update(T, "hooks", _unpaused())
    job = await engine.enqueue(T, NewJob(task_name="send"))
    await settled(engine, wakeups, job.job.id)
    (delivery,) = receiver.deliveries
    parts = delivery.headers["queueflow-signature"].split(",")
    timestamp = parts[0].removeprefix("t=")
    signed = f"{timestamp}.".encode() + delivery.body
    assert parts[1:] == [
        "v1=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
        for secret in (second.secret, first.secret)
    ]


async def test_another_status_retries_after_retry_after(
    engine: Engine, wakeups: Wakeups, receiver: Receiver, deliveries: Deliveries
) -> None:
    receiver.status, receiver.headers = 503, [(b"retry-after", b"120")]
    await endpoint(engine, receiver.url)
    enqueued = await engine.enqueue(T, NewJob(task_name="send", max_retries=3))
    job = await settled(engine, wakeups, enqueued.job.id)
    assert job.status is JobStatus.RETRYING
    assert job.error_message == "the endpoint answered 503"
    assert job.next_retry_at is not None
    assert job.next_retry_at - job.started_at >= timedelta(seconds=119)  # type: ignore[operator]
    read = await engine.endpoints.get(T, "hooks")
    assert (read.delivered, read.failed, read.last_error) == (0, 1, "the endpoint answered 503")


async def test_retryable_false_dead_letters_at_once(
    engine: Engine, wakeups: Wakeups, receiver: Receiver, deliveries: Deliveries
) -> None:
    receiver.status, receiver.headers = 422, [(b"queueflow-retryable", b"false")]
    await endpoint(engine, receiver.url)
    enqueued = await engine.enqueue(T, NewJob(task_name="send", max_retries=5))
    job = await settled(engine, wakeups, enqueued.job.id)
    assert job.status is JobStatus.DEAD_LETTER
    assert job.error_message == "the endpoint answered 422 (QueueFlow-Retryable: false)"


async def test_a_redirect_is_not_followed(
    engine: Engine, wakeups: Wakeups, receiver: Receiver, deliveries: Deliveries
) -> None:
    receiver.status, receiver.headers = 302, [(b"location", b"http://169.254.169.254/")]
    await endpoint(engine, receiver.url)
    enqueued = await engine.enqueue(T, NewJob(task_name="send"))
    job = await settled(engine, wakeups, enqueued.job.id)
    assert (job.status, job.error_message) == (JobStatus.RETRYING, "the endpoint answered 302")
    assert len(receiver.deliveries) == 1


async def test_a_body_that_is_not_json_or_too_long_is_a_null_result(
    engine: Engine, wakeups: Wakeups, receiver: Receiver, deliveries: Deliveries
) -> None:
    await endpoint(engine, receiver.url)
    for headers, body in [
        ([(b"content-type", b"text/plain")], b"fine"),
        ([(b"content-type", b"application/json")], b"[" + b"1," * 2000 + b"1]"),  # over the 1 KiB limit
    ]:
        receiver.headers, receiver.body = headers, body
        enqueued = await engine.enqueue(T, NewJob(task_name="send"))
        job = await settled(engine, wakeups, enqueued.job.id)
        assert (job.status, job.result) == (JobStatus.COMPLETED, None)


async def test_no_answer_within_the_timeout_fails_the_delivery(
    engine: Engine, wakeups: Wakeups, receiver: Receiver, deliveries: Deliveries
) -> None:
    receiver.hold = asyncio.Event()
    await endpoint(engine, receiver.url, timeout_seconds=1)
    enqueued = await engine.enqueue(T, NewJob(task_name="send"))
    job = await settled(engine, wakeups, enqueued.job.id)
    assert (job.status, job.error_message) == (JobStatus.RETRYING, "the endpoint did not answer within 1 s")


async def test_a_connection_error_fails_the_delivery(engine: Engine, wakeups: Wakeups, deliveries: Deliveries) -> None:
    await endpoint(engine, "http://127.0.0.1:9/nobody")  # the discard port: nothing listens
    enqueued = await engine.enqueue(T, NewJob(task_name="send"))
    job = await settled(engine, wakeups, enqueued.job.id)
    assert job.status is JobStatus.RETRYING
    assert (job.error_message or "").startswith("connection error: ")


async def test_a_private_address_is_checked_again_at_delivery(
    store: InMemoryJobStore, wakeups: Wakeups, receiver: Receiver
) -> None:
    # Made while private endpoints were allowed, delivered by a process where they are not.
    await endpoint(engine_on(store), receiver.url)
    strict = engine_on(store, allow_private=False)
    async with Deliveries(strict, wakeups, max_body_bytes=1024, refresh=0.05, poll=0.5):
        enqueued = await strict.enqueue(T, NewJob(task_name="send"))
        job = await settled(strict, wakeups, enqueued.job.id)
    assert job.status is JobStatus.RETRYING
    assert (
        job.error_message
        == "refused: 127.0.0.1 is a loopback address; private endpoints are not allowed on this server"
    )
    assert receiver.deliveries == []


async def test_only_the_endpoints_queues_tasks_and_tenant_are_delivered(
    engine: Engine, wakeups: Wakeups, receiver: Receiver, deliveries: Deliveries
) -> None:
    await endpoint(engine, receiver.url, queues=("mail",), task_names=("send",))
    others = [
        await engine.enqueue(T, NewJob(task_name="send")),  # another queue
        await engine.enqueue(T, NewJob(task_name="report", queue_name="mail")),  # another task
        await engine.enqueue("tenant-b", NewJob(task_name="send", queue_name="mail")),  # another tenant
    ]
    ours = await engine.enqueue(T, NewJob(task_name="send", queue_name="mail"))
    assert (await settled(engine, wakeups, ours.job.id)).status is JobStatus.COMPLETED
    for other in others:
        assert (await engine.store.job_get(other.job.id)).status is JobStatus.PENDING  # type: ignore[union-attr]
    assert len(receiver.deliveries) == 1


async def test_a_paused_endpoint_gets_nothing_new(
    engine: Engine, wakeups: Wakeups, receiver: Receiver, deliveries: Deliveries
) -> None:
    await endpoint(engine, receiver.url, paused=True)
    waiting = await engine.enqueue(T, NewJob(task_name="send"))
    await deliveries.sync()
    assert deliveries.pushers == {}
    assert (await engine.get_job(T, waiting.job.id)).status is JobStatus.PENDING
    await engine.endpoints.update(T, "hooks", _unpaused())
    assert (await settled(engine, wakeups, waiting.job.id)).status is JobStatus.COMPLETED


async def test_a_slow_endpoint_never_slows_another(
    engine: Engine, wakeups: Wakeups, receiver: Receiver, deliveries: Deliveries
) -> None:
    receiver.hold = asyncio.Event()  # never answers while the other drains
    await endpoint(engine, receiver.url, name="slow", queues=("slow",), concurrency=2, timeout_seconds=60)
    async with receiving() as fast:
        await endpoint(engine, fast.url, name="fast", queues=("fast",), concurrency=5)
        for _ in range(3):
            await engine.enqueue(T, NewJob(task_name="send", queue_name="slow"))
        jobs = [await engine.enqueue(T, NewJob(task_name="send", queue_name="fast")) for _ in range(20)]
        for job in jobs:
            assert (await settled(engine, wakeups, job.job.id)).status is JobStatus.COMPLETED
    assert receiver.in_flight == 2  # the slow one still holds its two, at its concurrency
    receiver.hold.set()


def _unpaused() -> EndpointPatch:
    return EndpointPatch(paused=False)


async def test_metrics_count_deliveries_by_endpoint_and_outcome_and_a_failure_logs_a_line(
    engine: Engine, wakeups: Wakeups, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    metrics = Metrics()
    await endpoint(engine, receiver.url)
    async with Deliveries(engine, wakeups, max_body_bytes=1024, refresh=0.05, poll=0.5, observe=metrics.delivery_ended):
        ok = await engine.enqueue(T, NewJob(task_name="send"))
        await settled(engine, wakeups, ok.job.id)
        receiver.status = 500
        failed = await engine.enqueue(T, NewJob(task_name="send"))
        await settled(engine, wakeups, failed.job.id)
    text = generate_latest(metrics.registry).decode()
    for outcome in ("completed", "retrying"):
        line = f'queueflow_push_delivery_duration_seconds_count{{endpoint="tenant-a/hooks",outcome="{outcome}"}} 1.0'
        assert line in text
    (logged,) = [record.getMessage() for record in caplog.records if record.name == "queueflow.delivery"]
    assert logged == (
        f"delivery failed: endpoint=hooks tenant=tenant-a job={failed.job.id} delivery=1 outcome=retrying"
        " error=the endpoint answered 500"
    )


async def test_a_name_is_resolved_once_and_the_checked_address_connected_to_with_the_names_host_header(
    store: InMemoryJobStore, wakeups: Wakeups, receiver: Receiver
) -> None:
    port = receiver.url.split(":")[2].split("/")[0]
    resolver = StaticResolver({"receiver.test": ["127.0.0.1"]})
    engine = engine_on(store, resolver=resolver)
    await endpoint(engine, f"http://receiver.test:{port}/hooks")
    async with Deliveries(engine, wakeups, max_body_bytes=1024, refresh=0.05, poll=0.5):
        enqueued = await engine.enqueue(T, NewJob(task_name="send"))
        job = await settled(engine, wakeups, enqueued.job.id)
    assert job.status is JobStatus.COMPLETED
    (delivery,) = receiver.deliveries
    assert delivery.headers["host"] == f"receiver.test:{port}"
    assert resolver.asked == ["receiver.test"]  # one connection, one lookup


async def test_a_name_that_resolves_inside_is_refused_at_delivery(
    store: InMemoryJobStore, wakeups: Wakeups, receiver: Receiver
) -> None:
    port = receiver.url.split(":")[2].split("/")[0]
    resolver = StaticResolver({"receiver.test": ["127.0.0.1"]})
    await endpoint(engine_on(store, resolver=resolver), f"http://receiver.test:{port}/hooks")  # allowed back then
    strict = engine_on(store, allow_private=False, resolver=resolver)
    async with Deliveries(strict, wakeups, max_body_bytes=1024, refresh=0.05, poll=0.5):
        enqueued = await strict.enqueue(T, NewJob(task_name="send"))
        job = await settled(strict, wakeups, enqueued.job.id)
    assert job.status is JobStatus.RETRYING
    assert job.error_message == (
        "refused: receiver.test resolves to 127.0.0.1 is a loopback address; private endpoints are not allowed on"
        " this server"
    )
    assert receiver.deliveries == []


async def test_a_request_in_flight_has_its_lease_extended_until_it_is_answered(
    engine: Engine,
    store: InMemoryJobStore,
    wakeups: Wakeups,
    receiver: Receiver,
    deliveries: Deliveries,
) -> None:
    receiver.hold = asyncio.Event()
    endpoint_made = await endpoint(engine, receiver.url, timeout_seconds=60)
    enqueued = await engine.enqueue(T, NewJob(task_name="send"))
    await receiver.wait_for(1)

    async def lease_end() -> datetime:
        held = await store.job_get(enqueued.job.id)
        assert held is not None
        assert held.locked_until is not None
        return held.locked_until

    first = await lease_end()
    # One tick of the holder, called rather than waited for (its loop ticks every HOLD_EVERY of real time).
    await deliveries.pushers[endpoint_made.id].hold_in_flight()
    assert await lease_end() > first
    receiver.hold.set()
    job = await settled(engine, wakeups, enqueued.job.id)
    assert (job.status, job.delivery_count) == (JobStatus.COMPLETED, 1)
