from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="AckComplete")


@_attrs_define
class AckComplete:
    """
    Attributes:
        id (str):
        lease_token (str):
        result (Any | Unset):
    """

    id: str
    lease_token: str
    result: Any | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        lease_token = self.lease_token

        result = self.result

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "id": id,
                "lease_token": lease_token,
            }
        )
        if result is not UNSET:
            field_dict["result"] = result

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = d.pop("id")

        lease_token = d.pop("lease_token")

        result = d.pop("result", UNSET)

        ack_complete = cls(
            id=id,
            lease_token=lease_token,
            result=result,
        )

        return ack_complete
