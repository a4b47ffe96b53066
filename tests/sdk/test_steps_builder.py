"""`queueflow_client.steps`: workflow definitions written as code, and what they send."""

from __future__ import annotations

import json

import httpx
import pytest
from queueflow_client import ArgumentError, Backoff, QueueFlow, Step, Wait, WorkflowDefinition, steps


def test_a_task_step_is_the_api_step_with_its_job_options() -> None:
    split = steps.task("split", "split_rows", {"rows": 3}, queue_name="etl", priority=2, backoff=Backoff("fixed"))
    reduce = steps.task("reduce", "sum", depends_on=[split], on_failure="skip", timeout_seconds=30)
    assert reduce == Step(name="reduce", task_name="sum", depends_on=("split",), on_failure="skip", timeout_seconds=30)
    assert split.to_json() == {
        "name": "split",
        "task_name": "split_rows",
        "payload": {"rows": 3},
        "depends_on": [],
        "on_failure": "halt",
        "queue_name": "etl",
        "priority": 2,
        "backoff": {"strategy": "fixed", "base_seconds": 1.0, "max_seconds": 3600.0, "jitter": True},
    }


def test_wait_steps_send_their_wait_and_no_job_field() -> None:
    approval = steps.signal("approval", timeout_seconds=3600, depends_on=["draft"])
    named = steps.signal("approved", signal="approval")
    nap = steps.sleep("cool_off", 3 * 86400, depends_on=[approval], on_failure="continue")
    assert approval.to_json() == {
        "name": "approval",
        "depends_on": ["draft"],
        "on_failure": "halt",
        "wait": {"signal": "approval", "timeout_seconds": 3600},
    }
    assert named.wait == Wait(signal="approval")
    assert named.to_json()["wait"] == {"signal": "approval"}  # no timeout: it waits for the signal alone
    assert nap.to_json() == {
        "name": "cool_off",
        "depends_on": ["approval"],
        "on_failure": "continue",
        "wait": {"seconds": 259200},
    }


def test_required_by_is_sent_only_when_given() -> None:
    added = steps.task("map_0", "double", {"row": 1}, required_by=["reduce"])
    assert added.to_json()["required_by"] == ["reduce"]
    assert "required_by" not in steps.task("map_0", "double").to_json()


def test_a_workflow_definition_is_the_create_body() -> None:
    draft = steps.task("draft", "write")
    definition = steps.workflow("review", [draft, steps.signal("ok", depends_on=[draft])], context={"doc": 7})
    assert isinstance(definition, WorkflowDefinition)
    assert definition.to_json() == {
        "name": "review",
        "context": {"doc": 7},
        "steps": [
            {"name": "draft", "task_name": "write", "payload": {}, "depends_on": [], "on_failure": "halt"},
            {"name": "ok", "depends_on": ["draft"], "on_failure": "halt", "wait": {"signal": "ok"}},
        ],
    }


def test_a_name_given_twice_is_refused_before_any_request() -> None:
    with pytest.raises(ArgumentError, match="more than once: a"):
        steps.workflow("w", [steps.task("a", "t"), steps.sleep("a", 1), steps.task("b", "t")])


@pytest.mark.parametrize("refs", ["split", steps.task("split", "t"), [3]])
def test_dependencies_are_a_list_of_steps_or_names(refs: object) -> None:
    with pytest.raises(ArgumentError, match="depends_on"):
        steps.task("reduce", "sum", depends_on=refs)  # type: ignore[arg-type]


def test_create_takes_a_definition_and_sends_its_steps() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(201, json=_workflow())

    with QueueFlow("http://qf", http_client=httpx.Client(transport=httpx.MockTransport(answer))) as client:
        split = steps.task("split", "split_rows")
        client.workflows.create(
            steps.workflow("mr", [split, steps.task("reduce", "sum", depends_on=[split])], context={"n": 1}),
            idempotency_key="k1",
        )
        with pytest.raises(ArgumentError, match="pass it alone"):
            client.workflows.create(steps.workflow("mr", [split]), [split])
    body = json.loads(seen[0].content)
    assert (seen[0].url.path, seen[0].headers["Idempotency-Key"]) == ("/v1/workflows", "k1")
    assert body["name"] == "mr"
    assert body["context"] == {"n": 1}
    assert [(step["name"], step["task_name"], step["depends_on"]) for step in body["steps"]] == [
        ("split", "split_rows", []),
        ("reduce", "sum", ["split"]),
    ]


def _workflow() -> dict[str, object]:
    return {
        "id": "wf_1",
        "tenant_id": "default",
        "name": "mr",
        "status": "running",
        "context": {},
        "steps": [],
        "created_at": "2026-01-01T00:00:00Z",
        "completed_at": None,
    }
