"""`ctx.add_steps`: a running step grows its workflow — through the worker loop's source, over HTTP (the request
and its errors), and in `run_local`, which records what was added."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import httpx
import pytest
from queueflow_client import (
    ArgumentError,
    AsyncQueueFlow,
    InvalidStateError,
    JobContext,
    LeaseLostError,
    LocalLease,
    QueueFlow,
    TaskRegistry,
    ValidationError,
    WorkflowStep,
    steps,
)
from queueflow_client._calls import add_steps
from queueflow_client._transport import AsyncTransport, RetryPolicy
from queueflow_worker.loop import WorkerLoop

from tests.sdk.test_loop import FakeJob, Source

tasks = TaskRegistry()


@tasks.task("split")
async def split(payload: dict[str, Any], ctx: JobContext) -> int:
    rows = payload["rows"]
    await ctx.add_steps(
        [steps.task(f"map_{i}", "double", {"row": row}, required_by=["reduce"]) for i, row in enumerate(rows)]
    )
    return len(rows)


@tasks.task("split_in_a_thread")
def split_in_a_thread(payload: dict[str, Any], ctx: JobContext) -> list[str]:
    added = ctx.add_steps_blocking([steps.sleep("nap", 5), {"name": "after", "task_name": "t", "depends_on": ["nap"]}])
    return [step.name for step in added]


# ---- run_local -------------------------------------------------------------------------------------


def test_run_local_records_the_steps_a_task_adds() -> None:
    lease = LocalLease()
    assert tasks.run_local("split", {"rows": [4, 5]}, lease=lease, workflow_step_id="split") == 2
    assert lease.added_steps == [
        {"name": "map_0", "task_name": "double", "payload": {"row": 4}, "depends_on": [], "required_by": ["reduce"],
         "on_failure": "halt"},
        {"name": "map_1", "task_name": "double", "payload": {"row": 5}, "depends_on": [], "required_by": ["reduce"],
         "on_failure": "halt"},
    ]  # fmt: skip
    assert lease.job is not None
    assert lease.job.workflow_id == "wf_local"


def test_run_local_answers_the_added_steps_and_takes_a_sync_task_and_dicts() -> None:
    lease = LocalLease()
    assert tasks.run_local("split_in_a_thread", lease=lease, workflow_step_id="fan") == ["nap", "after"]
    assert [step["name"] for step in lease.added_steps] == ["nap", "after"]
    assert lease.added_steps[0]["wait"] == {"seconds": 5}


def test_run_local_refuses_add_steps_outside_a_workflow_step() -> None:
    with pytest.raises(InvalidStateError, match="not a workflow step"):
        tasks.run_local("split", {"rows": [1]})


def test_run_local_refuses_a_step_name_twice() -> None:
    local = TaskRegistry()

    @local.task("twice")
    async def twice(payload: dict[str, Any], ctx: JobContext) -> None:
        await ctx.add_steps([steps.task("map_0", "t"), steps.task("map_0", "t")])

    lease = LocalLease()
    with pytest.raises(ArgumentError, match="more than once: map_0"):
        local.run_local("twice", lease=lease, workflow_step_id="s")
    assert lease.added_steps == []


def test_run_local_refuses_a_name_added_earlier_in_the_run() -> None:
    local = TaskRegistry()

    @local.task("again")
    async def again(payload: dict[str, Any], ctx: JobContext) -> None:
        await ctx.add_steps([steps.task("x", "t")])
        await ctx.add_steps([steps.task("x", "t")])

    lease = LocalLease()
    with pytest.raises(ValidationError, match="already added"):
        local.run_local("again", lease=lease, workflow_step_id="s")
    assert [step["name"] for step in lease.added_steps] == ["x"]


def test_run_local_records_progress() -> None:
    local = TaskRegistry()

    @local.task("report")
    async def report(payload: dict[str, Any], ctx: JobContext) -> None:
        await ctx.progress({"done": 1})
        await ctx.progress({"done": 2})

    lease = LocalLease()
    local.run_local("report", lease=lease)
    assert lease.progress_reports == [{"done": 1}, {"done": 2}]


# ---- through the worker loop -----------------------------------------------------------------------


class Growing(Source):
    """A source that also takes added steps, answering them as pending steps of the adding job's workflow."""

    def __init__(self, backlog: Sequence[FakeJob]) -> None:
        super().__init__(backlog)
        self.added: list[tuple[str, str, list[dict[str, Any]]]] = []
        self.grown = asyncio.Event()

    async def add_steps(self, job_id: str, token: str, new: list[dict[str, Any]]) -> list[WorkflowStep]:
        self.added.append((job_id, token, new))
        self.grown.set()
        return [
            WorkflowStep(name=s["name"], task_name=s.get("task_name"), status="pending", job_id=None,
                         depends_on=s["depends_on"], on_failure="halt", added_by="split")
            for s in new
        ]  # fmt: skip


async def test_the_loop_sends_added_steps_to_its_source_under_the_jobs_lease() -> None:
    source = Growing([FakeJob("job_1", "split", payload={"rows": [7]}, workflow_id="wf_1", workflow_step_id="split")])
    loop = WorkerLoop(source, tasks, concurrency=1, ack_interval=0)
    await loop.start()
    async with asyncio.timeout(5):
        await source.grown.wait()
    await loop.stop()  # lets the running task finish and records its outcome
    assert source.acked[0].result == 1
    assert source.added == [
        ("job_1", "token", [steps.task("map_0", "double", {"row": 7}, required_by=["reduce"]).to_json()])
    ]


# ---- over HTTP ---------------------------------------------------------------------------------------


def _transport(*answers: httpx.Response) -> tuple[AsyncTransport, list[httpx.Request]]:
    seen: list[httpx.Request] = []
    queue = list(answers)

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return queue.pop(0)

    http = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    return AsyncTransport("http://qf", "wkey", timeout=5, retry=RetryPolicy(max_retries=0), http_client=http), seen


def _problem(status: int, code: str) -> httpx.Response:
    return httpx.Response(
        status, json={"type": "about:blank", "title": "x", "status": status, "detail": code, "code": code}
    )


STEP = {"name": "map_0", "task_name": "double", "status": "enqueued", "job_id": "job_9", "depends_on": [],
        "on_failure": "halt", "added_by": "split"}  # fmt: skip


async def test_add_steps_posts_the_steps_with_the_lease_token() -> None:
    transport, seen = _transport(httpx.Response(201, json={"steps": [STEP]}))
    added = await transport(add_steps("job_1", "tok", [steps.task("map_0", "double", required_by=["reduce"])]))
    assert added == [WorkflowStep.from_json(STEP)]
    assert added[0].added_by == "split"
    assert seen[0].method == "POST"
    assert seen[0].url.path == "/v1/worker/jobs/job_1/steps"
    assert json.loads(seen[0].content) == {
        "lease_token": "tok",
        "steps": [{"name": "map_0", "task_name": "double", "payload": {}, "depends_on": [], "required_by": ["reduce"],
                   "on_failure": "halt"}],
    }  # fmt: skip


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (_problem(409, "lease_lost"), LeaseLostError),
        (_problem(409, "invalid_state"), InvalidStateError),
        (_problem(400, "validation_error"), ValidationError),
    ],
)
async def test_add_steps_errors_are_the_clients_classes(answer: httpx.Response, error: type[Exception]) -> None:
    transport, _ = _transport(answer)
    with pytest.raises(error):
        await transport(add_steps("job_1", "tok", [steps.task("a", "t")]))


@pytest.mark.parametrize("count", [0, 1001])
def test_add_steps_takes_1_to_1000_steps(count: int) -> None:
    with pytest.raises(ArgumentError, match="1–1000"):
        add_steps("job_1", "tok", [steps.task(f"s{i}", "t") for i in range(count)])


# ---- signal and retry --------------------------------------------------------------------------------

WORKFLOW = {"id": "wf_1", "tenant_id": "default", "name": "w", "status": "running", "context": {}, "steps": [],
            "created_at": "2026-01-01T00:00:00Z", "completed_at": None}  # fmt: skip


def test_signal_and_retry_post_to_their_routes() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=WORKFLOW)

    with QueueFlow("http://qf", http_client=httpx.Client(transport=httpx.MockTransport(answer))) as client:
        assert client.workflows.signal("wf_1", "approval", {"ok": True}).id == "wf_1"
        client.workflows.signal("wf_1", "a/b")
        client.workflows.retry("wf_1")
    assert [(r.method, r.url.raw_path.decode()) for r in seen] == [
        ("POST", "/v1/workflows/wf_1/signals/approval"),
        ("POST", "/v1/workflows/wf_1/signals/a%2Fb"),
        ("POST", "/v1/workflows/wf_1/retry"),
    ]
    assert [json.loads(r.content) if r.content else None for r in seen] == [
        {"payload": {"ok": True}},
        {"payload": None},
        None,
    ]


async def test_the_async_client_signals_and_retries() -> None:
    answers = [httpx.Response(200, json=WORKFLOW), _problem(409, "invalid_state")]

    def answer(request: httpx.Request) -> httpx.Response:
        return answers.pop(0)

    http = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    async with AsyncQueueFlow("http://qf", http_client=http) as client:
        assert (await client.workflows.signal("wf_1", "approval", [1, 2])).status == "running"
        with pytest.raises(InvalidStateError):
            await client.workflows.retry("wf_1")
