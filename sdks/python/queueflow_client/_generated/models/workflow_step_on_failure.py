from enum import StrEnum


class WorkflowStepOnFailure(StrEnum):
    CONTINUE = "continue"
    HALT = "halt"
    SKIP = "skip"

    def __str__(self) -> str:
        return str(self.value)
