"""The one error tree of QueueFlow.

    QueueFlowError
     ├── ValidationError      bad input; carries field-level `errors`
     ├── NotFound             no such object for this tenant
     ├── Conflict
     │    ├── LeaseLost       the lease token is stale or the lease expired
     │    └── InvalidState    the object is not in a state that allows the operation
     └── StoreUnavailable     the store cannot be reached; the caller may retry

Adapters translate their driver's errors into these; `wire_status` says which status and problem `code` each is
on the wire: the HTTP layer's problem (`api.problems`), and the SDK's error class a task sees in-process.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


class QueueFlowError(Exception):
    """Root of every error QueueFlow raises on purpose."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


@dataclass(frozen=True, slots=True)
class FieldError:
    """One invalid field: `loc` is its path (e.g. ``("backoff", "base_seconds")``)."""

    loc: tuple[str | int, ...]
    message: str

    @property
    def field(self) -> str:
        return ".".join(str(part) for part in self.loc)


class ValidationError(QueueFlowError):
    def __init__(self, detail: str, errors: list[FieldError] | None = None) -> None:
        super().__init__(detail)
        self.errors = list(errors or [])

    @classmethod
    def of(cls, errors: list[FieldError]) -> ValidationError:
        detail = "; ".join(f"{e.field}: {e.message}" if e.loc else e.message for e in errors)
        return cls(detail, errors)


class NotFound(QueueFlowError):
    pass


class Conflict(QueueFlowError):
    pass


class LeaseLost(Conflict):
    pass


class InvalidState(Conflict):
    pass


class StoreUnavailable(QueueFlowError):
    pass


class Duplicate(Conflict):
    """An item whose unique rule's `on_conflict` is `error` met its key's job (409 `duplicate`)."""

    def __init__(self, existing_job_id: str, index: int | None = None) -> None:
        where = "" if index is None else f"jobs.{index}: "
        super().__init__(f"{where}a job with this unique key exists: {existing_job_id}")
        self.existing_job_id = existing_job_id
        self.index = index


ErrorCode = Literal["validation_error", "not_found", "lease_lost", "invalid_state", "duplicate", "unavailable"]

WIRE_STATUS: dict[type[QueueFlowError], tuple[int, ErrorCode]] = {
    ValidationError: (400, "validation_error"),
    NotFound: (404, "not_found"),
    LeaseLost: (409, "lease_lost"),
    InvalidState: (409, "invalid_state"),
    Duplicate: (409, "duplicate"),
    Conflict: (409, "invalid_state"),
    StoreUnavailable: (503, "unavailable"),
}
"""Error → (status, code). A subclass not listed takes its nearest listed ancestor's entry."""


def wire_status(error: QueueFlowError) -> tuple[int, ErrorCode]:
    return next(WIRE_STATUS[kind] for kind in type(error).__mro__ if kind in WIRE_STATUS)
