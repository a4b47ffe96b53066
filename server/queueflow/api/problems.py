"""Errors on the wire: RFC 9457 problem details, from one table.

Every error QueueFlow raises on purpose is a `QueueFlowError`; `core.errors.wire_status` says which status and
`code` each becomes. Litestar's own HTTP errors (unknown route, wrong method, bad body, body too large) and anything
unexpected are rendered in the same shape, so a client parses exactly one error format.
"""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any, Literal

import msgspec
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.openapi.datastructures import ResponseSpec
from litestar.types import ExceptionHandlersMap

from queueflow.core.errors import Duplicate, QueueFlowError, StoreUnavailable, ValidationError, wire_status

log = logging.getLogger("queueflow.api")

PROBLEM_JSON = "application/problem+json"
RETRY_AFTER_SECONDS = 1

ProblemCode = Literal[
    "validation_error",
    "unauthorized",
    "forbidden",
    "not_found",
    "method_not_allowed",
    "lease_lost",
    "invalid_state",
    "duplicate",
    "payload_too_large",
    "unavailable",
    "internal_error",
]


class FieldProblem(msgspec.Struct):
    field: str
    """The offending field's path, dotted (`backoff.base_seconds`, `jobs.3.task_name`); empty for the whole body."""
    message: str


class Problem(msgspec.Struct, omit_defaults=True):
    """An RFC 9457 problem: `code` is the machine-readable part."""

    type: str
    title: str
    status: int
    detail: str
    code: ProblemCode
    errors: list[FieldProblem] | None = None
    existing_job_id: str | None = None
    """`duplicate`: the job the `unique` rule met."""
    index: int | None = None
    """`duplicate` in a batch: the position of the item that met it."""


HTTP_CODES: dict[int, ProblemCode] = {
    400: "validation_error",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    503: "unavailable",
}
"""Status of a framework-raised HTTP error → code; statuses not listed are 4xx/5xx the spec never names."""

DESCRIPTIONS: dict[int, str] = {
    400: "validation_error: the request is malformed or a value is out of range (see `errors`)",
    401: "unauthorized: missing or unknown credential",
    403: "forbidden: this kind of key may not call this route",
    404: "not_found: no such object for this tenant",
    409: "lease_lost (stale or expired lease token), invalid_state (the object's state forbids this) or duplicate"
    " (a `unique` rule with on_conflict error met `existing_job_id`; in a batch, the item at `index`)",
    413: "payload_too_large: the body is over the size limit",
    503: "unavailable: the database cannot be reached; retry later",
}


def problem_responses(*statuses: int) -> dict[int, ResponseSpec]:
    """The spec's declaration of the error responses a route can give."""
    return {
        status: ResponseSpec(
            data_container=Problem, generate_examples=False, description=DESCRIPTIONS[status], media_type=PROBLEM_JSON
        )
        for status in statuses
    }


def problem(
    status: int,
    code: ProblemCode,
    detail: str,
    *,
    errors: list[FieldProblem] | None = None,
    headers: dict[str, str] | None = None,
    existing_job_id: str | None = None,
    index: int | None = None,
) -> Response[bytes]:
    body = Problem(
        type="about:blank",
        title=HTTPStatus(status).phrase,
        status=status,
        detail=detail,
        code=code,
        errors=errors,
        existing_job_id=existing_job_id,
        index=index,
    )
    return Response(msgspec.json.encode(body), status_code=status, media_type=PROBLEM_JSON, headers=headers)


def domain_problem(_: Request[Any, Any, Any], exc: QueueFlowError) -> Response[bytes]:
    status, code = wire_status(exc)
    errors = None
    headers = None
    if isinstance(exc, ValidationError):
        errors = [FieldProblem(error.field, error.message) for error in exc.errors]
    if isinstance(exc, StoreUnavailable):
        headers = {"Retry-After": str(RETRY_AFTER_SECONDS)}
    if isinstance(exc, Duplicate):
        return problem(status, code, exc.detail, existing_job_id=exc.existing_job_id, index=exc.index)
    return problem(status, code, exc.detail, errors=errors, headers=headers)


def http_problem(request: Request[Any, Any, Any], exc: HTTPException) -> Response[bytes]:
    status = exc.status_code
    code = HTTP_CODES.get(status, "internal_error" if status >= 500 else "validation_error")
    errors = None
    if isinstance(exc, ValidationException) or status == 400:
        errors = [_field_problem(item) for item in exc.extra or [] if isinstance(item, dict)] if exc.extra else None
    detail = _too_large(request) if status == 413 else _detail(exc)
    return problem(status, code, detail, errors=errors, headers=exc.headers)


def _too_large(request: Request[Any, Any, Any]) -> str:
    """A 413 that states the limit, so a client knows how far over it is without asking the operator."""
    limit = request.route_handler.resolve_request_max_body_size()
    if not limit:
        return "the request body is over the size limit"
    return (
        f"the request body is over this server's limit of {limit:,} bytes (QUEUEFLOW_MAX_BODY_BYTES): "
        "send less per request (e.g. smaller batches), or keep large data elsewhere and enqueue a reference"
    )


def unexpected_problem(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return problem(500, "internal_error", "an unexpected error occurred; it has been logged")


def _field_problem(item: dict[str, Any]) -> FieldProblem:
    return FieldProblem(str(item.get("key") or ""), str(item.get("message") or "is invalid"))


def _detail(exc: HTTPException) -> str:
    # Litestar puts "404: Not Found"-style text in `detail` when none was given; say something useful instead.
    generic = {HTTPStatus(exc.status_code).phrase, f"{exc.status_code}: {HTTPStatus(exc.status_code).phrase}"}
    if exc.detail and exc.detail not in generic:
        return str(exc.detail)
    return {
        404: "no such route",
        405: "this route does not allow that method",
        413: "the request body is over the size limit",
    }.get(exc.status_code, HTTPStatus(exc.status_code).phrase)


EXCEPTION_HANDLERS: ExceptionHandlersMap = {
    QueueFlowError: domain_problem,
    HTTPException: http_problem,
    Exception: unexpected_problem,
}
