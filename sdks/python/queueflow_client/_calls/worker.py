"""The worker routes' calls: lease, heartbeat (one or many), complete, fail, ack, release, and add steps to the
running step's workflow."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import msgspec
from queueflow_worker import Outcome

from queueflow_client._calls.routes import (
    ACK_JOBS,
    ADD_WORKFLOW_STEPS,
    COMPLETE_JOB,
    FAIL_JOB,
    HEARTBEAT_JOB,
    HEARTBEAT_JOBS,
    LEASE_JOBS,
    RELEASE_JOBS,
)
from queueflow_client._calls.workflows import added_step
from queueflow_client._transport import Call, call, decoding_call, encoded_call
from queueflow_client.errors import ArgumentError
from queueflow_client.steps import check_unique
from queueflow_client.types import (
    AckResult,
    HeartbeatResult,
    Job,
    LeasedJob,
    Step,
    WorkflowStep,
    decode_ack_answer,
    decode_lease_answer,
)

MAX_ADDED_STEPS = 1000
"""The most steps one `POST /v1/worker/jobs/{id}/steps` takes."""


def lease(
    queues: Sequence[str],
    *,
    max_jobs: int,
    lease_seconds: float,
    wait_seconds: float,
    worker_id: str | None,
    task_names: Sequence[str] | None = None,
) -> Call[list[LeasedJob]]:
    body: dict[str, Any] = {
        "queues": list(queues),
        "max_jobs": max_jobs,
        "lease_seconds": lease_seconds,
        "wait_seconds": wait_seconds,
    }
    if worker_id is not None:
        body["worker_id"] = worker_id
    if task_names is not None:
        body["task_names"] = list(task_names)
    # Not replayable: a lease whose answer was lost has claimed jobs nobody will run until their leases expire.
    return decoding_call(LEASE_JOBS.request(body=body), decode_lease_answer, replayable=False)


_NO_PROGRESS: Any = object()


def heartbeat(job_id: str, lease_token: str, lease_seconds: float, progress: Any = _NO_PROGRESS) -> Call[datetime]:
    """A heartbeat; with `progress` (any JSON, null included), one that also records it."""
    body = {"lease_token": lease_token, "lease_seconds": lease_seconds}
    if progress is not _NO_PROGRESS:
        body["progress"] = progress
    return call(
        HEARTBEAT_JOB.request(job_id, body=body),
        lambda data: datetime.fromisoformat(data["locked_until"]),
        replayable=True,
    )


def heartbeat_many(leases: Sequence[tuple[str, str]], lease_seconds: float) -> Call[list[HeartbeatResult]]:
    """Extend every held lease of `leases` ((job id, lease token) pairs) at once; each answers on its own."""
    body = {"jobs": _leases(leases), "lease_seconds": lease_seconds}
    return call(
        HEARTBEAT_JOBS.request(body=body),
        lambda data: [HeartbeatResult.from_json(item) for item in data["results"]],
        replayable=True,
    )


def _leases(leases: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"id": job_id, "lease_token": token} for job_id, token in leases]


def complete(job_id: str, lease_token: str, result: Any) -> Call[Job]:
    # Replayable: a repeat of a completion that landed is answered lease_lost, and the worker knows what that means.
    body = {"lease_token": lease_token, "result": result}
    return call(COMPLETE_JOB.request(job_id, body=body), Job.from_json, replayable=True)


def fail(job_id: str, lease_token: str, error: str, *, retryable: bool, retry_after_seconds: float | None) -> Call[Job]:
    body: dict[str, Any] = {"lease_token": lease_token, "error": error, "retryable": retryable}
    if retry_after_seconds is not None:
        body["retry_after_seconds"] = retry_after_seconds
    return call(FAIL_JOB.request(job_id, body=body), Job.from_json, replayable=True)


_ACK_REQUEST = ACK_JOBS.request()
"""An ack's request but for its body, which `ack_outcomes` encodes itself."""
_json = msgspec.json.Encoder()


def ack_outcomes(outcomes: Sequence[Outcome]) -> Call[list[AckResult]]:
    """`POST /v1/worker/ack` of a worker's outcomes, the completions then the failures, each in `outcomes`' order,
    encoded by msgspec from the outcomes, and its answer read by msgspec. A worker acks a few hundred outcomes a
    call: encoded through model objects, their `to_dict` and `json.dumps`, they took 1.5 µs an outcome, and
    `from_json` 0.9 more (tests/sdk/test_ack_encoding.py holds this body to the plain one and these results to
    `from_json`'s). A result is encoded by `json.dumps`, as httpx encodes a body: the task's result was checked by
    it (`outcome_of`), and msgspec would take values it refuses (a datetime)."""
    complete = [
        {"id": o.job_id, "lease_token": o.lease_token, "result": None if o.result is None else _raw(o.result)}
        for o in outcomes
        if o.error is None
    ]
    fail = [
        {"id": o.job_id, "lease_token": o.lease_token, "error": o.error, "retryable": o.retryable}
        if o.retry_after_seconds is None
        else {
            "id": o.job_id,
            "lease_token": o.lease_token,
            "error": o.error,
            "retryable": o.retryable,
            "retry_after_seconds": o.retry_after_seconds,
        }
        for o in outcomes
        if o.error is not None
    ]
    content = _json.encode({"complete": complete, "fail": fail})
    return encoded_call(_ACK_REQUEST, content, decode_ack_answer, replayable=True)


def _raw(value: Any) -> msgspec.Raw:
    return msgspec.Raw(json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode())


def release(leases: Sequence[tuple[str, str]]) -> Call[list[AckResult]]:
    """Give back held jobs not started ((job id, lease token) pairs): each is claimable again at once, as before
    that delivery, or `lease_lost` on its own."""
    # Replayable: a repeat of a release that landed finds the lease gone (lease_lost) and changes nothing.
    return call(
        RELEASE_JOBS.request(body={"jobs": _leases(leases)}),
        lambda data: [AckResult.from_json(item) for item in data["results"]],
        replayable=True,
    )


def add_steps(job_id: str, lease_token: str, steps: Sequence[Step | Mapping[str, Any]]) -> Call[list[WorkflowStep]]:
    if not 1 <= len(steps) <= MAX_ADDED_STEPS:
        raise ArgumentError(f"add 1–{MAX_ADDED_STEPS} steps at a time, not {len(steps)}")
    check_unique(steps)
    body = {"lease_token": lease_token, "steps": [added_step(step) for step in steps]}
    # Replayable: the lease token keys it, and a repeat of the same steps by the same step adds nothing twice.
    return call(
        ADD_WORKFLOW_STEPS.request(job_id, body=body),
        lambda data: [WorkflowStep.from_json(step) for step in data["steps"]],
        replayable=True,
    )
