"""Every API call the client makes, described once (request + how to read the answer) for the sync and the
async client alike. Optional arguments left at None are not sent, so the server's defaults apply."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

from queueflow_client._generated.api.jobs import (
    cancel_job,
    enqueue_job,
    enqueue_jobs,
    get_job,
    list_jobs,
    list_queues,
    retry_job,
)
from queueflow_client._generated.api.jobs import get_queue as get_queue_operation
from queueflow_client._generated.api.jobs import update_queue as update_queue_operation
from queueflow_client._generated.api.schedules import create_schedule as create_schedule_operation
from queueflow_client._generated.api.schedules import delete_schedule as delete_schedule_operation
from queueflow_client._generated.api.schedules import get_schedule as get_schedule_operation
from queueflow_client._generated.api.schedules import list_schedules as list_schedules_operation
from queueflow_client._generated.api.schedules import update_schedule as update_schedule_operation
from queueflow_client._generated.api.worker import (
    ack_jobs,
    add_workflow_steps,
    complete_job,
    fail_job,
    heartbeat_job,
    heartbeat_jobs,
    lease_jobs,
    release_jobs,
)
from queueflow_client._generated.api.workflows import cancel_workflow as cancel_workflow_operation
from queueflow_client._generated.api.workflows import create_workflow as create_workflow_operation
from queueflow_client._generated.api.workflows import get_workflow as get_workflow_operation
from queueflow_client._generated.api.workflows import list_workflows as list_workflows_operation
from queueflow_client._generated.api.workflows import retry_workflow as retry_workflow_operation
from queueflow_client._generated.api.workflows import signal_workflow as signal_workflow_operation
from queueflow_client._generated.models import (
    AckComplete,
    AckFail,
    AckRequest,
    AddedStep,
    AddStepsRequest,
    BatchItem,
    BatchItemMetadata,
    BatchItemPayload,
    CompleteRequest,
    CreateSchedule,
    CreateSchedulePayload,
    CreateWorkflow,
    CreateWorkflowContext,
    EnqueueBatch,
    EnqueueJob,
    EnqueueJobMetadata,
    EnqueueJobPayload,
    FailRequest,
    HeartbeatBatch,
    HeartbeatItem,
    HeartbeatRequest,
    LeaseRequest,
    ListWorkflowsStatusType1,
    NewWorkflowStep,
    ReleaseItem,
    ReleaseRequest,
    SignalRequest,
    UpdateQueue,
    UpdateSchedule,
    UpdateSchedulePayload,
)
from queueflow_client._generated.models import Backoff as BackoffModel
from queueflow_client._generated.models import RateLimit as RateLimitModel
from queueflow_client._generated.models.backoff_strategy import BackoffStrategy
from queueflow_client._generated.models.list_jobs_status_type_1 import ListJobsStatusType1
from queueflow_client._generated.types import UNSET
from queueflow_client._json import json_object
from queueflow_client._transport import Call, call, decoding_call
from queueflow_client.errors import ArgumentError
from queueflow_client.options import JobOptions
from queueflow_client.steps import WorkflowDefinition, check_unique
from queueflow_client.types import (
    UNCHANGED,
    AckResult,
    Backoff,
    HeartbeatResult,
    Job,
    JobStatus,
    LeasedJob,
    Page,
    Queue,
    RateLimit,
    Schedule,
    Step,
    Unchanged,
    Wait,
    Workflow,
    WorkflowStatus,
    WorkflowStep,
    decode_lease_answer,
)

MAX_ADDED_STEPS = 1000
"""The most steps one `POST /v1/worker/jobs/{id}/steps` takes."""


def new_idempotency_key() -> str:
    """A key for a request the caller gave none: it makes the client's own retries safe, nothing more."""
    return f"qf-client-{uuid.uuid4()}"


def _backoff(value: Backoff | Mapping[str, Any] | None) -> Any:
    if value is None:
        return UNSET
    data = value.to_json() if isinstance(value, Backoff) else dict(value)
    return BackoffModel(
        strategy=BackoffStrategy(data["strategy"]) if "strategy" in data else UNSET,
        base_seconds=data.get("base_seconds", UNSET),
        max_seconds=data.get("max_seconds", UNSET),
        jitter=data.get("jitter", UNSET),
    )


def _reject_unknown(options: Mapping[str, Any], known: Collection[str], what: str, where: str = "") -> None:
    unknown = set(options) - set(known)
    if unknown:
        raise ArgumentError(f"unknown {what} option(s){where}: {', '.join(sorted(unknown))}")


def _job_fields(options: Mapping[str, Any], payload_type: Any, metadata_type: Any, where: str = "") -> dict[str, Any]:
    """`where` prefixes the names in errors (`jobs[3].` for an item of a batch)."""
    if not isinstance(options, Mapping):
        raise ArgumentError(f"{where.rstrip('.')} must be a dict of enqueue's arguments, not {options!r:.80}")
    _reject_unknown(
        options,
        JobOptions.__optional_keys__ | JobOptions.__required_keys__,
        "job",
        f" in {where.rstrip('.')}" if where else "",
    )
    if not isinstance(options.get("task_name"), str):
        raise ArgumentError(f"{where}task_name must be a string, not {options.get('task_name')!r:.80}")
    # The idempotency key travels in a header (enqueue) or in the item (enqueue_many): the caller adds it.
    fields: dict[str, Any] = {"task_name": options["task_name"]}
    for name in (
        "queue_name",
        "priority",
        "run_at",
        "delay_seconds",
        "max_retries",
        "timeout_seconds",
        "concurrency_key",
    ):
        if options.get(name) is not None:
            fields[name] = options[name]
    if options.get("payload") is not None:
        fields["payload"] = payload_type.from_dict(json_object(options["payload"], f"{where}payload"))
    if options.get("metadata") is not None:
        fields["metadata"] = metadata_type.from_dict(json_object(options["metadata"], f"{where}metadata"))
    fields["backoff"] = _backoff(options.get("backoff"))
    return fields


# ---- jobs ------------------------------------------------------------------------------------------


def enqueue(options: Mapping[str, Any]) -> Call[Job]:
    key = options.get("idempotency_key") or new_idempotency_key()
    fields = _job_fields(options, EnqueueJobPayload, EnqueueJobMetadata)
    body = EnqueueJob(**fields)
    return call(enqueue_job, Job.from_json, replayable=True, body=body, idempotency_key=key)


def enqueue_many(jobs: Sequence[Mapping[str, Any]]) -> Call[list[Job]]:
    items = []
    for index, options in enumerate(jobs):
        fields = _job_fields(options, BatchItemPayload, BatchItemMetadata, f"jobs[{index}].")
        items.append(BatchItem(**fields, idempotency_key=options.get("idempotency_key") or new_idempotency_key()))
    return call(
        enqueue_jobs,
        lambda data: [Job.from_json(job) for job in data["jobs"]],
        replayable=True,
        body=EnqueueBatch(jobs=items),
    )


def get(job_id: str, wait_seconds: float = 0.0) -> Call[Job]:
    return call(get_job, Job.from_json, job_id, replayable=True, wait_seconds=wait_seconds or UNSET)


def list_page(
    *,
    queue_name: str | None,
    status: JobStatus | None,
    task_name: str | None,
    workflow_id: str | None,
    metadata: Mapping[str, Any] | None,
    limit: int,
    cursor: str | None,
) -> Call[Page[Job]]:
    return call(
        list_jobs,
        lambda data: Page([Job.from_json(job) for job in data["items"]], data.get("next_cursor")),
        replayable=True,
        queue_name=queue_name if queue_name is not None else UNSET,
        status=ListJobsStatusType1(status) if status is not None else UNSET,
        task_name=task_name if task_name is not None else UNSET,
        workflow_id=workflow_id if workflow_id is not None else UNSET,
        metadata=json.dumps(json_object(metadata, "metadata"), separators=(",", ":"))
        if metadata is not None
        else UNSET,
        limit=limit,
        cursor=cursor if cursor is not None else UNSET,
    )


def cancel(job_id: str) -> Call[Job]:
    # Not replayable: if a first attempt landed, a repeat would answer 409 invalid_state for a job it cancelled.
    return call(cancel_job, Job.from_json, job_id, replayable=False)


def retry(job_id: str) -> Call[Job]:
    return call(retry_job, Job.from_json, job_id, replayable=False)


def queues() -> Call[list[Queue]]:
    return call(list_queues, lambda data: [Queue.from_json(queue) for queue in data["queues"]], replayable=True)


def get_queue(name: str) -> Call[Queue]:
    return call(get_queue_operation, Queue.from_json, name, replayable=True)


def update_queue(
    name: str,
    *,
    paused: bool | Unchanged,
    concurrency_limit: int | Unchanged | None,
    key_concurrency_limit: int | Unchanged | None,
    rate_limit: RateLimit | Unchanged | None,
) -> Call[Queue]:
    # PATCH: an UNCHANGED setting is not sent, None is sent as null (no limit). Replayable: the same settings twice
    # leave the same queue.
    body = UpdateQueue(
        paused=UNSET if paused is UNCHANGED else paused,
        concurrency_limit=UNSET if concurrency_limit is UNCHANGED else concurrency_limit,
        key_concurrency_limit=UNSET if key_concurrency_limit is UNCHANGED else key_concurrency_limit,
        rate_limit=(
            UNSET
            if rate_limit is UNCHANGED
            else RateLimitModel(jobs=rate_limit.jobs, per_seconds=rate_limit.per_seconds)
            if rate_limit is not None
            else None
        ),
    )
    return call(update_queue_operation, Queue.from_json, name, replayable=True, body=body)


# ---- worker routes ---------------------------------------------------------------------------------


def lease(
    queues: Sequence[str],
    *,
    max_jobs: int,
    lease_seconds: float,
    wait_seconds: float,
    worker_id: str | None,
    task_names: Sequence[str] | None = None,
) -> Call[list[LeasedJob]]:
    body = LeaseRequest(
        queues=list(queues),
        max_jobs=max_jobs,
        lease_seconds=lease_seconds,
        wait_seconds=wait_seconds,
        worker_id=worker_id if worker_id is not None else UNSET,
        task_names=list(task_names) if task_names is not None else UNSET,
    )
    # Not replayable: a lease whose answer was lost has claimed jobs nobody will run until their leases expire.
    return decoding_call(lease_jobs, decode_lease_answer, replayable=False, body=body)


def heartbeat(job_id: str, lease_token: str, lease_seconds: float, progress: Any = UNSET) -> Call[datetime]:
    """A heartbeat; with `progress` (any JSON, null included), one that also records it."""
    body = HeartbeatRequest(lease_token=lease_token, lease_seconds=lease_seconds, progress=progress)
    return call(
        heartbeat_job, lambda data: datetime.fromisoformat(data["locked_until"]), job_id, replayable=True, body=body
    )


def heartbeat_many(leases: Sequence[tuple[str, str]], lease_seconds: float) -> Call[list[HeartbeatResult]]:
    """Extend every held lease of `leases` ((job id, lease token) pairs) at once; each answers on its own."""
    body = HeartbeatBatch(
        jobs=[HeartbeatItem(id=job_id, lease_token=token) for job_id, token in leases], lease_seconds=lease_seconds
    )
    return call(
        heartbeat_jobs,
        lambda data: [HeartbeatResult.from_json(item) for item in data["results"]],
        replayable=True,
        body=body,
    )


def complete(job_id: str, lease_token: str, result: Any) -> Call[Job]:
    # Replayable: a repeat of a completion that landed is answered lease_lost, and the worker knows what that means.
    body = CompleteRequest(lease_token=lease_token, result=result)
    return call(complete_job, Job.from_json, job_id, replayable=True, body=body)


def fail(job_id: str, lease_token: str, error: str, *, retryable: bool, retry_after_seconds: float | None) -> Call[Job]:
    body = FailRequest(
        lease_token=lease_token,
        error=error,
        retryable=retryable,
        retry_after_seconds=retry_after_seconds if retry_after_seconds is not None else UNSET,
    )
    return call(fail_job, Job.from_json, job_id, replayable=True, body=body)


def ack(complete: Sequence[AckComplete], fail: Sequence[AckFail]) -> Call[list[AckResult]]:
    body = AckRequest(complete=list(complete), fail=list(fail))
    return call(
        ack_jobs, lambda data: [AckResult.from_json(item) for item in data["results"]], replayable=True, body=body
    )


def release(leases: Sequence[tuple[str, str]]) -> Call[list[AckResult]]:
    """Give back held jobs not started ((job id, lease token) pairs): each is claimable again at once, as before
    that delivery, or `lease_lost` on its own."""
    # Replayable: a repeat of a release that landed finds the lease gone (lease_lost) and changes nothing.
    body = ReleaseRequest(jobs=[ReleaseItem(id=job_id, lease_token=token) for job_id, token in leases])
    return call(
        release_jobs, lambda data: [AckResult.from_json(item) for item in data["results"]], replayable=True, body=body
    )


# ---- workflows -------------------------------------------------------------------------------------

STEP_OPTIONS = frozenset(field.name for field in dataclasses.fields(Step))


def _step_data(step: Step | Mapping[str, Any]) -> dict[str, Any]:
    """A step as the API takes it, checked for what the client can see: its keys, and that it has a name."""
    if isinstance(step, Step):
        return step.to_json()
    if not isinstance(step, Mapping):
        raise ArgumentError(f"a workflow step is a Step (steps.task, steps.signal, …) or a dict, not {step!r:.80}")
    data = {k: v for k, v in step.items() if v is not None}
    _reject_unknown(data, STEP_OPTIONS, "workflow step")
    if "name" not in data:
        raise ArgumentError("a workflow step needs a name")
    if isinstance(data.get("wait"), Wait):
        data["wait"] = data["wait"].to_json()
    return data


def _step_fields(step: Step | Mapping[str, Any]) -> tuple[dict[str, Any], Any]:
    """A step's fields for a generated step model, and its backoff as the generated core's."""
    data = _step_data(step)
    if "task_name" not in data and "wait" not in data:
        raise ArgumentError(f"the workflow step {data['name']!r} needs a task_name or a wait")
    backoff = data.pop("backoff", None)
    if data.get("payload") is not None:
        data["payload"] = json_object(data["payload"], f"the payload of step {data['name']!r}")
    return data, _backoff(backoff)


def _new_step(step: Step | Mapping[str, Any]) -> NewWorkflowStep:
    data, backoff = _step_fields(step)
    if data.get("required_by"):
        raise ArgumentError(f"the step {data['name']!r} has required_by, which only a step added at run time has")
    # from_dict leaves every key the step lacks UNSET, so the server's defaults apply to it.
    new = NewWorkflowStep.from_dict(data)
    new.backoff = backoff
    return new


def _added_step(step: Step | Mapping[str, Any]) -> AddedStep:
    data, backoff = _step_fields(step)
    added = AddedStep.from_dict(data)
    added.backoff = backoff
    return added


def _new_workflow(workflow: Any) -> CreateWorkflow:
    """A schedule's workflow: a `steps.workflow(...)` definition, or a mapping of `name`, `steps`, `context`."""
    if isinstance(workflow, WorkflowDefinition):
        return _create_body(workflow.name, workflow.steps, workflow.context)
    if not isinstance(workflow, Mapping) or not isinstance(workflow.get("name"), str):
        raise ArgumentError(
            f"a schedule's workflow is steps.workflow(...) or a dict with name and steps, not {workflow!r:.80}"
        )
    _reject_unknown(workflow, ("name", "steps", "context"), "workflow")
    return _create_body(workflow["name"], workflow.get("steps") or (), workflow.get("context"))


def _create_body(
    name: str, steps: Sequence[Step | Mapping[str, Any]], context: Mapping[str, Any] | None
) -> CreateWorkflow:
    return CreateWorkflow(
        name=name,
        steps=[_new_step(step) for step in steps],
        context=CreateWorkflowContext.from_dict(json_object(context, "context")) if context is not None else UNSET,
    )


def create_workflow(
    name: str, steps: Sequence[Step | Mapping[str, Any]], context: Mapping[str, Any] | None, idempotency_key: str | None
) -> Call[Workflow]:
    body = _create_body(name, steps, context)
    return call(
        create_workflow_operation,
        Workflow.from_json,
        replayable=True,
        body=body,
        idempotency_key=idempotency_key or new_idempotency_key(),
    )


def get_workflow(workflow_id: str, wait_seconds: float = 0.0) -> Call[Workflow]:
    return call(
        get_workflow_operation, Workflow.from_json, workflow_id, replayable=True, wait_seconds=wait_seconds or UNSET
    )


def list_workflows(status: WorkflowStatus | None, limit: int, cursor: str | None) -> Call[Page[Workflow]]:
    return call(
        list_workflows_operation,
        lambda data: Page([Workflow.from_json(item) for item in data["items"]], data.get("next_cursor")),
        replayable=True,
        status=ListWorkflowsStatusType1(status) if status is not None else UNSET,
        limit=limit,
        cursor=cursor if cursor is not None else UNSET,
    )


def cancel_workflow(workflow_id: str) -> Call[Workflow]:
    # Not replayable: if a first attempt landed, a repeat would answer 409 invalid_state.
    return call(cancel_workflow_operation, Workflow.from_json, workflow_id, replayable=False)


def signal_workflow(workflow_id: str, name: str, payload: Any) -> Call[Workflow]:
    # Replayable: a repeat of a signal received with an equal payload answers 200 and changes nothing.
    body = SignalRequest(payload=payload)
    return call(signal_workflow_operation, Workflow.from_json, workflow_id, name, replayable=True, body=body)


def retry_workflow(workflow_id: str) -> Call[Workflow]:
    # Not replayable: if a first attempt landed, the workflow is running and a repeat would answer 409.
    return call(retry_workflow_operation, Workflow.from_json, workflow_id, replayable=False)


def add_steps(job_id: str, lease_token: str, steps: Sequence[Step | Mapping[str, Any]]) -> Call[list[WorkflowStep]]:
    if not 1 <= len(steps) <= MAX_ADDED_STEPS:
        raise ArgumentError(f"add 1–{MAX_ADDED_STEPS} steps at a time, not {len(steps)}")
    check_unique(steps)
    body = AddStepsRequest(lease_token=lease_token, steps=[_added_step(step) for step in steps])
    # Replayable: the lease token keys it, and a repeat of the same steps by the same step adds nothing twice.
    return call(
        add_workflow_steps,
        lambda data: [WorkflowStep.from_json(step) for step in data["steps"]],
        job_id,
        replayable=True,
        body=body,
    )


# ---- schedules -------------------------------------------------------------------------------------


def _schedule_fields(given: Mapping[str, Any], payload_type: Any) -> dict[str, Any]:
    """The keyword arguments of a generated schedule body: a field left at None is UNSET, so it is not sent."""
    body: dict[str, Any] = {}
    for key, value in given.items():
        if value is None and key == "workflow":
            continue  # a job schedule's: its generated default is unset already
        if value is None:
            body[key] = UNSET
        elif key == "payload":
            body[key] = payload_type.from_dict(json_object(value, "payload"))
        elif key == "workflow":
            body[key] = _new_workflow(value)
        else:
            body[key] = value
    return body


def create_schedule(name: str, given: Mapping[str, Any]) -> Call[Schedule]:
    body = CreateSchedule(name=name, **_schedule_fields(given, CreateSchedulePayload))
    # Not replayable: a create that landed makes its repeat a 409 (the name is taken).
    return call(create_schedule_operation, Schedule.from_json, replayable=False, body=body)


def get_schedule(name: str) -> Call[Schedule]:
    return call(get_schedule_operation, Schedule.from_json, name, replayable=True)


def list_schedules(limit: int, cursor: str | None) -> Call[Page[Schedule]]:
    return call(
        list_schedules_operation,
        lambda data: Page([Schedule.from_json(item) for item in data["items"]], data.get("next_cursor")),
        replayable=True,
        limit=limit,
        cursor=cursor if cursor is not None else UNSET,
    )


def update_schedule(name: str, given: Mapping[str, Any]) -> Call[Schedule]:
    # PATCH: only the given fields are sent. Replayable: setting the same fields twice leaves the same schedule.
    body = UpdateSchedule(**_schedule_fields(given, UpdateSchedulePayload))
    return call(update_schedule_operation, Schedule.from_json, name, replayable=True, body=body)


def delete_schedule(name: str) -> Call[None]:
    # 204, no body. Not replayable: a delete that landed makes its repeat a 404.
    return call(delete_schedule_operation, lambda data: None, name, replayable=False)
