from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.create_schedule_payload import CreateSchedulePayload
    from ..models.create_workflow import CreateWorkflow


T = TypeVar("T", bound="CreateSchedule")


@_attrs_define
class CreateSchedule:
    """
    Attributes:
        cron (str): Five fields (minute hour day-of-month month day-of-week) or an alias such as @daily
        name (str):
        enabled (bool | Unset):  Default: True.
        max_retries (int | Unset):
        payload (CreateSchedulePayload | Unset):
        priority (int | Unset):
        queue_name (str | Unset):
        task_name (str | Unset):
        timezone (str | Unset): An IANA time zone name; occurrences follow it across DST changes Default: 'UTC'.
        workflow (CreateWorkflow | Unset):
    """

    cron: str
    name: str
    enabled: bool | Unset = True
    max_retries: int | Unset = UNSET
    payload: CreateSchedulePayload | Unset = UNSET
    priority: int | Unset = UNSET
    queue_name: str | Unset = UNSET
    task_name: str | Unset = UNSET
    timezone: str | Unset = "UTC"
    workflow: CreateWorkflow | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        cron = self.cron

        name = self.name

        enabled = self.enabled

        max_retries = self.max_retries

        payload: dict[str, Any] | Unset = UNSET
        if not isinstance(self.payload, Unset):
            payload = self.payload.to_dict()

        priority = self.priority

        queue_name = self.queue_name

        task_name = self.task_name

        timezone = self.timezone

        workflow: dict[str, Any] | Unset = UNSET
        if not isinstance(self.workflow, Unset):
            workflow = self.workflow.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "cron": cron,
                "name": name,
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
        if task_name is not UNSET:
            field_dict["task_name"] = task_name
        if timezone is not UNSET:
            field_dict["timezone"] = timezone
        if workflow is not UNSET:
            field_dict["workflow"] = workflow

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.create_schedule_payload import CreateSchedulePayload
        from ..models.create_workflow import CreateWorkflow

        d = dict(src_dict)
        cron = d.pop("cron")

        name = d.pop("name")

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

        task_name = d.pop("task_name", UNSET)

        timezone = d.pop("timezone", UNSET)

        _workflow = d.pop("workflow", UNSET)
        workflow: CreateWorkflow | Unset
        if isinstance(_workflow, Unset):
            workflow = UNSET
        else:
            workflow = CreateWorkflow.from_dict(_workflow)

        create_schedule = cls(
            cron=cron,
            name=name,
            enabled=enabled,
            max_retries=max_retries,
            payload=payload,
            priority=priority,
            queue_name=queue_name,
            task_name=task_name,
            timezone=timezone,
            workflow=workflow,
        )

        return create_schedule
