"""The queues' calls: list, get, and change a queue's settings."""

from __future__ import annotations

from typing import Any

from queueflow_client._calls.routes import GET_QUEUE, LIST_QUEUES, UPDATE_QUEUE
from queueflow_client._transport import Call, call
from queueflow_client.types import UNCHANGED, Queue, RateLimit, Unchanged


def queues() -> Call[list[Queue]]:
    return call(
        LIST_QUEUES.request(), lambda data: [Queue.from_json(queue) for queue in data["queues"]], replayable=True
    )


def get_queue(name: str) -> Call[Queue]:
    return call(GET_QUEUE.request(name), Queue.from_json, replayable=True)


def update_queue(
    name: str,
    *,
    paused: bool | Unchanged,
    concurrency_limit: int | Unchanged | None,
    key_concurrency_limit: int | Unchanged | None,
    rate_limit: RateLimit | Unchanged | None,
    retention_seconds: int | Unchanged | None,
) -> Call[Queue]:
    # PATCH: an UNCHANGED setting is not sent, None is sent as null (no limit, or the server's retention).
    # Replayable: the same settings twice leave the same queue.
    settings: dict[str, Any] = {
        "paused": paused,
        "concurrency_limit": concurrency_limit,
        "key_concurrency_limit": key_concurrency_limit,
        "rate_limit": rate_limit
        if not isinstance(rate_limit, RateLimit)
        else {"jobs": rate_limit.jobs, "per_seconds": rate_limit.per_seconds},
        "retention_seconds": retention_seconds,
    }
    body = {name: value for name, value in settings.items() if value is not UNCHANGED}
    return call(UPDATE_QUEUE.request(name, body=body), Queue.from_json, replayable=True)
