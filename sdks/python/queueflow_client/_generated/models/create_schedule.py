from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.create_schedule_payload import CreateSchedulePayload


T = TypeVar("T", bound="CreateSchedule")


@_attrs_define
class CreateSchedule:
    """
    Attributes:
        cron (str): Five fields (minute hour day-of-month month day-of-week) or an alias such as @daily
        name (str):
        task_name (str):
        enabled (bool | Unset):  Default: True.
        max_retries (int | Unset):  Default: 3.
        payload (CreateSchedulePayload | Unset):
        priority (int | Unset):  Default: 0.
        queue_name (str | Unset):  Default: 'default'.
        timezone (str | Unset): An IANA time zone name; occurrences follow it across DST changes Default: 'UTC'.
    """

    cron: str
    name: str
    task_name: str
    enabled: bool | Unset = True
    max_retries: int | Unset = 3
    payload: CreateSchedulePayload | Unset = UNSET
    priority: int | Unset = 0
    queue_name: str | Unset = "default"
    timezone: str | Unset = "UTC"

    def to_dict(self) -> dict[str, Any]:
        cron = self.cron

        name = self.name

        task_name = self.task_name

        enabled = self.enabled

        max_retries = self.max_retries

        payload: dict[str, Any] | Unset = UNSET
        if not isinstance(self.payload, Unset):
            payload = self.payload.to_dict()

        priority = self.priority

        queue_name = self.queue_name

        timezone = self.timezone

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "cron": cron,
                "name": name,
                "task_name": task_name,
            }
        )
        if enabled is not UNSET:
            field_dict["enabled"] = enabled
        if max_retries is not UNSET:
            field_dict["max_retries"] = max_retries
        if payload is not UNSET:
            field_dict["payload"] = payload
        if priority is not UNSET:
            field_dict["priority"] = priority
        if queue_name is not UNSET:
            field_dict["queue_name"] = queue_name
        if timezone is not UNSET:
            field_dict["timezone"] = timezone

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.create_schedule_payload import CreateSchedulePayload

        d = dict(src_dict)
        cron = d.pop("cron")

        name = d.pop("name")

        task_name = d.pop("task_name")

        enabled = d.pop("enabled", UNSET)

        max_retries = d.pop("max_retries", UNSET)

        _payload = d.pop("payload", UNSET)
        payload: CreateSchedulePayload | Unset
        if isinstance(_payload, Unset):
            payload = UNSET
        else:
            payload = CreateSchedulePayload.from_dict(_payload)

        priority = d.pop("priority", UNSET)

        queue_name = d.pop("queue_name", UNSET)

        timezone = d.pop("timezone", UNSET)

        create_schedule = cls(
            cron=cron,
            name=name,
            task_name=task_name,
            enabled=enabled,
            max_retries=max_retries,
            payload=payload,
            priority=priority,
            queue_name=queue_name,
            timezone=timezone,
        )

        return create_schedule
