from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.create_workflow_context import CreateWorkflowContext
    from ..models.new_workflow_step import NewWorkflowStep


T = TypeVar("T", bound="CreateWorkflow")


@_attrs_define
class CreateWorkflow:
    """
    Attributes:
        name (str):
        steps (list[NewWorkflowStep]):
        context (CreateWorkflowContext | Unset):
    """

    name: str
    steps: list[NewWorkflowStep]
    context: CreateWorkflowContext | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        steps = []
        for steps_item_data in self.steps:
            steps_item = steps_item_data.to_dict()
            steps.append(steps_item)

        context: dict[str, Any] | Unset = UNSET
        if not isinstance(self.context, Unset):
            context = self.context.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
                "steps": steps,
            }
        )
        if context is not UNSET:
            field_dict["context"] = context

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.create_workflow_context import CreateWorkflowContext
        from ..models.new_workflow_step import NewWorkflowStep

        d = dict(src_dict)
        name = d.pop("name")

        steps = []
        _steps = d.pop("steps")
        for steps_item_data in _steps:
            steps_item = NewWorkflowStep.from_dict(steps_item_data)

            steps.append(steps_item)

        _context = d.pop("context", UNSET)
        context: CreateWorkflowContext | Unset
        if isinstance(_context, Unset):
            context = UNSET
        else:
            context = CreateWorkflowContext.from_dict(_context)

        create_workflow = cls(
            name=name,
            steps=steps,
            context=context,
        )

        return create_workflow
