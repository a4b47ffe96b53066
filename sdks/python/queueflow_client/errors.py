"""Every error the client raises: one root, then one class per HTTP status and problem `code`.

    QueueFlowError
    ├── ArgumentError               a value the client cannot send as given (also a TypeError); no request made
    ├── SignatureVerificationError  a push delivery whose QueueFlow-Signature does not verify (`verify_signature`)
    ├── APIConnectionError          the request got no answer (refused, reset, DNS, …)
    │   └── APITimeoutError         … within the client's timeout
    └── APIError                    the server answered with a problem: .status, .code, .detail, .errors
        ├── ValidationError         400 validation_error (.errors names the fields)
        ├── AuthenticationError     401 unauthorized
        ├── PermissionDeniedError   403 forbidden
        ├── NotFoundError           404 not_found
        ├── ConflictError           409
        │   ├── LeaseLostError      409 lease_lost: the lease token no longer holds the job
        │   ├── InvalidStateError   409 invalid_state: e.g. cancelling a finished job
        │   └── DuplicateError      409 duplicate: a unique rule met an existing job (`existing_job_id`)
        ├── PayloadTooLargeError    413 payload_too_large
        └── UnavailableError        503 unavailable: the database is unreachable (retried automatically)

Any other status raises `APIError` itself.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "ArgumentError",
    "AuthenticationError",
    "ConflictError",
    "FieldError",
    "InvalidStateError",
    "LeaseLostError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "QueueFlowError",
    "SignatureVerificationError",
    "UnavailableError",
    "ValidationError",
]


class QueueFlowError(Exception):
    """The root of every error this package raises."""


class ArgumentError(QueueFlowError, TypeError):
    """A value given to a client method cannot be sent as it is (a payload that is not a JSON object, a `datetime`
    inside one, …); the message names it by its path. Raised before any request is made."""


class SignatureVerificationError(QueueFlowError):
    """A request claiming to be a push delivery failed verification (`queueflow_client.verify_signature`): the
    `QueueFlow-Signature` header is missing or malformed, its time is outside the tolerance, or no `v1=` matches
    the secret. Answer it 400 (or 401) and do not run the job: it is not from your QueueFlow server, or it was
    replayed or altered."""


class APIConnectionError(QueueFlowError):
    """The request got no answer: the server could not be reached or the connection broke. The message names
    the URL the client tried."""


class APITimeoutError(APIConnectionError):
    """The server did not answer within the client's timeout."""


@dataclass(frozen=True, slots=True)
class FieldError:
    """One problem with one input: `field` is its dotted path (`jobs.3.task_name`; empty for the whole body)."""

    field: str
    message: str


class APIError(QueueFlowError):
    """The server answered with an RFC 9457 problem (or an unexpected status)."""

    def __init__(
        self, status: int, code: str | None, detail: str, errors: tuple[FieldError, ...] = (), *, body: Any = None
    ) -> None:
        super().__init__(f"{status} {code or 'error'}: {detail}")
        self.status = status
        self.code = code
        self.detail = detail
        self.errors = errors
        self.body = body
        """The decoded response body (the problem document), for anything the attributes above leave out."""


class ValidationError(APIError):
    """400: the request was malformed or broke a rule; `errors` says which fields."""


class AuthenticationError(APIError):
    """401: the API key is missing or unknown."""


class PermissionDeniedError(APIError):
    """403: the key may not call this route (a tenant key on a worker route, or the other way round)."""


class NotFoundError(APIError):
    """404: no such object for this tenant."""


class ConflictError(APIError):
    """409: the object is not in a state that allows the request."""


class LeaseLostError(ConflictError):
    """409 lease_lost: the lease token is stale (the job was cancelled, reclaimed or finished) or expired."""


class InvalidStateError(ConflictError):
    """409 invalid_state: e.g. cancelling a finished job, or retrying one that is not dead-lettered or cancelled."""


class DuplicateError(ConflictError):
    """409 duplicate: a `unique` rule with `on_conflict="error"` met `existing_job_id` (in a batch, the item at
    `index`)."""

    @property
    def existing_job_id(self) -> str | None:
        return self.body.get("existing_job_id") if isinstance(self.body, dict) else None

    @property
    def index(self) -> int | None:
        return self.body.get("index") if isinstance(self.body, dict) else None


class PayloadTooLargeError(APIError):
    """413: the request body is over the server's limit."""


class UnavailableError(APIError):
    """503: the server cannot reach its database; safe to retry (the client already did)."""


_BY_STATUS: dict[int, type[APIError]] = {
    400: ValidationError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    503: UnavailableError,
}
_BY_CODE: dict[str, type[APIError]] = {
    "lease_lost": LeaseLostError,
    "invalid_state": InvalidStateError,
    "duplicate": DuplicateError,
}


def error_from_problem(status: int, code: str | None, detail: str, errors: Sequence[tuple[str, str]] = ()) -> APIError:
    """The exception for a problem known by its parts (status, `code`, detail, (field, message) pairs), as
    `error_from_response` makes it from a response: the server's in-process runner refuses `ctx.add_steps` so."""
    cls = (_BY_CODE.get(code) if code else None) or _BY_STATUS.get(status, APIError)
    fields = tuple(FieldError(field, message) for field, message in errors)
    body = {"status": status, "code": code, "detail": detail, "errors": [{"field": f, "message": m} for f, m in errors]}
    return cls(status, code, detail, fields, body=body)


def error_from_response(status: int, content: bytes) -> APIError:
    """The exception for an error response: its class from the problem's `code`, else from the status."""
    try:
        body = json.loads(content) if content else None
    except ValueError:
        body = None
    problem = body if isinstance(body, dict) else {}
    code = problem.get("code") if isinstance(problem.get("code"), str) else None
    detail = problem.get("detail") or problem.get("title") or content.decode("utf-8", "replace")[:500] or "no detail"
    errors = tuple(
        FieldError(str(item.get("field", "")), str(item.get("message", "")))
        for item in problem.get("errors") or ()
        if isinstance(item, dict)
    )
    cls = (_BY_CODE.get(code) if code else None) or _BY_STATUS.get(status, APIError)
    return cls(status, code, str(detail), errors, body=body)
