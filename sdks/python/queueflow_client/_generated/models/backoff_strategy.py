from enum import StrEnum


class BackoffStrategy(StrEnum):
    EXPONENTIAL = "exponential"
    FIXED = "fixed"
    LINEAR = "linear"

    def __str__(self) -> str:
        return str(self.value)
