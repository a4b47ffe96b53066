"""A mistake in what the caller gives the client, and a server that cannot be reached or refuses a body, each
fail with a message that names the argument, the URL or the limit (issue 17, item 5)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from queueflow_client import (
    APIConnectionError,
    ArgumentError,
    AsyncQueueFlow,
    PayloadTooLargeError,
    QueueFlow,
    Step,
)

from tests.sdk.conftest import Responses


async def test_a_payload_that_is_not_an_object_names_the_argument(client: AsyncQueueFlow, responses: Responses) -> None:
    with pytest.raises(ArgumentError, match=r"^payload must be a JSON object \(a dict\), not a list: \[1, 2\]$"):
        await client.jobs.enqueue("t", payload=[1, 2])  # type: ignore[arg-type]
    with pytest.raises(TypeError):  # an ArgumentError is a TypeError too
        await client.jobs.enqueue("t", metadata="tag")  # type: ignore[arg-type]
    assert responses.seen == []  # nothing was sent


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (
            {"meta": {"sent": datetime(2026, 1, 1, tzinfo=UTC)}},
            r"^payload\['meta'\]\['sent'\] is a datetime\.datetime, which JSON cannot carry: send a string, "
            r"e\.g\. value\.isoformat\(\)$",
        ),
        ({"tags": [1, {"a", "b"}]}, r"^payload\['tags'\]\[1\] is a set, which JSON cannot carry: send a list"),
        ({"price": Decimal("1.5")}, r"^payload\['price'\] is a decimal\.Decimal, .* a string or a float$"),
        ({"ratio": float("nan")}, r"^payload\['ratio'\] is nan, which JSON cannot carry"),
        ({"by_id": {1: "a"}}, r"^payload\['by_id'\] has the key 1 \(an int\): the keys of a JSON object are strings"),
        ({"f": print}, r"^payload\['f'\] is a builtin_function_or_method, .*: send a dict, list, str, int"),
    ],
)
async def test_a_value_json_cannot_carry_is_named_by_its_path_and_type(
    client: AsyncQueueFlow, responses: Responses, payload: dict[str, object], message: str
) -> None:
    with pytest.raises(ArgumentError, match=message):
        await client.jobs.enqueue("t", payload=payload)
    assert responses.seen == []


async def test_every_json_argument_is_checked_and_named(client: AsyncQueueFlow) -> None:
    when = datetime(2026, 1, 1, tzinfo=UTC)
    with pytest.raises(ArgumentError, match=r"^jobs\[1\]\.payload\['at'\] is a datetime\.datetime"):
        await client.jobs.enqueue_many([{"task_name": "a"}, {"task_name": "b", "payload": {"at": when}}])
    with pytest.raises(ArgumentError, match=r"^jobs\[0\]\.task_name must be a string, not None"):
        await client.jobs.enqueue_many([{"payload": {}}])  # type: ignore[typeddict-item]
    with pytest.raises(ArgumentError, match=r"^metadata\['at'\] is a datetime\.datetime"):
        await client.jobs.enqueue("t", metadata={"at": when})
    with pytest.raises(ArgumentError, match=r"^context\['day'\] is a datetime\.datetime"):
        await client.workflows.create("etl", [Step(name="a", task_name="a")], context={"day": when})
    with pytest.raises(ArgumentError, match=r"^the payload of step 'a'\['ids'\] is a set"):
        await client.workflows.create("etl", [Step(name="a", task_name="a", payload={"ids": {1}})])
    with pytest.raises(ArgumentError, match=r"^payload\['at'\] is a datetime\.datetime"):
        await client.schedules.create("nightly", cron="@daily", task_name="t", payload={"at": when})
    with pytest.raises(ArgumentError, match=r"^metadata\['day'\] is a datetime\.datetime"):
        await client.jobs.list_page(metadata={"day": when})


async def test_a_valid_payload_goes_through_unchanged(client: AsyncQueueFlow) -> None:
    payload = {"n": 2**70, "f": 1.5, "t": (1, "x"), "nested": [{"ok": True, "none": None}]}
    job = await client.jobs.enqueue("t", payload=payload)
    assert job.payload == {"n": 2**70, "f": 1.5, "t": [1, "x"], "nested": [{"ok": True, "none": None}]}


async def test_a_413_states_the_servers_limit(client: AsyncQueueFlow) -> None:
    with pytest.raises(PayloadTooLargeError) as caught:
        await client.jobs.enqueue("t", payload={"blob": "x" * 10_000})
    assert "over this server's limit of 4,096 bytes (QUEUEFLOW_MAX_BODY_BYTES)" in str(caught.value)


@pytest.fixture
def refusing_port() -> Iterator[int]:
    """A loopback port that refuses connections for as long as the test runs: bound, never listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def test_a_connection_error_names_the_url(refusing_port: int) -> None:
    base = f"http://127.0.0.1:{refusing_port}"
    with QueueFlow(base, None, max_retries=1, retry_delay=0) as client, pytest.raises(APIConnectionError) as caught:
        client.jobs.get("job_1")
    message = str(caught.value)
    assert message.startswith(f"cannot reach QueueFlow at GET {base}/v1/jobs/job_1 (tried 2 times): "), message


async def test_an_async_connection_error_names_the_url(refusing_port: int) -> None:
    base = f"http://127.0.0.1:{refusing_port}"
    async with AsyncQueueFlow(base, None, max_retries=0) as client:
        with pytest.raises(APIConnectionError, match=rf"^cannot reach QueueFlow at POST {base}/v1/jobs: "):
            await client.jobs.enqueue("t")
