"""Workflow advancement (README, "Workflows")."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from queueflow.core.advance import (
    StepChange,
    StepOutcome,
    Transition,
    apply_transition,
    cancel_workflow,
    derive_status,
    on_step_finished,
    ready_steps,
    satisfied,
    settle,
)
from queueflow.core.types import JSON
from queueflow.core.workflow import (
    FAILED_STEPS,
    UNFINISHED_STEPS,
    NewStep,
    NewWorkflow,
    OnFailure,
    StepStatus,
    Workflow,
    WorkflowStatus,
    new_steps,
    new_workflow_errors,
    step_job,
    step_payload,
)

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
COMPLETED, FAILED, CANCELLED = StepOutcome.COMPLETED, StepOutcome.FAILED, StepOutcome.CANCELLED
HALT, SKIP, CONTINUE = OnFailure.HALT, OnFailure.SKIP, OnFailure.CONTINUE


def step(name: str, *depends_on: str, on_failure: OnFailure = HALT) -> NewStep:
    return NewStep(name=name, task_name=f"do-{name}", depends_on=list(depends_on), on_failure=on_failure)


class Run:
    """One workflow, recorded the way a store records it: every transition through `apply_transition`."""

    def __init__(self, *steps: NewStep) -> None:
        new = NewWorkflow(name="wf", steps=list(steps))
        assert new_workflow_errors(new) == []
        self.wf = Workflow(
            id="wf_1",
            tenant_id="t",
            name="wf",
            status=WorkflowStatus.RUNNING,
            context={},
            steps=new_steps("wf_1", new),
            created_at=NOW,
        )
        self.apply(settle(self.wf.steps))

    def apply(self, transition: Transition) -> list[StepChange]:
        self.wf, applied = apply_transition(self.wf, transition, NOW)
        return applied

    def finish(self, name: str, outcome: StepOutcome = COMPLETED, result: JSON = None) -> Transition:
        transition = on_step_finished(self.wf.steps, name, outcome, {"by": name} if result is None else result)
        self.apply(transition)
        return transition

    def statuses(self) -> dict[str, str]:
        return {s.name: s.status.value for s in self.wf.steps}

    def named(self, status: StepStatus) -> list[str]:
        return [s.name for s in self.wf.steps if s.status is status]


DIAMOND = (step("a"), step("b", "a"), step("c", "a"), step("d", "b", "c"))


def test_a_new_workflow_enqueues_its_roots_only() -> None:
    run = Run(step("b", "a"), step("a"), step("r2"))
    assert run.statuses() == {"b": "pending", "a": "enqueued", "r2": "enqueued"}
    assert run.wf.status is WorkflowStatus.RUNNING


def test_diamond_fan_out_then_fan_in_with_every_result_in_context() -> None:
    run = Run(*DIAMOND)
    assert run.finish("a").enqueue == ("b", "c")
    assert run.finish("b").enqueue == ()  # d still waits on c
    transition = run.finish("c")
    assert transition.enqueue == ("d",)
    assert transition.result == {"by": "c"}
    d = next(s for s in run.wf.steps if s.name == "d")
    assert step_job(d, run.wf.context).payload == {
        "_context": {"a": {"by": "a"}, "b": {"by": "b"}, "c": {"by": "c"}},
    }
    last = run.finish("d", result=[1, 2])
    assert last.workflow_status is WorkflowStatus.COMPLETED
    assert run.wf.status is WorkflowStatus.COMPLETED
    assert run.wf.completed_at == NOW
    assert run.wf.context["d"] == [1, 2]


def test_a_completion_records_context_then_step_then_ready_steps() -> None:
    run = Run(*DIAMOND)
    transition = on_step_finished(run.wf.steps, "a", COMPLETED, 42)
    assert transition.result == 42
    assert transition.changes() == [
        StepChange("a", StepStatus.COMPLETED, frozenset({StepStatus.ENQUEUED})),
        StepChange("b", StepStatus.ENQUEUED, frozenset({StepStatus.PENDING})),
        StepChange("c", StepStatus.ENQUEUED, frozenset({StepStatus.PENDING})),
    ]
    assert transition.workflow_status is None


def test_ready_steps_need_every_dependency_satisfied() -> None:
    run = Run(*DIAMOND)
    run.finish("a")
    run.finish("b")
    assert ready_steps(run.wf.steps) == []
    run.finish("c")
    assert run.named(StepStatus.ENQUEUED) == ["d"]


@pytest.mark.parametrize(("outcome", "status"), [(FAILED, "failed"), (CANCELLED, "cancelled")])
def test_halt_cancels_every_unfinished_step_and_fails_at_once(outcome: StepOutcome, status: str) -> None:
    run = Run(step("a"), step("b", "a"), step("c", "a"), step("d", "b", "c"), step("e"))
    run.finish("a")
    transition = run.finish("b", outcome)
    assert transition.result is None
    assert transition.cancel == ("c", "d", "e")  # c and e are running: their jobs are cancelled too
    assert transition.workflow_status is WorkflowStatus.FAILED
    assert run.statuses() == {"a": "completed", "b": status, "c": "cancelled", "d": "cancelled", "e": "cancelled"}
    assert run.wf.status is WorkflowStatus.FAILED
    assert "b" not in run.wf.context


@pytest.mark.parametrize("outcome", [FAILED, CANCELLED])
def test_skip_skips_every_dependent_and_other_branches_go_on(outcome: StepOutcome) -> None:
    run = Run(
        step("a"),
        step("b", "a", on_failure=SKIP),
        step("c", "a"),
        step("d", "b"),
        step("e", "d", "c"),
        step("f", "c"),
    )
    run.finish("a")
    transition = run.finish("b", outcome)
    assert transition.skip == ("d", "e")
    assert transition.result is None
    assert transition.workflow_status is None
    assert run.finish("c").enqueue == ("f",)  # e was skipped, not enqueued
    assert run.finish("f").workflow_status is WorkflowStatus.PARTIALLY_FAILED
    assert run.statuses() == {
        "a": "completed",
        "b": outcome.value,
        "c": "completed",
        "d": "skipped",
        "e": "skipped",
        "f": "completed",
    }
    assert set(run.wf.context) == {"a", "c", "f"}


@pytest.mark.parametrize("outcome", [FAILED, CANCELLED])
def test_continue_runs_dependents_with_a_null_context_entry(outcome: StepOutcome) -> None:
    run = Run(step("a", on_failure=CONTINUE), step("b"), step("c", "a", "b"))
    transition = run.finish("a", outcome)
    assert transition.result is None
    assert transition.enqueue == ()  # c still waits on b
    assert run.finish("b").enqueue == ("c",)
    c = next(s for s in run.wf.steps if s.name == "c")
    assert step_job(c, run.wf.context).payload["_context"] == {"a": None, "b": {"by": "b"}}
    assert run.finish("c").workflow_status is WorkflowStatus.PARTIALLY_FAILED


def test_a_failing_leaf_with_skip_leaves_the_workflow_partially_failed() -> None:
    run = Run(step("a"), step("b", on_failure=SKIP))
    run.finish("b", FAILED)
    assert run.wf.status is WorkflowStatus.RUNNING
    assert run.finish("a").workflow_status is WorkflowStatus.PARTIALLY_FAILED


def test_cancelling_a_workflow_cancels_every_unfinished_step() -> None:
    run = Run(*DIAMOND)
    run.finish("a")
    transition = cancel_workflow(run.wf.steps)
    assert transition == Transition(cancel=("b", "c", "d"), workflow_status=WorkflowStatus.CANCELLED)
    run.apply(transition)
    assert run.wf.status is WorkflowStatus.CANCELLED
    # The cancelled jobs report back; the steps are already cancelled, and the workflow stays cancelled even
    # though its steps alone would read as a halt.
    before = run.wf
    for name in ("b", "c"):
        assert run.finish(name, CANCELLED).changes() == []
    assert run.wf == before
    assert derive_status(run.wf.steps) is WorkflowStatus.FAILED


def test_a_late_report_for_a_finished_step_changes_nothing() -> None:
    run = Run(*DIAMOND)
    run.finish("a", result=1)
    before = run.wf
    transition = on_step_finished(run.wf.steps, "a", COMPLETED, 2)
    assert transition.finished is None
    assert transition.result is None
    assert run.apply(transition) == []
    assert run.wf == before


def test_a_report_for_an_unknown_step_is_a_programming_error() -> None:
    with pytest.raises(KeyError, match="ghost"):
        on_step_finished(Run(step("a")).wf.steps, "ghost", COMPLETED)


def test_applying_a_transition_twice_is_harmless() -> None:
    run = Run(*DIAMOND)
    transition = run.finish("a")
    before = run.wf
    assert run.apply(transition) == []
    assert run.wf == before


def test_settling_a_settled_workflow_changes_nothing() -> None:
    run = Run(*DIAMOND)
    run.finish("a")
    assert settle(run.wf.steps).changes() == []


def test_siblings_deciding_from_one_stale_snapshot_leave_the_join_to_self_heal() -> None:
    run = Run(step("a"), step("b"), step("join", "a", "b"))
    stale = run.wf.steps
    first = on_step_finished(stale, "a", COMPLETED, 1)
    second = on_step_finished(stale, "b", COMPLETED, 2)
    assert first.enqueue == second.enqueue == ()  # each still sees the other sibling running
    run.apply(first)
    run.apply(second)
    assert run.statuses()["join"] == "pending"
    heal = settle(run.wf.steps)  # the janitor's self-heal
    assert heal.enqueue == ("join",)
    assert [change.name for change in run.apply(heal)] == ["join"]
    assert run.apply(heal) == []  # a second janitor enqueues nothing
    assert run.wf.context == {"a": 1, "b": 2}


def test_a_join_decided_twice_is_enqueued_once() -> None:
    run = Run(step("a"), step("b"), step("join", "a", "b"))
    run.finish("a")
    first = on_step_finished(run.wf.steps, "b", COMPLETED, 2)
    # A second decider (the janitor) sees b completed but the join not yet claimed.
    crashed, _ = apply_transition(run.wf, Transition(finished=first.finished, result=first.result), NOW)
    second = settle(crashed.steps)
    assert first.enqueue == second.enqueue == ("join",)
    assert [change.name for change in run.apply(first)] == ["b", "join"]
    assert run.apply(second) == []


def test_halt_wins_over_skip_when_self_healing() -> None:
    run = Run(step("a", on_failure=SKIP), step("b", "a"), step("c"), step("d", "c"))
    run.apply(Transition(finished=StepChange("a", StepStatus.FAILED, frozenset({StepStatus.ENQUEUED}))))
    run.apply(Transition(finished=StepChange("c", StepStatus.CANCELLED, frozenset({StepStatus.ENQUEUED}))))
    transition = settle(run.wf.steps)
    assert transition == Transition(cancel=("b", "d"), workflow_status=WorkflowStatus.FAILED)


def test_step_payload_adds_the_context_without_touching_the_inputs() -> None:
    payload: dict[str, JSON] = {"x": 1}
    context: dict[str, JSON] = {"a": {"rows": 3}}
    assert step_payload(payload, context) == {"x": 1, "_context": {"a": {"rows": 3}}}
    assert payload == {"x": 1}


def test_a_step_job_carries_the_step_settings() -> None:
    new = NewStep(name="s", task_name="t", queue_name="q", priority=7, max_retries=0, timeout_seconds=9)
    [row] = new_steps("wf_1", NewWorkflow(name="w", steps=[new]))
    job = step_job(row, {})
    assert (job.task_name, job.queue_name, job.priority, job.max_retries, job.timeout_seconds) == ("t", "q", 7, 0, 9)
    assert job.payload == {"_context": {}}


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ([("completed", HALT), ("completed", SKIP)], WorkflowStatus.COMPLETED),
        ([("completed", HALT), ("enqueued", HALT)], None),
        ([("pending", HALT), ("failed", SKIP)], None),
        ([("failed", HALT), ("cancelled", SKIP)], WorkflowStatus.FAILED),
        ([("cancelled", HALT), ("completed", HALT)], WorkflowStatus.FAILED),
        ([("failed", SKIP), ("skipped", HALT)], WorkflowStatus.PARTIALLY_FAILED),
        ([("failed", CONTINUE), ("completed", HALT)], WorkflowStatus.PARTIALLY_FAILED),
        ([("cancelled", CONTINUE), ("completed", HALT)], WorkflowStatus.PARTIALLY_FAILED),
    ],
)
def test_derive_status(rows: list[tuple[str, OnFailure]], expected: WorkflowStatus | None) -> None:
    run = Run(*(step(f"s{i}", on_failure=policy) for i, (_, policy) in enumerate(rows)))
    steps = [replace(row, status=StepStatus(status)) for row, (status, _) in zip(run.wf.steps, rows, strict=True)]
    assert derive_status(steps) is expected


# --- the property: random DAGs, random outcomes -----------------------------------------------------------------


@st.composite
def dags(draw: st.DrawFn) -> list[NewStep]:
    count = draw(st.integers(1, 9))
    steps = []
    for i in range(count):
        dependencies = sorted(draw(st.sets(st.integers(0, i - 1), max_size=3))) if i else []
        steps.append(step(f"s{i}", *(f"s{d}" for d in dependencies), on_failure=draw(st.sampled_from(OnFailure))))
    order = draw(st.permutations(range(count)))
    return [steps[i] for i in order]


@settings(max_examples=400, deadline=None)
@given(dags(), st.data())
def test_random_runs_end_well(steps: list[NewStep], data: st.DataObject) -> None:
    run = Run(*steps)
    policy = {s.name: s.on_failure for s in steps}
    enqueued_ever = set(run.named(StepStatus.ENQUEUED))
    halted = cancelled = False
    while enqueued := run.named(StepStatus.ENQUEUED):
        if data.draw(st.integers(0, 15), label="cancel?") == 0:
            run.apply(cancel_workflow(run.wf.steps))
            cancelled = True
            _check_reports_are_harmless(run, enqueued)
            break
        name = data.draw(st.sampled_from(enqueued), label="step")
        outcome = data.draw(st.sampled_from(StepOutcome), label="outcome")
        before = run.wf
        transition = run.finish(name, outcome)
        after = {s.name: s for s in run.wf.steps}
        if outcome is not COMPLETED and policy[name] is HALT:
            halted = True
            unfinished = {s.name for s in before.steps if s.status in UNFINISHED_STEPS} - {name}
            assert {n for n, s in after.items() if s.status is StepStatus.CANCELLED} >= unfinished
            assert run.wf.status is WorkflowStatus.FAILED
        for newly in transition.enqueue:
            assert newly not in enqueued_ever, "a step was enqueued twice"
            enqueued_ever.add(newly)
            for dependency in after[newly].depends_on:
                assert satisfied(after[dependency]), "a step was enqueued before its dependencies were satisfied"
                assert dependency in run.wf.context, "a step was enqueued without a dependency's context entry"
        assert run.apply(transition) == [], "applying a transition twice changed something"
        assert settle(run.wf.steps).changes() == [], "a settled workflow was not settled"
        running = any(s.status in UNFINISHED_STEPS for s in run.wf.steps)
        assert (run.wf.status is WorkflowStatus.RUNNING) == running
        _check_reports_are_harmless(run, [name])
    _check_final(run, policy, halted=halted, cancelled=cancelled)


def _check_reports_are_harmless(run: Run, names: list[str]) -> None:
    before = run.wf
    for name in names:
        assert run.apply(on_step_finished(run.wf.steps, name, CANCELLED)) == []
    assert run.wf == before


def _check_final(run: Run, policy: dict[str, OnFailure], *, halted: bool, cancelled: bool) -> None:
    steps = {s.name: s for s in run.wf.steps}
    assert all(s.status not in UNFINISHED_STEPS for s in steps.values()), "a step never finished"
    if cancelled:
        expected = WorkflowStatus.CANCELLED
    elif halted:
        expected = WorkflowStatus.FAILED
    elif all(s.status is StepStatus.COMPLETED for s in steps.values()):
        expected = WorkflowStatus.COMPLETED
    else:
        expected = WorkflowStatus.PARTIALLY_FAILED
    assert run.wf.status is expected
    assert run.wf.completed_at == NOW
    for name, s in steps.items():
        if s.status is StepStatus.COMPLETED:
            assert run.wf.context[name] == {"by": name}
        elif s.status in FAILED_STEPS and policy[name] is CONTINUE and name in run.wf.context:
            assert run.wf.context[name] is None  # absent when a halt or a cancel got to it first
        else:
            assert name not in run.wf.context
    for s in steps.values():
        if s.status is StepStatus.SKIPPED:
            assert any(
                steps[d].status is StepStatus.SKIPPED or (steps[d].status in FAILED_STEPS and policy[d] is SKIP)
                for d in s.depends_on
            ), "a step was skipped without a skipped or skip-failed dependency"
