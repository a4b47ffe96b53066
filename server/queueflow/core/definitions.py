"""A workflow's definition as JSON: what a schedule keeps of the workflow it starts, what an added step is
compared by when its addition is repeated (`core.growth`), and the steps a task adds in-process.
`new_workflow_from_json` reads back exactly what `new_workflow_json` wrote (a definition is validated as a new
workflow before it is ever written); `new_steps_from_json` reads a caller's plain JSON, and trusts none of it."""

from __future__ import annotations

from typing import Any, cast

from queueflow.core.errors import FieldError, ValidationError
from queueflow.core.types import JSON, BackoffPolicy, BackoffStrategy, backoff_policy
from queueflow.core.validation import Loc, check, name_errors
from queueflow.core.waits import Wait, wait_errors
from queueflow.core.workflow import JOB_FIELDS, MAX_STEPS, NewStep, NewWorkflow, OnFailure, given_step


def step_definition(step: NewStep) -> dict[str, JSON]:
    """Everything the caller said of `step` but its name (a wait step has no job field)."""
    shape: dict[str, JSON] = {
        "depends_on": list(step.depends_on),
        "required_by": list(step.required_by),
        "on_failure": step.on_failure.value,
    }
    if step.wait is not None:
        shape["wait"] = step.wait.to_json()
        return shape
    if step.workflow is not None:
        shape["workflow"] = new_workflow_json(step.workflow)
        return shape
    return shape | {
        "task_name": step.task_name,
        "payload": step.payload,
        "queue_name": step.queue_name,
        "priority": step.priority,
        "max_retries": step.max_retries,
        "backoff": step.backoff.to_json(),
        "timeout_seconds": step.timeout_seconds,
        "concurrency_key": step.concurrency_key,
    }


def new_workflow_json(workflow: NewWorkflow) -> dict[str, JSON]:
    """`workflow`'s name, context and steps (not its idempotency key or trace context: those are per run)."""
    steps: list[JSON] = [{"name": step.name, **step_definition(step)} for step in workflow.steps]
    shape: dict[str, JSON] = {"name": workflow.name, "context": dict(workflow.context), "steps": steps}
    if workflow.timeout_seconds is not None:
        shape["timeout_seconds"] = workflow.timeout_seconds
    return shape


def new_workflow_from_json(data: dict[str, Any]) -> NewWorkflow:
    return NewWorkflow(
        name=data["name"],
        context=dict(data["context"]),
        steps=[_step(step) for step in data["steps"]],
        timeout_seconds=data.get("timeout_seconds"),
    )


def _step(data: dict[str, Any]) -> NewStep:
    common: dict[str, Any] = {
        "name": data["name"],
        "depends_on": list(data["depends_on"]),
        "required_by": list(data.get("required_by", [])),
        "on_failure": OnFailure(data["on_failure"]),
    }
    if data.get("wait") is not None:
        return NewStep(wait=Wait.from_json(data["wait"]), **common)
    if data.get("workflow") is not None:
        return NewStep(workflow=new_workflow_from_json(data["workflow"]), **common)
    return NewStep(
        task_name=data["task_name"],
        payload=cast(dict[str, JSON], data["payload"]),
        queue_name=data["queue_name"],
        priority=data["priority"],
        max_retries=data["max_retries"],
        backoff=BackoffPolicy.from_json(data["backoff"]),
        timeout_seconds=data["timeout_seconds"],
        concurrency_key=data["concurrency_key"],
        **common,
    )


STEP_FIELDS = frozenset(
    {"name", "task_name", "wait", "workflow", "depends_on", "required_by", "on_failure", *JOB_FIELDS}
)
"""The fields of a step to add (`POST /v1/worker/jobs/{id}/steps`)."""
_WAIT_FIELDS = frozenset({"signal", "timeout_seconds", "seconds"})
_WORKFLOW_FIELDS = frozenset({"name", "context", "steps", "timeout_seconds"})
_BACKOFF_FIELDS = frozenset({"strategy", "base_seconds", "max_seconds", "jitter"})


def new_steps_from_json(values: object, loc: Loc = ("steps",)) -> list[NewStep]:
    """Steps to add, as plain JSON gives them (a task's `ctx.add_steps` in-process: the `steps` its SDK would send
    to `POST /v1/worker/jobs/{id}/steps`), each an object of `STEP_FIELDS`; a job field present is given.

    A ValidationError names every field that cannot be read as a step's: a step that is no object or has no name,
    a field no step has, a `wait` or `backoff` of another shape. Numbers read as the route reads its body (a number
    without a fraction is an integer, an integer a number). The values' rules are the step's own
    (`workflow.step_errors`), checked where the steps are added (`growth.grow`)."""
    if not isinstance(values, list):
        raise ValidationError.of([FieldError(loc, "must be a list of steps")])
    errors: list[FieldError] = []
    steps = [_new_step(value, (*loc, index), errors) for index, value in enumerate(values)]
    check(errors)
    return cast(list[NewStep], steps)


def _new_step(value: object, loc: Loc, errors: list[FieldError]) -> NewStep | None:
    """`value` as a step, or None with its problems added to `errors`."""
    if not isinstance(value, dict):
        errors.append(FieldError(loc, "must be a JSON object"))
        return None
    given = dict(value)
    found = _unknown_fields(given, STEP_FIELDS, loc)
    if "name" not in given:
        found.append(FieldError(loc, "Object missing required field `name`"))
    elif not isinstance(given["name"], str):
        found += name_errors(given["name"], (*loc, "name"))
    for field in ("depends_on", "required_by"):
        if isinstance(names := given.get(field), list) and len(names) > MAX_STEPS:
            found.append(FieldError((*loc, field), f"must name at most {MAX_STEPS} steps"))
    for field in ("priority", "max_retries"):
        if isinstance(number := given.get(field), float) and number.is_integer():
            given[field] = int(number)
    if "timeout_seconds" in given:
        given["timeout_seconds"] = _float(given["timeout_seconds"])
    if "on_failure" in given:
        given["on_failure"] = _member(OnFailure, given["on_failure"])
    if given.get("wait") is not None:
        given["wait"] = _wait(given["wait"], (*loc, "wait"), found)
    if given.get("workflow") is not None:
        given["workflow"] = _workflow(given["workflow"], (*loc, "workflow"), found)
    if "backoff" in given:
        given["backoff"] = _backoff(given["backoff"], (*loc, "backoff"), found)
    errors += found
    return None if found else given_step(given.pop("name"), given)


def _wait(value: object, loc: Loc, errors: list[FieldError]) -> Wait | None:
    if not isinstance(value, dict):
        errors += wait_errors(cast(Wait, value), loc)
        return None
    errors += _unknown_fields(value, _WAIT_FIELDS, loc)
    return Wait(
        signal=value.get("signal"),
        timeout_seconds=_float(value.get("timeout_seconds")),
        seconds=_float(value.get("seconds")),
    )


def _workflow(value: object, loc: Loc, errors: list[FieldError]) -> NewWorkflow | None:
    """A child step's workflow body of plain JSON; its values' rules are `workflow.step_errors`'."""
    if not isinstance(value, dict):
        errors.append(FieldError(loc, "must be a JSON object"))
        return None
    found = _unknown_fields(value, _WORKFLOW_FIELDS, loc)
    steps: list[NewStep] = []
    try:
        steps = new_steps_from_json(value.get("steps"), (*loc, "steps"))
    except ValidationError as exc:
        found += exc.errors
    errors += found
    if found:
        return None
    return NewWorkflow(
        name=value.get("name"),  # type: ignore[arg-type]  # checked by the step's rules
        context=value.get("context", {}),
        steps=steps,
        timeout_seconds=_float(value.get("timeout_seconds")),
    )


def _backoff(value: object, loc: Loc, errors: list[FieldError]) -> BackoffPolicy | None:
    """The policy of a partial object (merged with the defaults); numbers not numbers are left for
    `validation.backoff_errors` to name."""
    if not isinstance(value, dict):
        errors.append(FieldError(loc, "must be a JSON object"))
        return None
    found = _unknown_fields(value, _BACKOFF_FIELDS, loc)
    strategy = _member(BackoffStrategy, value.get("strategy", BackoffStrategy.EXPONENTIAL.value))
    if not isinstance(strategy, BackoffStrategy):
        found.append(FieldError((*loc, "strategy"), "must be one of exponential, linear, fixed"))
    jitter = value.get("jitter", True)
    if not isinstance(jitter, bool):
        found.append(FieldError((*loc, "jitter"), "must be true or false"))
    errors += found
    if found:
        return None
    base, most = _float(value.get("base_seconds", 1.0)), _float(value.get("max_seconds", 3600.0))
    if isinstance(base, float) and isinstance(most, float):
        return backoff_policy(strategy, base, most, jitter)
    return BackoffPolicy(cast(BackoffStrategy, strategy), base, most, jitter)


def _unknown_fields(value: dict[Any, Any], known: frozenset[str], loc: Loc) -> list[FieldError]:
    return [FieldError((*loc, str(name)), "is not a known field") for name in value if name not in known]


def _float(value: Any) -> Any:
    """An integer as the number it stands for (JSON has one kind of number); anything else as it is."""
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _member(kind: type[OnFailure] | type[BackoffStrategy], value: Any) -> Any:
    """The member of `kind` whose value is `value`; `value` itself when none is (the rules name it)."""
    try:
        return kind(value)
    except (ValueError, TypeError):
        return value
