from enum import StrEnum


class ProblemCode(StrEnum):
    FORBIDDEN = "forbidden"
    INTERNAL_ERROR = "internal_error"
    INVALID_STATE = "invalid_state"
    LEASE_LOST = "lease_lost"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    NOT_FOUND = "not_found"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    UNAUTHORIZED = "unauthorized"
    UNAVAILABLE = "unavailable"
    VALIDATION_ERROR = "validation_error"

    def __str__(self) -> str:
        return str(self.value)
