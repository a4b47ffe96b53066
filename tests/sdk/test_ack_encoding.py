"""The worker's acks are encoded by msgspec from its outcomes (`_calls.ack_outcomes`) and their answers decoded by
msgspec (`decode_ack_answer`), not through the generated models: the two ways must send the same request and read
the same results, or an outcome would be recorded differently by a worker than by the generated core."""

from __future__ import annotations

import json
from typing import Any

from queueflow_client import _calls
from queueflow_client._generated.api.worker import ack_jobs
from queueflow_client._generated.models import AckComplete, AckFail, AckRequest
from queueflow_client._generated.types import UNSET
from queueflow_client.types import AckResult, decode_ack_answer
from queueflow_worker import Outcome

OUTCOMES = [
    Outcome("job_1", "token-1"),
    Outcome("job_2", "token-2", error="ValueError: no\n\nTraceback …", retry_after_seconds=None),
    Outcome("job_3", "token-3", result={"n": [1, 2.5, None, {"deep": True}], "text": "é ☃ \u0000 \u2028"}),
    Outcome("job_4", "token-4", error="fatal", retryable=False),
    Outcome("job_5", "token-5", error="retry requested", retry_after_seconds=2.5),
    Outcome("job_6", "token-6", result=[0.1, 10**20, -0.0, "x"]),
    Outcome("job_7", "token-7", error="later", retry_after_seconds=0),
    Outcome("job_8", "token-8", result=0),
]


def _generated_request(outcomes: list[Outcome]) -> dict[str, Any]:
    """The request the generated models make of the same outcomes (as the worker built it before)."""
    complete = [
        AckComplete(id=o.job_id, lease_token=o.lease_token, result=o.result) for o in outcomes if o.error is None
    ]
    fail = [
        AckFail(
            id=o.job_id,
            lease_token=o.lease_token,
            error=o.error,
            retryable=o.retryable,
            retry_after_seconds=o.retry_after_seconds if o.retry_after_seconds is not None else UNSET,
        )
        for o in outcomes
        if o.error is not None
    ]
    return ack_jobs._get_kwargs(body=AckRequest(complete=complete, fail=fail))


def test_an_ack_sends_what_the_generated_models_send() -> None:
    expected = _generated_request(OUTCOMES)
    request = _calls.ack_outcomes(OUTCOMES).send.args[0]  # type: ignore[attr-defined]
    assert {key: value for key, value in request.items() if key != "content"} == {
        key: value for key, value in expected.items() if key != "json"
    }
    assert json.loads(request["content"]) == expected["json"]
    # httpx's encoding of the generated body, byte for byte where both spell the same JSON alike.
    httpx_body = json.dumps(expected["json"], ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    assert json.loads(httpx_body) == json.loads(request["content"])


def test_an_ack_of_completions_only_or_failures_only() -> None:
    for outcomes in ([OUTCOMES[0]], [OUTCOMES[1]], []):
        request = _calls.ack_outcomes(outcomes).send.args[0]  # type: ignore[attr-defined]
        assert json.loads(request["content"]) == _generated_request(outcomes)["json"]


def test_an_ack_answer_reads_as_from_json_reads_it() -> None:
    answer = {
        "results": [
            {"id": "job_1", "outcome": "ok", "status": "completed"},
            {"id": "job_2", "outcome": "lease_lost", "status": "dead_letter"},
            {"id": "job_3", "outcome": "lease_lost", "status": None},
            {"id": "job_4", "outcome": "lease_lost"},  # no status: None, as from_json reads it
            {"id": "job_5", "outcome": "something_newer", "status": "paused", "extra": 1},
        ],
        "extra": True,
    }
    decoded = decode_ack_answer(json.dumps(answer).encode())
    assert decoded == [AckResult.from_json(item) for item in answer["results"]]
    assert decoded[3] == AckResult("job_4", "lease_lost", None)
