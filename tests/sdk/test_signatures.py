"""`queueflow_client.verify_signature` accepts exactly what the server's signer (`core.endpoints.signature_header`)
signs: either secret during a rotation, within the tolerance, for the very bytes sent."""

from __future__ import annotations

import pytest
from queueflow.core.endpoints import signature_header
from queueflow_client import SignatureVerificationError, verify_signature

NOW = 1_765_000_000
BODY = b'{"job": {"id": "job_1"}, "delivery": 1}'


def signed(*secrets: str, at: int = NOW, body: bytes = BODY) -> dict[str, str]:
    return {"QueueFlow-Signature": signature_header(list(secrets), body, at)}


def verify(secret: str | list[str], headers: object, body: bytes | str = BODY, **options: float) -> None:
    verify_signature(secret, headers, body, now=lambda: NOW + 10, **options)  # type: ignore[arg-type]


def test_a_delivery_signed_with_the_secret_verifies() -> None:
    verify("qfsec_one", signed("qfsec_one"))
    verify("qfsec_one", signed("qfsec_one"), BODY.decode())
    verify("qfsec_one", [("queueflow-signature", signed("qfsec_one")["QueueFlow-Signature"])])


def test_during_a_rotation_either_secret_verifies() -> None:
    headers = signed("qfsec_new", "qfsec_old")
    verify("qfsec_new", headers)
    verify("qfsec_old", headers)
    verify(["qfsec_other", "qfsec_old"], headers)


@pytest.mark.parametrize(
    ("secret", "headers", "body", "message"),
    [
        ("qfsec_wrong", signed("qfsec_one"), BODY, "no signature matches"),
        ("qfsec_one", signed("qfsec_one"), BODY + b" ", "no signature matches"),
        ("qfsec_one", signed("qfsec_one", at=NOW - 300), BODY, "more than 300 s"),
        ("qfsec_one", signed("qfsec_one", at=NOW + 400), BODY, "more than 300 s"),
        ("qfsec_one", {}, BODY, "no QueueFlow-Signature header"),
        ("qfsec_one", {"QueueFlow-Signature": "v1=abc"}, BODY, "malformed"),
        ("qfsec_one", {"QueueFlow-Signature": f"t={NOW}"}, BODY, "malformed"),
        ("qfsec_one", {"QueueFlow-Signature": "garbage"}, BODY, "malformed"),
    ],
)
def test_anything_else_is_refused(secret: str, headers: dict[str, str], body: bytes, message: str) -> None:
    with pytest.raises(SignatureVerificationError, match=message):
        verify(secret, headers, body)


def test_the_tolerance_is_the_callers() -> None:
    verify("qfsec_one", signed("qfsec_one", at=NOW - 3000), tolerance_seconds=3600)
