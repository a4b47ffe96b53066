"""An SDK reading a server newer than itself (docs/compatibility.md, "SDKs tolerate evolution"): fields it does not
know are ignored, enum values it does not know (a new job or step status, a new backoff strategy) are kept as the
strings they are, and nothing raises — on the lease path (decoded by msgspec, which checks `Literal`s) and on
every other (`from_json`). Scripted answers, no server."""

from __future__ import annotations

import json
from typing import Any

import httpx
from queueflow_client import QueueFlow
from queueflow_client.types import decode_lease_answer

from tests.sdk.conftest import BASE
from tests.sdk.test_transport import JOB

NEWER = {"a_field_from_the_future": {"nested": [1, 2]}, "another": None}


def newer_job(**changes: Any) -> dict[str, Any]:
    return {**JOB, **NEWER, **changes}


def answering(body: object) -> QueueFlow:
    http = httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(200, json=body)))
    return QueueFlow(BASE, "key", http_client=http, retry_delay=0)


def test_a_lease_answer_from_a_newer_server_decodes() -> None:
    leased = newer_job(
        status="running_elsewhere",
        backoff={**JOB["backoff"], "strategy": "decorrelated", "cap_factor": 3},
        lease_token="00000000-0000-0000-0000-000000000001",
        deadline=None,
    )
    (job,) = decode_lease_answer(json.dumps({"jobs": [leased], "wait_hint": 3}).encode())
    assert (job.id, job.status, job.backoff.strategy) == ("job_1", "running_elsewhere", "decorrelated")


def test_a_job_from_a_newer_server_reads() -> None:
    with answering(newer_job(status="archived")) as client:
        job = client.jobs.get("job_1")
    assert (job.id, job.status) == ("job_1", "archived")


def test_a_workflow_from_a_newer_server_reads() -> None:
    step = {
        "name": "approve", "task_name": "t", "status": "sleeping", "job_id": None, "depends_on": [],
        "on_failure": "halt", **NEWER,
    }  # fmt: skip
    workflow = {
        "id": "wf_1", "tenant_id": "default", "name": "w", "status": "suspended", "context": {}, "steps": [step],
        "created_at": "2026-03-01T12:00:00Z", "completed_at": None, **NEWER,
    }  # fmt: skip
    with answering(workflow) as client:
        read = client.workflows.get("wf_1")
    assert (read.status, read.steps[0].status) == ("suspended", "sleeping")
