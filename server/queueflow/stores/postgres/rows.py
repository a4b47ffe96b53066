"""Rows ↔ domain types for the PostgreSQL store: JSON for JSONB parameters, job columns for the batch insert."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import asyncpg

from queueflow.core.types import BackoffPolicy, Job, JobStatus, OnFailure
from queueflow.stores.postgres.errors import json_text
from queueflow.stores.postgres.sql import insert_sql


def job_insert(jobs: Sequence[Job], *, returning: bool = False, unique: bool = False) -> tuple[str, list[Any]]:
    """The statement and parameters that insert `jobs` (at least one), each column every row shares sent once
    (`sql.insert_sql`). A list's `count` compares in C, equal objects by identity first: a batch's shared values are
    mostly the same objects. With `unique`, the rows' `unique_key` too, and their `expires_at` when one has a
    deadline (`sql.insert_sql`)."""
    columns = insert_columns(jobs)
    if unique:
        columns.append([job.unique_key for job in jobs])
    expires = any(job.expires_at is not None for job in jobs)
    if expires:
        columns.append([job.expires_at for job in jobs])
    sequence = any(job.sequence_key is not None for job in jobs)
    if sequence:
        columns.append([job.sequence_key for job in jobs])
        columns.append([job.sequence_halt if job.sequence_key is not None else None for job in jobs])
    shared = tuple(column.count(column[0]) == len(column) for column in columns)
    return insert_sql(shared, returning=returning, unique=unique, expires=expires, sequence=sequence), [
        column[0] if one else column for column, one in zip(columns, shared, strict=True)
    ]


def insert_columns(jobs: Sequence[Job]) -> list[list[Any]]:
    """The values of `sql.INSERT_COLUMNS`, a list of each (jsonb as its JSON text)."""
    several = len(jobs) > 1

    def loc(index: int, name: str) -> tuple[str | int, ...]:
        return ("jobs", index, name) if several else (name,)

    # A batch's rows nearly always share one policy (`core.types.backoff_policy`): each distinct config is encoded
    # once.
    configs: dict[tuple[BackoffPolicy, str | None, OnFailure | None], str] = {}

    def config(job: Job, index: int) -> str:
        text = configs[job.backoff, job.concurrency_key, job.sequence_on_failure] = json_text(
            job_config(job.backoff, job.concurrency_key, job.sequence_on_failure), loc(index, "backoff")
        )
        return text

    return [
        [job.id for job in jobs],
        [job.tenant_id for job in jobs],
        [job.queue_name for job in jobs],
        [job.task_name for job in jobs],
        [json_text(job.payload, loc(i, "payload")) for i, job in enumerate(jobs)],
        [configs.get((job.backoff, job.concurrency_key, job.sequence_on_failure)) or config(job, i)
         for i, job in enumerate(jobs)],
        [job.priority for job in jobs],
        [job.scheduled_at for job in jobs],
        [job.max_retries for job in jobs],
        [job.timeout_seconds for job in jobs],
        [json_text(job.metadata, loc(i, "metadata")) for i, job in enumerate(jobs)],
        [job.idempotency_key for job in jobs],
        [job.created_at for job in jobs],
        [job.workflow_id for job in jobs],
        [job.workflow_step_id for job in jobs],
        [None if job.trace_context is None else json_text(job.trace_context, loc(i, "trace_context"))
         for i, job in enumerate(jobs)],
    ]  # fmt: skip


def job_config(
    backoff: BackoffPolicy, concurrency_key: str | None, on_failure: OnFailure | None = None
) -> dict[str, Any]:
    """The jobs table's `config` column (and a workflow step's, which becomes its job's): the job's policy that no
    index reads, read back by `job_from_row`. `concurrency_key` lives here, not in a column of its own: only the
    claim of a queue with a `key_concurrency_limit` reads it (`config->>'concurrency_key'`), and a column would
    widen every row and every insert for it. A claim adds the started_at of the delivery before it
    (`sql.STARTED_BEFORE`), which nothing but a release reads. A job of a sequence keeps its `on_failure` here
    (`sequence_on_failure`), which only a replay reads (to restore `sequence_halt`).

    The default policy is still written out, although `backoff_of` reads a row without one as the default (it is
    116 of a finished job's 625 bytes in the heap, in every version of the row): the release before this one reads
    `config["backoff"]` of every row it leases, so a row without it would fail there during a rolling upgrade. Leave
    it out once the oldest release that may share the database reads such rows (this one does)."""
    config: dict[str, Any] = {"backoff": backoff.to_json()}
    if concurrency_key is not None:
        config["concurrency_key"] = concurrency_key
    if on_failure is not None:
        config["sequence_on_failure"] = on_failure.value
    return config


DEFAULT_BACKOFF = BackoffPolicy.from_json(BackoffPolicy().to_json())
"""The policy a job gets when it names none, and the one a row without a policy in its `config` reads as."""


def backoff_of(config: dict[str, Any]) -> BackoffPolicy:
    """The backoff policy of a `config` column (a job's or a workflow step's): written out, or the default."""
    written = config.get("backoff")
    return DEFAULT_BACKOFF if written is None else BackoffPolicy.from_json(written)


# Every claimed, completed or read job is built from a row: its status and backoff policy are looked up, not
# constructed (an Enum call and a policy per row were a third of job_from_row's time; see `core.types.backoff_policy`).
_STATUSES = {status.value: status for status in JobStatus}
_ON_FAILURE: dict[object, OnFailure] = {value.value: value for value in OnFailure}


def job_from_row(row: asyncpg.Record) -> Job:
    token = row["lease_token"]
    config = row["config"]
    return Job(
        id=row["id"],
        tenant_id=row["tenant_id"],
        queue_name=row["queue_name"],
        task_name=row["task_name"],
        payload=row["payload"],
        status=_STATUSES[row["status"]],
        priority=row["priority"],
        scheduled_at=row["scheduled_at"],
        max_retries=row["max_retries"],
        backoff=backoff_of(config),
        timeout_seconds=row["timeout_seconds"],
        metadata=row["metadata"],
        created_at=row["created_at"],
        idempotency_key=row["idempotency_key"],
        concurrency_key=config.get("concurrency_key"),
        locked_until=row["locked_until"],
        lease_token=str(token) if token is not None else None,
        delivery_count=row["delivery_count"],
        retry_count=row["retry_count"],
        next_retry_at=row["next_retry_at"],
        result=row["result"],
        error_message=row["error_message"],
        workflow_id=row["workflow_id"],
        workflow_step_id=row["workflow_step_id"],
        started_at=row["started_at"],
        completed_at=row["completed_at"],
        progress=row["progress"],
        trace_context=row["trace_context"],
        unique_key=row["unique_key"],
        expires_at=row["expires_at"],
        sequence_key=row["sequence_key"],
        sequence_on_failure=_ON_FAILURE.get(config.get("sequence_on_failure")),
        sequence_halt=bool(row["sequence_halt"]),
    )
