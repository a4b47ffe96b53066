from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.workflow_step_on_failure import WorkflowStepOnFailure
from ..models.workflow_step_status import WorkflowStepStatus

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
        task_name (str):
    """

    depends_on: list[str]
    job_id: None | str
    name: str
    on_failure: WorkflowStepOnFailure
    status: WorkflowStepStatus
    task_name: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        depends_on = self.depends_on

        job_id: None | str
        job_id = self.job_id

        name = self.name

        on_failure = self.on_failure.value

        status = self.status.value

        task_name = self.task_name

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

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
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

        task_name = d.pop("task_name")

        workflow_step = cls(
            depends_on=depends_on,
            job_id=job_id,
            name=name,
            on_failure=on_failure,
            status=status,
            task_name=task_name,
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
