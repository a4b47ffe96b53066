"""Steps added at run time: a running step adds steps to its own workflow (`POST /v1/worker/jobs/{id}/steps`).

`grow` decides on the whole snapshot (read under the workflow's exclusive lock, as any structural change), and
returns the workflow with the new steps in it and the existing rows they rewire; the store writes those rows and
then records `advance.settle` of the grown snapshot, which enqueues (or makes wait) every new step that is ready.

The rules, in the order they are checked (400 `ValidationError` first, then 409 `InvalidState`, nothing added):
- each new step as at creation (`workflow.step_errors`); names unique within the request; each `depends_on` an
  existing step or one of the request; each `required_by` an existing step (not one of the request: use its
  `depends_on`); no cycle through old and new edges; signal names unique in the workflow; at most
  `workflow.MAX_STEPS` steps in all;
- a new step whose name exists is a *repeat* when the same adder added it earlier with the same definition
  (`definitions.step_definition`, its `required_by` included): it is left as it is. Any other clash is 409;
- a step named in a new step's `required_by` must still be `pending` (not yet enqueued, so it cannot have
  started), else 409.

Edges: a new step's dependencies list it among their `dependents`, and each `required_by` step gains it in its
`depends_on` (its `remaining` + 1) and is listed among the new step's `dependents`, so that a finish of the new
step counts it down (`core.finish`). A new step counts the dependencies not yet satisfied as its `remaining`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from queueflow.core.advance import satisfied
from queueflow.core.dag import find_cycles
from queueflow.core.definitions import step_definition
from queueflow.core.errors import FieldError, InvalidState, ValidationError
from queueflow.core.jsonvalue import same_json
from queueflow.core.workflow import (
    MAX_STEPS,
    NewStep,
    Step,
    StepStatus,
    Workflow,
    pending_step,
    signal_errors,
    step_errors,
)

MAX_ADDED = 1000
"""Steps one request may add."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Growth:
    workflow: Workflow
    """The snapshot with the new steps (pending, at the end) and the rewired existing rows in it."""
    added: list[Step]
    """The new rows, in the request's order (repeats left out)."""
    rewired: list[Step]
    """Existing rows whose `depends_on`, `dependents` or `remaining` changed, as they are now."""
    listed: list[str]
    """The request's step names, in its order: the answer lists them as they are once recorded."""


def grow(workflow: Workflow, adder: str, steps: Sequence[NewStep]) -> Growth:
    """Add `steps` (the request of the step `adder`) to the running `workflow`; see the module docstring."""
    if not 1 <= len(steps) <= MAX_ADDED:
        raise ValidationError.of([FieldError(("steps",), f"must hold 1–{MAX_ADDED} steps")])
    existing = {step.name: step for step in workflow.steps}
    errors: list[FieldError] = []
    for index, step in enumerate(steps):
        errors += step_errors(step, ("steps", index))
    errors += _reference_errors(existing, steps)
    if errors:
        raise ValidationError.of(errors)
    fresh = [step for step in steps if step.name not in existing]
    errors += _cycle_errors(workflow.steps, steps, fresh)
    taken = {step.wait.signal for step in workflow.steps if step.wait is not None and step.wait.signal is not None}
    errors += signal_errors([(("steps", i), step) for i, step in enumerate(steps) if step.name not in existing], taken)
    if len(existing) + len(fresh) > MAX_STEPS:
        errors.append(FieldError(("steps",), f"a workflow holds at most {MAX_STEPS} steps"))
    if errors:
        raise ValidationError.of(errors)
    for step in steps:
        old = existing.get(step.name)
        if old is not None and not (
            old.added_by == adder and old.added_as is not None and same_json(old.added_as, step_definition(step))
        ):
            raise InvalidState(f"a step named {step.name!r} exists already, with another definition or adder")
    for step in fresh:
        for name in step.required_by:
            if existing[name].status is not StepStatus.PENDING:
                raise InvalidState(f"step {name!r} is {existing[name].status}; only a pending step can be required_by")
    return _grown(workflow, adder, fresh, [step.name for step in steps])


def _reference_errors(existing: dict[str, Step], steps: Sequence[NewStep]) -> list[FieldError]:
    errors: list[FieldError] = []
    index: dict[str, int] = {}
    for position, step in enumerate(steps):
        if step.name in index:
            errors.append(FieldError(("steps", position, "name"), f"duplicate step name {step.name!r}"))
        index.setdefault(step.name, position)
    for position, step in enumerate(steps):
        for field, names in (("depends_on", step.depends_on), ("required_by", step.required_by)):
            if not isinstance(names, list | tuple):
                errors.append(FieldError(("steps", position, field), "must be a list of step names"))
                continue
            seen: set[str] = set()
            for item, name in enumerate(names):
                loc = ("steps", position, field, item)
                if not isinstance(name, str):
                    errors.append(FieldError(loc, "must be a step name"))
                elif name in seen:
                    errors.append(FieldError(loc, f"{name!r} is listed twice"))
                elif name == step.name:
                    errors.append(FieldError(loc, f"cycle: {name} → {name} (a step cannot depend on itself)"))
                elif field == "required_by" and name in index:
                    errors.append(FieldError(loc, f"{name!r} is a step of this request: use its depends_on"))
                elif name not in existing and (field == "required_by" or name not in index):
                    errors.append(FieldError(loc, f"unknown step {name!r}"))
                if isinstance(name, str):
                    seen.add(name)
    return errors


def _cycle_errors(old: Sequence[Step], steps: Sequence[NewStep], fresh: Sequence[NewStep]) -> list[FieldError]:
    """Cycles through the old edges and the new ones (`depends_on`, and `required_by` read backwards)."""
    names = [step.name for step in old] + [step.name for step in fresh]
    position = {name: index for index, name in enumerate(names)}
    edges: list[list[int]] = [[position[name] for name in step.depends_on] for step in old]
    edges += [[position[name] for name in step.depends_on] for step in fresh]
    for step in fresh:
        for name in step.required_by:
            edges[position[name]].append(position[step.name])
    request = {step.name: index for index, step in enumerate(steps)}
    errors: list[FieldError] = []
    for cycle in find_cycles(edges):
        path = " → ".join([names[node] for node in cycle] + [names[cycle[0]]])
        first = next((names[node] for node in cycle if names[node] in request), names[cycle[0]])
        errors.append(FieldError(("steps", request.get(first, 0)), f"cycle: {path}"))
    return errors


def _grown(workflow: Workflow, adder: str, fresh: Sequence[NewStep], listed: list[str]) -> Growth:
    rows = {step.name: step for step in workflow.steps}
    satisfied_now = {name for name, step in rows.items() if satisfied(step)}
    dependents: dict[str, list[str]] = {step.name: [] for step in fresh}
    for step in fresh:
        for name in step.depends_on:
            if name in dependents:
                dependents[name].append(step.name)
        dependents[step.name] += step.required_by
    rewired: dict[str, Step] = {}
    for step in fresh:
        for name in step.depends_on:
            if name in rows:
                old = rewired.get(name, rows[name])
                rewired[name] = replace(old, dependents=(*old.dependents, step.name))
        for name in step.required_by:
            old = rewired.get(name, rows[name])
            rewired[name] = replace(old, depends_on=[*old.depends_on, step.name], remaining=old.remaining + 1)
    start = len(workflow.steps)
    added = [
        pending_step(
            workflow.id,
            step,
            start + index,
            dependents[step.name],
            sum(name not in satisfied_now for name in step.depends_on),
            added_by=adder,
            added_as=step_definition(step),
        )
        for index, step in enumerate(fresh)
    ]
    steps = [rewired.get(step.name, step) for step in workflow.steps] + added
    return Growth(
        workflow=replace(workflow, steps=steps),
        added=added,
        rewired=[rewired[step.name] for step in workflow.steps if step.name in rewired],
        listed=listed,
    )
