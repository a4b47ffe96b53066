from enum import StrEnum


class WorkflowStatus(StrEnum):
    CANCELLED = "cancelled"
    COMPLETED = "completed"
    FAILED = "failed"
    PARTIALLY_FAILED = "partially_failed"
    RUNNING = "running"

    def __str__(self) -> str:
        return str(self.value)
