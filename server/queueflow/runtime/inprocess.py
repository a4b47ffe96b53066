"""InProcessWorker: Python tasks run inside a server process (`queueflow serve --mode worker --tasks module:tasks`).

It is the worker loop the SDK's `Worker` runs too (`queueflow_worker.WorkerLoop`: slots, prefetch, batched acks and
heartbeats, graceful drain) over an `EngineSource`: it claims through the engine directly (no HTTP, no worker key), many
jobs in one claim statement, records many outcomes in one ack, and, when nothing is claimable, parks on the
Wakeups hub, which the notifier (or the in-memory store) signals when work arrives on one of its queues: the
reference page's "idle in-process workers". The server imports `queueflow_worker` only here, and this module
only when tasks are given (the `tasks` extra: `pip install 'queueflow[tasks]'`); it never imports the SDK, whose
`TaskRegistry` is the usual `TaskRunner`. Stopping stops claiming, releases at once the jobs it holds and has not
started (`Engine.release`: claimable again at once, no retry counted), then lets the running ones finish for up to
`drain_seconds`; what is still running then is cancelled and released too (a sync task's thread runs on: its job
is left to its lease's expiry). It claims only the tasks the registry has (`task_names`), so it shares its
queues with SDK workers running other tasks. Its lines are the loop's (a startup line, failures with their
tracebacks at WARNING), but for the per-job lines: DEBUG here, since the server logs at INFO and a busy runner
would write a line per job.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import os
import sys
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import msgspec

from queueflow.core.definitions import new_steps_from_json
from queueflow.core.errors import FieldError, QueueFlowError, StoreUnavailable, ValidationError, wire_status
from queueflow.core.types import AckOutcome, Completion, FailureRequest, HeldLease, Job
from queueflow.core.workflow import Step
from queueflow.engine import Engine
from queueflow.runtime.leasing import LeaseAsk, lease_or_wait
from queueflow.runtime.service import BackgroundService
from queueflow.runtime.wakeups import Wakeups, Watch

try:
    from queueflow_worker import Clock, Outcome, TaskRunner, WorkerLoop, answers_in_order
except ModuleNotFoundError as exc:  # pragma: no cover - the tests have the extra
    raise ModuleNotFoundError("tasks run in the server need its tasks extra: pip install 'queueflow[tasks]'") from exc

__all__ = ["EngineSource", "InProcessWorker", "TaskRunner", "load_runner"]

log = logging.getLogger("queueflow.tasks")


def load_runner(spec: str) -> TaskRunner:
    """`"package.module:attribute"` → the task registry it names (imported from the working directory too): a
    `queueflow_worker.TaskRunner`, as the SDK's `TaskRegistry` is."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError("expected module:attribute (e.g. myapp.tasks:tasks)")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    runner: TaskRunner = getattr(importlib.import_module(module_name), attribute)
    if not all(callable(getattr(runner, method, None)) for method in ("function", "invoke", "recorded")) or not (
        isinstance(getattr(runner, "names", None), list)
    ):
        raise ValueError(f"{spec} is not a task registry (queueflow_client.TaskRegistry)")
    return runner


Refusal = Callable[[int, "str | None", str, Sequence[tuple[str, str]]], Exception]
"""(status, code, detail, (field, message) pairs) → the exception a task sees (`RefusingRunner.refused`)."""


@dataclass(frozen=True, slots=True)
class _Kept:
    armed: ExitStack
    """Disarms `watch` when closed."""
    watch: Watch
    claimed_at: datetime | None
    """No later than the lease's last claim; None: the next lease claims first."""


class EngineSource:
    """The engine as the worker loop's `LeaseSource`."""

    def __init__(
        self,
        engine: Engine,
        wakeups: Wakeups,
        queues: Sequence[str],
        *,
        lease_seconds: float,
        poll: float,
        task_names: Sequence[str] | None = None,
        refused: Refusal | None = None,
    ) -> None:
        self.engine = engine
        self.refused = refused
        """The runner's error for a refusal (`queueflow_worker.ports.RefusingRunner`): what a task's
        `ctx.add_steps` raises in-process, the SDK's class as over HTTP. None: the server's own errors."""
        self.task_names = list(task_names) if task_names else None
        """Only jobs of these tasks are claimed (the registry's); None: any."""
        self.wakeups = wakeups
        self.queues = list(queues)
        self.lease_seconds = lease_seconds
        self.poll = poll
        self._interrupted = False
        self._watches: set[Watch] = set()
        """The watches of the leases in flight (the loop overlaps them while the backlog is deep)."""
        self._kept: _Kept | None = None
        """The watch of the last lease that came back short, armed since before its claims, for the next lease."""

    async def lease(self, max_jobs: int) -> list[Job]:
        ask = LeaseAsk(self.queues, max_jobs, self.lease_seconds, self.task_names)
        # The long-poll's own wait: parked until work arrives, or the next delayed job or retry of the queues is
        # due. Watching since before the first claim, so work that arrives meanwhile is never missed. A claim in
        # flight is never cancelled by interrupt(): whatever it claims is returned (and the loop releases it when
        # it is stopping). A wait that ends answers none: the loop leases again at once, so it counts the claim's
        # time from a request just made, not from before the wait (a job with a short timeout would look too
        # close to its deadline to start, and be released for nothing).
        # After a lease that came back short, its watch is kept armed for the next lease: if nothing was notified
        # since, that one skips its first claim, which would find nothing (a chain's steps came one a lease, each
        # followed by an empty claim that cost as much as the step's own).
        kept, self._kept = self._kept, None
        if kept is None:
            armed = ExitStack()
            watch, since = armed.enter_context(self.wakeups.watching(self.queues)), None
        else:
            armed, watch, since = kept.armed, kept.watch, kept.claimed_at
            if watch.event.is_set():
                since = None  # notified since: claim first
        self._watches.add(watch)
        jobs: list[Job] = []
        claimed_at = self.engine.clock.now()
        try:
            while not self._interrupted:
                claimed_at = self.engine.clock.now()
                try:
                    jobs = await lease_or_wait(
                        self.engine,
                        watch,
                        ask,
                        safety_poll=self.poll,
                        stopped=lambda: self._interrupted,
                        since=since,
                        claim_after_wait=False,
                    )
                    break
                except StoreUnavailable as exc:
                    log.warning("cannot claim, the store is unavailable: %s", exc)
                    since = None
                    await watch.wait(self.poll)
        except BaseException:
            armed.close()
            raise
        finally:
            self._watches.discard(watch)
        if len(jobs) < max_jobs and not self._interrupted and self._kept is None:
            # claimed_at: no later than the last claim, so a job due since that claim is not missed. None when the
            # lease ended with a wait (it answers none then): the wait ended for a reason (work, a due time, the
            # safety poll), so the next lease claims first.
            self._kept = _Kept(armed, watch, claimed_at if jobs else None)
        else:
            armed.close()
        return jobs

    def interrupt(self) -> None:
        self._interrupted = True
        for watch in self._watches:
            watch.event.set()
        kept, self._kept = self._kept, None
        if kept is not None:
            kept.armed.close()

    async def ack(self, outcomes: Sequence[Outcome]) -> list[bool]:
        complete = [Completion(o.job_id, o.lease_token, o.result) for o in outcomes if o.error is None]
        fail = [
            FailureRequest(
                job_id=o.job_id,
                lease_token=o.lease_token,
                error=o.error,
                retryable=o.retryable,
                retry_after_seconds=o.retry_after_seconds,
            )
            for o in outcomes
            if o.error is not None
        ]
        results = answers_in_order(outcomes, await self.engine.ack(complete, fail))
        return [result is not None and result.outcome is AckOutcome.OK for result in results]

    async def heartbeat(self, leases: Sequence[tuple[str, str]]) -> list[bool]:
        held = [HeldLease(job_id, token) for job_id, token in leases]
        results = await self.engine.heartbeat_many(held, lease_seconds=self.lease_seconds)
        return [result.locked_until is not None for result in results]

    async def release(self, jobs: Sequence[tuple[str, str]]) -> list[bool]:
        """Give back held jobs not started, (job id, token) pairs: claimable again at once, no retry counted; per
        item, whether it was still held (and is now released)."""
        results = await self.engine.release([HeldLease(job_id, token) for job_id, token in jobs])
        return [result.outcome is AckOutcome.OK for result in results]

    async def progress(self, job_id: str, token: str, value: Any) -> bool:
        (result,) = await self.engine.heartbeat_many(
            [HeldLease(job_id, token, value)], lease_seconds=self.lease_seconds
        )
        return result.locked_until is not None

    async def add_steps(self, job_id: str, token: str, steps: list[dict[str, Any]]) -> list[Step]:
        """`ctx.add_steps` in-process: the steps read as JSON, as the SDK would send them to `POST
        /v1/worker/jobs/{id}/steps` (`core.definitions.new_steps_from_json`), then added through the engine under
        the job's lease: the route's rules, each refusal a ValidationError at the field the route names (a type or
        a range that the route's schema refuses first is told in core's words)."""
        try:
            return list(await self.engine.add_steps(job_id, token, new_steps_from_json(_as_json(steps))))
        except QueueFlowError as exc:
            if self.refused is None:
                raise
            raise self._refusal(exc) from exc

    def _refusal(self, exc: QueueFlowError) -> Exception:
        """`exc` as the HTTP route answers it (`core.errors.wire_status`), turned into the runner's error."""
        assert self.refused is not None
        status, code = wire_status(exc)
        errors = [(error.field, error.message) for error in exc.errors] if isinstance(exc, ValidationError) else []
        return self.refused(status, code, exc.detail, errors)


def _as_json(value: Any) -> Any:
    """`value` as it comes back from JSON, as it would reach the route (a tuple a list, a date-time its text)."""
    text = msgspec.json.encode(value)
    try:
        return msgspec.json.decode(text)
    except RecursionError:
        raise ValidationError.of([FieldError((), "the JSON is nested too deeply")]) from None


def _unavailable(exc: Exception) -> bool:
    return isinstance(exc, StoreUnavailable)


class InProcessWorker(BackgroundService):
    name = "tasks"

    def __init__(
        self,
        engine: Engine,
        wakeups: Wakeups,
        runner: TaskRunner,
        *,
        queues: Sequence[str] = ("default",),
        concurrency: int = 10,
        prefetch: int | None = None,
        lease_seconds: float = 30.0,
        poll: float = 5.0,
        drain_seconds: float = 30.0,
        ack_interval: float = 0.01,
        clock: Clock | None = None,
    ) -> None:
        super().__init__()
        self.source = EngineSource(
            engine,
            wakeups,
            queues,
            lease_seconds=lease_seconds,
            poll=poll,
            task_names=runner.names,
            refused=getattr(runner, "refused", None),
        )
        """`poll`: the longest an idle wait lasts (the safety poll), so a lost wake-up costs at most that. `clock`:
        the worker loop's monotonic time (a test's; default the event loop's)."""
        options: dict[str, Any] = {}
        if "transient" in inspect.signature(WorkerLoop).parameters:
            # An ack or a release through a database blip is made again. A server upgraded before its
            # queueflow-worker (0.1.0 has no repeats, docs/compatibility.md) still runs its tasks.
            options["transient"] = _unavailable
        self.loop: WorkerLoop = WorkerLoop(
            self.source,
            runner,
            concurrency=concurrency,
            prefetch=prefetch,
            lease_seconds=lease_seconds,
            drain_seconds=drain_seconds,
            ack_interval=ack_interval,
            name="in-process worker",
            queues=queues,
            job_log_level=logging.DEBUG,
            clock=clock,
            **options,
        )

    @property
    def held(self) -> int:
        return self.loop.held

    @property
    def peak_held(self) -> int:
        """The most tasks running at once so far."""
        return self.loop.peak_running

    async def start(self) -> None:
        await self.loop.start()

    async def stop(self) -> None:
        """Stop claiming, release the jobs not started, let the running ones finish (up to `drain_seconds`), then
        cancel and release what is left."""
        await self.loop.stop()

    async def run(self) -> None:  # the loop runs its own tasks
        raise NotImplementedError
