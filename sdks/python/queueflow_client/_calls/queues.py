"""The queues' calls: list, get, and change a queue's settings."""

from __future__ import annotations

from queueflow_client._generated.api.jobs import get_queue as get_queue_operation
from queueflow_client._generated.api.jobs import list_queues
from queueflow_client._generated.api.jobs import update_queue as update_queue_operation
from queueflow_client._generated.models import RateLimit as RateLimitModel
from queueflow_client._generated.models import UpdateQueue
from queueflow_client._generated.types import UNSET
from queueflow_client._transport import Call, call
from queueflow_client.types import UNCHANGED, Queue, RateLimit, Unchanged


def queues() -> Call[list[Queue]]:
    return call(list_queues, lambda data: [Queue.from_json(queue) for queue in data["queues"]], replayable=True)


def get_queue(name: str) -> Call[Queue]:
    return call(get_queue_operation, Queue.from_json, name, replayable=True)


def update_queue(
    name: str,
    *,
    paused: bool | Unchanged,
    concurrency_limit: int | Unchanged | None,
    key_concurrency_limit: int | Unchanged | None,
    rate_limit: RateLimit | Unchanged | None,
) -> Call[Queue]:
    # PATCH: an UNCHANGED setting is not sent, None is sent as null (no limit). Replayable: the same settings twice
    # leave the same queue.
    body = UpdateQueue(
        paused=UNSET if paused is UNCHANGED else paused,
        concurrency_limit=UNSET if concurrency_limit is UNCHANGED else concurrency_limit,
        key_concurrency_limit=UNSET if key_concurrency_limit is UNCHANGED else key_concurrency_limit,
        rate_limit=(
            UNSET
            if rate_limit is UNCHANGED
            else RateLimitModel(jobs=rate_limit.jobs, per_seconds=rate_limit.per_seconds)
            if rate_limit is not None
            else None
        ),
    )
    return call(update_queue_operation, Queue.from_json, name, replayable=True, body=body)
