"""Verifying push deliveries: the server signs each POST to an endpoint the way Stripe signs its webhooks.

    QueueFlow-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>[,v1=…]

During a secret's rotation the header carries one `v1=` per secret that signs, so a receiver that knows either
secret verifies. `verify_signature` checks every `v1=` in constant time and refuses a `t` further than
`tolerance_seconds` from now (a replay), raising `SignatureVerificationError`.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable, Iterable, Mapping

from queueflow_client.errors import SignatureVerificationError

__all__ = ["SIGNATURE_HEADER", "verify_signature"]

SIGNATURE_HEADER = "QueueFlow-Signature"


def verify_signature(
    secret: str | Iterable[str],
    headers: Mapping[str, str] | Iterable[tuple[str, str]],
    body: bytes | str,
    tolerance_seconds: float = 300,
    *,
    now: Callable[[], float] = time.time,
) -> None:
    """Return if `body` (the request's raw bytes, exactly as received) was signed by the QueueFlow server holding
    `secret` (or any of several: a receiver rotating its own keeps both) within `tolerance_seconds` of now;
    raise `SignatureVerificationError` otherwise. `headers`: the request's headers, a mapping or (name, value)
    pairs, names in any case (an ASGI scope's byte pairs decoded)."""
    header = _header(headers)
    if header is None:
        raise SignatureVerificationError(f"no {SIGNATURE_HEADER} header")
    timestamp, signatures = _parse(header)
    if abs(now() - timestamp) > tolerance_seconds:
        raise SignatureVerificationError(f"the signature's time is more than {tolerance_seconds:g} s from now")
    raw = body.encode() if isinstance(body, str) else bytes(body)
    signed = f"{timestamp}.".encode() + raw
    secrets = [secret] if isinstance(secret, str) else list(secret)
    expected = [hmac.new(key.encode(), signed, hashlib.sha256).hexdigest() for key in secrets]
    # Every pair is compared, matched or not, so the time taken says nothing of which one matched.
    matched = False
    for signature in signatures:
        for candidate in expected:
            matched |= hmac.compare_digest(signature, candidate)
    if not matched:
        raise SignatureVerificationError("no signature matches the secret")


def _header(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> str | None:
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    wanted = SIGNATURE_HEADER.lower()
    for name, value in pairs:
        if name.lower() == wanted:
            return value
    return None


def _parse(header: str) -> tuple[int, list[str]]:
    timestamp: int | None = None
    signatures: list[str] = []
    for part in header.split(","):
        key, sep, value = part.strip().partition("=")
        if not sep:
            continue
        if key == "t" and value.isdigit():
            timestamp = int(value)
        elif key == "v1":
            signatures.append(value)
    if timestamp is None or not signatures:
        raise SignatureVerificationError(f"a malformed {SIGNATURE_HEADER} header: expected t=…,v1=…")
    return timestamp, signatures
