"""The rules a new workflow must pass (README, "Workflows"), and the cycle finder behind them."""

from __future__ import annotations

import graphlib
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from queueflow.core.dag import find_cycles
from queueflow.core.errors import FieldError
from queueflow.core.types import BackoffPolicy
from queueflow.core.workflow import MAX_STEPS, NewStep, NewWorkflow, OnFailure, new_workflow_errors, step_errors


def step(name: str, *depends_on: str, **fields: Any) -> NewStep:
    return NewStep(name=name, task_name=f"do-{name}", depends_on=list(depends_on), **fields)


def errors_of(*steps: NewStep, **fields: Any) -> list[FieldError]:
    return new_workflow_errors(NewWorkflow(name=fields.pop("name", "etl"), steps=list(steps), **fields))


def by_field(errors: list[FieldError]) -> dict[str, str]:
    return {error.field: error.message for error in errors}


def chain(count: int) -> list[NewStep]:
    return [step("s0")] + [step(f"s{i}", f"s{i - 1}") for i in range(1, count)]


def test_a_diamond_is_valid() -> None:
    assert errors_of(step("a"), step("b", "a"), step("c", "a"), step("d", "b", "c")) == []


def test_every_field_of_the_api_example_is_accepted() -> None:
    load = step(
        "load",
        "extract",
        on_failure=OnFailure.SKIP,
        queue_name="etl:load",
        priority=-5,
        max_retries=0,
        backoff=BackoffPolicy(base_seconds=0.5, max_seconds=60),
        timeout_seconds=30,
        payload={"table": "users"},
    )
    assert errors_of(step("extract"), load, context={"run": 1}, idempotency_key="k" * 255) == []


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"name": ""}, "name", "must be 1–200 characters long"),
        ({"name": "n" * 201}, "name", "must be 1–200 characters long"),
        ({"context": []}, "context", "must be a JSON object"),
        ({"context": {"k": "a\x00b"}}, "context.k", "text may not contain NUL (\\u0000) characters"),
        ({"idempotency_key": ""}, "idempotency_key", "must be 1–255 characters long"),
    ],
)
def test_workflow_fields(fields: dict[str, Any], field: str, message: str) -> None:
    assert by_field(errors_of(step("a"), **fields)) == {field: message}


def test_no_steps_is_rejected() -> None:
    assert by_field(errors_of()) == {"steps": "must hold 1–10000 steps"}


def test_10001_steps_are_rejected_on_the_count_alone() -> None:
    assert by_field(errors_of(*chain(MAX_STEPS + 1))) == {"steps": "must hold 1–10000 steps"}


def test_a_10000_step_chain_validates_fast_and_without_recursion() -> None:
    # CPU time, not wall time: on a machine busy with other tests this process may wait a second for a core.
    started = time.process_time()
    assert errors_of(*chain(MAX_STEPS)) == []
    assert errors_of(*reversed(chain(MAX_STEPS))) == []
    # ~0.3 s each (30 µs a step, mostly each step's own fields); quadratic work would take minutes at this size.
    assert time.process_time() - started < 5.0


def test_a_1000_step_cycle_is_found_and_its_message_stays_short() -> None:
    steps = [step("s0", "s999"), *chain(MAX_STEPS)[1:]]
    [error] = errors_of(*steps)
    assert error.loc == ("steps", 0, "depends_on")
    assert error.message == (
        "cycle: s0 → s999 → s998 → s997 → s996 → s995 → s994 → s993 → s992 → s991 → … 989 more … → s1 → s0"
    )


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"name": "has space"}, "steps.0.name", "must match ^[A-Za-z0-9_.:-]{1,100}$"),
        ({"name": "x" * 101}, "steps.0.name", "must match ^[A-Za-z0-9_.:-]{1,100}$"),
        ({"task_name": ""}, "steps.0.task_name", "must be 1–200 characters long"),
        ({"queue_name": "a/b"}, "steps.0.queue_name", "must match ^[A-Za-z0-9_.:-]{1,100}$"),
        ({"payload": "x"}, "steps.0.payload", "must be a JSON object"),
        ({"payload": {"_context": {}}}, "steps.0.payload._context", "is reserved for the workflow's context"),
        ({"priority": 1001}, "steps.0.priority", "must be between -1000 and 1000"),
        ({"max_retries": -1}, "steps.0.max_retries", "must be between 0 and 100"),
        ({"backoff": BackoffPolicy(base_seconds=0)}, "steps.0.backoff.base_seconds", "must be between 0.001 and 86400"),
        ({"timeout_seconds": 0.5}, "steps.0.timeout_seconds", "must be between 1 and 604800"),
        ({"on_failure": "explode"}, "steps.0.on_failure", "must be one of halt, skip, continue"),
        ({"depends_on": "a"}, "steps.0.depends_on", "must be a list of step names"),
    ],
)
def test_step_fields(fields: dict[str, Any], field: str, message: str) -> None:
    values = {"name": "a", "task_name": "t", **fields}
    assert by_field(errors_of(NewStep(**values))) == {field: message}


def test_step_errors_locate_under_the_given_prefix() -> None:
    assert step_errors(step("a", priority=5000), ("x", 7)) == [
        FieldError(("x", 7, "priority"), "must be between -1000 and 1000")
    ]


def test_every_problem_is_reported_at_once() -> None:
    errors = errors_of(step("a", priority=5000), step("a", "nope"), name="")
    assert by_field(errors) == {
        "name": "must be 1–200 characters long",
        "steps.0.priority": "must be between -1000 and 1000",
        "steps.1.name": "duplicate step name 'a' (also steps.0)",
        "steps.1.depends_on.0": "unknown step 'nope'",
    }


def test_unknown_and_duplicate_dependencies() -> None:
    errors = errors_of(step("a"), step("b", "a", "ghost", "a"))
    assert by_field(errors) == {
        "steps.1.depends_on.1": "unknown step 'ghost'",
        "steps.1.depends_on.2": "'a' is listed twice",
    }


def test_dependency_names_are_case_sensitive() -> None:
    assert by_field(errors_of(step("a"), step("b", "A"))) == {"steps.1.depends_on.0": "unknown step 'A'"}


def test_a_non_string_dependency_is_reported() -> None:
    assert by_field(errors_of(step("a"), step("b", 3))) == {"steps.1.depends_on.0": "must be a step name"}  # type: ignore[arg-type]


def test_duplicate_names_hold_back_the_cycle_check() -> None:
    # With two steps called "a" no edge to "a" has one meaning, so only the duplicate is reported.
    errors = errors_of(step("a", "b"), step("b", "a"), step("a"))
    assert by_field(errors) == {"steps.2.name": "duplicate step name 'a' (also steps.0)"}


def test_self_dependency_is_a_cycle_of_one() -> None:
    message = "cycle: a → a (a step cannot depend on itself)"
    assert by_field(errors_of(step("a", "a"))) == {"steps.0.depends_on.0": message}


@pytest.mark.parametrize("length", [2, 3, 4, 5, 6])
def test_a_cycle_is_reported_once_with_its_path(length: int) -> None:
    names = [f"c{i}" for i in range(length)]
    steps = [step(name, names[(i + 1) % length]) for i, name in enumerate(names)]
    path = " → ".join([*names, names[0]])
    assert errors_of(*steps) == [FieldError(("steps", 0, "depends_on"), f"cycle: {path}")]


@pytest.mark.parametrize("length", [2, 3, 4, 5, 6])
def test_a_cycle_hidden_behind_a_valid_prefix(length: int) -> None:
    # root ← r1 ← c0 → … → c(n-1) → c0, and x → y → c0 downstream: only the cycle is wrong.
    names = [f"c{i}" for i in range(length)]
    cycle = [step(name, names[(i + 1) % length], *(["r1"] if i == 1 else [])) for i, name in enumerate(names)]
    steps = [step("x", "y"), step("y", "c0"), step("root"), step("r1", "root"), *cycle]
    path = " → ".join([*names, names[0]])
    assert errors_of(*steps) == [FieldError(("steps", 4, "depends_on"), f"cycle: {path}")]


def test_a_cycle_starts_at_its_first_submitted_step() -> None:
    errors = errors_of(step("z", "y"), step("x", "z"), step("y", "x"))
    assert by_field(errors) == {"steps.0.depends_on": "cycle: z → y → x → z"}


def test_separate_cycles_are_each_reported() -> None:
    errors = errors_of(step("a", "b"), step("b", "a"), step("ok"), step("c", "d"), step("d", "c", "ok"))
    assert by_field(errors) == {"steps.0.depends_on": "cycle: a → b → a", "steps.3.depends_on": "cycle: c → d → c"}


# --- find_cycles against a reference ----------------------------------------------------------------------------


@st.composite
def graphs(draw: st.DrawFn) -> list[list[int]]:
    count = draw(st.integers(1, 12))
    return [draw(st.lists(st.integers(0, count - 1), max_size=3, unique=True)) for _ in range(count)]


@given(graphs())
def test_find_cycles_agrees_with_graphlib(edges: list[list[int]]) -> None:
    cycles = find_cycles(edges)
    try:
        graphlib.TopologicalSorter({node: targets for node, targets in enumerate(edges)}).prepare()
    except graphlib.CycleError:
        assert cycles
    else:
        assert cycles == []
    seen: set[int] = set()
    for cycle in cycles:
        assert cycle[0] == min(cycle)
        assert seen.isdisjoint(cycle)
        seen.update(cycle)
        for node, following in zip(cycle, [*cycle[1:], cycle[0]], strict=True):
            assert following in edges[node]


@given(st.data())
def test_random_dags_validate(data: st.DataObject) -> None:
    count = data.draw(st.integers(1, 30))
    order = data.draw(st.permutations(range(count)))
    steps = [step("s0")]
    for i in range(1, count):
        steps.append(step(f"s{i}", *(f"s{d}" for d in data.draw(st.sets(st.integers(0, i - 1), max_size=4)))))
    assert errors_of(*(steps[i] for i in order)) == []
