"""The worker's lease answers are decoded by msgspec (`decode_lease_answer`), every other answer by `from_json`:
the two must make the same `LeasedJob` of the same JSON, or a task would see its job differently in a worker."""

from __future__ import annotations

import json
from typing import Any

import pytest
from queueflow_client.types import LeasedJob, decode_lease_answer

MINIMAL: dict[str, Any] = {
    "id": "job_1",
    "tenant_id": "default",
    "queue_name": "default",
    "task_name": "send_email",
    "payload": {},
    "status": "running",
    "priority": 0,
    "scheduled_at": "2026-12-02T03:44:28.652527Z",
    "locked_until": "2026-12-02T03:44:58.700817Z",
    "delivery_count": 1,
    "retry_count": 0,
    "max_retries": 3,
    "backoff": {"strategy": "exponential", "base_seconds": 1.0, "max_seconds": 3600.0, "jitter": True},
    "timeout_seconds": None,
    "next_retry_at": None,
    "result": None,
    "error_message": None,
    "workflow_id": None,
    "workflow_step_id": None,
    "metadata": {},
    "idempotency_key": None,
    "concurrency_key": None,
    "created_at": "2026-12-02T03:44:28.652527Z",
    "started_at": "2026-12-02T03:44:28.700817Z",
    "completed_at": None,
    "progress": None,
    "trace_context": None,
    "lease_token": "d629e8a2-ad1d-443e-9a1d-382b2ab62373",
    "deadline": None,
}
FULL: dict[str, Any] = {
    **MINIMAL,
    "payload": {"to": "ada@example.com", "n": [1, 2.5, None, {"deep": True}], "text": "é ☃ \u0000"},
    "priority": -3,
    "delivery_count": 4,
    "retry_count": 2,
    "backoff": {"strategy": "linear", "base_seconds": 2, "max_seconds": 60, "jitter": False},
    "timeout_seconds": 30,
    "next_retry_at": "2026-12-02T03:45:00+00:00",
    "result": {"partial": [1, 2]},
    "error_message": "Traceback …\nValueError: no",
    "workflow_id": "wf_1",
    "workflow_step_id": "extract",
    "metadata": {"source": "signup"},
    "idempotency_key": "signup-42",
    "concurrency_key": "user-42",
    "progress": {"done": 1, "of": 2},
    "trace_context": {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "a=1"},
    "deadline": "2026-12-02T03:45:28.700817Z",
}


def answer(*jobs: dict[str, Any]) -> bytes:
    return json.dumps({"jobs": list(jobs)}).encode()


NO_TRACESTATE = {**FULL, "trace_context": {"traceparent": FULL["trace_context"]["traceparent"]}}


@pytest.mark.parametrize("job", [MINIMAL, FULL, NO_TRACESTATE])
def test_a_lease_answer_decodes_to_the_jobs_from_json_makes(job: dict[str, Any]) -> None:
    decoded = decode_lease_answer(answer(job, {**job, "id": "job_2"}))
    assert decoded == [LeasedJob.from_json(job), LeasedJob.from_json({**job, "id": "job_2"})]
    # The same types too (== would pass 30 for 30.0): seconds are floats, as declared, however JSON spells them.
    assert [type(getattr(decoded[0], name)) for name in ("timeout_seconds", "priority")] == [
        type(getattr(LeasedJob.from_json(job), name)) for name in ("timeout_seconds", "priority")
    ]
    assert decoded[0].scheduled_at.tzinfo is not None


def test_fields_a_newer_server_adds_are_ignored() -> None:
    newer = {**FULL, "attempts": [{"at": "2026-12-02T03:44:28Z"}], "backoff": {**FULL["backoff"], "factor": 3}}
    assert decode_lease_answer(answer(newer)) == [LeasedJob.from_json(FULL)]


def test_an_empty_answer_and_a_broken_one() -> None:
    assert decode_lease_answer(answer()) == []
    # A job without its lease token cannot be held: the lease fails (a ValueError, as a JSON error was) rather
    # than run a job whose outcome could never be recorded.
    without_token = {key: value for key, value in MINIMAL.items() if key != "lease_token"}
    with pytest.raises(ValueError, match="lease_token"):
        decode_lease_answer(answer(without_token))
