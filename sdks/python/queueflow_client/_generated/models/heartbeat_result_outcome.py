from enum import StrEnum


class HeartbeatResultOutcome(StrEnum):
    LEASE_LOST = "lease_lost"
    OK = "ok"

    def __str__(self) -> str:
        return str(self.value)
