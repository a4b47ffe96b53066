"""PostgreSQL's and the driver's errors, translated into QueueFlow's (procrastinate's `wrap_exceptions` idea).

Nothing raw leaves the adapter: a value PostgreSQL will not store is a `ValidationError`, everything that
says "the database is not there right now" is `StoreUnavailable`. An error we did not foresee is logged with
its traceback and also answers `StoreUnavailable`, so a caller sees a retryable 503, never a 500.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterator

import asyncpg
import msgspec

from queueflow.core.errors import FieldError, QueueFlowError, StoreUnavailable, ValidationError
from queueflow.core.types import JSON

log = logging.getLogger("queueflow.postgres")

# Errors after which the connection (and probably every idle one in the pool: the server restarted or
# killed our backends) is of no more use.
_DISCONNECTS = (
    asyncpg.PostgresConnectionError,  # class 08
    asyncpg.exceptions.OperatorInterventionError,  # class 57: admin shutdown, crash, cannot connect now
    asyncpg.InterfaceError,  # "connection is closed", "another operation is in progress" after a loss
    OSError,  # refused, reset, unreachable
    TimeoutError,  # connect timeout
)


def causes(exc: BaseException) -> Iterator[BaseException]:
    """`exc` and what it wraps: SQLAlchemy keeps the driver's error in `.orig`, Python in `__cause__`."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        orig = getattr(current, "orig", None)
        current = orig if isinstance(orig, BaseException) else current.__cause__


def is_disconnect(exc: BaseException) -> bool:
    return any(isinstance(cause, _DISCONNECTS) for cause in causes(exc))


def translate(exc: BaseException) -> QueueFlowError:
    """The QueueFlow error that `exc`, raised while talking to PostgreSQL, means."""
    for cause in causes(exc):
        if isinstance(cause, QueueFlowError):
            return cause
        if isinstance(cause, UnicodeError):
            # Lone surrogates fail while asyncpg encodes the query's parameters, before PostgreSQL sees them.
            return ValidationError.of([FieldError((), "text must be valid Unicode (no lone surrogates)")])
        if isinstance(cause, asyncpg.UniqueViolationError):
            return ValidationError.of([FieldError(("id",), f"duplicate id ({cause.detail or cause})")])
        if isinstance(cause, asyncpg.DataError | asyncpg.IntegrityConstraintViolationError):
            return ValidationError.of([FieldError((), f"PostgreSQL cannot store this value: {cause}")])
    if is_disconnect(exc) or any(isinstance(c, asyncpg.exceptions.InsufficientResourcesError) for c in causes(exc)):
        return StoreUnavailable(f"the database is unavailable: {exc}")
    # Serialization failures, deadlocks, cancelled statements, and bugs: logged in full, retryable for a caller.
    log.error("unexpected error from the PostgreSQL store", exc_info=exc)
    return StoreUnavailable(f"the database failed: {exc}")


def json_text(value: JSON, loc: tuple[str | int, ...]) -> str:
    """`value` as the JSON text of a jsonb parameter; a `ValidationError` at `loc` when it has none."""
    if value is None:
        return "null"  # most tasks' result: one per job a batched ack completes
    if type(value) is dict and not value:
        return "{}"  # most jobs' metadata
    try:
        return _encode(value).decode()
    except (TypeError, ValueError, OverflowError):
        pass  # msgspec's limits (integers beyond 64 bits, say) are not JSON's: let the standard library decide
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (ValueError, TypeError, RecursionError) as exc:
        # e.g. an integer longer than Python's int-to-text limit (4300 digits)
        raise ValidationError.of([FieldError(loc, f"cannot be stored as JSON: {exc}")]) from None


def _encode(value: JSON) -> bytes:
    """msgspec, ten times faster than `json.dumps`. It writes NaN and infinities as null, which would change the
    value silently: they are refused as `json.dumps(allow_nan=False)` refuses them, looked for only when a null
    came out (the stores check values before they get here, so this is a second line of defence)."""
    text = msgspec.json.encode(value)
    if b"null" in text and _has_non_finite(value):
        raise ValueError("out of range float values are not JSON compliant")
    return text


def _has_non_finite(value: JSON) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_has_non_finite(item) for item in value.values())
    if isinstance(value, list | tuple):
        return any(_has_non_finite(item) for item in value)
    return False
