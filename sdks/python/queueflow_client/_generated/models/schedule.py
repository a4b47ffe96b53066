from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.schedule_payload import SchedulePayload


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
        max_retries (int):
        name (str):
        next_run_at (datetime.datetime | None):
        payload (SchedulePayload):
        priority (int):
        queue_name (str):
        task_name (str):
        tenant_id (str):
        timezone (str):
        updated_at (datetime.datetime):
    """

    created_at: datetime.datetime
    cron: str
    enabled: bool
    id: str
    last_run_at: datetime.datetime | None
    max_retries: int
    name: str
    next_run_at: datetime.datetime | None
    payload: SchedulePayload
    priority: int
    queue_name: str
    task_name: str
    tenant_id: str
    timezone: str
    updated_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at.isoformat()

        cron = self.cron

        enabled = self.enabled

        id = self.id

        last_run_at: None | str
        if isinstance(self.last_run_at, datetime.datetime):
            last_run_at = self.last_run_at.isoformat()
        else:
            last_run_at = self.last_run_at

        max_retries = self.max_retries

        name = self.name

        next_run_at: None | str
        if isinstance(self.next_run_at, datetime.datetime):
            next_run_at = self.next_run_at.isoformat()
        else:
            next_run_at = self.next_run_at

        payload = self.payload.to_dict()

        priority = self.priority

        queue_name = self.queue_name

        task_name = self.task_name

        tenant_id = self.tenant_id

        timezone = self.timezone

        updated_at = self.updated_at.isoformat()

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

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.schedule_payload import SchedulePayload

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

        max_retries = d.pop("max_retries")

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

        payload = SchedulePayload.from_dict(d.pop("payload"))

        priority = d.pop("priority")

        queue_name = d.pop("queue_name")

        task_name = d.pop("task_name")

        tenant_id = d.pop("tenant_id")

        timezone = d.pop("timezone")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

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
