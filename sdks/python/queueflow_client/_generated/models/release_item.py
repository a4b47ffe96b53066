from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="ReleaseItem")


@_attrs_define
class ReleaseItem:
    """
    Attributes:
        id (str):
        lease_token (str):
    """

    id: str
    lease_token: str

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        lease_token = self.lease_token

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "id": id,
                "lease_token": lease_token,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = d.pop("id")

        lease_token = d.pop("lease_token")

        release_item = cls(
            id=id,
            lease_token=lease_token,
        )

        return release_item
