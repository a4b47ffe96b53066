"""Steps read from a task's plain JSON (`core.definitions.new_steps_from_json`, the in-process `ctx.add_steps`):
the same steps as the route's body makes of the same JSON, and a refusal at the field the route names."""

from __future__ import annotations

import dataclasses
from typing import Any

import msgspec
import pytest
from queueflow.api.body import decode_strict
from queueflow.api.schemas.workflows import AddStepsRequest
from queueflow.core.definitions import new_steps_from_json
from queueflow.core.errors import ValidationError
from queueflow.core.workflow import NewStep

SAME_AS_THE_ROUTE = [
    [{"name": "m", "task_name": "t"}],
    [{"name": "m", "task_name": "t", "required_by": ["reduce"], "depends_on": ["split"], "on_failure": "skip"}],
    [
        {
            "name": "m",
            "task_name": "t",
            "payload": {"a": [1, 2.0], "b": None},
            "queue_name": "q",
            "priority": 5,
            "max_retries": 2,
            "backoff": {"strategy": "fixed", "base_seconds": 2, "max_seconds": 3.5, "jitter": False},
            "timeout_seconds": 5,
            "concurrency_key": "k",
        }
    ],
    [{"name": "m", "task_name": "t", "priority": 3.0, "max_retries": 2.0, "backoff": {"base_seconds": 2}}],
    [{"name": "m", "task_name": "t", "timeout_seconds": None, "concurrency_key": None, "wait": None}],
    [{"name": "nap", "wait": {"seconds": 5}}, {"name": "after", "task_name": "t", "depends_on": ["nap"]}],
    [{"name": "s", "task_name": None, "wait": {"signal": "go", "timeout_seconds": 10}}],
    # Valid JSON the rules then refuse: read alike, so that the step's own rules decide alike.
    [{"name": "m", "wait": {"seconds": 1}, "priority": 0}],
    [{"name": "m", "task_name": "t", "wait": {"seconds": 1, "signal": "s"}}],
    [{"name": "m"}],
]


def by_the_route(steps: Any) -> list[NewStep]:
    return decode_strict(msgspec.json.encode({"lease_token": "t", "steps": steps}), AddStepsRequest).to_domain()


def exactly(steps: list[NewStep]) -> list[list[str]]:
    """Each step's fields as shown (5 is not 5.0 here, as it is not on the wire), its job fields in order."""
    return [
        [f"{field.name}={_shown(getattr(step, field.name))}" for field in dataclasses.fields(step)] for step in steps
    ]


def _shown(value: object) -> str:
    return repr(sorted(value)) if isinstance(value, frozenset) else repr(value)


@pytest.mark.parametrize("steps", SAME_AS_THE_ROUTE)
def test_a_step_reads_as_the_route_reads_it(steps: list[dict[str, Any]]) -> None:
    assert exactly(new_steps_from_json(steps)) == exactly(by_the_route(steps))


@pytest.mark.parametrize(
    ("steps", "fields"),
    [
        ("m", ["steps"]),
        ([["m"]], ["steps.0"]),
        ([{"task_name": "t"}], ["steps.0"]),
        ([{"name": 5, "task_name": "t"}], ["steps.0.name"]),
        ([{"name": "m", "task_name": "t", "colour": "red"}], ["steps.0.colour"]),
        ([{"name": "m", "wait": {"seconds": 1, "x": 1}}], ["steps.0.wait.x"]),
        ([{"name": "m", "wait": "soon"}], ["steps.0.wait"]),
        ([{"name": "m", "task_name": "t", "backoff": [1]}], ["steps.0.backoff"]),
        ([{"name": "m", "task_name": "t", "backoff": {"x": 1}}], ["steps.0.backoff.x"]),
        ([{"name": "m", "task_name": "t", "backoff": {"strategy": "random"}}], ["steps.0.backoff.strategy"]),
        ([{"name": "m", "task_name": "t", "backoff": {"jitter": 1}}], ["steps.0.backoff.jitter"]),
        ([{"name": "m", "task_name": "t", "depends_on": [f"s{i}" for i in range(10_001)]}], ["steps.0.depends_on"]),
        ([{"name": "a", "task_name": "t", "x": 1}, 7], ["steps.0.x", "steps.1"]),
    ],
)
def test_what_cannot_be_a_step_is_refused_at_the_routes_field(steps: Any, fields: list[str]) -> None:
    with pytest.raises(ValidationError) as refused:
        new_steps_from_json(steps)
    assert [error.field for error in refused.value.errors] == fields
    with pytest.raises(ValidationError) as by_route:
        by_the_route(steps)
    assert by_route.value.errors[0].field == fields[0]
