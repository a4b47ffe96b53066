"""The jobs' calls: enqueue (one or a batch), get, list, cancel, retry."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from queueflow_client._calls.arguments import (
    backoff_json,
    check_choice,
    new_idempotency_key,
    reject_unknown,
    sequence_json,
    unique_json,
)
from queueflow_client._calls.routes import (
    CANCEL_JOB,
    ENQUEUE_JOB,
    ENQUEUE_JOBS,
    GET_JOB,
    LIST_JOBS,
    RESUME_SEQUENCE,
    RETRY_JOB,
)
from queueflow_client._json import json_object
from queueflow_client._transport import Call, call
from queueflow_client.errors import ArgumentError
from queueflow_client.options import JobOptions
from queueflow_client.types import Job, JobStatus, Page, SequenceResumed


def job_fields(options: Mapping[str, Any], where: str = "") -> dict[str, Any]:
    """A job as the API takes it; `where` prefixes the names in errors (`jobs[3].` for an item of a batch)."""
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
        "delay_seconds",
        "max_retries",
        "timeout_seconds",
        "concurrency_key",
    ):
        if options.get(name) is not None:
            fields[name] = options[name]
    for name in ("run_at", "expires_at"):
        if isinstance(options.get(name), datetime):
            fields[name] = options[name].isoformat()
        elif options.get(name) is not None:
            fields[name] = options[name]
    if options.get("expires_in") is not None:
        fields["expires_in_seconds"] = expires_in_seconds(options["expires_in"])
    if options.get("payload") is not None:
        fields["payload"] = json_object(options["payload"], f"{where}payload")
    if options.get("metadata") is not None:
        fields["metadata"] = json_object(options["metadata"], f"{where}metadata")
    backoff = backoff_json(options.get("backoff"))
    if backoff is not None:
        fields["backoff"] = backoff
    if options.get("unique") is not None:
        fields["unique"] = unique_json(options["unique"], f"{where}unique")
    if options.get("sequence") is not None:
        fields["sequence"] = sequence_json(options["sequence"], f"{where}sequence")
    return fields


def expires_in_seconds(value: float | timedelta) -> float:
    """`expires_in` as the API's `expires_in_seconds`."""
    return value.total_seconds() if isinstance(value, timedelta) else value


def enqueue(options: Mapping[str, Any]) -> Call[Job]:
    key = options.get("idempotency_key") or new_idempotency_key()
    request = ENQUEUE_JOB.request(headers={"Idempotency-Key": key}, body=job_fields(options))
    return call(request, Job.from_json, replayable=True)


def enqueue_many(jobs: Sequence[Mapping[str, Any]]) -> Call[list[Job]]:
    items = [
        job_fields(options, f"jobs[{index}].")
        | {"idempotency_key": options.get("idempotency_key") or new_idempotency_key()}
        for index, options in enumerate(jobs)
    ]
    return call(
        ENQUEUE_JOBS.request(body={"jobs": items}),
        lambda data: [Job.from_json(job) for job in data["jobs"]],
        replayable=True,
    )


def get(job_id: str, wait_seconds: float = 0.0) -> Call[Job]:
    return call(GET_JOB.request(job_id, query={"wait_seconds": wait_seconds or None}), Job.from_json, replayable=True)


def list_page(
    *,
    queue_name: str | None,
    status: JobStatus | None,
    task_name: str | None,
    workflow_id: str | None,
    metadata: Mapping[str, Any] | None,
    limit: int,
    cursor: str | None,
    unique_key: str | None = None,
    sequence_key: str | None = None,
) -> Call[Page[Job]]:
    if status is not None:
        check_choice(status, JobStatus, "job status")
    query = {
        "queue_name": queue_name,
        "status": status,
        "task_name": task_name,
        "workflow_id": workflow_id,
        "unique_key": unique_key,
        "sequence_key": sequence_key,
        "metadata": json.dumps(json_object(metadata, "metadata"), separators=(",", ":"))
        if metadata is not None
        else None,
        "limit": limit,
        "cursor": cursor,
    }
    return call(
        LIST_JOBS.request(query=query),
        lambda data: Page([Job.from_json(job) for job in data["items"]], data.get("next_cursor")),
        replayable=True,
    )


def cancel(job_id: str) -> Call[Job]:
    # Not replayable: if a first attempt landed, a repeat would answer 409 invalid_state for a job it cancelled.
    return call(CANCEL_JOB.request(job_id), Job.from_json, replayable=False)


def retry(job_id: str) -> Call[Job]:
    return call(RETRY_JOB.request(job_id), Job.from_json, replayable=False)


def resume_sequence(key: str) -> Call[SequenceResumed]:
    # Safe to repeat only in effect (a second resume is a 409): not replayed, as a retry is not.
    return call(RESUME_SEQUENCE.request(key), lambda data: SequenceResumed(key=data["key"]), replayable=False)
