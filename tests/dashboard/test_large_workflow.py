"""A workflow's page at 10,000 steps: the DAG drawn by level with counts by status, the step table paged (100 a
page) and filtered by status or level, every link keeping the rest of the query.

The big workflow is put in through the store (`workflow_insert`, with its steps in the statuses the test needs):
creating it through the engine is capped at 1,000 steps (`core.workflow.MAX_STEPS`), and advancing 10,000 steps on
the in-memory store takes minutes. The page reads it through the engine as always. What is rendered is counted,
not timed: 100 rows and 3 level boxes however many steps there are.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest
from queueflow.clocks import TestClock
from queueflow.core.types import BackoffPolicy
from queueflow.core.workflow import OnFailure, Step, StepStatus, Workflow, WorkflowStatus
from queueflow.dashboard.steps import MAX_BANDS, PAGE_SIZE, STATUSES, StepQuery, bands, step_levels
from queueflow.stores.memory import InMemoryJobStore

from tests.dashboard.conftest import Browser

WIDTH = 9_998
"""1 root → 9,998 in parallel → 1 join: 10,000 steps in three levels."""
ROW = re.compile(r'<tr data-step="([^"]+)">')
LEVEL = re.compile(r'<g class="dag-level" data-level="([^"]+)" data-steps="(\d+)" data-counts="([^"]*)">')


def step(index: int, name: str, status: StepStatus, depends_on: list[str], *, job: bool = True) -> Step:
    return Step(
        workflow_id="wf_big",
        name=name,
        idx=index,
        task_name=name.split("-")[0],
        status=status,
        depends_on=depends_on,
        on_failure=OnFailure.CONTINUE,
        payload={},
        queue_name="default",
        priority=0,
        max_retries=3,
        backoff=BackoffPolicy(),
        timeout_seconds=None,
        job_id=f"job_{name}" if job else None,
    )


@pytest.fixture
async def fan_out(store: InMemoryJobStore, clock: TestClock) -> str:
    """A 10,000-step fan-out with its root completed, 200 fan steps completed and 100 failed, the rest enqueued
    and the join pending; its id."""
    fan_status = [StepStatus.COMPLETED] * 200 + [StepStatus.FAILED] * 100 + [StepStatus.ENQUEUED] * (WIDTH - 300)
    fan = [step(1 + i, f"fan-{i:04}", status, ["root"]) for i, status in enumerate(fan_status)]
    steps = [
        step(0, "root", StepStatus.COMPLETED, []),
        *fan,
        step(1 + WIDTH, "join", StepStatus.PENDING, [s.name for s in fan], job=False),
    ]
    workflow = Workflow(
        id="wf_big",
        tenant_id="tenant-a",
        name="wide",
        status=WorkflowStatus.RUNNING,
        context={"root": {"n": 0}},
        steps=steps,
        created_at=clock.now(),
    )
    await store.workflow_insert(workflow, [])
    return workflow.id


async def test_the_page_of_a_10000_step_workflow_draws_levels_and_pages_its_steps(
    signed_in: Browser, fan_out: str
) -> None:
    page = (await signed_in.get(f"/ui/workflows/{fan_out}")).text
    levels = {level: (int(steps), counts) for level, steps, counts in LEVEL.findall(page)}
    assert levels == {
        "1": (1, "completed=1"),
        "2": (WIDTH, f"completed=200 enqueued={WIDTH - 300} failed=100"),
        "3": (1, "pending=1"),
    }
    assert 'class="dag-node' not in page  # no step-by-step drawing at this size
    assert "10,000 in 3 levels" in page
    assert re.findall(r'data-total="(\w+)">', page) == ["completed", "enqueued", "pending", "failed"]
    rows = ROW.findall(page)
    assert rows == ["root", *[f"fan-{i:04}" for i in range(PAGE_SIZE - 1)]]
    assert "Steps 1–100 of 10,000." in page
    assert "Page 1 of 100" in page
    assert f'href="/ui/workflows/{fan_out}?page=2#steps" rel="next"' in page
    assert f'href="/ui/workflows/{fan_out}?page=100#steps">Last' in page
    assert "and 9,995 more" not in page  # the join's 9,998 dependencies are not on page 1

    last = (await signed_in.get(f"/ui/workflows/{fan_out}?page=100")).text
    assert ROW.findall(last)[-1] == "join"
    assert "Steps 9,901–10,000 of 10,000." in last
    assert 'fan-0000, fan-0001, fan-0002 <span class="muted">and 9,995 more</span>' in last
    assert f'href="/ui/workflows/{fan_out}?page=99#steps" rel="prev"' in last
    assert 'rel="next"' not in last


async def test_the_step_table_filters_by_status_and_level_and_keeps_the_filter_in_its_links(
    signed_in: Browser, fan_out: str
) -> None:
    here = f"/ui/workflows/{fan_out}"
    failed = (await signed_in.get(f"{here}?status=failed")).text
    assert ROW.findall(failed) == [f"fan-{i:04}" for i in range(200, 300)]
    assert "Steps 1–100 of 100 matching status failed." in failed
    assert 'aria-label="Pages of steps"' not in failed  # one page
    assert '<option value="failed" selected>' in failed
    # A level's box lists that level's steps, of the status already chosen.
    assert f'href="{here}?status=failed&amp;level=2#steps"' in failed

    completed = (await signed_in.get(f"{here}?status=completed&page=2")).text
    assert len(ROW.findall(completed)) == 100
    assert ROW.findall(completed)[0] == "fan-0099"  # root, then fan-0000…0098 on page 1
    assert "Steps 101–200 of 201 matching status completed." in completed
    assert f'href="{here}?status=completed&amp;page=3#steps" rel="next"' in completed
    assert f'href="{here}?status=completed#steps" rel="prev"' in completed
    # Choosing another status starts again at page 1, and keeps nothing of the old page.
    assert f'href="{here}?status=enqueued#steps" data-total="enqueued"' in completed

    join = (await signed_in.get(f"{here}?level=3")).text
    assert ROW.findall(join) == ["join"]
    assert "Steps 1–1 of 1 matching at level 3." in join
    both = (await signed_in.get(f"{here}?level=2&status=pending")).text
    assert ROW.findall(both) == []
    assert "No steps matching status pending at level 2." in both


async def test_a_query_that_does_not_parse_is_said_and_ignored(signed_in: Browser, fan_out: str) -> None:
    response = await signed_in.get(f"/ui/workflows/{fan_out}?status=lost&level=0&page=x")
    assert response.status_code == 200
    for said in ("There is no step status &#39;lost&#39;.", "There is no level &#39;0&#39;", "There is no page"):
        assert said in response.text
    assert len(ROW.findall(response.text)) == PAGE_SIZE
    beyond = (await signed_in.get(f"/ui/workflows/{fan_out}?page=101")).text
    assert "No steps on page 101: there are 100 pages." in beyond
    assert f'href="/ui/workflows/{fan_out}?page=100#steps" rel="prev"' in beyond


def chain(length: int) -> list[Step]:
    return [
        step(i, f"s{i}", StepStatus.COMPLETED if i < 5_000 else StepStatus.PENDING, [f"s{i - 1}"] if i else [])
        for i in range(length)
    ]


def test_the_page_knows_every_step_status() -> None:
    assert sorted(STATUSES) == sorted(StepStatus)


def test_a_10000_step_chain_is_drawn_in_groups_of_levels() -> None:
    steps = chain(10_000)
    levels = step_levels(list(reversed(steps)))  # deeper than Python's recursion limit, and in any order
    assert [levels[f"s{i}"] for i in (0, 1, 9_999)] == [0, 1, 9_999]
    boxes = bands(steps, levels)
    assert len(boxes) == MAX_BANDS
    assert [(b.label, b.key, b.steps) for b in (boxes[0], boxes[-1])] == [
        ("Levels 1–625", "1-625", 625),
        ("Levels 9,376–10,000", "9376-10000", 625),
    ]
    assert sum((b.counts for b in boxes), Counter()) == Counter(completed=5_000, pending=5_000)
    query = StepQuery.parse({"level": boxes[-1].key})
    assert query.levels == (9_375, 9_999)
    assert query.query(page=2) == "level=9376-10000&page=2"
