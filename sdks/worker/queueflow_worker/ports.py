"""What a `WorkerLoop` is plugged into: a `LeaseSource` (where jobs come from and where their outcomes go: the
SDK's HTTP routes, the server's engine, a test's script), a `TaskRunner` (the tasks by name: the SDK's
`TaskRegistry`) and a `Clock` (the event loop's monotonic time; a test's, which moves only when told to)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from queueflow_worker.context import AddedStep, Delivery, JobContext, TaskFunction
from queueflow_worker.outcomes import Outcome

__all__ = ["Clock", "LeaseSource", "LeasedDelivery", "RefusingRunner", "TaskRunner"]


class LeasedDelivery(Delivery, Protocol):
    """A leased job as a source hands it out: a `Delivery` with the token its claim minted."""

    @property
    def lease_token(self) -> str | None: ...
    @property
    def timeout_seconds(self) -> float | None:
        """How long one delivery may run: its deadline is its claim's time plus this."""
        ...


class LeaseSource(Protocol):
    """Where a `WorkerLoop` gets jobs and records what became of them."""

    async def lease(self, max_jobs: int) -> Sequence[LeasedDelivery]:
        """Up to `max_jobs` jobs; when none is claimable, wait a while for work (possibly answering none).
        After `interrupt()` it answers at once, and never loses a job it claimed: what it claims it returns (the
        loop then releases it). Called up to `leasing.LEASES_IN_FLIGHT` times at once."""
        ...

    def interrupt(self) -> None:
        """The loop is stopping: later leases answer none. A lease in flight is left to answer — a long-poll
        too, since work may have arrived for it a moment before: cut, an answer on its way strands its jobs
        until their leases expire — unless the source can end a wait with no answer in flight (the in-process
        source, whose claim and answer are one call, ends its waits at once)."""
        ...

    async def release(self, leases: Sequence[tuple[str, str]]) -> Sequence[bool]:
        """Give back jobs held but not started, (job id, token) pairs (at most `loop.MAX_BATCH`): each is
        claimable again at once, as before this delivery, no retry counted. Per item, whether the lease still
        held it (False: it had expired or was settled, and nothing changed)."""
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

    async def add_steps(self, job_id: str, token: str, steps: list[dict[str, Any]]) -> Sequence[AddedStep]:
        """The job `job_id`, a running workflow step held with `token`, adds `steps` (each a `NewStep` of
        `POST /v1/worker/jobs/{id}/steps`, as `context.step_json` makes it) to its workflow; the listed steps as
        they are now. Errors as the source has them: lease lost, not a workflow step, refused steps."""
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


class RefusingRunner(TaskRunner, Protocol):
    """A `TaskRunner` that also names the error a task sees for a refusal (the SDK's `TaskRegistry` is one): a
    source that is not HTTP (the server's engine) raises `refused(...)` for what the HTTP route would answer with
    a problem, so a task catches the same SDK class in-process as over HTTP. Optional: a runner without it sees
    the source's own errors."""

    def refused(self, status: int, code: str | None, detail: str, errors: Sequence[tuple[str, str]]) -> Exception:
        """The exception for the problem (status, `code`, detail, (field, message) pairs)."""
        ...


class Clock(Protocol):
    """The time a `WorkerLoop` reads and waits on: seconds on a monotonic clock."""

    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None:
        """Return once `seconds` of this clock's time have passed (a test's clock: once the test moved it)."""
        ...
