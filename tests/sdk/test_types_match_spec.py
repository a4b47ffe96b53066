"""The SDK's hand-written public types (`queueflow_client.types`) say exactly what spec/openapi.json says.

They are frozen dataclasses decoded from the JSON, written by hand for readable names, aware datetimes and
docstrings, and nothing of the SDK is generated (sdks/python/README.md). So nothing but this test notices when
the server adds, drops or renames a field, makes one nullable, or adds an enum value: each public type must
have the same field names as its schema, the same nullability, and the same `Literal` values as its enums.
A response schema the table below does not place (public type, envelope the client unwraps, or not the SDK's)
fails too, so a new route's answer cannot go unmapped.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import pytest
from queueflow_client import types as public
from queueflow_client.errors import FieldError
from queueflow_client.options import JobOptions

SPEC = json.loads((Path(__file__).resolve().parents[2] / "spec" / "openapi.json").read_text())
SCHEMAS: dict[str, Any] = SPEC["components"]["schemas"]

# Every schema a success response holds (directly or nested) is one of these three kinds.
RESPONSE_TYPES: dict[str, type] = {
    "Job": public.Job,
    "LeasedJob": public.LeasedJob,
    "Backoff": public.Backoff,
    "TraceContext": public.TraceContext,
    "Queue": public.Queue,
    "RateLimit": public.RateLimit,
    "AckResult": public.AckResult,
    "HeartbeatResult": public.HeartbeatResult,
    "Workflow": public.Workflow,
    "WorkflowStep": public.WorkflowStep,
    "StepWait": public.Wait,
    "ParentRef": public.ParentRef,
    "Schedule": public.Schedule,
    "JobPage": public.Page,
    "WorkflowPage": public.Page,
    "SchedulePage": public.Page,
    "Endpoint": public.Endpoint,
    "EndpointPage": public.Page,
    "Trigger": public.Trigger,
    "TriggerPage": public.Page,
    "EventAccepted": public.EventAccepted,
    "SequenceResumed": public.SequenceResumed,
    "StartedItem": public.Started,
}
# The client answers only this field of these objects (a list, or the heartbeat's new lock time).
ENVELOPES = {"JobBatch": "jobs", "LeasedJobs": "jobs", "QueueList": "queues", "AckResults": "results",
             "Heartbeat": "locked_until", "HeartbeatResults": "results", "ReleaseResults": "results",
             "AddedSteps": "steps"}  # fmt: skip
NOT_THE_SDKS = {"Health"}  # /healthz and /readyz, for load balancers

# Public types the user builds and the client sends: the same names and enums (their None means "not sent").
# `Step` is the added step's shape (`required_by` left empty, and so not sent, for a step created with its workflow).
REQUEST_TYPES: dict[str, type] = {"AddedStep": public.Step, "BatchItem": JobOptions, "FieldProblem": FieldError}


def resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = SCHEMAS[schema["$ref"].rsplit("/", 1)[1]]
    return schema


def referenced(schema: Any) -> set[str]:
    """The names of every component schema `schema` refers to, however deep."""
    found: set[str] = set()
    pending = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            if "$ref" in node:
                name = node["$ref"].rsplit("/", 1)[1]
                if name not in found:
                    found.add(name)
                    pending.append(SCHEMAS[name])
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return found


def response_schemas() -> set[str]:
    found: set[str] = set()
    for operations in SPEC["paths"].values():
        for operation in operations.values():
            for status, response in operation.get("responses", {}).items():
                if status.startswith("2"):
                    found |= referenced(response.get("content", {}))
    return found


def schema_facts(schema: dict[str, Any]) -> tuple[bool | None, set[Any]]:
    """Whether the value may be null (None: any JSON at all), and its enum values other than null."""
    schema = resolve(schema)
    if not schema:
        return None, set()
    branches = [resolve(branch) for branch in schema.get("oneOf", schema.get("anyOf", [schema]))]
    kinds = [kind for branch in branches for kind in _as_list(branch.get("type"))]
    values = {value for branch in branches for value in branch.get("enum", ())}
    return "null" in kinds or None in values, values - {None}


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def annotation_facts(annotation: Any) -> tuple[bool | None, set[Any]]:
    """The same two facts of a field's annotation: `X | None` is nullable, `Literal[...]` lists the values."""
    if annotation is Any:
        return None, set()
    members = _flatten(annotation)
    values = {value for member in members if get_origin(member) is Literal for value in get_args(member)}
    return type(None) in members, values


def _flatten(annotation: Any) -> list[Any]:
    if get_origin(annotation) in (Union, types.UnionType):
        return [member for arg in get_args(annotation) for member in _flatten(arg)]
    return [annotation]


def fields_of(kind: type) -> dict[str, Any]:
    hints = get_type_hints(kind)
    if dataclasses.is_dataclass(kind):
        return {field.name: hints[field.name] for field in dataclasses.fields(kind)}
    assert typing.is_typeddict(kind), kind
    return hints


WIRE_NAMES = {"expires_in": "expires_in_seconds"}
"""Request fields the SDK names otherwise: `expires_in` takes seconds or a timedelta."""


def assert_same_names(kind: type, schema: str, fields: set[str], properties: set[str]) -> None:
    assert not properties - fields, f"{kind.__name__} lacks {sorted(properties - fields)} of the spec's {schema}"
    assert not fields - properties, f"{kind.__name__} has {sorted(fields - properties)}, not in the spec's {schema}"


def test_every_response_schema_is_placed() -> None:
    placed = set(RESPONSE_TYPES) | set(ENVELOPES) | NOT_THE_SDKS
    assert response_schemas() == placed, "place each new response schema in a table at the top of this file"


@pytest.mark.parametrize(("schema", "wrapper"), sorted(ENVELOPES.items()))
def test_an_unwrapped_envelope_holds_nothing_else(schema: str, wrapper: str) -> None:
    assert set(SCHEMAS[schema]["properties"]) == {wrapper}, f"the client drops the rest of {schema}"


@pytest.mark.parametrize(("schema", "kind"), sorted(RESPONSE_TYPES.items()), ids=sorted(RESPONSE_TYPES))
def test_a_response_type_matches_its_schema(schema: str, kind: type) -> None:
    properties = SCHEMAS[schema]["properties"]
    fields = fields_of(kind)
    assert_same_names(kind, schema, set(fields), set(properties))
    for name, annotation in fields.items():
        nullable, values = schema_facts(properties[name])
        said_nullable, said_values = annotation_facts(annotation)
        if nullable is not None and said_nullable is not None:
            assert said_nullable == nullable, f"{kind.__name__}.{name}: the spec says nullable={nullable}"
        assert said_values == values, f"{kind.__name__}.{name}: the spec's values are {sorted(values)}"


@pytest.mark.parametrize(("schema", "kind"), sorted(REQUEST_TYPES.items()), ids=sorted(REQUEST_TYPES))
def test_a_request_type_matches_its_schema(schema: str, kind: type) -> None:
    properties = SCHEMAS[schema]["properties"]
    fields = {WIRE_NAMES.get(name, name): annotation for name, annotation in fields_of(kind).items()}
    assert_same_names(kind, schema, set(fields), set(properties))
    for name, annotation in fields.items():
        _, values = schema_facts(properties[name])
        assert annotation_facts(annotation)[1] == values, f"{kind.__name__}.{name}: the spec's values are {values}"
