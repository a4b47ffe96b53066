"""README.md's curl calls run as written (issue 17, item 8): every shell block that calls the API runs, call by call
and in order, against an app configured as the block's `export` line says (`secret-a` a tenant key, `secret-w` a
worker key), and every call answers 2xx. `JOB_ID`, `TOKEN` and `WF_ID` are filled as the README tells a reader to:
from the job the block enqueued (or else the one leased), the lease's answer, and the workflow the block created."""

from __future__ import annotations

import random
import shlex
from typing import Any

import pytest
from httpx import ASGITransport, AsyncClient
from queueflow.api import create_app
from queueflow.clocks import TestClock
from queueflow.settings import Settings
from queueflow.stores.memory import InMemoryJobStore

from tests.docs.test_readme_code import ROOT, Block, every_block

SETTINGS = Settings(api_keys={"secret-a": "acme"}, worker_keys=("secret-w",))
CALLING = [
    block
    for block in every_block(ROOT / "README.md")
    if block.language in ("sh", "bash") and "curl -s localhost:8000/" in block.code
]


def curl_calls(code: str) -> list[list[str]]:
    """The block's curl commands as argv lists (continuation lines joined, comments and other commands dropped)."""
    words = shlex.split(code.replace("\\\n", " "), comments=True)
    calls: list[list[str]] = []
    for word in words:
        if word == "curl":
            calls.append([])
        elif calls:
            calls[-1].append(word)
    return calls


def request_of(argv: list[str]) -> tuple[str, str, dict[str, str], str | None]:
    method, url, headers, data = "", "", {}, None
    words = iter(argv)
    for word in words:
        if word == "-X":
            method = next(words)
        elif word == "-H":
            name, _, value = next(words).partition(": ")
            headers[name] = value
        elif word == "-d":
            data = next(words)
        elif not word.startswith("-"):
            url = word
    assert url.startswith("localhost:8000/"), argv
    return method or ("POST" if data is not None else "GET"), url.removeprefix("localhost:8000"), headers, data


def test_every_block_that_calls_the_api_is_found() -> None:
    assert len(CALLING) >= 5  # a job's life, flow control, schedules, workflows, workflows that grow and wait


@pytest.mark.parametrize("block", CALLING, ids=[block.name for block in CALLING])
async def test_the_curl_calls_run_as_written(block: Block) -> None:
    if "export QUEUEFLOW_API_KEYS" in block.code:
        assert 'export QUEUEFLOW_API_KEYS="secret-a=acme" QUEUEFLOW_WORKER_KEYS="secret-w"' in block.code
    app = create_app(SETTINGS, store=InMemoryJobStore(), clock=TestClock(), rng=random.Random(1))
    filled: dict[str, str] = {}
    answers: list[Any] = []
    async with AsyncClient(transport=ASGITransport(app=app), base_url="http://localhost:8000") as http:
        for argv in curl_calls(block.code):
            method, path, headers, data = request_of(argv)
            for placeholder, value in filled.items():
                path = path.replace(placeholder, value)
                data = data.replace(placeholder, value) if data is not None else None
            response = await http.request(method, path, content=data, headers=headers)
            assert 200 <= response.status_code < 300, (argv, response.status_code, response.text)
            answer = response.json() if response.content else None
            answers.append(answer)
            if path == "/v1/jobs" and method == "POST":
                filled.setdefault("JOB_ID", answer["id"])
            if path == "/v1/workflows" and method == "POST":
                filled.setdefault("WF_ID", answer["id"])
            if path == "/v1/worker/lease":
                (job,) = answer["jobs"]
                assert job["id"] == filled.setdefault("JOB_ID", job["id"])
                filled["TOKEN"] = job["lease_token"]
    assert answers
    if "/complete" in block.code:
        assert answers[-1]["status"] == "completed"  # the job's life ends as the README says
