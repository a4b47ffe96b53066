"""Steps added at run time: a running step adds steps to its own workflow (`POST /v1/worker/jobs/{id}/steps`).

An addition costs what it adds, not what the workflow holds. `grow` decides on a `GrowthView`, read under the
workflow's exclusive lock (as any structural change): the workflow's head and, of its steps, only those the request
names (`Needs`: the new names, for repeats and clashes; their `depends_on` and `required_by` targets) and every step
that depends, directly or not, on a `required_by` target (the only old steps a cycle through the new edges can pass:
old steps never depend on new ones but through `required_by`), with the workflow's step count and which of the
request's signal names it holds. It returns the new steps, the existing rows they rewire, and the `Transition` that
enqueues (or makes wait, or skips) the new steps that are ready; the store writes those rows, records that
transition, and adds the new steps to the workflow's counters. Nothing else of the workflow changes: its old
steps' readiness is as it was, and it stays `running` (the adder itself is unfinished).

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

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from queueflow.core.advance import Transition, satisfied
from queueflow.core.dag import find_cycles
from queueflow.core.definitions import step_definition
from queueflow.core.errors import FieldError, InvalidState, ValidationError
from queueflow.core.jsonvalue import same_json
from queueflow.core.types import Job
from queueflow.core.workflow import (
    FAILED_STEPS,
    MAX_STEPS,
    NewStep,
    OnFailure,
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
    transition: Transition
    """What the new steps' readiness calls for: enqueue, wait or skip the ready ones (`advance.record`)."""
    step_count: int
    """The workflow's steps once grown."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Needs:
    """What a store reads for an addition (`GrowthView`), from the request alone."""

    names: list[str]
    """Existing steps to read if they exist: the new names, their `depends_on` and `required_by` targets."""
    required_by: list[str]
    """Steps whose dependents, directly or not, are read too."""
    signals: list[str]
    """Signal names of the new wait steps: which of them the workflow holds already."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GrowthView:
    """An addition's view of the workflow: `workflow` with only the steps `Needs` named and the dependents of
    `required_by` targets, in their order; `step_count` the steps it holds in all; `signals_taken` those of the
    request's signal names that a step of it has."""

    workflow: Workflow
    step_count: int
    signals_taken: frozenset[str]

    @classmethod
    def whole(cls, workflow: Workflow) -> GrowthView:
        """The view of a whole snapshot (a store that holds it anyway)."""
        taken = {step.wait.signal for step in workflow.steps if step.wait is not None and step.wait.signal is not None}
        return cls(workflow=workflow, step_count=len(workflow.steps), signals_taken=frozenset(taken))


@dataclass(frozen=True, slots=True, kw_only=True)
class GrowthRequest:
    """An addition of steps (`WorkflowStore.workflow_add_steps`): the running job `job_id` (of `tenant_id` only, if
    given) adds steps to its workflow. The store reads the `GrowthView` that `needs` names under the workflow's
    lock, and records at `now` what `decide` (a pure function of the job and the view: the lease check, then
    `grow`) makes of them."""

    job_id: str
    tenant_id: str | None = None
    needs: Needs
    decide: Callable[[Job | None, GrowthView | None], Growth]
    now: datetime


def needs(steps: Sequence[NewStep]) -> Needs:
    """What to read for adding `steps` (before they are validated: only the names that can be names)."""
    names: list[str] = []
    required_by: list[str] = []
    signals: list[str] = []
    for step in steps:
        names += [step.name] if isinstance(step.name, str) else []
        for field in (step.depends_on, step.required_by):
            names += [name for name in field if isinstance(name, str)] if isinstance(field, list | tuple) else []
        if isinstance(step.required_by, list | tuple):
            required_by += [name for name in step.required_by if isinstance(name, str)]
        if step.wait is not None and isinstance(step.wait.signal, str):
            signals.append(step.wait.signal)
    return Needs(names=sorted(set(names)), required_by=sorted(set(required_by)), signals=sorted(set(signals)))


def grow(view: GrowthView, adder: str, steps: Sequence[NewStep]) -> Growth:
    """Add `steps` (the request of the step `adder`) to the running workflow of `view`; see the module docstring."""
    workflow = view.workflow
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
    taken = set(view.signals_taken)
    errors += signal_errors([(("steps", i), step) for i, step in enumerate(steps) if step.name not in existing], taken)
    if view.step_count + len(fresh) > MAX_STEPS:
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
    return _grown(view, adder, fresh, [step.name for step in steps])


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
                if field == "required_by":  # a depends_on that is no list is the step's own error (step_errors)
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
    """Cycles through the old edges and the new ones (`depends_on`, and `required_by` read backwards). `old` holds
    every old step a cycle can pass (`GrowthView`); an old edge to a step not read cannot be on one."""
    names = [step.name for step in old] + [step.name for step in fresh]
    position = {name: index for index, name in enumerate(names)}
    edges: list[list[int]] = [[position[name] for name in step.depends_on if name in position] for step in old]
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


def _grown(view: GrowthView, adder: str, fresh: Sequence[NewStep], listed: list[str]) -> Growth:
    workflow = view.workflow
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
    start = view.step_count
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
        transition=_transition(rows, added),
        step_count=view.step_count + len(added),
    )


def _transition(rows: dict[str, Step], added: Sequence[Step]) -> Transition:
    """The new steps that are ready now: skipped when a dependency was skipped or failed with `skip` (as
    `advance.settle` skips what is downstream of a skip), else enqueued, or waiting for a wait step, once every
    dependency is satisfied. Old steps are left as they are: none of them became ready."""
    new = {step.name: step for step in added}
    skipped: set[str] = set()
    changed = True
    while changed:  # a new step may depend on a new step listed after it
        changed = False
        for step in added:
            if step.name not in skipped and any(
                name in skipped or (name in rows and _skips(rows[name])) for name in step.depends_on
            ):
                skipped.add(step.name)
                changed = True
    ready = [
        step
        for step in added
        if step.name not in skipped and all(name not in new and satisfied(rows[name]) for name in step.depends_on)
    ]
    return Transition(
        skip=tuple(step.name for step in added if step.name in skipped),
        enqueue=tuple(step.name for step in ready if step.wait is None and step.child is None),
        wait=tuple(step.name for step in ready if step.wait is not None or step.child is not None),
    )


def _skips(step: Step) -> bool:
    """Whether `step`'s dependents are skipped: it was skipped, or failed with `on_failure=skip`."""
    return step.status is StepStatus.SKIPPED or (step.status in FAILED_STEPS and step.on_failure is OnFailure.SKIP)
