from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.workflow_step_on_failure import WorkflowStepOnFailure
from ..models.workflow_step_status import WorkflowStepStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.wait_spec import WaitSpec


T = TypeVar("T", bound="WorkflowStep")


@_attrs_define
class WorkflowStep:
    """
    Attributes:
        depends_on (list[str]):
        job_id (None | str):
        name (str):
        on_failure (WorkflowStepOnFailure):
        status (WorkflowStepStatus):
        task_name (None | str):
        added_by (None | str | Unset):
        due_at (datetime.datetime | None | Unset):
        wait (None | Unset | WaitSpec):
    """

    depends_on: list[str]
    job_id: None | str
    name: str
    on_failure: WorkflowStepOnFailure
    status: WorkflowStepStatus
    task_name: None | str
    added_by: None | str | Unset = UNSET
    due_at: datetime.datetime | None | Unset = UNSET
    wait: None | Unset | WaitSpec = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.wait_spec import WaitSpec

        depends_on = self.depends_on

        job_id: None | str
        job_id = self.job_id

        name = self.name

        on_failure = self.on_failure.value

        status = self.status.value

        task_name: None | str
        task_name = self.task_name

        added_by: None | str | Unset
        if isinstance(self.added_by, Unset):
            added_by = UNSET
        else:
            added_by = self.added_by

        due_at: None | str | Unset
        if isinstance(self.due_at, Unset):
            due_at = UNSET
        elif isinstance(self.due_at, datetime.datetime):
            due_at = self.due_at.isoformat()
        else:
            due_at = self.due_at

        wait: dict[str, Any] | None | Unset
        if isinstance(self.wait, Unset):
            wait = UNSET
        elif isinstance(self.wait, WaitSpec):
            wait = self.wait.to_dict()
        else:
            wait = self.wait

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "depends_on": depends_on,
                "job_id": job_id,
                "name": name,
                "on_failure": on_failure,
                "status": status,
                "task_name": task_name,
            }
        )
        if added_by is not UNSET:
            field_dict["added_by"] = added_by
        if due_at is not UNSET:
            field_dict["due_at"] = due_at
        if wait is not UNSET:
            field_dict["wait"] = wait

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.wait_spec import WaitSpec

        d = dict(src_dict)
        depends_on = cast(list[str], d.pop("depends_on"))

        def _parse_job_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        job_id = _parse_job_id(d.pop("job_id"))

        name = d.pop("name")

        on_failure = WorkflowStepOnFailure(d.pop("on_failure"))

        status = WorkflowStepStatus(d.pop("status"))

        def _parse_task_name(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        task_name = _parse_task_name(d.pop("task_name"))

        def _parse_added_by(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        added_by = _parse_added_by(d.pop("added_by", UNSET))

        def _parse_due_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                due_at_type_0 = datetime.datetime.fromisoformat(data)

                return due_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        due_at = _parse_due_at(d.pop("due_at", UNSET))

        def _parse_wait(data: object) -> None | Unset | WaitSpec:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                wait_type_0 = WaitSpec.from_dict(data)

                return wait_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | WaitSpec, data)

        wait = _parse_wait(d.pop("wait", UNSET))

        workflow_step = cls(
            depends_on=depends_on,
            job_id=job_id,
            name=name,
            on_failure=on_failure,
            status=status,
            task_name=task_name,
            added_by=added_by,
            due_at=due_at,
            wait=wait,
        )

        workflow_step.additional_properties = d
        return workflow_step

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
