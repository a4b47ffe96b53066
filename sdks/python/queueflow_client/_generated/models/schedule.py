from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.schedule_payload_type_0 import SchedulePayloadType0
    from ..models.schedule_workflow_type_0 import ScheduleWorkflowType0


T = TypeVar("T", bound="Schedule")


@_attrs_define
class Schedule:
    """
    Attributes:
        created_at (datetime.datetime):
        cron (str):
        enabled (bool):
        id (str):
        last_run_at (datetime.datetime | None):
        max_retries (int | None):
        name (str):
        next_run_at (datetime.datetime | None):
        payload (None | SchedulePayloadType0):
        priority (int | None):
        queue_name (None | str):
        task_name (None | str):
        tenant_id (str):
        timezone (str):
        updated_at (datetime.datetime):
        workflow (None | ScheduleWorkflowType0 | Unset):
    """

    created_at: datetime.datetime
    cron: str
    enabled: bool
    id: str
    last_run_at: datetime.datetime | None
    max_retries: int | None
    name: str
    next_run_at: datetime.datetime | None
    payload: None | SchedulePayloadType0
    priority: int | None
    queue_name: None | str
    task_name: None | str
    tenant_id: str
    timezone: str
    updated_at: datetime.datetime
    workflow: None | ScheduleWorkflowType0 | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.schedule_payload_type_0 import SchedulePayloadType0
        from ..models.schedule_workflow_type_0 import ScheduleWorkflowType0

        created_at = self.created_at.isoformat()

        cron = self.cron

        enabled = self.enabled

        id = self.id

        last_run_at: None | str
        if isinstance(self.last_run_at, datetime.datetime):
            last_run_at = self.last_run_at.isoformat()
        else:
            last_run_at = self.last_run_at

        max_retries: int | None
        max_retries = self.max_retries

        name = self.name

        next_run_at: None | str
        if isinstance(self.next_run_at, datetime.datetime):
            next_run_at = self.next_run_at.isoformat()
        else:
            next_run_at = self.next_run_at

        payload: dict[str, Any] | None
        if isinstance(self.payload, SchedulePayloadType0):
            payload = self.payload.to_dict()
        else:
            payload = self.payload

        priority: int | None
        priority = self.priority

        queue_name: None | str
        queue_name = self.queue_name

        task_name: None | str
        task_name = self.task_name

        tenant_id = self.tenant_id

        timezone = self.timezone

        updated_at = self.updated_at.isoformat()

        workflow: dict[str, Any] | None | Unset
        if isinstance(self.workflow, Unset):
            workflow = UNSET
        elif isinstance(self.workflow, ScheduleWorkflowType0):
            workflow = self.workflow.to_dict()
        else:
            workflow = self.workflow

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "cron": cron,
                "enabled": enabled,
                "id": id,
                "last_run_at": last_run_at,
                "max_retries": max_retries,
                "name": name,
                "next_run_at": next_run_at,
                "payload": payload,
                "priority": priority,
                "queue_name": queue_name,
                "task_name": task_name,
                "tenant_id": tenant_id,
                "timezone": timezone,
                "updated_at": updated_at,
            }
        )
        if workflow is not UNSET:
            field_dict["workflow"] = workflow

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.schedule_payload_type_0 import SchedulePayloadType0
        from ..models.schedule_workflow_type_0 import ScheduleWorkflowType0

        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        cron = d.pop("cron")

        enabled = d.pop("enabled")

        id = d.pop("id")

        def _parse_last_run_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                last_run_at_type_0 = datetime.datetime.fromisoformat(data)

                return last_run_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        last_run_at = _parse_last_run_at(d.pop("last_run_at"))

        def _parse_max_retries(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        max_retries = _parse_max_retries(d.pop("max_retries"))

        name = d.pop("name")

        def _parse_next_run_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                next_run_at_type_0 = datetime.datetime.fromisoformat(data)

                return next_run_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        next_run_at = _parse_next_run_at(d.pop("next_run_at"))

        def _parse_payload(data: object) -> None | SchedulePayloadType0:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                payload_type_0 = SchedulePayloadType0.from_dict(data)

                return payload_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SchedulePayloadType0, data)

        payload = _parse_payload(d.pop("payload"))

        def _parse_priority(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        priority = _parse_priority(d.pop("priority"))

        def _parse_queue_name(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        queue_name = _parse_queue_name(d.pop("queue_name"))

        def _parse_task_name(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        task_name = _parse_task_name(d.pop("task_name"))

        tenant_id = d.pop("tenant_id")

        timezone = d.pop("timezone")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_workflow(data: object) -> None | ScheduleWorkflowType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                workflow_type_0 = ScheduleWorkflowType0.from_dict(data)

                return workflow_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ScheduleWorkflowType0 | Unset, data)

        workflow = _parse_workflow(d.pop("workflow", UNSET))

        schedule = cls(
            created_at=created_at,
            cron=cron,
            enabled=enabled,
            id=id,
            last_run_at=last_run_at,
            max_retries=max_retries,
            name=name,
            next_run_at=next_run_at,
            payload=payload,
            priority=priority,
            queue_name=queue_name,
            task_name=task_name,
            tenant_id=tenant_id,
            timezone=timezone,
            updated_at=updated_at,
            workflow=workflow,
        )

        schedule.additional_properties = d
        return schedule

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
