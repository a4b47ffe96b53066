"""spec/openapi.json is generated from the code and committed; it must never drift from it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from queueflow.cli import main, render_spec

SPEC = Path(__file__).parent.parent.parent / "spec" / "openapi.json"

OPERATIONS = {
    ("post", "/v1/jobs"): "enqueueJob",
    ("post", "/v1/jobs/batch"): "enqueueJobs",
    ("get", "/v1/jobs"): "listJobs",
    ("get", "/v1/jobs/{job_id}"): "getJob",
    ("post", "/v1/jobs/{job_id}/cancel"): "cancelJob",
    ("post", "/v1/jobs/{job_id}/retry"): "retryJob",
    ("post", "/v1/sequences/{key}/resume"): "resumeSequence",
    ("get", "/v1/queues"): "listQueues",
    ("get", "/v1/queues/{name}"): "getQueue",
    ("patch", "/v1/queues/{name}"): "updateQueue",
    ("post", "/v1/workflows"): "createWorkflow",
    ("get", "/v1/workflows"): "listWorkflows",
    ("get", "/v1/workflows/{workflow_id}"): "getWorkflow",
    ("post", "/v1/workflows/{workflow_id}/cancel"): "cancelWorkflow",
    ("post", "/v1/workflows/{workflow_id}/signals/{name}"): "signalWorkflow",
    ("post", "/v1/workflows/{workflow_id}/retry"): "retryWorkflow",
    ("post", "/v1/worker/jobs/{job_id}/steps"): "addWorkflowSteps",
    ("post", "/v1/worker/lease"): "leaseJobs",
    ("post", "/v1/worker/jobs/{job_id}/heartbeat"): "heartbeatJob",
    ("post", "/v1/worker/jobs/{job_id}/complete"): "completeJob",
    ("post", "/v1/worker/jobs/{job_id}/fail"): "failJob",
    ("post", "/v1/worker/ack"): "ackJobs",
    ("post", "/v1/worker/heartbeat"): "heartbeatJobs",
    ("post", "/v1/worker/release"): "releaseJobs",
    ("post", "/v1/schedules"): "createSchedule",
    ("get", "/v1/schedules"): "listSchedules",
    ("get", "/v1/schedules/{name}"): "getSchedule",
    ("patch", "/v1/schedules/{name}"): "updateSchedule",
    ("delete", "/v1/schedules/{name}"): "deleteSchedule",
    ("post", "/v1/endpoints"): "createEndpoint",
    ("get", "/v1/endpoints"): "listEndpoints",
    ("get", "/v1/endpoints/{name}"): "getEndpoint",
    ("patch", "/v1/endpoints/{name}"): "updateEndpoint",
    ("delete", "/v1/endpoints/{name}"): "deleteEndpoint",
    ("post", "/v1/endpoints/{name}/rotate-secret"): "rotateEndpointSecret",
    ("post", "/v1/triggers"): "createTrigger",
    ("get", "/v1/triggers"): "listTriggers",
    ("get", "/v1/triggers/{name}"): "getTrigger",
    ("patch", "/v1/triggers/{name}"): "updateTrigger",
    ("delete", "/v1/triggers/{name}"): "deleteTrigger",
    ("post", "/v1/events"): "sendEvent",
    ("get", "/healthz"): "health",
    ("get", "/readyz"): "ready",
    ("get", "/metrics"): "metrics",
}


def test_the_committed_spec_is_what_the_code_generates() -> None:
    assert SPEC.read_text(encoding="utf-8") == render_spec(), "run `queueflow spec` and commit spec/openapi.json"


def test_the_spec_names_every_operation_and_documents_its_errors() -> None:
    spec = json.loads(render_spec())
    found = {(method, path): op["operationId"] for path, item in spec["paths"].items() for method, op in item.items()}
    assert found == OPERATIONS
    assert spec["components"]["securitySchemes"] == {"BearerAuth": {"type": "http", "scheme": "bearer"}}
    for (method, path), _ in OPERATIONS.items():
        operation = spec["paths"][path][method]
        assert operation["description"], path
        if path.startswith("/v1/"):
            assert operation["security"] == [{"BearerAuth": []}]
            for status in ("401", "403", "503"):
                problem = operation["responses"][status]["content"]["application/problem+json"]
                assert problem["schema"] == {"$ref": "#/components/schemas/Problem"}
        else:
            assert "security" not in operation


def test_spec_check_fails_on_drift_and_passes_when_current(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "openapi.json"
    assert main(["spec", "--check", "--output", str(target)]) == 1  # missing
    assert main(["spec", "--output", str(target)]) == 0
    assert main(["spec", "--check", "--output", str(target)]) == 0
    target.write_text(target.read_text() + " ")
    assert main(["spec", "--check", "--output", str(target)]) == 1
    assert "out of date" in capsys.readouterr().err
