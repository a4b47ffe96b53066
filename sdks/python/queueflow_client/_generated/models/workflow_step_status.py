from enum import StrEnum


class WorkflowStepStatus(StrEnum):
    CANCELLED = "cancelled"
    COMPLETED = "completed"
    ENQUEUED = "enqueued"
    FAILED = "failed"
    PENDING = "pending"
    SKIPPED = "skipped"
    WAITING = "waiting"

    def __str__(self) -> str:
        return str(self.value)
