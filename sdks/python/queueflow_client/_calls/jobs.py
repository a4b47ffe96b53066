"""The jobs' calls: enqueue (one or a batch), get, list, cancel, retry."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from queueflow_client._calls.arguments import backoff_model, new_idempotency_key, reject_unknown
from queueflow_client._generated.api.jobs import cancel_job, enqueue_job, enqueue_jobs, get_job, list_jobs, retry_job
from queueflow_client._generated.models import (
    BatchItem,
    BatchItemMetadata,
    BatchItemPayload,
    EnqueueBatch,
    EnqueueJob,
    EnqueueJobMetadata,
    EnqueueJobPayload,
)
from queueflow_client._generated.models.list_jobs_status_type_1 import ListJobsStatusType1
from queueflow_client._generated.types import UNSET
from queueflow_client._json import json_object
from queueflow_client._transport import Call, call
from queueflow_client.errors import ArgumentError
from queueflow_client.options import JobOptions
from queueflow_client.types import Job, JobStatus, Page


def _job_fields(options: Mapping[str, Any], payload_type: Any, metadata_type: Any, where: str = "") -> dict[str, Any]:
    """`where` prefixes the names in errors (`jobs[3].` for an item of a batch)."""
    if not isinstance(options, Mapping):
        raise ArgumentError(f"{where.rstrip('.')} must be a dict of enqueue's arguments, not {options!r:.80}")
    reject_unknown(
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
    fields["backoff"] = backoff_model(options.get("backoff"))
    return fields


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
