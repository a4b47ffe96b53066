from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.leased_job_status import LeasedJobStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.backoff import Backoff
    from ..models.leased_job_metadata import LeasedJobMetadata
    from ..models.leased_job_payload import LeasedJobPayload
    from ..models.trace_context import TraceContext


T = TypeVar("T", bound="LeasedJob")


@_attrs_define
class LeasedJob:
    """
    Attributes:
        backoff (Backoff):
        completed_at (datetime.datetime | None):
        concurrency_key (None | str):
        created_at (datetime.datetime):
        deadline (datetime.datetime | None):
        delivery_count (int):
        error_message (None | str):
        id (str):
        idempotency_key (None | str):
        lease_token (str):
        locked_until (datetime.datetime | None):
        max_retries (int):
        metadata (LeasedJobMetadata):
        next_retry_at (datetime.datetime | None):
        payload (LeasedJobPayload):
        priority (int):
        progress (Any):
        queue_name (str):
        result (Any):
        retry_count (int):
        scheduled_at (datetime.datetime):
        started_at (datetime.datetime | None):
        status (LeasedJobStatus):
        task_name (str):
        tenant_id (str):
        timeout_seconds (float | None):
        trace_context (None | TraceContext):
        workflow_id (None | str):
        workflow_step_id (None | str):
        claimed_after_seconds (float | Unset):  Default: 0.0.
    """

    backoff: Backoff
    completed_at: datetime.datetime | None
    concurrency_key: None | str
    created_at: datetime.datetime
    deadline: datetime.datetime | None
    delivery_count: int
    error_message: None | str
    id: str
    idempotency_key: None | str
    lease_token: str
    locked_until: datetime.datetime | None
    max_retries: int
    metadata: LeasedJobMetadata
    next_retry_at: datetime.datetime | None
    payload: LeasedJobPayload
    priority: int
    progress: Any
    queue_name: str
    result: Any
    retry_count: int
    scheduled_at: datetime.datetime
    started_at: datetime.datetime | None
    status: LeasedJobStatus
    task_name: str
    tenant_id: str
    timeout_seconds: float | None
    trace_context: None | TraceContext
    workflow_id: None | str
    workflow_step_id: None | str
    claimed_after_seconds: float | Unset = 0.0
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.trace_context import TraceContext

        backoff = self.backoff.to_dict()

        completed_at: None | str
        if isinstance(self.completed_at, datetime.datetime):
            completed_at = self.completed_at.isoformat()
        else:
            completed_at = self.completed_at

        concurrency_key: None | str
        concurrency_key = self.concurrency_key

        created_at = self.created_at.isoformat()

        deadline: None | str
        if isinstance(self.deadline, datetime.datetime):
            deadline = self.deadline.isoformat()
        else:
            deadline = self.deadline

        delivery_count = self.delivery_count

        error_message: None | str
        error_message = self.error_message

        id = self.id

        idempotency_key: None | str
        idempotency_key = self.idempotency_key

        lease_token = self.lease_token

        locked_until: None | str
        if isinstance(self.locked_until, datetime.datetime):
            locked_until = self.locked_until.isoformat()
        else:
            locked_until = self.locked_until

        max_retries = self.max_retries

        metadata = self.metadata.to_dict()

        next_retry_at: None | str
        if isinstance(self.next_retry_at, datetime.datetime):
            next_retry_at = self.next_retry_at.isoformat()
        else:
            next_retry_at = self.next_retry_at

        payload = self.payload.to_dict()

        priority = self.priority

        progress = self.progress

        queue_name = self.queue_name

        result = self.result

        retry_count = self.retry_count

        scheduled_at = self.scheduled_at.isoformat()

        started_at: None | str
        if isinstance(self.started_at, datetime.datetime):
            started_at = self.started_at.isoformat()
        else:
            started_at = self.started_at

        status = self.status.value

        task_name = self.task_name

        tenant_id = self.tenant_id

        timeout_seconds: float | None
        timeout_seconds = self.timeout_seconds

        trace_context: dict[str, Any] | None
        if isinstance(self.trace_context, TraceContext):
            trace_context = self.trace_context.to_dict()
        else:
            trace_context = self.trace_context

        workflow_id: None | str
        workflow_id = self.workflow_id

        workflow_step_id: None | str
        workflow_step_id = self.workflow_step_id

        claimed_after_seconds = self.claimed_after_seconds

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "backoff": backoff,
                "completed_at": completed_at,
                "concurrency_key": concurrency_key,
                "created_at": created_at,
                "deadline": deadline,
                "delivery_count": delivery_count,
                "error_message": error_message,
                "id": id,
                "idempotency_key": idempotency_key,
                "lease_token": lease_token,
                "locked_until": locked_until,
                "max_retries": max_retries,
                "metadata": metadata,
                "next_retry_at": next_retry_at,
                "payload": payload,
                "priority": priority,
                "progress": progress,
                "queue_name": queue_name,
                "result": result,
                "retry_count": retry_count,
                "scheduled_at": scheduled_at,
                "started_at": started_at,
                "status": status,
                "task_name": task_name,
                "tenant_id": tenant_id,
                "timeout_seconds": timeout_seconds,
                "trace_context": trace_context,
                "workflow_id": workflow_id,
                "workflow_step_id": workflow_step_id,
            }
        )
        if claimed_after_seconds is not UNSET:
            field_dict["claimed_after_seconds"] = claimed_after_seconds

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.backoff import Backoff
        from ..models.leased_job_metadata import LeasedJobMetadata
        from ..models.leased_job_payload import LeasedJobPayload
        from ..models.trace_context import TraceContext

        d = dict(src_dict)
        backoff = Backoff.from_dict(d.pop("backoff"))

        def _parse_completed_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                completed_at_type_0 = datetime.datetime.fromisoformat(data)

                return completed_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        completed_at = _parse_completed_at(d.pop("completed_at"))

        def _parse_concurrency_key(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        concurrency_key = _parse_concurrency_key(d.pop("concurrency_key"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        def _parse_deadline(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                deadline_type_0 = datetime.datetime.fromisoformat(data)

                return deadline_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        deadline = _parse_deadline(d.pop("deadline"))

        delivery_count = d.pop("delivery_count")

        def _parse_error_message(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        error_message = _parse_error_message(d.pop("error_message"))

        id = d.pop("id")

        def _parse_idempotency_key(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        idempotency_key = _parse_idempotency_key(d.pop("idempotency_key"))

        lease_token = d.pop("lease_token")

        def _parse_locked_until(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                locked_until_type_0 = datetime.datetime.fromisoformat(data)

                return locked_until_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        locked_until = _parse_locked_until(d.pop("locked_until"))

        max_retries = d.pop("max_retries")

        metadata = LeasedJobMetadata.from_dict(d.pop("metadata"))

        def _parse_next_retry_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                next_retry_at_type_0 = datetime.datetime.fromisoformat(data)

                return next_retry_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        next_retry_at = _parse_next_retry_at(d.pop("next_retry_at"))

        payload = LeasedJobPayload.from_dict(d.pop("payload"))

        priority = d.pop("priority")

        progress = d.pop("progress")

        queue_name = d.pop("queue_name")

        result = d.pop("result")

        retry_count = d.pop("retry_count")

        scheduled_at = datetime.datetime.fromisoformat(d.pop("scheduled_at"))

        def _parse_started_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                started_at_type_0 = datetime.datetime.fromisoformat(data)

                return started_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        started_at = _parse_started_at(d.pop("started_at"))

        status = LeasedJobStatus(d.pop("status"))

        task_name = d.pop("task_name")

        tenant_id = d.pop("tenant_id")

        def _parse_timeout_seconds(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        timeout_seconds = _parse_timeout_seconds(d.pop("timeout_seconds"))

        def _parse_trace_context(data: object) -> None | TraceContext:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                trace_context_type_0 = TraceContext.from_dict(data)

                return trace_context_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TraceContext, data)

        trace_context = _parse_trace_context(d.pop("trace_context"))

        def _parse_workflow_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        workflow_id = _parse_workflow_id(d.pop("workflow_id"))

        def _parse_workflow_step_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        workflow_step_id = _parse_workflow_step_id(d.pop("workflow_step_id"))

        claimed_after_seconds = d.pop("claimed_after_seconds", UNSET)

        leased_job = cls(
            backoff=backoff,
            completed_at=completed_at,
            concurrency_key=concurrency_key,
            created_at=created_at,
            deadline=deadline,
            delivery_count=delivery_count,
            error_message=error_message,
            id=id,
            idempotency_key=idempotency_key,
            lease_token=lease_token,
            locked_until=locked_until,
            max_retries=max_retries,
            metadata=metadata,
            next_retry_at=next_retry_at,
            payload=payload,
            priority=priority,
            progress=progress,
            queue_name=queue_name,
            result=result,
            retry_count=retry_count,
            scheduled_at=scheduled_at,
            started_at=started_at,
            status=status,
            task_name=task_name,
            tenant_id=tenant_id,
            timeout_seconds=timeout_seconds,
            trace_context=trace_context,
            workflow_id=workflow_id,
            workflow_step_id=workflow_step_id,
            claimed_after_seconds=claimed_after_seconds,
        )

        leased_job.additional_properties = d
        return leased_job

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
