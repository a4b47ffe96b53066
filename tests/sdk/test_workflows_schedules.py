"""`workflows.*` and `schedules.*` against the real app in-process (their requests, typed results, errors)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar import Litestar
from litestar.testing import TestClient
from queueflow.clocks import TestClock
from queueflow_client import (
    AsyncQueueFlow,
    Backoff,
    InvalidStateError,
    JobContext,
    NotFoundError,
    QueueFlow,
    Schedule,
    Step,
    TaskRegistry,
    ValidationError,
    Worker,
    Workflow,
    WorkflowStep,
)

from tests.moments import START
from tests.sdk.conftest import BASE

SPEC = Path(__file__).resolve().parents[2] / "spec" / "openapi.json"
CYCLE = [
    Step(name="a", task_name="t", depends_on=["c"]),
    Step(name="b", task_name="t", depends_on=["a"]),
    Step(name="c", task_name="t", depends_on=["b"]),
]
ETL = [Step(name="extract", task_name="extract"), Step(name="load", task_name="load", depends_on=["extract"])]


@pytest.mark.parametrize("model", [Workflow, WorkflowStep, Schedule])
def test_the_dataclasses_have_exactly_the_fields_of_the_spec(model: type) -> None:
    """Field for field; and a field the spec does not require (one added after 0.1.0, which an older server does not
    send: docs/compatibility.md) has a default, so that reading such a server gives it rather than failing."""
    schema = json.loads(SPEC.read_text())["components"]["schemas"][model.__name__]
    assert {field.name for field in fields(model)} == set(schema["properties"])
    defaulted = {field.name for field in fields(model) if field.default is not MISSING}
    assert set(schema["properties"]) - set(schema["required"]) <= defaulted


# ---- workflows -------------------------------------------------------------------------------------


async def test_create_sends_every_step_option_and_returns_a_typed_workflow(client: AsyncQueueFlow) -> None:
    workflow = await client.workflows.create(
        "etl",
        [
            Step(
                name="extract",
                task_name="extract",
                payload={"day": 1},
                queue_name="etl",
                priority=5,
                max_retries=1,
                backoff=Backoff("fixed", base_seconds=2, max_seconds=2, jitter=False),
                timeout_seconds=60,
            ),
            {"name": "load", "task_name": "load", "depends_on": ["extract"], "on_failure": "skip"},
        ],
        context={"run": "r1"},
    )

    assert workflow.id.startswith("wf_")
    assert (workflow.tenant_id, workflow.name, workflow.status) == ("tenant-a", "etl", "running")
    assert workflow.context == {"run": "r1"}
    assert (workflow.created_at, workflow.completed_at) == (START, None)
    extract, load = workflow.steps
    assert (extract.name, extract.status, extract.depends_on, extract.on_failure) == ("extract", "enqueued", [], "halt")
    assert (load.name, load.status, load.job_id, load.depends_on, load.on_failure) == (
        "load", "pending", None, ["extract"], "skip"
    )  # fmt: skip
    assert extract.job_id is not None
    job = await client.jobs.get(extract.job_id)
    assert (job.workflow_id, job.task_name, job.queue_name, job.priority, job.max_retries) == (
        workflow.id, "extract", "etl", 5, 1
    )  # fmt: skip
    assert job.backoff == Backoff("fixed", 2.0, 2.0, False)
    assert job.timeout_seconds == 60
    assert job.payload == {"day": 1, "_context": {"run": "r1"}}


async def test_a_step_left_at_its_defaults_gets_the_servers(client: AsyncQueueFlow) -> None:
    workflow = await client.workflows.create("one", [{"name": "only", "task_name": "t"}])
    assert workflow.context == {}
    assert workflow.steps[0].on_failure == "halt"
    assert workflow.steps[0].job_id is not None
    job = await client.jobs.get(workflow.steps[0].job_id)
    assert (job.queue_name, job.priority, job.max_retries, job.timeout_seconds) == ("default", 0, 3, None)
    with pytest.raises(TypeError, match="unknown workflow step option"):
        await client.workflows.create("one", [{"name": "only", "task_name": "t", "colour": "red"}])
    with pytest.raises(TypeError, match="needs a task_name, a wait or a workflow"):
        await client.workflows.create("one", [{"name": "only"}])


async def test_an_idempotent_repeat_returns_the_original_workflow(client: AsyncQueueFlow) -> None:
    first = await client.workflows.create("etl", ETL, idempotency_key="etl-1")
    again = await client.workflows.create("other", [Step(name="x", task_name="x")], idempotency_key="etl-1")
    assert again == first
    assert (await client.workflows.create("etl", ETL)).id != first.id


async def test_get_and_list(client: AsyncQueueFlow, clock: TestClock) -> None:
    created = []
    for _ in range(3):
        clock.advance(1)
        created.append(await client.workflows.create("etl", ETL))
    cancelled = await client.workflows.cancel(created[0].id)

    assert await client.workflows.get(created[1].id) == created[1]
    every = [workflow.id async for workflow in client.workflows.list(page_size=2)]
    assert every == [workflow.id for workflow in reversed(created)]  # newest first, across two pages
    page = await client.workflows.list_page(limit=1)
    assert [workflow.id for workflow in page.items] == [created[2].id]
    assert page.next_cursor is not None
    rest = await client.workflows.list_page(limit=5, cursor=page.next_cursor)
    assert [workflow.id for workflow in rest.items] == [created[1].id, created[0].id]
    assert rest.next_cursor is None
    assert [workflow async for workflow in client.workflows.list(status="cancelled")] == [cancelled]
    assert [workflow async for workflow in client.workflows.list(status="completed")] == []


async def test_cancel_a_running_workflow_then_again(client: AsyncQueueFlow) -> None:
    workflow = await client.workflows.create("etl", ETL)
    cancelled = await client.workflows.cancel(workflow.id)
    assert cancelled.status == "cancelled"
    assert [step.status for step in cancelled.steps] == ["cancelled", "cancelled"]
    assert cancelled.completed_at is not None
    assert workflow.steps[0].job_id is not None
    assert (await client.jobs.get(workflow.steps[0].job_id)).status == "cancelled"

    with pytest.raises(InvalidStateError) as caught:
        await client.workflows.cancel(workflow.id)
    assert (caught.value.status, caught.value.code) == (409, "invalid_state")


async def test_a_workflow_runs_to_completion_on_the_remote_worker(
    client: AsyncQueueFlow, make_worker: Callable[..., Worker]
) -> None:
    tasks, loaded = TaskRegistry(), asyncio.Event()

    @tasks.task("extract")
    async def extract(payload: dict[str, Any], ctx: JobContext) -> list[int]:
        return [1, 2, 3]

    @tasks.task("load")
    async def load(payload: dict[str, Any], ctx: JobContext) -> int:
        loaded.set()
        return sum(payload["_context"]["extract"])

    workflow = await client.workflows.create("etl", ETL)
    worker = make_worker(tasks)
    await worker.start()
    async with asyncio.timeout(5):
        await loaded.wait()
    await worker.stop()  # reports the result it holds before it returns

    done = await client.workflows.get(workflow.id)
    assert done.status == "completed"
    assert [step.status for step in done.steps] == ["completed", "completed"]
    assert done.context == {"extract": [1, 2, 3], "load": 6}
    assert done.completed_at is not None
    with pytest.raises(InvalidStateError):
        await client.workflows.cancel(workflow.id)


async def test_an_invalid_dag_is_a_validation_error_with_the_cycle_path(client: AsyncQueueFlow) -> None:
    with pytest.raises(ValidationError) as caught:
        await client.workflows.create("loop", CYCLE)
    error = caught.value
    assert (error.status, error.code) == (400, "validation_error")
    assert [(item.field, item.message) for item in error.errors] == [("steps.0.depends_on", "cycle: a → c → b → a")]
    assert "cycle: a → c → b → a" in str(error)

    with pytest.raises(ValidationError) as caught:
        await client.workflows.create("dangling", [Step(name="a", task_name="t", depends_on=["ghost"])])
    assert any("ghost" in item.message for item in caught.value.errors)
    assert [workflow async for workflow in client.workflows.list()] == []


async def test_an_unknown_or_another_tenants_workflow_is_not_found(client: AsyncQueueFlow, app: Litestar) -> None:
    with pytest.raises(NotFoundError):
        await client.workflows.get("wf_missing")
    with pytest.raises(NotFoundError) as caught:
        await client.workflows.cancel("wf_missing")
    assert (caught.value.status, caught.value.code) == (404, "not_found")

    workflow = await client.workflows.create("etl", ETL)
    async with (
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as transport,
        AsyncQueueFlow(BASE, "key-b", http_client=transport) as other,
    ):
        with pytest.raises(NotFoundError):
            await other.workflows.get(workflow.id)
        with pytest.raises(NotFoundError):
            await other.workflows.cancel(workflow.id)
        assert [item async for item in other.workflows.list()] == []


# ---- schedules -------------------------------------------------------------------------------------


async def test_create_a_schedule_with_every_field(client: AsyncQueueFlow) -> None:
    schedule = await client.schedules.create(
        "nightly",
        cron="0 3 * * *",
        task_name="report",
        timezone="Europe/Berlin",
        queue_name="reports",
        payload={"kind": "daily"},
        priority=4,
        max_retries=1,
        enabled=True,
    )
    assert schedule.id.startswith("sch_")
    assert (schedule.tenant_id, schedule.name, schedule.cron, schedule.timezone) == (
        "tenant-a", "nightly", "0 3 * * *", "Europe/Berlin"
    )  # fmt: skip
    assert (schedule.task_name, schedule.queue_name, schedule.payload) == ("report", "reports", {"kind": "daily"})
    assert (schedule.priority, schedule.max_retries, schedule.enabled) == (4, 1, True)
    assert schedule.next_run_at == START.replace(day=2, hour=2)  # 03:00 in Berlin is 02:00 UTC in March
    assert schedule.last_run_at is None
    assert schedule.created_at == schedule.updated_at == START


async def test_a_schedule_left_at_its_defaults_gets_the_servers(client: AsyncQueueFlow) -> None:
    schedule = await client.schedules.create("hourly", cron="@hourly", task_name="tick")
    assert (schedule.timezone, schedule.queue_name, schedule.payload) == ("UTC", "default", {})
    assert (schedule.priority, schedule.max_retries, schedule.enabled) == (0, 3, True)
    assert schedule.next_run_at == START.replace(hour=13)


async def test_get_list_update_and_delete_a_schedule(client: AsyncQueueFlow, clock: TestClock) -> None:
    created = []
    for name in ("s1", "s2", "s3"):
        clock.advance(1)
        created.append(await client.schedules.create(name, cron="0 3 * * *", task_name="report"))

    assert await client.schedules.get("s2") == created[1]
    assert [item.name async for item in client.schedules.list(page_size=2)] == ["s3", "s2", "s1"]
    page = await client.schedules.list_page(limit=2)
    assert ([item.name for item in page.items], page.next_cursor is not None) == (["s3", "s2"], True)
    rest = await client.schedules.list_page(cursor=page.next_cursor)
    assert ([item.name for item in rest.items], rest.next_cursor) == (["s1"], None)

    clock.advance(60)
    paused = await client.schedules.update("s1", enabled=False)
    assert (paused.enabled, paused.next_run_at) == (False, None)
    assert paused.updated_at > created[0].updated_at
    # Only the given field changed: PATCH sends a partial body.
    assert (paused.cron, paused.task_name, paused.priority, paused.created_at) == (
        "0 3 * * *", "report", 0, created[0].created_at
    )  # fmt: skip
    moved = await client.schedules.update("s1", cron="30 12 * * *", enabled=True, payload={"v": 2}, priority=-1)
    assert (moved.cron, moved.enabled, moved.payload, moved.priority) == ("30 12 * * *", True, {"v": 2}, -1)
    assert moved.next_run_at == START.replace(minute=30)
    assert await client.schedules.get("s1") == moved

    assert await client.schedules.delete("s1") is None
    with pytest.raises(NotFoundError):
        await client.schedules.get("s1")
    assert [item.name async for item in client.schedules.list()] == ["s3", "s2"]


async def test_schedule_errors(client: AsyncQueueFlow) -> None:
    await client.schedules.create("nightly", cron="0 3 * * *", task_name="report")

    with pytest.raises(InvalidStateError) as conflict:
        await client.schedules.create("nightly", cron="0 4 * * *", task_name="other")
    assert (conflict.value.status, conflict.value.code) == (409, "invalid_state")
    assert (await client.schedules.get("nightly")).cron == "0 3 * * *"

    with pytest.raises(ValidationError) as invalid:
        await client.schedules.create("bad", cron="every day", task_name="report")
    assert [item.field for item in invalid.value.errors] == ["cron"]
    with pytest.raises(ValidationError) as invalid:
        await client.schedules.update("nightly", timezone="Mars/Olympus")
    assert [item.field for item in invalid.value.errors] == ["timezone"]

    for attempt in (
        client.schedules.get("missing"),
        client.schedules.update("missing", enabled=False),
        client.schedules.delete("missing"),
    ):
        with pytest.raises(NotFoundError) as missing:
            await attempt
        assert (missing.value.status, missing.value.code) == (404, "not_found")


# ---- the synchronous client ------------------------------------------------------------------------


def test_the_sync_client_has_the_same_workflow_and_schedule_methods(app: Litestar) -> None:
    with TestClient(app) as http, QueueFlow(BASE, "key-a", http_client=http) as client:
        workflow = client.workflows.create("etl", ETL, context={"k": 1}, idempotency_key="w1")
        assert client.workflows.create("etl", ETL, idempotency_key="w1") == workflow
        assert client.workflows.get(workflow.id) == workflow
        assert [item.id for item in client.workflows.list(status="running", page_size=1)] == [workflow.id]
        assert client.workflows.list_page(limit=1).items == [workflow]
        cancelled = client.workflows.cancel(workflow.id)
        assert cancelled.status == "cancelled"
        with pytest.raises(InvalidStateError):
            client.workflows.cancel(workflow.id)
        with pytest.raises(ValidationError, match="cycle: a → c → b → a"):
            client.workflows.create("loop", CYCLE)
        with pytest.raises(NotFoundError):
            client.workflows.get("wf_missing")
        with pytest.raises(NotFoundError):
            client.workflows.cancel("wf_missing")

        schedule = client.schedules.create("nightly", cron="0 3 * * *", task_name="report", payload={"a": 1})
        assert schedule.payload == {"a": 1}
        assert client.schedules.get("nightly") == schedule
        assert [item.name for item in client.schedules.list(page_size=1)] == ["nightly"]
        assert client.schedules.list_page().items == [schedule]
        updated = client.schedules.update("nightly", max_retries=9)
        assert (updated.max_retries, updated.cron, updated.payload) == (9, "0 3 * * *", {"a": 1})
        with pytest.raises(InvalidStateError):
            client.schedules.create("nightly", cron="@daily", task_name="report")
        with pytest.raises(ValidationError):
            client.schedules.create("bad", cron="@sometimes", task_name="report")
        assert client.schedules.delete("nightly") is None
        with pytest.raises(NotFoundError):
            client.schedules.delete("nightly")
        with pytest.raises(NotFoundError):
            client.schedules.update("nightly", enabled=True)
