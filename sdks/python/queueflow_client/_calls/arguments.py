"""What the calls of every resource check and convert alike: a key for a request given none, unknown options, a
backoff as the generated core takes it."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping
from typing import Any

from queueflow_client._generated.models import Backoff as BackoffModel
from queueflow_client._generated.models.backoff_strategy import BackoffStrategy
from queueflow_client._generated.types import UNSET
from queueflow_client.errors import ArgumentError
from queueflow_client.types import Backoff


def new_idempotency_key() -> str:
    """A key for a request the caller gave none: it makes the client's own retries safe, nothing more."""
    return f"qf-client-{uuid.uuid4()}"


def backoff_model(value: Backoff | Mapping[str, Any] | None) -> Any:
    if value is None:
        return UNSET
    data = value.to_json() if isinstance(value, Backoff) else dict(value)
    return BackoffModel(
        strategy=BackoffStrategy(data["strategy"]) if "strategy" in data else UNSET,
        base_seconds=data.get("base_seconds", UNSET),
        max_seconds=data.get("max_seconds", UNSET),
        jitter=data.get("jitter", UNSET),
    )


def reject_unknown(options: Mapping[str, Any], known: Collection[str], what: str, where: str = "") -> None:
    unknown = set(options) - set(known)
    if unknown:
        raise ArgumentError(f"unknown {what} option(s){where}: {', '.join(sorted(unknown))}")
