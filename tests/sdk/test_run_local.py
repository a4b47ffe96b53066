"""`tasks.run_local(...)`: a task run once in a test, without a server, as a worker would run it."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime
from typing import Any

import pytest
from queueflow_client import Fatal, JobContext, Retry, TaskRegistry

tasks = TaskRegistry()


@tasks.task("send_email")
async def send_email(payload: dict[str, Any], ctx: JobContext) -> dict[str, Any]:
    assert await ctx.heartbeat()
    return {"to": payload["to"], "delivery": ctx.delivery_count, "job": ctx.job_id, "queue": ctx.queue}


@tasks.task("resize")
def resize(payload: dict[str, Any], ctx: JobContext) -> list[Any]:
    # A plain def runs in a thread, as in a worker; the payload arrives as JSON would bring it.
    return [threading.current_thread() is not threading.main_thread(), payload["size"], ctx.deadline is not None]


@tasks.task("flaky")
def flaky(payload: dict[str, Any], ctx: JobContext) -> None:
    if ctx.delivery_count < 3:
        raise Retry("not yet", after=5)
    raise Fatal("gave up")


@tasks.task("odd_result")
async def odd_result(payload: dict[str, Any], ctx: JobContext) -> object:
    return {1, 2}


def test_runs_a_task_and_returns_its_result() -> None:
    assert tasks.run_local("send_email", {"to": "ada@example.com"}) == {
        "to": "ada@example.com",
        "delivery": 1,
        "job": "job_local",
        "queue": "default",
    }
    deadline = datetime(2026, 1, 1, tzinfo=UTC)
    assert tasks.run_local("resize", {"size": (64, 64)}, deadline=deadline) == [True, [64, 64], True]


def test_what_the_task_raises_is_raised() -> None:
    with pytest.raises(Retry, match="not yet") as retry:
        tasks.run_local("flaky", delivery_count=2)
    assert retry.value.after == 5
    with pytest.raises(Fatal, match="gave up"):
        tasks.run_local("flaky", delivery_count=3)


def test_what_a_worker_would_refuse_is_refused() -> None:
    with pytest.raises(KeyError, match=r"no task named 'nope' is registered \(it has: flaky, odd_result, resize"):
        tasks.run_local("nope")
    with pytest.raises(TypeError, match="the payload cannot be sent as JSON"):
        tasks.run_local("send_email", {"to": datetime(2026, 1, 1, tzinfo=UTC)})
    with pytest.raises(TypeError, match="the task's result is not JSON"):
        tasks.run_local("odd_result")


async def test_from_an_async_test() -> None:
    result = await tasks.run_local_async("send_email", {"to": "b@example.com"}, id="job_x", queue_name="mail")
    assert result == {"to": "b@example.com", "delivery": 1, "job": "job_x", "queue": "mail"}
    assert asyncio.get_running_loop().is_running()
