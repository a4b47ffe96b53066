"""The SVG drawings, as pure functions of domain objects."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from queueflow.core.types import BackoffPolicy, QueueMinute
from queueflow.core.workflow import OnFailure, Step, StepStatus, Workflow, WorkflowStatus
from queueflow.dashboard.charts import dag_chart, dag_layers, throughput_chart

NOW = datetime(2026, 3, 1, 12, 30, 20, tzinfo=UTC)


def step(name: str, *depends_on: str, idx: int = 0, status: StepStatus = StepStatus.PENDING) -> Step:
    return Step(
        workflow_id="wf_1", name=name, idx=idx, task_name=f"task-{name}", status=status, depends_on=list(depends_on),
        on_failure=OnFailure.HALT, payload={}, queue_name="default", priority=0, max_retries=3,
        backoff=BackoffPolicy(), timeout_seconds=None,
        job_id=f"job_{name}" if status is not StepStatus.PENDING else None,
    )  # fmt: skip


def test_steps_sit_one_column_right_of_their_deepest_dependency() -> None:
    steps = [step("a"), step("b", "a", idx=1), step("c", "a", idx=2), step("d", "b", "c", idx=3), step("e", "a", "d")]
    assert [[s.name for s in column] for column in dag_layers(steps)] == [["a"], ["b", "c"], ["d"], ["e"]]


def test_a_column_follows_its_parents_order() -> None:
    # y is submitted first, but its parent sits below x's parent: it goes below x, and the edges do not cross.
    steps = [step("p"), step("q", idx=1), step("y", "q", idx=2), step("x", "p", idx=3)]
    assert [[s.name for s in column] for column in dag_layers(steps)] == [["p", "q"], ["x", "y"]]


def test_the_dag_links_each_started_step_to_its_job_and_labels_every_status() -> None:
    workflow = Workflow(
        id="wf_1", name="etl", tenant_id="t", status=WorkflowStatus.RUNNING, context={}, created_at=NOW,
        steps=[step("a", status=StepStatus.COMPLETED), step("<b>", "a", idx=1, status=StepStatus.FAILED),
               step("c", "a", idx=2, status=StepStatus.ENQUEUED), step("d", "<b>", "c", idx=3)],
    )  # fmt: skip
    svg = str(dag_chart(workflow))
    assert re.findall(r'data-status="(\w+)"', svg) == ["completed", "failed", "enqueued", "pending"]
    assert svg.count('class="dag-edge"') == 4
    assert '<a href="/ui/jobs/job_a">' in svg
    assert "job_d" not in svg
    assert "<b>" not in svg
    assert "&lt;b&gt;" in svg
    for label in ["✓ completed", "✕ failed", "◔ enqueued", "○ pending"]:
        assert label in svg


def test_the_sparkline_has_a_bar_per_busy_minute_of_the_last_hour() -> None:
    minutes = [
        QueueMinute(name="q", minute=datetime(2026, 3, 1, 11, 31, tzinfo=UTC), completed=10),  # the oldest shown
        QueueMinute(name="q", minute=datetime(2026, 3, 1, 11, 30, tzinfo=UTC), completed=99),  # too old
        QueueMinute(name="q", minute=datetime(2026, 3, 1, 12, 30, tzinfo=UTC), completed=5, dead_lettered=5),
    ]
    svg = str(throughput_chart(minutes, NOW))
    assert 'aria-label="Last hour: 15 completed, 5 dead-lettered"' in svg
    assert svg.count('class="bar-done"') == 2
    assert svg.count('class="bar-dead"') == 1
    assert "<title>11:31 UTC: 10 completed, 0 dead-lettered</title>" in svg
    assert "<title>12:30 UTC: 5 completed, 5 dead-lettered</title>" in svg
    heights = [int(h) for h in re.findall(r'class="bar-\w+" x="\d+" y="\d+" width="\d+" height="(\d+)"', svg)]
    assert heights[0] == max(heights)  # the busiest minute is the tallest


def test_an_idle_hour_is_an_empty_chart() -> None:
    svg = str(throughput_chart([], NOW))
    assert "rect" not in svg
    assert "Last hour: 0 completed, 0 dead-lettered" in svg
