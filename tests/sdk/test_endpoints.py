"""`client.endpoints` (sync and async) and `queueflow-client endpoints list`, against the real app in-process."""

from __future__ import annotations

import pytest
from queueflow_client import AsyncQueueFlow, InvalidStateError, NotFoundError, ValidationError

PUBLIC = "https://93.184.215.14/hooks"  # a literal public address: nothing to resolve


async def test_create_read_change_rotate_and_delete(client: AsyncQueueFlow) -> None:
    made = await client.endpoints.create("billing", PUBLIC, queues=["billing"], task_names=["charge"], concurrency=5)
    assert (made.name, made.url, made.queues, made.task_names, made.concurrency) == (
        "billing", PUBLIC, ["billing"], ["charge"], 5,
    )  # fmt: skip
    assert made.secret.startswith("qfsec_")
    read = await client.endpoints.get("billing")
    assert read.secret == "qfsec_…" + made.secret[-4:]
    assert (read.in_flight, read.delivered, read.failed, read.last_error) == (0, 0, 0, None)
    changed = await client.endpoints.update("billing", paused=True, task_names=None)
    assert (changed.paused, changed.task_names, changed.concurrency) == (True, None, 5)
    rotated = await client.endpoints.rotate_secret("billing")
    assert rotated.secret.startswith("qfsec_")
    assert rotated.secret != made.secret
    assert rotated.previous_secret_until is not None
    assert [endpoint.name async for endpoint in client.endpoints.list()] == ["billing"]
    with pytest.raises(InvalidStateError):
        await client.endpoints.create("billing", PUBLIC)
    with pytest.raises(ValidationError):
        await client.endpoints.create("inside", "http://10.0.0.1/")
    await client.endpoints.delete("billing")
    with pytest.raises(NotFoundError):
        await client.endpoints.get("billing")
