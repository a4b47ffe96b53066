"""The in-process runner: the SDK's TaskRegistry inside the server, claiming through the engine (the worker loop
the SDK's `Worker` runs too, from `queueflow_worker`)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import pytest
from queueflow.core.errors import LeaseLost, StoreUnavailable, ValidationError
from queueflow.core.types import Job, NewJob
from queueflow.core.workflow import NewStep, NewWorkflow
from queueflow.engine import Engine
from queueflow.runtime.inprocess import EngineSource, InProcessWorker, load_runner
from queueflow.settings import Settings, SettingsError
from queueflow_client import JobContext, TaskRegistry, steps
from queueflow_client import errors as sdk_errors
from queueflow_worker import Outcome

from tests.inprocess import WatchedWakeups
from tests.monotonic import StepClock
from tests.sdk import sample_tasks


class Recorded:
    """Tells the test how many outcomes the worker has recorded through its engine (no polling)."""

    def __init__(self, worker: InProcessWorker) -> None:
        self.outcomes = 0
        self._changed = asyncio.Condition()
        record = worker.source.ack

        async def ack(outcomes: Sequence[Outcome]) -> list[bool]:
            held = await record(outcomes)
            self.outcomes += len(outcomes)
            async with self._changed:
                self._changed.notify_all()
            return held

        worker.source.ack = ack  # type: ignore[method-assign]

    async def until(self, count: int) -> None:
        async with asyncio.timeout(5), self._changed:
            await self._changed.wait_for(lambda: self.outcomes >= count)


async def test_runs_the_registry_and_wakes_on_new_work(engine: Engine, wakeups: WatchedWakeups) -> None:
    worker = InProcessWorker(engine, wakeups, sample_tasks.tasks, queues=["default"], poll=60)
    recorded = Recorded(worker)
    async with worker:
        await wakeups.until_waiting(1)  # idle: parked on the hub, not polling
        added = (await engine.enqueue("default", NewJob(task_name="add", payload={"a": 2, "b": 3}))).job
        shouted = (await engine.enqueue("default", NewJob(task_name="shout", payload={"text": "hi"}))).job
        refused = (await engine.enqueue("default", NewJob(task_name="refuse", max_retries=3))).job
        await recorded.until(3)
    assert (await engine.get_job("default", added.id)).result == {"sum": 5, "job": added.id}
    assert (await engine.get_job("default", shouted.id)).result == "HI"
    refused_now = await engine.get_job("default", refused.id)
    assert refused_now.status == "dead_letter"
    assert (refused_now.error_message or "").startswith("refused\n\nTraceback")


async def test_claims_only_the_tasks_of_its_registry(engine: Engine, wakeups: WatchedWakeups) -> None:
    worker = InProcessWorker(engine, wakeups, sample_tasks.tasks, queues=["default"], poll=60)
    recorded = Recorded(worker)
    stranger = (await engine.enqueue("default", NewJob(task_name="resize"))).job
    added = (await engine.enqueue("default", NewJob(task_name="add", payload={"a": 1, "b": 1}))).job
    async with worker:
        await recorded.until(1)
        await wakeups.until_waiting(1)  # parked again, the stranger left where it was
    assert (await engine.get_job("default", added.id)).status == "completed"
    assert (await engine.get_job("default", stranger.id)).status == "pending"


async def test_honours_concurrency_and_on_stop_finishes_running_jobs_and_releases_the_rest(
    engine: Engine, wakeups: WatchedWakeups
) -> None:
    tasks, release, started = TaskRegistry(), asyncio.Event(), asyncio.Condition()
    running: list[str] = []

    @tasks.task("t")
    async def task(payload: dict[str, Any], ctx: JobContext) -> str:
        running.append(ctx.job_id)
        async with started:
            started.notify_all()
        await release.wait()
        return "done"

    jobs = [(await engine.enqueue("default", NewJob(task_name="t"))).job for _ in range(4)]
    worker = InProcessWorker(engine, wakeups, tasks, concurrency=2, prefetch=1, poll=60)
    await worker.start()
    async with asyncio.timeout(5), started:
        await started.wait_for(lambda: len(running) == 2)
    assert (worker.loop.running, worker.held) == (2, 3)  # two running, one leased ahead
    stopping = asyncio.create_task(worker.stop())
    await asyncio.sleep(0)
    release.set()
    await stopping
    after = [await engine.get_job("default", job.id) for job in jobs]
    # The two running ran to their end; the one leased ahead was released at once, as it was before that delivery
    # (no retry counted); the fourth was never claimed.
    assert sorted(str(job.status) for job in after) == ["completed", "completed", "pending", "pending"]
    assert sorted((job.delivery_count, job.retry_count) for job in after) == [(0, 0), (0, 0), (1, 0), (1, 0)]
    assert worker.loop.released == 1
    assert worker.peak_held == 2


async def test_claims_and_acks_in_batches(engine: Engine, wakeups: WatchedWakeups) -> None:
    for n in range(50):
        await engine.enqueue("default", NewJob(task_name="add", payload={"a": n, "b": 1}))
    worker = InProcessWorker(engine, wakeups, sample_tasks.tasks, concurrency=10, poll=60)
    claims: list[int] = []
    lease = worker.source.lease

    async def counted(max_jobs: int) -> list[Job]:
        jobs = await lease(max_jobs)
        claims.append(len(jobs))
        return jobs

    worker.source.lease = counted  # type: ignore[method-assign]
    recorded = Recorded(worker)
    async with worker:
        await recorded.until(50)
    assert sum(claims) == 50
    assert claims[0] == 20  # at first, concurrency + as many again, in one claim
    # Then more, never one job at a time: a lease asks only once half the places are free, so each later claim
    # takes at least 5 of the 30 left (how many more ahead depends on how fast the tasks prove to be).
    assert len([claim for claim in claims if claim]) <= 1 + 30 // 5
    assert len(worker.loop.ack_batches) < 50


def test_load_runner_and_settings() -> None:
    assert load_runner("tests.sdk.sample_tasks:tasks") is sample_tasks.tasks
    with pytest.raises(ValueError, match="module:attribute"):
        load_runner("tests.sdk.sample_tasks")
    with pytest.raises(ValueError, match="not a task registry"):
        load_runner("tests.sdk.sample_tasks:add")
    settings = Settings.load({"QUEUEFLOW_TASKS": "m:t", "QUEUEFLOW_TASK_QUEUES": "a,b"}, task_concurrency="4")
    assert (settings.tasks, settings.task_queues, settings.task_concurrency) == ("m:t", ("a", "b"), 4)
    with pytest.raises(SettingsError, match="api mode"):
        Settings.load({}, tasks="m:t", mode="api")


def test_without_the_tasks_extra_serve_says_what_to_install() -> None:
    # queueflow_worker made unimportable in a fresh interpreter: the server's own modules do not need it.
    probe = (
        "import sys; sys.modules['queueflow_worker'] = None\n"
        "from queueflow.cli import main\n"
        "sys.exit(main(['serve', '--database-url', 'memory://', '--tasks', 'tests.sdk.sample_tasks:tasks']))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False)
    (line,) = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert line.startswith("queueflow serve: --tasks tests.sdk.sample_tasks:tasks: ")
    assert line.endswith("pip install 'queueflow[tasks]'")


async def test_each_outcome_of_a_batch_gets_its_own_answer_even_for_one_job(
    engine: Engine, wakeups: WatchedWakeups
) -> None:
    # An expired delivery's completion and the new delivery's failure of the same job in one batch: the stale one
    # is lease_lost, the other recorded. Matched by job id, both would pass for recorded.
    source = EngineSource(engine, wakeups, ["default"], lease_seconds=30, poll=60)
    await engine.enqueue("default", NewJob(task_name="t", max_retries=3))
    (job,) = await engine.lease(["default"])
    stale = Outcome(job.id, "an-expired-token", result={"n": 1})
    current = Outcome(job.id, job.lease_token or "", error="boom")
    assert await source.ack([stale, current]) == [False, True]
    assert (await engine.get_job("default", job.id)).status == "retrying"


async def test_the_in_process_runner_records_progress(engine: Engine, wakeups: WatchedWakeups) -> None:
    tasks, done = TaskRegistry(), asyncio.Event()

    @tasks.task("t")
    async def task(payload: dict[str, Any], ctx: JobContext) -> None:
        assert await ctx.progress([1, 2, 3])
        done.set()

    async with InProcessWorker(engine, wakeups, tasks, queues=["default"], poll=60):
        job = (await engine.enqueue("default", NewJob(task_name="t"))).job
        await asyncio.wait_for(done.wait(), 5)
    assert (await engine.get_job("default", job.id)).progress == [1, 2, 3]


async def test_an_idle_runner_starts_a_job_that_arrives_after_a_long_wait(
    engine: Engine, wakeups: WatchedWakeups
) -> None:
    # Its lease waited 50 s (on the loop's clock) before the job came. Counted from the request that parked, the
    # job's 10 s timeout would have run out at its claim, and the job would be released for nothing: a wait that
    # ends answers none, and the loop leases anew, counting from then.
    tasks, ran = TaskRegistry(), asyncio.Event()

    @tasks.task("t")
    async def task(payload: dict[str, Any], ctx: JobContext) -> None:
        ran.set()

    clock = StepClock()
    worker = InProcessWorker(engine, wakeups, tasks, poll=60, clock=clock)
    await worker.start()
    await wakeups.until_waiting(1)
    await clock.advance(50)
    await engine.enqueue("default", NewJob(task_name="t", timeout_seconds=10))
    async with asyncio.timeout(5):
        await ran.wait()
    await worker.stop()
    assert worker.loop.released == 0


async def test_the_in_process_runner_adds_steps_as_the_route_does(engine: Engine, wakeups: WatchedWakeups) -> None:
    tasks = TaskRegistry()
    seen: list[Any] = []

    @tasks.task("split")
    async def split(payload: dict[str, Any], ctx: JobContext) -> int:
        maps = [steps.task(f"map_{i}", "square", {"row": row}, required_by=["reduce"]) for i, row in enumerate([2, 3])]
        seen.append([(step.name, str(step.status), step.added_by) for step in await ctx.add_steps(maps)])
        try:
            await ctx.add_steps([steps.task("bad", "t", depends_on=["nowhere"])])
        except sdk_errors.ValidationError as exc:  # the route's rules, and the SDK's class, as over HTTP
            seen.append((exc.status, exc.code, [error.field for error in exc.errors], exc.detail))
        return 2

    @tasks.task("square")
    async def square(payload: dict[str, Any], ctx: JobContext) -> int:
        return int(payload["row"]) ** 2

    @tasks.task("reduce")
    async def reduce(payload: dict[str, Any], ctx: JobContext) -> int:
        return sum(value for name, value in payload["_context"].items() if name.startswith("map_"))

    first = NewStep(name="split", task_name="split")
    workflow, _ = await engine.create_workflow(
        "default",
        NewWorkflow(name="mr", steps=[first, NewStep(name="reduce", task_name="reduce", depends_on=["split"])]),
    )
    worker = InProcessWorker(engine, wakeups, tasks, queues=["default"], poll=60)
    recorded = Recorded(worker)
    async with worker:
        await recorded.until(4)  # split, two maps, reduce
    done = await engine.get_workflow("default", workflow.id)
    assert (done.status, done.context["reduce"]) == ("completed", 13)
    assert seen[0] == [("map_0", "enqueued", "split"), ("map_1", "enqueued", "split")]
    status, code, fields, detail = seen[1]
    assert (status, code, fields) == (400, "validation_error", ["steps.0.depends_on.0"])
    assert "nowhere" in detail


async def test_the_in_process_runners_add_steps_raises_the_sdks_lease_lost(
    engine: Engine, wakeups: WatchedWakeups
) -> None:
    # The step's job is cancelled under the task (its workflow cancelled): adding steps then is lease_lost, which a
    # task running under the SDK's Worker sees as LeaseLostError; in-process it was the server's LeaseLost.
    tasks, seen, ids = TaskRegistry(), asyncio.Queue[BaseException](), []

    @tasks.task("split")
    async def split(payload: dict[str, Any], ctx: JobContext) -> None:
        await engine.cancel_workflow("default", ids[0])
        try:
            await ctx.add_steps([steps.task("late", "split")])
        except BaseException as exc:
            await seen.put(exc)

    workflow, _ = await engine.create_workflow(
        "default", NewWorkflow(name="cut", steps=[NewStep(name="split", task_name="split")])
    )
    ids.append(workflow.id)
    async with InProcessWorker(engine, wakeups, tasks, queues=["default"], poll=60):
        raised = await asyncio.wait_for(seen.get(), 5)
    assert isinstance(raised, sdk_errors.LeaseLostError), raised
    assert (raised.status, raised.code) == (409, "lease_lost")
    assert [step.name for step in (await engine.get_workflow("default", workflow.id)).steps] == ["split"]


async def test_a_runner_without_refused_sees_the_servers_errors(engine: Engine, wakeups: WatchedWakeups) -> None:
    # queueflow_worker's TaskRunner does not require `refused` (ports.RefusingRunner): such a runner gets the
    # source's own errors.
    source = EngineSource(engine, wakeups, ["default"], lease_seconds=30, poll=60)
    await engine.create_workflow("default", NewWorkflow(name="w", steps=[NewStep(name="a", task_name="t")]))
    job = (await source.lease(1))[0]
    with pytest.raises(LeaseLost):
        await source.add_steps(job.id, "not-the-token", [{"name": "b", "task_name": "t"}])
    with pytest.raises(ValidationError):
        await source.add_steps(job.id, job.lease_token or "", [{"name": "b", "task_name": "t", "depends_on": ["x"]}])


async def test_an_ack_through_a_database_blip_is_made_again(engine: Engine, wakeups: WatchedWakeups) -> None:
    # Given up at the first failure, the outcome was lost while the lease held: the job would have run again.
    clock = StepClock()
    worker = InProcessWorker(engine, wakeups, sample_tasks.tasks, poll=60, clock=clock)
    record, tries = worker.source.ack, []

    async def blipping(outcomes: Sequence[Outcome]) -> list[bool]:
        tries.append(len(outcomes))
        if len(tries) <= 2:
            raise StoreUnavailable("the database is unavailable: connection reset")
        return await record(outcomes)

    worker.source.ack = blipping  # type: ignore[method-assign]
    job = (await engine.enqueue("default", NewJob(task_name="add", payload={"a": 2, "b": 3}))).job
    await worker.start()
    for _ in range(50):
        if (await engine.get_job("default", job.id)).status == "completed":
            break
        await clock.advance(0.1)
    await worker.stop()
    finished = await engine.get_job("default", job.id)
    assert (finished.status, finished.delivery_count, tries) == ("completed", 1, [1, 1, 1])
