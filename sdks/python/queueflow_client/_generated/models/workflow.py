from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.workflow_status import WorkflowStatus

if TYPE_CHECKING:
    from ..models.workflow_context import WorkflowContext
    from ..models.workflow_step import WorkflowStep


T = TypeVar("T", bound="Workflow")


@_attrs_define
class Workflow:
    """
    Attributes:
        completed_at (datetime.datetime | None):
        context (WorkflowContext):
        created_at (datetime.datetime):
        id (str):
        name (str):
        status (WorkflowStatus):
        steps (list[WorkflowStep]):
        tenant_id (str):
    """

    completed_at: datetime.datetime | None
    context: WorkflowContext
    created_at: datetime.datetime
    id: str
    name: str
    status: WorkflowStatus
    steps: list[WorkflowStep]
    tenant_id: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        completed_at: None | str
        if isinstance(self.completed_at, datetime.datetime):
            completed_at = self.completed_at.isoformat()
        else:
            completed_at = self.completed_at

        context = self.context.to_dict()

        created_at = self.created_at.isoformat()

        id = self.id

        name = self.name

        status = self.status.value

        steps = []
        for steps_item_data in self.steps:
            steps_item = steps_item_data.to_dict()
            steps.append(steps_item)

        tenant_id = self.tenant_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "completed_at": completed_at,
                "context": context,
                "created_at": created_at,
                "id": id,
                "name": name,
                "status": status,
                "steps": steps,
                "tenant_id": tenant_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.workflow_context import WorkflowContext
        from ..models.workflow_step import WorkflowStep

        d = dict(src_dict)

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

        context = WorkflowContext.from_dict(d.pop("context"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        id = d.pop("id")

        name = d.pop("name")

        status = WorkflowStatus(d.pop("status"))

        steps = []
        _steps = d.pop("steps")
        for steps_item_data in _steps:
            steps_item = WorkflowStep.from_dict(steps_item_data)

            steps.append(steps_item)

        tenant_id = d.pop("tenant_id")

        workflow = cls(
            completed_at=completed_at,
            context=context,
            created_at=created_at,
            id=id,
            name=name,
            status=status,
            steps=steps,
            tenant_id=tenant_id,
        )

        workflow.additional_properties = d
        return workflow

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
