"""What the calls of every resource check and convert alike: a key for a request given none, unknown options, a
value one of the spec's choices, a backoff as the API takes it."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping
from typing import Any, get_args

from queueflow_client.errors import ArgumentError
from queueflow_client.types import Backoff, BackoffStrategy, JobStatus, OnConflict, Sequence, SequenceOnFailure, Unique

_BACKOFF_FIELDS = ("strategy", "base_seconds", "max_seconds", "jitter")


def new_idempotency_key() -> str:
    """A key for a request the caller gave none: it makes the client's own retries safe, nothing more."""
    return f"qf-client-{uuid.uuid4()}"


def backoff_json(value: Backoff | Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The backoff's fields that are given (a mapping's other keys are not sent); None: not sent."""
    if value is None:
        return None
    data = value.to_json() if isinstance(value, Backoff) else dict(value)
    if "strategy" in data:
        check_choice(data["strategy"], BackoffStrategy, "backoff strategy")
    return {name: data[name] for name in _BACKOFF_FIELDS if name in data}


_UNIQUE_FIELDS = ("key", "states", "period_seconds", "on_conflict", "debounce_seconds", "debounce_max_seconds")


def unique_json(value: Unique | Mapping[str, Any], where: str = "unique") -> dict[str, Any]:
    """The rule as the API takes it (a mapping's fields checked for their names and choices, the rest the
    server's)."""
    if isinstance(value, Unique):
        data = value.to_json()
    elif isinstance(value, Mapping):
        reject_unknown(value, _UNIQUE_FIELDS, "unique", f" in {where}")
        data = {name: value[name] for name in _UNIQUE_FIELDS if value.get(name) is not None}
        if "states" in data:
            data["states"] = list(data["states"])
    else:
        raise ArgumentError(f"{where} must be a Unique or a dict, not {value!r:.80}")
    if "on_conflict" in data:
        check_choice(data["on_conflict"], OnConflict, "unique on_conflict")
    for state in data.get("states") or ():
        check_choice(state, JobStatus, "job status")
    return data


_SEQUENCE_FIELDS = ("key", "on_failure")


def sequence_json(value: Sequence | Mapping[str, Any], where: str = "sequence") -> dict[str, Any]:
    """The sequence as the API takes it (a mapping's fields checked for their names and choices)."""
    if isinstance(value, Sequence):
        data = value.to_json()
    elif isinstance(value, Mapping):
        reject_unknown(value, _SEQUENCE_FIELDS, "sequence", f" in {where}")
        data = {name: value[name] for name in _SEQUENCE_FIELDS if value.get(name) is not None}
    else:
        raise ArgumentError(f"{where} must be a Sequence or a dict, not {value!r:.80}")
    if "on_failure" in data:
        check_choice(data["on_failure"], SequenceOnFailure, "sequence on_failure")
    return data


def check_choice(value: Any, choices: Any, what: str) -> None:
    """`value` is one of the `Literal` `choices` (a ValueError if not): refused before any request is made, named."""
    if value not in get_args(choices):
        raise ValueError(f"{value!r} is not a valid {what} (one of {', '.join(map(repr, get_args(choices)))})")


def reject_unknown(options: Mapping[str, Any], known: Collection[str], what: str, where: str = "") -> None:
    unknown = set(options) - set(known)
    if unknown:
        raise ArgumentError(f"unknown {what} option(s){where}: {', '.join(sorted(unknown))}")
