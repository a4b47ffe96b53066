"""The SDK's requests say what spec/openapi.json says (`make sdk-python` runs this and test_types_match_spec.py).

Nothing of the Python SDK is generated (sdks/python/README.md says why), so this is what fails when the spec
changes and the SDK does not: each of its routes (`_calls.routes`) must be the spec's operation of that
operationId, every operation of the spec a route of the SDK or named below as not its own, and the requests its
calls build — one of each, every argument given — must fit the operation: its path, query parameters and
headers, and a body valid against the request schema (names, required fields, types, enums, patterns and bounds,
however deep). And field for field: every field of every request schema those bodies reach is sent by one of them,
so a field the server adds is noticed here, as a new response field is in test_types_match_spec.py.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import pytest
from queueflow_client import _calls, steps
from queueflow_client._calls import routes
from queueflow_client._transport import Call
from queueflow_client.types import Backoff, RateLimit, Sequence, Unique, Wait
from queueflow_worker import Outcome

SPEC = json.loads((Path(__file__).resolve().parents[2] / "spec" / "openapi.json").read_text())
SCHEMAS: dict[str, Any] = SPEC["components"]["schemas"]
OPERATIONS = {
    operation["operationId"]: (method.upper(), path, operation)
    for path, operations in SPEC["paths"].items()
    for method, operation in operations.items()
}
ROUTES = [route for route in vars(routes).values() if isinstance(route, routes.Route)]
NOT_THE_SDKS = {"health", "ready", "metrics"}  # for load balancers and Prometheus
NOT_SENT = {"HeartbeatItem": {"progress"}}
"""Request fields the SDK does not send: its worker records a task's progress by that job's own heartbeat
(`ctx.progress`), never in the batch that extends every lease."""

JOB_OPTIONS: dict[str, Any] = {
    "queue_name": "emails",
    "priority": 5,
    "run_at": datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC),
    "delay_seconds": 1.5,
    "max_retries": 4,
    "backoff": Backoff("linear", 2.0, 60.0, False),
    "timeout_seconds": 30.0,
    "metadata": {"tenant": "acme"},
    "concurrency_key": "user-1",
    "unique": Unique(key="customer-1", states=["pending"], period_seconds=None, on_conflict="replace"),
    "payload": {"to": "ada@example.com"},
}
DEBOUNCED = {"unique": {"key": "hook", "on_conflict": "replace", "debounce_seconds": 5, "debounce_max_seconds": 60},
             "queue_name": "hooks"}  # fmt: skip
WINDOWED = {"unique": Unique(key="report", period_seconds=3600, on_conflict="error")}
EXPIRING = {"expires_at": datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)}
EXPIRING_IN = {"expires_in": timedelta(minutes=5)}
WORKFLOW = steps.workflow(
    "etl",
    [
        steps.task("extract", "extract", {"day": 1}, queue_name="etl", priority=1, max_retries=2, backoff=Backoff(),
                   timeout_seconds=60, concurrency_key="db"),
        steps.signal("approval", depends_on=["extract"], timeout_seconds=3600, on_failure="continue"),
        steps.sleep("cool_down", 2.5, depends_on=["approval"]),
        steps.child("load", steps.workflow("load", [steps.task("copy", "copy")]), depends_on=["cool_down"]),
    ],
    context={"run": 1},
)  # fmt: skip
SCHEDULE = {"timezone": "Europe/Berlin", "queue_name": "etl", "payload": {"a": 1}, "priority": 2, "max_retries": 1,
            "enabled": False}  # fmt: skip

# fmt: off
PAID_TASK = {"task_name": "receipt", **{name: value for name, value in JOB_OPTIONS.items() if name != "unique"}}
"""A trigger's task: every job option but a unique rule (a rule about which jobs exist is not an event's)."""
CALLS: list[tuple[str, Call[Any]]] = [
    ("enqueueJob", _calls.enqueue({"task_name": "send_email", "idempotency_key": "key-1", **JOB_OPTIONS})),
    ("enqueueJobs", _calls.enqueue_many([{"task_name": "send_email", "idempotency_key": "key-2", **JOB_OPTIONS}])),
    ("enqueueJob", _calls.enqueue({"task_name": "hook", **DEBOUNCED})),
    ("enqueueJobs", _calls.enqueue_many([{"task_name": "report", **WINDOWED}])),
    ("enqueueJob", _calls.enqueue({"task_name": "offer", **EXPIRING_IN})),
    ("enqueueJob", _calls.enqueue({"task_name": "offer", **EXPIRING})),
    ("enqueueJobs", _calls.enqueue_many([{"task_name": "offer", **EXPIRING}, {"task_name": "offer", **EXPIRING_IN}])),
    ("enqueueJob", _calls.enqueue({"task_name": "post", "sequence": Sequence("account-7", on_failure="halt")})),
    ("enqueueJobs", _calls.enqueue_many([{"task_name": "post", "sequence": {"key": "account-7"}}])),
    ("getJob", _calls.get("job_1", 5.0)),
    ("listJobs", _calls.list_page(queue_name="emails", status="dead_letter", task_name="send_email",
                                 workflow_id="wf_1", metadata={"tenant": "acme"}, limit=10, cursor="c",
                                 unique_key="customer-1", sequence_key="account-7")),
    ("cancelJob", _calls.cancel("job_1")),
    ("resumeSequence", _calls.resume_sequence("account/7")),
    ("retryJob", _calls.retry("job_1")),
    ("listQueues", _calls.queues()),
    ("getQueue", _calls.get_queue("emails")),
    ("updateQueue", _calls.update_queue("emails", paused=True, concurrency_limit=5, key_concurrency_limit=1,
                                       rate_limit=RateLimit(10, 1.0), retention_seconds=86_400)),
    ("createSchedule", _calls.create_schedule("nightly", {**SCHEDULE, "cron": "0 3 * * *", "task_name": "etl"})),
    ("createSchedule", _calls.create_schedule("nightly_etl", {"cron": "0 3 * * *", "workflow": WORKFLOW})),
    ("getSchedule", _calls.get_schedule("nightly")),
    ("listSchedules", _calls.list_schedules(10, "c")),
    ("updateSchedule", _calls.update_schedule("nightly", {**SCHEDULE, "cron": "0 4 * * *", "task_name": "etl",
                                                         "workflow": WORKFLOW})),
    ("deleteSchedule", _calls.delete_schedule("nightly")),
    ("createEndpoint", _calls.create_endpoint("billing", "https://billing.example.com/hooks", {
        "queues": ["billing"], "task_names": ["charge"], "concurrency": 5, "timeout_seconds": 10, "paused": False})),
    ("getEndpoint", _calls.get_endpoint("billing")),
    ("listEndpoints", _calls.list_endpoints(10, "c")),
    ("updateEndpoint", _calls.update_endpoint("billing", {
        "url": "https://billing.example.com/v2", "queues": ["billing"], "task_names": ["charge"], "concurrency": 2,
        "timeout_seconds": 5, "paused": True})),
    ("rotateEndpointSecret", _calls.rotate_endpoint_secret("billing")),
    ("deleteEndpoint", _calls.delete_endpoint("billing")),
    ("createTrigger", _calls.create_trigger("paid", {"event": "order.paid", "task": PAID_TASK, "filter": {"n": 1}})),
    ("createTrigger", _calls.create_trigger("fulfil", {"event": "order.*", "workflow": WORKFLOW, "enabled": False})),
    ("getTrigger", _calls.get_trigger("paid")),
    ("listTriggers", _calls.list_triggers(10, "c")),
    ("updateTrigger", _calls.update_trigger("paid", {"event": "order.*", "filter": {}, "enabled": False})),
    ("updateTrigger", _calls.update_trigger("paid", {"workflow": WORKFLOW})),
    ("updateTrigger", _calls.update_trigger("paid", {"task": {"task_name": "receipt"}})),
    ("deleteTrigger", _calls.delete_trigger("paid")),
    ("sendEvent", _calls.send_event("order.paid", {"order": 7}, "evt-7")),
    ("sendEvent", _calls.send_event("order.paid", None, None)),
    ("createWorkflow", _calls.create_workflow("etl", WORKFLOW.steps, {"run": 1}, "key-3")),
    ("createWorkflow", _calls.create_workflow("etl", WORKFLOW.steps, {"run": 1}, "key-3", 3600.0)),
    ("getWorkflow", _calls.get_workflow("wf_1", 5.0)),
    ("listWorkflows", _calls.list_workflows("running", 10, "c")),
    ("cancelWorkflow", _calls.cancel_workflow("wf_1")),
    ("retryWorkflow", _calls.retry_workflow("wf_1")),
    ("signalWorkflow", _calls.signal_workflow("wf_1", "approval", {"by": "ada"})),
    ("leaseJobs", _calls.lease(["emails"], max_jobs=10, lease_seconds=30.0, wait_seconds=5.0, worker_id="w-1",
                              task_names=["send_email"])),
    ("heartbeatJobs", _calls.heartbeat_many([("job_1", "token-1")], 30.0)),
    ("ackJobs", _calls.ack_outcomes([Outcome("job_1", "token-1", result={"sent": True}),
                                    Outcome("job_2", "token-2", error="boom", retry_after_seconds=2.0)])),
    ("releaseJobs", _calls.release([("job_1", "token-1")])),
    ("heartbeatJob", _calls.heartbeat("job_1", "token-1", 30.0, {"done": 0.5})),
    ("completeJob", _calls.complete("job_1", "token-1", {"sent": True})),
    ("failJob", _calls.fail("job_1", "token-1", "boom", retryable=True, retry_after_seconds=2.0)),
    ("addWorkflowSteps", _calls.add_steps("job_1", "token-1", [
        steps.task("map_0", "map", {"i": 0}, required_by=["reduce"], queue_name="etl", priority=1, max_retries=2,
                   backoff=Backoff(), timeout_seconds=60, concurrency_key="db"),
        steps.signal("more", depends_on=["map_0"], timeout_seconds=60, on_failure="skip"),
        {"name": "pause", "wait": Wait(seconds=1.0)},
        steps.child("ship", steps.workflow("parcel", [steps.task("pack", "pack")], timeout_seconds=60),
                    depends_on=["pause"]),
    ])),
]
# fmt: on


def test_each_route_is_the_spec_operation_of_its_id() -> None:
    for route in ROUTES:
        assert route.operation_id in OPERATIONS, f"the spec has no operation {route.operation_id}"
        assert (route.method, route.path) == OPERATIONS[route.operation_id][:2], route.operation_id


def test_every_operation_of_the_spec_is_a_route_of_the_sdk() -> None:
    called = {route.operation_id for route in ROUTES}
    assert set(OPERATIONS) - NOT_THE_SDKS == called, "give each new operation a route (and a call) in the SDK"
    assert {operation_id for operation_id, _ in CALLS} == called, "add a call of each route to CALLS"


@pytest.mark.parametrize(("operation_id", "sent"), CALLS, ids=[operation_id for operation_id, _ in CALLS])
def test_a_request_fits_its_operation(operation_id: str, sent: Call[Any]) -> None:
    method, path, operation = OPERATIONS[operation_id]
    request = sent.request
    parameters = {(p["in"], p["name"]): p for p in operation.get("parameters", [])}
    assert request["method"] == method
    url = urlsplit(request["url"])
    template = "^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", path) + "$"
    found = re.match(template, url.path)
    assert found, f"{request['url']} is not {path}"
    for name, value in found.groupdict().items():
        assert_valid(unquote(value), parameters["path", name]["schema"], name)
    query = dict(parse_qsl(url.query)) | request.get("params", {})
    for name, value in query.items():
        assert ("query", name) in parameters, f"{operation_id} takes no query parameter {name}"
        assert_valid(value, parameters["query", name]["schema"], name, from_text=True)
    for name, value in request.get("headers", {}).items():
        if name.lower() != "content-type":
            assert ("header", name) in parameters, f"{operation_id} takes no header {name}"
            assert_valid(value, parameters["header", name]["schema"], name)
    body = request["json"] if "json" in request else json.loads(request["content"]) if "content" in request else None
    expected = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    assert (body is None) == (expected is None), f"{operation_id}: a body where the spec has none, or none"
    if expected is not None:
        assert_valid(body, expected, "body")


def test_every_field_of_a_request_schema_is_sent() -> None:
    seen: dict[str, set[str]] = {}
    for operation_id, sent in CALLS:
        schema = OPERATIONS[operation_id][2].get("requestBody", {}).get("content", {}).get("application/json", {})
        if schema:
            request = sent.request
            assert_valid(request.get("json") or json.loads(request["content"]), schema["schema"], "body", seen=seen)
    unsent = {name: set(SCHEMAS[name]["properties"]) - sent - NOT_SENT.get(name, set()) for name, sent in seen.items()}
    assert {name: sorted(fields) for name, fields in unsent.items() if fields} == {}, "the SDK sends none of these"


def assert_valid(
    value: Any, schema: dict[str, Any], where: str, *, from_text: bool = False, seen: dict[str, set[str]] | None = None
) -> None:
    errors = problems(value, schema, where, from_text, seen if seen is not None else {})
    assert not errors, "; ".join(errors)


def problems(value: Any, schema: dict[str, Any], where: str, from_text: bool, seen: dict[str, set[str]]) -> list[str]:
    """What in `value` the JSON schema `schema` refuses (a subset of JSON Schema: what the spec uses). Each object
    that fits a component schema adds its keys to `seen[name]`. `from_text`: a query string, whose values are text."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        found = problems(value, SCHEMAS[name], where, from_text, seen)
        if not found and isinstance(value, dict):
            seen.setdefault(name, set()).update(value)
        return found
    for key in ("oneOf", "anyOf"):
        if key in schema:
            rest = {k: v for k, v in schema.items() if k != key}
            for branch in schema[key]:
                tried: dict[str, set[str]] = {}
                if not problems(value, {**rest, **branch}, where, from_text, tried):
                    for name, fields in tried.items():
                        seen.setdefault(name, set()).update(fields)
                    return []
            return [f"{where}: {value!r:.80} fits none of {schema[key]}"]
    kinds = schema.get("type")
    if kinds is not None:
        kinds = kinds if isinstance(kinds, list) else [kinds]
        value = _typed(value, kinds) if from_text else value
        if not any(_is(value, kind) for kind in kinds):
            return [f"{where}: {value!r:.80} is not {kinds}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where}: {value!r} is none of {schema['enum']}"]
    return _bounds(value, schema, where) + _inside(value, schema, where, seen)


def _typed(text: str, kinds: list[str]) -> Any:
    for kind, parse in (("integer", int), ("number", float)):
        if kind in kinds:
            try:
                return parse(text)
            except ValueError:
                pass
    return text


def _is(value: Any, kind: str) -> bool:
    return {
        "object": isinstance(value, dict),
        "array": isinstance(value, list),
        "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, int | float) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
        "null": value is None,
    }[kind]


def _bounds(value: Any, schema: dict[str, Any], where: str) -> list[str]:
    found = []
    if isinstance(value, str):
        if not schema.get("minLength", 0) <= len(value) <= schema.get("maxLength", len(value)):
            found.append(f"{where}: {value!r:.80} has a length out of bounds")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            found.append(f"{where}: {value!r:.80} does not match {schema['pattern']}")
        if schema.get("format") == "date-time":
            datetime.fromisoformat(value)
    elif _is(value, "number") and not schema.get("minimum", value) <= value <= schema.get("maximum", value):
        found.append(f"{where}: {value} is out of bounds")
    return found


def _inside(value: Any, schema: dict[str, Any], where: str, seen: dict[str, set[str]]) -> list[str]:
    found: list[str] = []
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        found += [f"{where}: {name} is missing" for name in schema.get("required", []) if name not in value]
        for name, item in value.items():
            if name in properties:
                found += problems(item, properties[name], f"{where}.{name}", False, seen)
            elif schema.get("additionalProperties") is False:
                found.append(f"{where}: {name} is not a field of the spec's schema")
    elif isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            found += problems(item, schema["items"], f"{where}[{index}]", False, seen)
    return found
