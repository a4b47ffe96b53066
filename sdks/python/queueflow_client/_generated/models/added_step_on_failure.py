from enum import StrEnum


class AddedStepOnFailure(StrEnum):
    CONTINUE = "continue"
    HALT = "halt"
    SKIP = "skip"

    def __str__(self) -> str:
        return str(self.value)
