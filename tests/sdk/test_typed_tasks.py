"""Typed tasks: `@tasks.task` returns a handle that enqueues with the function's own payload type (checked by
mypy), and a dataclass, msgspec Struct or Pydantic payload reaches the function as that type."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import msgspec
import pydantic
import pytest
from queueflow_client import AsyncQueueFlow, Fatal, JobContext, TaskRegistry

from tests.sdk.conftest import Responses, until_finished
from tests.sdk.test_worker import MakeWorker

ROOT = Path(__file__).resolve().parent.parent.parent
tasks = TaskRegistry()


class Email(TypedDict):
    to: str


@dataclass
class Size:
    width: int
    height: int


@dataclass
class Resize:
    image: str
    size: Size


class Thumbnail(msgspec.Struct):
    image: str
    edge: int = 128


class Invoice(pydantic.BaseModel):
    customer: str
    cents: int


@tasks.task("send_email")
async def send_email(payload: Email, ctx: JobContext) -> dict[str, Any]:
    return {"to": payload["to"], "type": type(payload).__name__}


@tasks.task("resize")
def resize(payload: Resize, ctx: JobContext) -> Size:  # a plain def, in a thread
    assert isinstance(payload.size, Size)
    return Size(payload.size.width // 2, payload.size.height // 2)


@tasks.task("thumbnail")
async def thumbnail(payload: Thumbnail, ctx: JobContext) -> Thumbnail:
    return Thumbnail(payload.image + ".thumb", payload.edge)


@tasks.task("invoice")
async def invoice(payload: Invoice, ctx: JobContext) -> str:
    return f"{payload.customer}: {payload.cents / 100:.2f}"


async def test_handles_enqueue_typed_payloads_and_the_worker_hands_them_back_typed(
    client: AsyncQueueFlow, make_worker: MakeWorker, responses: Responses
) -> None:
    jobs = [
        await send_email.enqueue_async(client, {"to": "ada@example.com"}),
        await resize.enqueue_async(client, Resize("cat.png", Size(640, 480)), priority=5),
        await thumbnail.enqueue_async(client, Thumbnail("dog.png")),
        await invoice.enqueue_async(client, Invoice(customer="ada", cents=1250)),
        await client.jobs.enqueue("resize", payload={"image": "x.png", "size": {"width": "wide"}}),
    ]
    assert [job.payload for job in jobs[1:4]] == [
        {"image": "cat.png", "size": {"width": 640, "height": 480}},
        {"image": "dog.png", "edge": 128},
        {"customer": "ada", "cents": 1250},
    ]
    worker = make_worker(tasks, concurrency=5)
    await worker.start()
    await until_finished(client, responses, [job.id for job in jobs])
    await worker.stop()
    done = [await client.jobs.get(job.id) for job in jobs]
    assert [job.result for job in done[:4]] == [
        {"to": "ada@example.com", "type": "dict"},
        {"width": 320, "height": 240},
        {"image": "dog.png.thumb", "edge": 128},
        "ada: 12.50",
    ]
    assert done[4].status == "dead_letter"  # a payload that does not fit its type would not on a retry either
    assert (done[4].error_message or "").startswith("the payload does not fit Resize: Expected `int`, got `str`")


def test_the_handle_is_still_the_function_and_runs_locally() -> None:
    assert resize.__name__ == "resize"
    assert tasks.run_local("resize", Resize("a.png", Size(10, 20))) == {"width": 5, "height": 10}
    assert tasks.run_local("invoice", {"customer": "bo", "cents": 5}) == "bo: 0.05"
    job = thumbnail.job(Thumbnail("z.png", 64), queue_name="thumbs")
    assert job == {"task_name": "thumbnail", "payload": {"image": "z.png", "edge": 64}, "queue_name": "thumbs"}
    with pytest.raises(Fatal, match="the payload does not fit Invoice"):
        tasks.run_local("invoice", {"customer": "bo"})


def test_mypy_rejects_a_payload_of_the_wrong_type(tmp_path: Path) -> None:
    program = tmp_path / "typed_use.py"
    program.write_text(
        textwrap.dedent(
            """
            from dataclasses import dataclass
            from typing import TypedDict

            from queueflow_client import AsyncQueueFlow, JobContext, QueueFlow, TaskRegistry

            tasks = TaskRegistry()

            class Email(TypedDict):
                to: str

            @dataclass
            class Resize:
                width: int

            @tasks.task("send_email")
            async def send_email(payload: Email, ctx: JobContext) -> bool:
                return True

            @tasks.task("resize")
            def resize(payload: Resize, ctx: JobContext) -> None: ...

            def use(client: QueueFlow) -> None:
                send_email.enqueue(client, {"to": "ada@example.com"}, priority=3)
                send_email.enqueue(client, {"to": 1})
                send_email.enqueue(client, {"too": "ada@example.com"})
                resize.enqueue(client, Resize(width=3), delay_seconds=10)
                resize.enqueue(client, {"width": 3})
                resize.enqueue(client, Resize(3), priorty=2)
                resize.enqueue(client, Resize(3), concurrency_key="user-1")  # every option of jobs.enqueue
                client.jobs.enqueue("t", queue_name=None, concurrency_key="user-1")  # None: not sent
                client.jobs.enqueue("t", queue="mail")

            async def use_async(client: AsyncQueueFlow) -> None:
                await send_email.enqueue_async(client, {"to": "ada@example.com"})
                await resize.enqueue_async(client, Email(to="x"))
            """
        )
    )
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), str(program)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    lines = [
        line.split(": error: ")[0].rsplit(":", 1)[-1] for line in checked.stdout.splitlines() if ": error: " in line
    ]
    assert sorted(set(lines), key=int) == ["25", "26", "28", "29", "32", "36"], checked.stdout
