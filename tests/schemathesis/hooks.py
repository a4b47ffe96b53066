"""schemathesis hooks: rules of the API that JSON Schema cannot state, so generated "valid" requests obey them.

A positive (schema-valid) case that breaks one of these rules is dropped rather than sent, because the API
rightly answers it with 400 and schemathesis would count that as rejecting valid data. Negative cases are
never filtered. Loaded by tests/api/test_schemathesis.py, and by the CLI through `SCHEMATHESIS_HOOKS`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import schemathesis
from queueflow.core.dag import dependency_errors
from queueflow.core.schedule import cron_errors, timezone_errors
from queueflow.core.types import JobStatus, NewJob, OnConflict, UniqueRule
from queueflow.core.validation import unique_errors
from queueflow.core.workflow import CONTEXT_KEY, JOB_FIELDS
from schemathesis import Case
from schemathesis.hooks import HookContext

DEFAULT_BACKOFF = {"base_seconds": 1.0, "max_seconds": 3600.0}
PUBLIC_URL = "https://93.184.215.14/queueflow"
"""A push endpoint's URL that every server accepts without a resolver: a literal, public address."""


@schemathesis.hook
def filter_case(context: HookContext, case: Case) -> bool:
    meta = case.meta
    if meta is not None and meta.generation.mode.is_negative:
        return True
    creating = case.operation.method.upper() == "POST"
    if case.operation.path.startswith("/v1/schedules") and not _schedule_ok(case.body, creating=creating):
        return False
    if case.operation.path.startswith("/v1/triggers") and not _trigger_ok(case.body, creating=creating):
        return False
    return _query_ok(case.query or {}) and _body_ok(case.body)


@schemathesis.hook
def before_add_examples(context: HookContext, examples: list[Case]) -> None:
    """The examples phase assembles a body from every property's example and calls no `filter_case`: a new
    schedule's gets both `task_name` and `workflow`, which the API rightly refuses. Those are left out."""
    examples[:] = [
        case
        for case in examples
        if not (case.operation.path == "/v1/schedules" and case.operation.method.upper() == "POST")
        or _one_form(case.body)
    ]
    examples[:] = [
        case
        for case in examples
        if not (case.operation.path == "/v1/triggers" and case.operation.method.upper() == "POST")
        or _trigger_ok(case.body, creating=True)
    ]


@schemathesis.hook
def map_case(context: HookContext, case: Case) -> Case:
    """A push endpoint's host must resolve, and to a public address: the server resolves it, and no schema can say
    which names do. A positive case's URL becomes one that does (a negative case keeps its own)."""
    meta = case.meta
    negative = meta is not None and meta.generation.mode.is_negative
    body = case.body
    endpoint = case.operation.path.startswith("/v1/endpoints")
    if not negative and endpoint and isinstance(body, dict) and isinstance(body.get("url"), str):
        body["url"] = PUBLIC_URL
    return case


def _query_ok(query: dict[str, Any]) -> bool:
    # A cursor is opaque: only one the server issued is valid, and a generator cannot know one.
    if "cursor" in query:
        return False
    if "metadata" in query:
        try:
            value = json.loads(query["metadata"])
        except (TypeError, ValueError):
            return False
        return isinstance(value, dict) and _storable(value)
    return True


def _body_ok(body: Any) -> bool:
    if not isinstance(body, dict):
        return True
    if not _storable(body):  # PostgreSQL text and JSONB hold no NUL, and documents nest at most 128 deep
        return False
    if "jobs" in body and isinstance(body["jobs"], list):
        return all(_job_ok(job) for job in body["jobs"])
    if "steps" in body and isinstance(body["steps"], list):
        return _workflow_ok(body["steps"])
    if "task_name" in body:
        return _job_ok(body)
    if set(body) <= {"complete", "fail"}:  # an ack carries at most 1000 items in all
        return len(body.get("complete") or []) + len(body.get("fail") or []) <= 1000
    return True


def _schedule_ok(body: Any, *, creating: bool) -> bool:
    # A cron expression and a time zone are strings to JSON Schema; which strings are valid is the domain's rule
    # (`core.schedule`, pinned by tests/unit/test_schedule.py), so the domain's own checks decide.
    if not isinstance(body, dict):
        return True
    workflow = body.get("workflow")
    if creating and not _one_form(body):
        return False
    if not creating and "workflow" in body and not _one_form(body):
        return False  # a PATCH may change what a schedule fires, never to both
    if isinstance(workflow, dict) and isinstance(workflow.get("steps"), list) and not _workflow_ok(workflow["steps"]):
        return False
    cron, timezone = body.get("cron"), body.get("timezone")
    if isinstance(cron, str) and cron_errors(cron):
        return False
    return not (isinstance(timezone, str) and timezone_errors(timezone))


def _trigger_ok(body: Any, *, creating: bool) -> bool:
    """A trigger starts a task or a workflow (exactly one; a PATCH never names both), each valid as its route's
    body, the task's payload without the `_event` the engine adds."""
    if not isinstance(body, dict):
        return True
    if ("task" in body) == ("workflow" in body) and (creating or "task" in body):
        return False
    task, workflow = body.get("task"), body.get("workflow")
    if isinstance(task, dict) and (not _job_ok(task) or "_event" in (task.get("payload") or {})):
        return False
    return not (
        isinstance(workflow, dict) and isinstance(workflow.get("steps"), list) and not _workflow_ok(workflow["steps"])
    )


def _one_form(body: Any) -> bool:
    """A new schedule has a task_name or a workflow, and a workflow's steps carry their own job fields."""
    if not isinstance(body, dict):
        return True
    if ("task_name" in body) == ("workflow" in body):
        return False
    return "task_name" in body or not any(name in body for name in ("queue_name", "payload", "priority", "max_retries"))


def _job_ok(job: Any) -> bool:
    if not isinstance(job, dict):
        return True
    if job.get("run_at") is not None and job.get("delay_seconds") is not None:
        return False
    if not _unique_ok(job) or not _deadline_ok(job):
        return False
    backoff = {**DEFAULT_BACKOFF, **(job.get("backoff") or {})}
    return bool(backoff["max_seconds"] >= backoff["base_seconds"])


def _unique_ok(job: dict[str, Any]) -> bool:
    """A `unique` rule's rules across its fields (states or a period; debounce only with replace, the default
    states, no run_at or delay; its cap at least debounce_seconds): the domain's own check decides."""
    rule = job.get("unique")
    if not isinstance(rule, dict):
        return True
    try:
        states = rule.get("states")
        unique = UniqueRule(
            key=rule.get("key", ""),
            states=None if states is None else tuple(JobStatus(state) for state in states),
            period_seconds=rule.get("period_seconds"),
            on_conflict=OnConflict(rule.get("on_conflict") or "skip"),
            debounce_seconds=rule.get("debounce_seconds"),
            debounce_max_seconds=rule.get("debounce_max_seconds"),
        )
    except (TypeError, ValueError):
        return True  # not schema-valid: not this hook's to judge
    run_at = datetime.now(UTC) if job.get("run_at") is not None else None
    return not unique_errors(
        NewJob(task_name="t", run_at=run_at, delay_seconds=job.get("delay_seconds"), unique=unique)
    )


def _deadline_ok(job: dict[str, Any]) -> bool:
    """A deadline is one field of the two, later than the job's due time (its delay, its run_at, or now)."""
    at, seconds = job.get("expires_at"), job.get("expires_in_seconds")
    if at is not None and seconds is not None:
        return False
    if isinstance(seconds, int | float):
        return seconds > (job.get("delay_seconds") or 0)
    if not isinstance(at, str):
        return True
    try:
        deadline = datetime.fromisoformat(at)
        due = datetime.fromisoformat(job["run_at"]) if isinstance(job.get("run_at"), str) else datetime.now(UTC)
        return deadline > max(due, datetime.now(UTC)) + timedelta(seconds=job.get("delay_seconds") or 0)
    except (TypeError, ValueError, OverflowError):
        return True  # not schema-valid: not this hook's to judge


def _workflow_ok(steps: list[Any]) -> bool:
    if not all(isinstance(step, dict) for step in steps):
        return True
    if not all(_job_ok(step) and CONTEXT_KEY not in (step.get("payload") or {}) for step in steps):
        return False  # `_context` is reserved for the context the engine adds
    if not all(_task_or_wait(step) for step in steps):
        return False
    signals = [step["wait"].get("signal") for step in steps if step.get("wait") and step["wait"].get("signal")]
    if len(signals) != len(set(signals)):
        return False  # signal names are unique within a workflow
    # Unique names, resolvable dependencies, no cycles: the graph rules are the engine's own (core.dag).
    names = [step.get("name") for step in steps]
    return not dependency_errors(names, [step.get("depends_on") or [] for step in steps])


def _task_or_wait(step: dict[str, Any]) -> bool:
    """A step has one of a task_name, a wait (`{signal, timeout_seconds?}` or `{seconds}`) and a child workflow
    (a body as a new workflow's, by the same rules), and a wait or child step no job field."""
    wait, child = step.get("wait"), step.get("workflow")
    if sum(kind is not None for kind in (step.get("task_name"), wait, child)) != 1:
        return False
    if child is not None:
        steps = child.get("steps") if isinstance(child, dict) else None
        no_job = not any(name in step for name in JOB_FIELDS)
        return no_job and (not isinstance(steps, list) or _workflow_ok(steps))
    if wait is None:
        return True
    if any(name in step for name in JOB_FIELDS):
        return False
    if (wait.get("signal") is None) == (wait.get("seconds") is None):
        return False
    return wait.get("seconds") is None or wait.get("timeout_seconds") is None


def _storable(value: Any, depth: int = 0) -> bool:
    if isinstance(value, str):
        return "\x00" not in value
    if depth > 100:
        return False
    if isinstance(value, dict):
        return all(_storable(key) and _storable(item, depth + 1) for key, item in value.items())
    if isinstance(value, list):
        return all(_storable(item, depth + 1) for item in value)
    return True
