"""What a `WorkerLoop` is plugged into: a `LeaseSource` (where jobs come from and where their outcomes go: the
SDK's HTTP routes, the server's engine, a test's script) and a `TaskRunner` (the tasks by name: the SDK's
`TaskRegistry`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from queueflow_worker.context import Delivery, JobContext, TaskFunction
from queueflow_worker.outcomes import Outcome

__all__ = ["LeaseSource", "LeasedDelivery", "TaskRunner"]


class LeasedDelivery(Delivery, Protocol):
    """A leased job as a source hands it out: a `Delivery` with the token its claim minted."""

    @property
    def lease_token(self) -> str | None: ...


class LeaseSource(Protocol):
    """Where a `WorkerLoop` gets jobs and records what became of them."""

    async def lease(self, max_jobs: int) -> Sequence[LeasedDelivery]:
        """Up to `max_jobs` jobs; when none is claimable, wait a while for work (possibly answering none).
        After `interrupt()` it answers at once, and never loses a job it claimed: what it claims it returns.
        Called up to `loop.LEASES_IN_FLIGHT` times at once."""
        ...

    def interrupt(self) -> None:
        """The loop is stopping: every waiting `lease` answers now, and later ones answer none."""
        ...

    async def ack(self, outcomes: Sequence[Outcome]) -> Sequence[bool | None]:
        """Record the outcomes (at most `loop.MAX_BATCH`); per item, whether the lease still held the job (None: it
        cannot be known, as when a replayed request finds the job settled, perhaps by its own first attempt)."""
        ...

    async def heartbeat(self, leases: Sequence[tuple[str, str]]) -> Sequence[bool]:
        """Extend the leases, (job id, token) pairs (at most `loop.MAX_BATCH`); per item, whether it still held."""
        ...

    async def progress(self, job_id: str, token: str, value: Any) -> bool:
        """Extend one lease now and record `value` as its job's progress; whether it still held."""
        ...


class TaskRunner(Protocol):
    """The tasks a `WorkerLoop` runs, by name (the SDK's `TaskRegistry` is one)."""

    @property
    def names(self) -> list[str]:
        """The tasks it has, sorted: a source leases only these."""
        ...

    def function(self, name: str) -> TaskFunction | None:
        """The function registered as `name`, if any."""
        ...

    async def invoke(self, function: TaskFunction, job: Delivery, ctx: JobContext) -> Any:
        """Run one delivery's `function` on its payload (`context.invoke`, perhaps inside a span)."""
        ...

    def recorded(self, outcome: Outcome, *, held: bool) -> None:
        """Called once the source answered an outcome: `held` is False when the lease was lost first."""
        ...
