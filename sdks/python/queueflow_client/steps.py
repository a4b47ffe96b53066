"""Workflow definitions written as code: a step is a task to run or a wait, named, with what it waits for.

    from queueflow_client import steps

    draft = steps.task("draft", "write_draft", {"doc": 7})
    approval = steps.signal("approval", timeout_seconds=24 * 3600, depends_on=[draft])
    publish = steps.task("publish", "publish_doc", depends_on=[approval], on_failure="skip")
    client.workflows.create(steps.workflow("review", [draft, approval, publish], context={"doc": 7}))

`depends_on` and `required_by` take step names or the steps themselves. The same steps go to `ctx.add_steps([...])`
from a task running a workflow step, where `required_by` names existing steps that must now also wait for the new
one (map/reduce: `split` adds `map_0..map_n`, each `required_by=["reduce"]`). Each builder returns a
`queueflow_client.types.Step`, the frozen dataclass the API's step mirrors, so a test can compare them.

The client checks only what is plain from the steps alone — a name given twice is an `ArgumentError` before any
request; everything else (a cycle, an unknown dependency, a wait with a job field) is the server's 400.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from queueflow_client.errors import ArgumentError
from queueflow_client.types import Backoff, OnFailure, Step, Wait

__all__ = ["StepRef", "WorkflowDefinition", "check_unique", "child", "signal", "sleep", "task", "workflow"]

StepRef = str | Step
"""A step named by its name, or the step itself."""


def _names(refs: Iterable[StepRef], what: str) -> tuple[str, ...]:
    if isinstance(refs, str | Step):
        raise ArgumentError(f"{what} takes a list of steps or names, not one ({refs!r:.60})")
    names = []
    for ref in refs:
        if isinstance(ref, Step):
            names.append(ref.name)
        elif isinstance(ref, str):
            names.append(ref)
        else:
            raise ArgumentError(f"{what} takes steps or step names, not {ref!r:.60}")
    return tuple(names)


def task(
    name: str,
    task_name: str,
    payload: Mapping[str, Any] | None = None,
    *,
    depends_on: Iterable[StepRef] = (),
    required_by: Iterable[StepRef] = (),
    on_failure: OnFailure = "halt",
    queue_name: str | None = None,
    priority: int | None = None,
    max_retries: int | None = None,
    backoff: Backoff | None = None,
    timeout_seconds: float | None = None,
    concurrency_key: str | None = None,
) -> Step:
    """A step that runs one job of `task_name` on `payload` (plus `_context`: every completed step's result). The
    options are the job's (None: the server's default)."""
    return Step(
        name=name,
        task_name=task_name,
        payload=dict(payload or {}),
        depends_on=_names(depends_on, "depends_on"),
        required_by=_names(required_by, "required_by"),
        on_failure=on_failure,
        queue_name=queue_name,
        priority=priority,
        max_retries=max_retries,
        backoff=backoff,
        timeout_seconds=timeout_seconds,
        concurrency_key=concurrency_key,
    )


def signal(
    name: str,
    *,
    signal: str | None = None,
    timeout_seconds: float | None = None,
    depends_on: Iterable[StepRef] = (),
    required_by: Iterable[StepRef] = (),
    on_failure: OnFailure = "halt",
) -> Step:
    """A step that waits, holding no worker, for the signal `signal` (default: the step's name), sent with
    `client.workflows.signal(workflow_id, signal, payload)`; the payload becomes its result. With
    `timeout_seconds`, counted from when it starts waiting, it fails if none came (its `on_failure` applies).
    A signal sent before the step waits is kept for it."""
    return Step(
        name=name,
        wait=Wait(signal=name if signal is None else signal, timeout_seconds=timeout_seconds),
        depends_on=_names(depends_on, "depends_on"),
        required_by=_names(required_by, "required_by"),
        on_failure=on_failure,
    )


def sleep(
    name: str,
    seconds: float,
    *,
    depends_on: Iterable[StepRef] = (),
    required_by: Iterable[StepRef] = (),
    on_failure: OnFailure = "halt",
) -> Step:
    """A step that completes `seconds` after it starts waiting (its dependencies done), with result None: a row
    with a due time, kept across restarts, holding no worker."""
    return Step(
        name=name,
        wait=Wait(seconds=seconds),
        depends_on=_names(depends_on, "depends_on"),
        required_by=_names(required_by, "required_by"),
        on_failure=on_failure,
    )


def child(
    name: str,
    workflow: WorkflowDefinition,
    *,
    depends_on: Iterable[StepRef] = (),
    required_by: Iterable[StepRef] = (),
    on_failure: OnFailure = "halt",
) -> Step:
    """A step that runs the whole workflow `workflow` as a child: created (once) when the step's dependencies are
    done, its context `workflow.context` plus `parent` and the parent's context under `parent_context`. The step
    completes with the child's final context as its result when the child completes; it fails (its `on_failure`
    applies) when the child fails, partially fails or is cancelled. Cancelling the parent cancels the child."""
    if not isinstance(workflow, WorkflowDefinition):
        raise ArgumentError(f"steps.child takes a steps.workflow(...), not {workflow!r:.60}")
    return Step(
        name=name,
        workflow=workflow.to_json(),
        depends_on=_names(depends_on, "depends_on"),
        required_by=_names(required_by, "required_by"),
        on_failure=on_failure,
    )


def check_unique(steps: Sequence[Step | Mapping[str, Any]]) -> None:
    """An `ArgumentError` naming every step name given more than once (the server would refuse the whole)."""
    names = Counter(step.name if isinstance(step, Step) else step.get("name") for step in steps)
    if twice := sorted(str(name) for name, count in names.items() if count > 1):
        raise ArgumentError(f"step names must be unique, and these are given more than once: {', '.join(twice)}")


@dataclass(frozen=True, slots=True)
class WorkflowDefinition:
    """A workflow to create (`client.workflows.create(definition)`, or a schedule's `workflow=`)."""

    name: str
    steps: tuple[Step, ...]
    context: Mapping[str, Any] = field(default_factory=dict)
    timeout_seconds: float | None = None

    def to_json(self) -> dict[str, Any]:
        """The body of `POST /v1/workflows` (and a schedule's `workflow`, and a child step's)."""
        body = {"name": self.name, "context": dict(self.context), "steps": [step.to_json() for step in self.steps]}
        return body if self.timeout_seconds is None else body | {"timeout_seconds": self.timeout_seconds}


def workflow(
    name: str,
    steps: Iterable[Step],
    *,
    context: Mapping[str, Any] | None = None,
    timeout_seconds: float | None = None,
) -> WorkflowDefinition:
    """The workflow `name` of `steps` (in any order: each runs when what it depends on is done), starting with
    `context` (each step's job sees it in `_context`, with the completed steps' results). With `timeout_seconds`,
    a workflow still running that long after it starts (or is retried) fails, as a halt would end it."""
    given = tuple(steps)
    if not all(isinstance(step, Step) for step in given):
        raise ArgumentError("a workflow's steps are steps.task / steps.signal / steps.sleep / steps.child")
    check_unique(given)
    return WorkflowDefinition(name, given, dict(context or {}), timeout_seconds)
