from enum import StrEnum


class ListJobsStatusType3Type1(StrEnum):
    CANCELLED = "cancelled"
    COMPLETED = "completed"
    DEAD_LETTER = "dead_letter"
    PENDING = "pending"
    RETRYING = "retrying"
    RUNNING = "running"

    def __str__(self) -> str:
        return str(self.value)
