from enum import StrEnum


class AckResultOutcome(StrEnum):
    LEASE_LOST = "lease_lost"
    OK = "ok"

    def __str__(self) -> str:
        return str(self.value)
