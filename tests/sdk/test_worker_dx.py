"""What a worker tells the person running it, and what it does not do behind their back (issue 17): it leases only
its own tasks, logs a startup line, one line per job and every failure's traceback (stored in `error_message`
too), and stops with one clear error when the server refuses its key. The SDK `Worker` against the app
in-process; the loop alone with a scripted source where the server would not misbehave."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pytest
from queueflow_client import AsyncQueueFlow, JobContext, TaskRegistry, Worker
from queueflow_client.errors import AuthenticationError, PermissionDeniedError
from queueflow_worker import MAX_ERROR_CHARS, Outcome, WorkerLoop, error_text, invoke

from tests.sdk.conftest import BASE, Responses, until_finished
from tests.sdk.test_worker import Gate, MakeWorker

JOBS = "queueflow_client.worker.jobs"


async def test_workers_lease_only_their_own_tasks_from_a_shared_queue(
    client: AsyncQueueFlow, make_worker: MakeWorker, responses: Responses
) -> None:
    mailer, resizer, gate = TaskRegistry(), TaskRegistry(), Gate()

    @mailer.task("send_email")
    async def send_email(payload: dict[str, Any], ctx: JobContext) -> str:
        await gate.enter()
        return "sent"

    @resizer.task("resize")
    async def resize(payload: dict[str, Any], ctx: JobContext) -> str:
        await gate.enter()
        return "resized"

    resizes = [await client.jobs.enqueue("resize") for _ in range(3)]
    emails = [await client.jobs.enqueue("send_email") for _ in range(2)]
    stranger = await client.jobs.enqueue("nobody_runs_this")
    first = make_worker(mailer, concurrency=10)
    second = make_worker(resizer, concurrency=10)
    await first.start()
    await gate.until(2)  # the mailer took both emails, and nothing else though resizes are older
    await second.start()
    await gate.until(5)
    gate.open.set()
    await first.stop()
    await second.stop()

    assert [(await client.jobs.get(job.id)).result for job in emails] == ["sent", "sent"]
    assert [(await client.jobs.get(job.id)).result for job in resizes] == ["resized"] * 3
    assert (await client.jobs.get(stranger.id)).status == "pending"  # left for a worker that has the task


async def test_a_worker_without_tasks_refuses_to_start(make_worker: MakeWorker) -> None:
    with pytest.raises(ValueError, match="register a task"):
        await make_worker(TaskRegistry()).start()


async def test_startup_line_and_one_line_per_job_with_the_failures_traceback(
    client: AsyncQueueFlow, make_worker: MakeWorker, responses: Responses, caplog: pytest.LogCaptureFixture
) -> None:
    tasks = TaskRegistry()

    @tasks.task("ok")
    async def ok(payload: dict[str, Any], ctx: JobContext) -> int:
        return 1

    @tasks.task("boom")
    def boom(payload: dict[str, Any], ctx: JobContext) -> None:
        raise ValueError(f"boom on delivery {ctx.delivery_count}")

    caplog.set_level(logging.INFO, logger="queueflow_client")
    good = await client.jobs.enqueue("ok")
    bad = await client.jobs.enqueue("boom", max_retries=0)
    worker = make_worker(tasks, concurrency=4, worker_id="w-1", queues=["default", "other"])
    await worker.start()
    await until_finished(client, responses, [good.id, bad.id])
    await worker.stop()
    failed = await client.jobs.get(bad.id)

    lines = [(r.name, r.levelno, r.getMessage()) for r in caplog.records if r.name.startswith("queueflow_client")]
    assert lines[0] == (
        "queueflow_client.worker",
        logging.INFO,
        "worker w-1: started; queues: default, other; tasks: boom, ok; concurrency 4",
    )
    per_job = sorted((level, message) for name, level, message in lines if name == JOBS)
    assert len(per_job) == 2
    (info, completed), (warning, failure) = per_job
    assert (info, warning) == (logging.INFO, logging.WARNING)
    assert completed.startswith(f"ok job {good.id} (delivery 1): completed in ")
    assert failure.startswith(f"boom job {bad.id} (delivery 1): failed after ")
    assert failure.endswith("(dead-lettered: no retries left): ValueError: boom on delivery 1")
    (record,) = [r for r in caplog.records if r.name == JOBS and r.levelno == logging.WARNING]
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], ValueError)

    assert failed.status == "dead_letter"
    message = failed.error_message or ""
    assert message.startswith("ValueError: boom on delivery 1\n\nTraceback (most recent call last):\n")
    assert 'raise ValueError(f"boom on delivery {ctx.delivery_count}")' in message
    # The traceback begins in the task: the worker's own frames (loop, asyncio, thread pool) are cut.
    assert message.split("\n")[3].endswith(", in boom"), message
    assert message.endswith("ValueError: boom on delivery 1")


def test_a_stored_traceback_is_bounded_keeping_its_summary_and_its_end() -> None:
    def deep(n: int) -> None:
        if n == 0:
            raise RuntimeError("x" * 50_000 + "\x00")
        deep(n - 1)

    try:
        deep(200)
    except RuntimeError as exc:
        caught = exc
    text = error_text(caught, f"RuntimeError: {caught}")
    assert len(text) == MAX_ERROR_CHARS
    assert "\x00" not in text
    assert text.startswith("RuntimeError: xxx")
    assert "[… traceback cut …]" in text
    assert text.endswith("x" * 1000)  # the end of the traceback: the exception line


@pytest.mark.parametrize(("key", "error"), [("no-such-key", AuthenticationError), ("key-a", PermissionDeniedError)])
async def test_a_refused_key_stops_the_worker_with_one_clear_error(
    make_worker: MakeWorker,
    responses: Responses,
    caplog: pytest.LogCaptureFixture,
    key: str,
    error: type[Exception],
) -> None:
    tasks = TaskRegistry()

    @tasks.task("t")
    async def task(payload: dict[str, Any], ctx: JobContext) -> None:
        return None

    worker = make_worker(tasks)
    worker._key = key  # a tenant key (403) or no key the server knows (401)
    with pytest.raises(error):
        await asyncio.wait_for(worker.arun(), 5)
    assert responses.count("/lease") == 1  # not retried
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert f"the server at {BASE} refused the worker key" in errors[0]
    assert "not a tenant API key" in errors[0]


# ---- the loop alone: a job the server should not have sent ---------------------------------------------------


@dataclass
class Job:
    id: str
    task_name: str
    queue_name: str = "default"
    payload: dict[str, Any] = field(default_factory=dict)
    delivery_count: int = 1
    workflow_id: str | None = None
    workflow_step_id: str | None = None
    deadline: datetime | None = None
    lease_token: str | None = "token"
    timeout_seconds: float | None = None


class Scripted:
    """A `LeaseSource` that hands out the given jobs once, then waits until interrupted."""

    def __init__(self, jobs: list[Job]) -> None:
        self.jobs = jobs
        self.recorded: list[Outcome] = []
        self.acked = asyncio.Event()
        self._interrupted = asyncio.Event()

    async def lease(self, max_jobs: int) -> list[Job]:
        if self.jobs:
            jobs, self.jobs = self.jobs, []
            return jobs
        await self._interrupted.wait()
        return []

    def interrupt(self) -> None:
        self._interrupted.set()

    async def ack(self, outcomes: Sequence[Outcome]) -> list[bool]:
        self.recorded += outcomes
        self.acked.set()
        return [True] * len(outcomes)

    async def heartbeat(self, leases: Sequence[tuple[str, str]]) -> list[bool]:
        return [True] * len(leases)


async def test_a_job_of_an_unknown_task_is_logged_once_per_task_name(caplog: pytest.LogCaptureFixture) -> None:
    tasks = TaskRegistry()

    @tasks.task("known")
    async def known(payload: dict[str, Any], ctx: JobContext) -> None:
        return None

    source = Scripted([Job("j1", "resize"), Job("j2", "resize"), Job("j3", "thumbnail")])
    loop = WorkerLoop(source, tasks, name="w")
    caplog.set_level(logging.INFO, logger="queueflow_client")
    await loop.start()
    async with asyncio.timeout(5):
        while len(source.recorded) < 3:
            source.acked.clear()
            await source.acked.wait()
    await loop.stop()

    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert warnings[0].startswith("w: leased job j1 of task 'resize', which this worker does not have (it knows:")
    assert warnings[1].startswith("w: leased job j3 of task 'thumbnail'")
    assert [(o.job_id, o.retryable) for o in source.recorded] == [("j1", False), ("j2", False), ("j3", False)]
    assert source.recorded[0].error == "no task named 'resize' is registered in this worker (it knows: known)"


class Untraced(TaskRegistry):
    """A registry whose deliveries run outside any trace span (whose name would format the task name)."""

    @classmethod
    def of(cls, tasks: TaskRegistry) -> Untraced:
        untraced = cls()
        untraced._tasks = tasks._tasks
        return untraced

    async def invoke(self, function: Any, job: Any, ctx: JobContext) -> Any:
        return await invoke(function, dict(job.payload), ctx)


class Watched(str):
    """A task name that counts how often it is turned into text."""

    formatted = 0

    def __str__(self) -> str:
        Watched.formatted += 1
        return str.__str__(self)


@pytest.mark.parametrize("level", [logging.WARNING, logging.INFO])
async def test_per_job_lines_are_not_formatted_unless_info_is_on(caplog: pytest.LogCaptureFixture, level: int) -> None:
    tasks = TaskRegistry()

    @tasks.task("ok")
    async def ok(payload: dict[str, Any], ctx: JobContext) -> None:
        return None

    Watched.formatted = 0
    source = Scripted([Job("j1", Watched("ok"))])
    loop = WorkerLoop(source, Untraced.of(tasks), name="w")
    caplog.set_level(level, logger=JOBS)
    await loop.start()
    async with asyncio.timeout(5):
        await source.acked.wait()
    await loop.stop()
    assert [o.error for o in source.recorded] == [None]
    assert (Watched.formatted > 0) == (level == logging.INFO)


def test_worker_defaults_match_the_typescript_sdk() -> None:
    """The same setting has the same default in both SDKs (the TypeScript side is checked in worker.test.ts)."""
    worker = Worker(BASE, None, TaskRegistry())
    assert (worker.concurrency, worker.wait_seconds, worker.lease_seconds) == (10, 1.0, 30.0)
    assert (worker.loop.drain_seconds, worker.loop.acks.ack_batch, worker.loop.acks.ack_interval) == (30.0, 100, 0.01)
    assert worker.loop.prefetch is None
