"""The worker's acks are encoded by msgspec from its outcomes (`_calls.ack_outcomes`) and their answers decoded by
msgspec (`decode_ack_answer`), not as every other call's (a body of plain JSON values that httpx encodes, an answer
read by `from_json`): the two ways must send the same request and read the same results, or an outcome would be
recorded differently by a worker than by the rest of the client."""

from __future__ import annotations

import json
from typing import Any

from queueflow_client import _calls
from queueflow_client._calls.routes import ACK_JOBS
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


def _plain_request(outcomes: list[Outcome]) -> dict[str, Any]:
    """The request of the same outcomes as every other call builds one (`AckRequest`'s fields, none left null)."""
    complete = [{"id": o.job_id, "lease_token": o.lease_token, "result": o.result} for o in outcomes if o.error is None]
    fail = [
        {"id": o.job_id, "lease_token": o.lease_token, "error": o.error, "retryable": o.retryable}
        | ({} if o.retry_after_seconds is None else {"retry_after_seconds": o.retry_after_seconds})
        for o in outcomes
        if o.error is not None
    ]
    return ACK_JOBS.request(body={"complete": complete, "fail": fail})


def test_an_ack_sends_what_a_plain_body_sends() -> None:
    expected = _plain_request(OUTCOMES)
    request = _calls.ack_outcomes(OUTCOMES).request
    assert {key: value for key, value in request.items() if key not in ("content", "headers")} == {
        key: value for key, value in expected.items() if key != "json"
    }
    assert request["headers"] == {"Content-Type": "application/json"}  # as httpx marks a `json=` body
    assert json.loads(request["content"]) == expected["json"]
    # httpx's encoding of the plain body, byte for byte where both spell the same JSON alike.
    httpx_body = json.dumps(expected["json"], ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    assert json.loads(httpx_body) == json.loads(request["content"])


def test_an_ack_of_completions_only_or_failures_only() -> None:
    for outcomes in ([OUTCOMES[0]], [OUTCOMES[1]], []):
        request = _calls.ack_outcomes(outcomes).request
        assert json.loads(request["content"]) == _plain_request(outcomes)["json"]


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
