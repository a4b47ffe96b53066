from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.added_step import AddedStep


T = TypeVar("T", bound="AddStepsRequest")


@_attrs_define
class AddStepsRequest:
    """
    Attributes:
        lease_token (str):
        steps (list[AddedStep]):
    """

    lease_token: str
    steps: list[AddedStep]

    def to_dict(self) -> dict[str, Any]:
        lease_token = self.lease_token

        steps = []
        for steps_item_data in self.steps:
            steps_item = steps_item_data.to_dict()
            steps.append(steps_item)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "lease_token": lease_token,
                "steps": steps,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.added_step import AddedStep

        d = dict(src_dict)
        lease_token = d.pop("lease_token")

        steps = []
        _steps = d.pop("steps")
        for steps_item_data in _steps:
            steps_item = AddedStep.from_dict(steps_item_data)

            steps.append(steps_item)

        add_steps_request = cls(
            lease_token=lease_token,
            steps=steps,
        )

        return add_steps_request
