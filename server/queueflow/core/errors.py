"""The one error tree of QueueFlow.

    QueueFlowError
     ├── ValidationError      bad input; carries field-level `errors`
     ├── NotFound             no such object for this tenant
     ├── Conflict
     │    ├── LeaseLost       the lease token is stale or the lease expired
     │    └── InvalidState    the object is not in a state that allows the operation
     └── StoreUnavailable     the store cannot be reached; the caller may retry

Adapters translate their driver's errors into these; the HTTP layer maps each to one problem `code`.
"""

from __future__ import annotations

from dataclasses import dataclass


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
