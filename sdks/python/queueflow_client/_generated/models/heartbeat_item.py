from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="HeartbeatItem")


@_attrs_define
class HeartbeatItem:
    """
    Attributes:
        id (str):
        lease_token (str):
        progress (Any | Unset):
    """

    id: str
    lease_token: str
    progress: Any | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        lease_token = self.lease_token

        progress = self.progress

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "id": id,
                "lease_token": lease_token,
            }
        )
        if progress is not UNSET:
            field_dict["progress"] = progress

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = d.pop("id")

        lease_token = d.pop("lease_token")

        progress = d.pop("progress", UNSET)

        heartbeat_item = cls(
            id=id,
            lease_token=lease_token,
            progress=progress,
        )

        return heartbeat_item
